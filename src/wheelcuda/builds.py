"""The wheel cache: built wheels kept under a key that holds everything the binary
depends on, so a second install with the same key, in any environment, takes seconds,
and a different torch, arch or compiler builds anew.

How: each key gets its own installer cache folder (``UV_CACHE_DIR`` for uv,
``PIP_CACHE_DIR`` for pip) under ``<cache>/builds/<key>/``, and after a build the wheel
is kept in ``<key>/wheels``; an exact source (a folder or file, by content hash, or
``name==version``) with a kept wheel installs that wheel and builds nothing. Local
folders need this: setuptools writes into them while building, and uv then treats
the folder as changed and rebuilds (seen here). Inside it the installer
keeps its built wheels under its own key, which covers the package name, version and
source (uv and pip key sdists by URL and hash, local folders by path and mtime), but
NOT the installed torch or the build-isolation mode (uv issues 16850 and 3599: a wheel
built against one torch is handed back after torch changed). Our key adds what theirs
lacks: torch and its CUDA, the compiler, the arch list and pruning mode, the Python
tag, the C++ ABI and the build variables. A per-key file lock makes concurrent
installs of one key build once; the installers' caches are written atomically.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from . import cache

#: Variables that change what a build produces, beyond the package's own recipe.
BUILD_VARIABLES = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "CFLAGS", "CXXFLAGS",
                   "LDFLAGS", "NVCC_CCBIN", "CC", "CXX", "CUDAHOSTCXX", "TORCH_NVCC_FLAGS",
                   "PYTORCH_NVCC", "CMAKE_ARGS", "NVCC_FLAGS", "NVCC_THREADS")
RECORD = "build.json"


#: Installer flags that change what else is installed, or what is printed, never the
#: binary that is built: left out of the key. A fresh venv that sees torch through a .pth
#: file needs ``-- --no-deps`` (uv does not count such packages as installed), and must
#: still find the wheel the first install built.
NOT_BUILD_ARGS = frozenset({
    "--no-deps", "-q", "--quiet", "-qq", "-v", "--verbose", "-vv", "--no-progress",
    "--reinstall", "--force-reinstall", "-U", "--upgrade", "--no-color"})


def key_fields(*, packages: Sequence[str], torch: str, torch_cuda: str | None,
               compiler: str, archs: str, prune: bool, python_tag: str,
               cxx11_abi: bool | None, variables: Mapping[str, str],
               installer_args: Sequence[str] = (), machine: str = "",
               host_compiler: str = "") -> dict[str, Any]:
    """Everything the built binary depends on, as data (pure). ``installer_args`` are
    the arguments after ``--`` (config settings, indexes): they may change the build,
    except :data:`NOT_BUILD_ARGS`. ``host_compiler`` is nvcc's host compiler and its
    version ("gcc 12.2.0"): it compiles the host half of every file."""
    return {"packages": list(packages), "torch": torch, "torch_cuda": torch_cuda,
            "compiler": compiler, "archs": archs, "prune": prune, "python": python_tag,
            "cxx11_abi": cxx11_abi, "variables": dict(sorted(variables.items())),
            "installer_args": [a for a in installer_args if a not in NOT_BUILD_ARGS],
            "machine": machine, "host_compiler": host_compiler}


def key_id(fields: Mapping[str, Any]) -> str:
    """``causal-conv1d-<16 hex>``: readable, and unique per field set (pure)."""
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]
    names = [n for n in fields.get("names", []) if n]
    label = (names or fields["packages"] or ["build"])[0]
    first = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(str(label).rstrip("/")))[:40]
    return f"{first}-{digest}"


#: Folders a build writes into its own source tree: not part of the source's identity.
_NOT_SOURCE = {"build", "dist", ".eggs", ".tox", ".venv", "venv"}
_ALWAYS_OUT = {"__pycache__", ".git"}


def source_id(spec: str) -> str:
    """What identifies a package source: a folder's or file's content hash, else the
    requirement as written (the installer resolves it inside the key's own cache)."""
    if os.path.isdir(spec):
        return f"dir:{_tree_hash(Path(spec))}"
    if os.path.isfile(spec):
        return f"file:{os.path.basename(spec)}:{_file_hash(Path(spec))}"
    return spec


def _file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def _tree_hash(root: Path) -> str:
    """Content hash of a source folder: regular files (links followed), leaving out what
    a build writes at the top (build/, dist/, *.egg-info) and caches anywhere."""
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root, followlinks=True):
        top = Path(folder) == root
        dirs[:] = sorted(d for d in dirs if not d.endswith(".egg-info") and d not in _ALWAYS_OUT
                         and not (top and d in _NOT_SOURCE))
        for name in sorted(files):
            path = Path(folder, name)
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            if path.is_file():  # a dangling link or a FIFO counts by its name only
                with contextlib.suppress(OSError):
                    digest.update(_file_hash(path).encode())
    return digest.hexdigest()[:16]


