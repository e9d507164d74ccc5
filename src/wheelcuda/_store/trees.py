"""The only code that writes a tree: build beside, then rename into place.

Trees live in ``<cache>/homes/<key>``. Many processes may ask for the same tree at once
(8 parallel builds of one venv): a file lock per key lets one of them build while the
others wait, and the rename makes the tree appear whole or not at all. Every use checks
the manifest and the links; a tree whose links went stale is moved aside and rebuilt.
What a killed build left beside it (``.build-<key>-*``) goes when the next one builds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import _proc as proc
from .._context import Context
from .._probe.nvcc import probe_nvcc
from .._rules import hostcc
from .._rules import tree as plan
from ..errors import CacheError, ComponentError, HostCompilerError, ToolError
from . import fs, stub
from .layout import Layout

_LOCK_TIMEOUT = 900  # seconds; building a tree takes well under one


@dataclass(frozen=True)
class Home:
    """A synthesized CUDA_HOME and what was learnt about its compiler when it was built."""

    path: Path
    nvcc_version: str  # "13.0.88"
    nvcc_release: str  # "13.0"
    gpu_codes: tuple[str, ...]  # nvcc --list-gpu-code: ("sm_75", ..., "sm_121")
    gcc_max_major: int | None
    clang_max_major: int | None
    #: what compiles, for the wheel cache's key: "12.8.93" (NVIDIA's nvcc) or "clang
    #: 22.1.8 + ptxas 12.8.93" (the clang toolkit)
    compiler: str = ""


def _plan_digest(tree: plan.TreePlan) -> str:
    blob = json.dumps([[lk.path, lk.target] for lk in tree.links] + list(tree.files))
    return hashlib.sha256(blob.encode()).hexdigest()


def _home(path: Path, manifest: dict[str, Any]) -> Home:
    return Home(path, manifest["nvcc_version"], manifest["nvcc_release"],
                tuple(manifest["gpu_codes"]), manifest.get("gcc_max_major"),
                manifest.get("clang_max_major"),
                manifest.get("compiler") or manifest["nvcc_version"])


def python_gone(home: Path) -> str | None:
    """The Python the tree's nvcc runs on, when it is gone (its venv deleted: nvcc then
    fails with ``exec: …/python: not found``); None while it is there."""
    try:
        python = plan.wrapper_python((home / plan.WRAPPER).read_text(errors="replace"))
    except OSError:
        return None
    if python and not os.access(python, os.X_OK):
        return python
    return None


def problem(home: Path) -> str | None:
    """Why a tree can no longer be used, or None when it still can (read only)."""
    try:
        manifest = json.loads((home / plan.MANIFEST).read_text())
    except (OSError, ValueError):
        return "no manifest (never finished)"
    if manifest.get("format") != plan.FORMAT:
        return f"an older tree layout (format {manifest.get('format')})"
    gone = python_gone(home)
    if gone:
        return f"its nvcc runs on {gone}, which is gone"
    return fs.dangling_link(home)


def read_valid(path: Path, tree: plan.TreePlan) -> Home | None:
    """The tree at ``path`` if it is whole, current, its nvcc's Python is there and
    every link resolves; else None."""
    try:
        manifest = json.loads((path / plan.MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if manifest.get("key") != tree.key or manifest.get("plan") != _plan_digest(tree):
        return None
    whole = (all(os.path.exists(path / lk.path) for lk in tree.links)
             and all(os.path.isfile(path / rel) for rel, _ in tree.files))  # wrapper, version
    if not whole or python_gone(path):
        return None
    try:
        return _home(path, manifest)
    except (KeyError, TypeError):
        return None


def _write(tmp: Path, tree: plan.TreePlan, ctx: Context, cc: str) -> dict[str, Any]:
    for link in tree.links:
        dest = tmp / link.path
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(link.target, dest)
    for rel, text in tree.files:
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp / rel).write_text(text)
        if rel in tree.executables:
            (tmp / rel).chmod(0o755)
    fs.precompile(tmp / "bin")
    if tree.stub_header:
        (tmp / plan.STUB).parent.mkdir(parents=True, exist_ok=True)
        try:
            stub.build_stub(tree.stub_header, str(tmp / plan.STUB), cc,
                            proc.child_environ(ctx.environ))
        except ToolError as exc:
            raise HostCompilerError(f"cannot build {plan.STUB} (the driver stub) with {cc}: "
                                    f"{exc}", "install a C compiler: apt-get install gcc g++"
                                    ) from exc
    manifest: dict[str, Any] = {"key": tree.key, "format": plan.FORMAT,
                                "plan": _plan_digest(tree)}
    try:
        # The real nvcc, through its link in bin/ (nvcc.profile is read from there): the
        # trampoline names the tree's final path, which does not exist yet.
        real = tmp / (plan.REAL_NVCC if os.path.lexists(tmp / plan.REAL_NVCC) else plan.WRAPPER)
        manifest.update(probe_nvcc(real, ctx))
    except ToolError as exc:
        raise ComponentError(f"the compiler in this tree does not run: {exc}",
                             "reinstall the compiler wheels, or run `wheelcuda cache prune` "
                             "and try again") from exc
    with contextlib.suppress(OSError):
        limits = hostcc.parse_host_config((tmp / "include/crt/host_config.h").read_text())
        manifest.update(gcc_max_major=limits.gcc_max_major,
                        clang_max_major=limits.clang_max_major)
    (tmp / plan.MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
    return manifest


def _build(homes: Path, tree: plan.TreePlan, ctx: Context, cc: str) -> Home:
    manifest = fs.build(homes, tree.key, lambda tmp: _write(tmp, tree, ctx, cc), "the tree")
    return _home(homes / tree.key, manifest)


def ensure(layout: Layout, tree: plan.TreePlan, ctx: Context, cc: str = "gcc") -> Home:
    """The tree for ``tree.key``, built if missing or stale; safe under concurrency.
    ``cc`` is the host compiler that builds the driver stub. A layout that only looks
    (:attr:`Layout.scratch`) is only read: the pipeline plans a missing tree for
    :meth:`Layout.writable` instead."""
    if layout.scratch is None:
        # where the tree's compilers write the events of builds install does not watch
        # (their progress only: a cache mounted read-only still serves)
        with contextlib.suppress(CacheError):
            layout.private(layout.events)
    found = read_valid(layout.homes / tree.key, tree)  # reading needs no write access
    if found:
        return found
    assert layout.scratch is None, "a run that only looks plans its tree for writable()"
    homes = layout.private(layout.homes)
    with fs.locked(layout.lock(homes, tree.key), f"building the tree {tree.key}",
                   _LOCK_TIMEOUT):
        return read_valid(homes / tree.key, tree) or _build(homes, tree, ctx, cc)
