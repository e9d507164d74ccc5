"""The only code that writes a tree: build beside, then rename into place.

Trees live in ``<cache>/homes/<key>``. Many processes may ask for the same tree at once
(8 parallel builds of one venv): a file lock per key lets one of them build while the
others wait, and the rename makes the tree appear whole or not at all. Every use checks
the manifest and the links; a tree whose links went stale is moved aside and rebuilt.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import filelock

from . import cache, hostcc, plan, proc, stub
from .errors import CacheError, HostCompilerError, ToolError

_LOCK_TIMEOUT = 900  # seconds; building a tree takes well under one
_RELEASE = re.compile(r"release (\d+\.\d+), V([\d.]+)")


@dataclass(frozen=True)
class Home:
    """A synthesized CUDA_HOME and what was learnt about its compiler when it was built."""

    path: Path
    nvcc_version: str  # "13.0.88"
    nvcc_release: str  # "13.0"
    gpu_codes: tuple[str, ...]  # nvcc --list-gpu-code: ("sm_75", ..., "sm_121")
    gcc_max_major: int | None
    clang_max_major: int | None


def _plan_digest(tree: plan.TreePlan) -> str:
    blob = json.dumps([[lk.path, lk.target] for lk in tree.links] + list(tree.files))
    return hashlib.sha256(blob.encode()).hexdigest()


def _home(path: Path, manifest: dict[str, Any]) -> Home:
    return Home(path, manifest["nvcc_version"], manifest["nvcc_release"],
                tuple(manifest["gpu_codes"]), manifest.get("gcc_max_major"),
                manifest.get("clang_max_major"))


def read_valid(path: Path, tree: plan.TreePlan) -> Home | None:
    """The tree at ``path`` if it is whole, current and every link resolves; else None."""
    try:
        manifest = json.loads((path / plan.MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("key") != tree.key or manifest.get("plan") != _plan_digest(tree):
        return None
    if not all(os.path.exists(path / lk.path) for lk in tree.links):
        return None
    if not all(os.path.isfile(path / rel) for rel, _ in tree.files):  # the wrapper, version.json
        return None
    try:
        return _home(path, manifest)
    except (KeyError, TypeError):
        return None


def _probe_nvcc(nvcc: Path) -> dict[str, Any]:
    env = proc.child_environ()
    for var in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        env.pop(var, None)
    text = proc.capture([str(nvcc), "--version"], env=env)
    m = _RELEASE.search(text)
    if not m:
        raise ToolError(f"{nvcc} --version printed no 'release X.Y, VX.Y.Z' line:\n{text}")
    codes = proc.capture([str(nvcc), "--list-gpu-code"], env=env).split()
    return {"nvcc_release": m.group(1), "nvcc_version": m.group(2), "gpu_codes": codes}


def _write(tmp: Path, tree: plan.TreePlan) -> dict[str, Any]:
    for link in tree.links:
        dest = tmp / link.path
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link.target, dest)
    for rel, text in tree.files:
        (tmp / rel).write_text(text)
        if rel in tree.executables:
            (tmp / rel).chmod(0o755)
    if tree.stub_header:
        (tmp / plan.STUB).parent.mkdir(parents=True, exist_ok=True)
        try:
            stub.build_stub(tree.stub_header, str(tmp / plan.STUB))
        except ToolError as exc:
            raise HostCompilerError(f"cannot build {plan.STUB} (the driver stub): {exc}",
                                    "install a C compiler: apt-get install gcc g++") from exc
    manifest: dict[str, Any] = {"key": tree.key, "format": plan.FORMAT,
                                "plan": _plan_digest(tree)}
    manifest.update(_probe_nvcc(tmp / "bin" / "nvcc"))  # through the wrapper, if any
    with contextlib.suppress(OSError):
        limits = hostcc.parse_host_config((tmp / "include/crt/host_config.h").read_text())
        manifest.update(gcc_max_major=limits.gcc_max_major,
                        clang_max_major=limits.clang_max_major)
    (tmp / plan.MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def _discard(path: Path) -> None:
    """Move a tree out of the way first (atomic), then delete it."""
    aside = path.with_name(f".stale-{path.name}-{os.getpid()}")
    with contextlib.suppress(OSError):
        os.rename(path, aside)
        shutil.rmtree(aside, ignore_errors=True)


def _build(homes: Path, tree: plan.TreePlan) -> Home:
    final = homes / tree.key
    tmp = Path(tempfile.mkdtemp(dir=homes, prefix=f".build-{tree.key}-"))
    try:
        manifest = _write(tmp, tree)
        if os.path.lexists(final):
            _discard(final)
        os.rename(tmp, final)
    except OSError as exc:
        raise CacheError(f"cannot write the tree {final}: {exc.strerror or exc}",
                         f"check the space and permissions of {homes}") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return _home(final, manifest)


def ensure(tree: plan.TreePlan, root: Path | None = None) -> Home:
    """The tree for ``tree.key``, built if missing or stale; safe under concurrency."""
    homes = cache.private_dir(cache.private_dir(root or cache.cache_root()) / "homes")
    found = read_valid(homes / tree.key, tree)
    if found:
        return found
    try:
        with filelock.FileLock(str(homes / f".{tree.key}.lock"), timeout=_LOCK_TIMEOUT):
            found = read_valid(homes / tree.key, tree)
            return found or _build(homes, tree)
    except filelock.Timeout as exc:
        raise CacheError(f"another wheelcuda has held {homes}/.{tree.key}.lock for "
                         f"{_LOCK_TIMEOUT} s", "wait for it, or remove the lock file") from exc