def exact(spec: str) -> bool:
    """A source that always builds the same thing: a folder, a file, or ``name==version``."""
    return os.path.exists(spec) or bool(re.match(r"^[A-Za-z0-9._-]+(\[[^\]]*\])?==[^*,;]+$",
                                                 spec.strip()))


def _normal(name: str) -> str:
    return str(canonicalize_name(name))


def _wheel_name(wheel: Path) -> str:
    try:
        return str(parse_wheel_filename(wheel.name)[0])
    except InvalidWheelFilename:
        return ""


def keep_wheels(key: str, names: Sequence[str]) -> list[Path]:
    """Copy the wheels the installer built under this key into ``<key>/wheels``."""
    base = folder(key)
    dest = base / "wheels"
    dest.mkdir(parents=True, exist_ok=True)
    kept = []
    for name in names:
        found = sorted((w for w in base.glob("*/**/*.whl")
                        if w.parent != dest and _wheel_name(w) == _normal(name)),
                       key=lambda w: w.stat().st_mtime)
        if found:
            tmp = dest / f".{found[-1].name}.{os.getpid()}"
            shutil.copyfile(found[-1], tmp)
            os.replace(tmp, dest / found[-1].name)
            kept.append(dest / found[-1].name)
    return kept


def cached_wheels(key: str, names: Sequence[str]) -> list[str] | None:
    """The kept wheel for each name, or None unless every one is there."""
    dest = folder(key) / "wheels"
    if not dest.is_dir():
        return None
    wheels = []
    for name in names:
        match = sorted(w for w in dest.glob("*.whl")
                       if _wheel_name(w) == _normal(name))
        if not match:
            return None
        wheels.append(str(match[-1]))
    return wheels


def build_variables(recipe: Mapping[str, str], environ: Mapping[str, str],
                    prefixes: Sequence[str] = ()) -> dict[str, str]:
    """The variables that enter the key (pure): the recipe's (the user's value if they
    set it), every variable the user set under the packages' own prefixes (say
    CAUSAL_CONV1D_SKIP_CUDA_BUILD), and the general compiler flags."""
    out = {k: environ.get(k, v) for k, v in recipe.items() if k != "MAX_JOBS"}
    out.update({k: v for k, v in environ.items() if prefixes and k.startswith(tuple(prefixes))})
    out.update({k: environ[k] for k in BUILD_VARIABLES if environ.get(k)})
    return out


@dataclass(frozen=True)
class Entry:
    """One key's folder and what it recorded."""

    path: Path
    record: dict[str, Any]

    @property
    def size(self) -> int:
        total = 0
        for folder, _, files in os.walk(self.path):
            for name in files:
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(folder, name)).st_size
        return total


def folder(key: str) -> Path:
    return cache.subdir("builds") / key


def lock_path(key: str) -> Path:
    return cache.subdir("builds") / f".{key}.lock"


def installer_cache(tool: str, key: str) -> dict[str, str]:
    """The variable that points the installer's own cache at this key's folder."""
    var = "UV_CACHE_DIR" if tool == "uv" else "PIP_CACHE_DIR"
    return {var: str(folder(key) / tool)}


def record(key: str, fields: Mapping[str, Any], installed: Sequence[str], seconds: float,
           tool: str) -> None:
    """Write what was built under ``key`` (atomically: readers never see half a file)."""
    path = folder(key)
    path.mkdir(parents=True, exist_ok=True)
    try:
        old = json.loads((path / RECORD).read_text())
    except (OSError, ValueError):
        old = {}
    runs = [*old.get("runs", []), {"at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                   "seconds": round(seconds, 1), "installer": tool}]
    data = {"key": key, "fields": dict(fields), "installed": list(installed), "runs": runs}
    tmp = path / f".{RECORD}.{os.getpid()}"
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path / RECORD)


def entries() -> list[Entry]:
    """Every key in the cache, newest first."""
    base = cache.cache_root() / "builds"
    if not base.is_dir():
        return []
    found = []
    for path in base.iterdir():
        if path.is_dir() and not path.name.startswith("."):
            try:
                data = json.loads((path / RECORD).read_text())
            except (OSError, ValueError):
                data = {"key": path.name, "fields": {}, "installed": [], "runs": []}
            found.append(Entry(path, data))
    return sorted(found, key=lambda e: e.path.stat().st_mtime, reverse=True)


def matches(entry: Entry, name: str | None) -> bool:
    """Whether ``wheelcuda cache clear NAME`` removes this entry (pure on the record)."""
    if name is None:
        return True
    wanted = _normal(name)
    installed = [_normal(i.split("==")[0]) for i in entry.record.get("installed", [])]
    names = [_normal(n) for n in entry.record.get("fields", {}).get("names", []) if n]
    return wanted in installed or wanted in names


def clear(name: str | None) -> list[Path]:
    """Remove the entries for ``name`` (all when None); return what was removed."""
    removed = []
    for entry in entries():
        if matches(entry, name):
            aside = entry.path.with_name(f".removing-{entry.path.name}-{os.getpid()}")
            os.rename(entry.path, aside)
            shutil.rmtree(aside, ignore_errors=True)
            removed.append(entry.path)
    return removed
