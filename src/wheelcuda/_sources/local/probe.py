"""CUDA toolkits already on this machine: where they are, which version, whether whole.

A toolkit already installed (NVIDIA's installer in ``/usr/local/cuda-12.8``, a
``CUDA_HOME``, a conda environment with ``cuda-nvcc``) can serve a build like the
wheels do: :mod:`wheelcuda._sources.local.store` presents it as a root laid out like
site-packages, and the rest of wheelcuda (locate, the tree, the wheel cache) cannot
tell it from wheels.

Candidates, in order, each with where it came from (:func:`candidate_paths`):
``CUDA_HOME``, ``CUDA_PATH``, ``/usr/local/cuda``, ``/usr/local/cuda-X.Y`` (newest
first), the folder above the ``nvcc`` on ``PATH``, ``CONDA_PREFIX``. A folder under
wheelcuda's own cache (its trees, whose ``bin/nvcc`` ``wheelcuda env`` puts on PATH) is
no toolkit and is skipped; a folder met twice (``/usr/local/cuda`` is a link to
``cuda-13.0``) is kept once, with its first origin.

Each candidate's version comes from ``version.json`` (``cuda_nvcc.version``, else
``cuda.version``) as NVIDIA's installers write it, else from ``bin/nvcc --version``.
Which candidate fits torch is a pure decision over these facts
(:func:`wheelcuda._sources.local.rules.fit`).

This module reads; it never writes (the shim is the store's).
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable, Sequence

from ... import _proc as proc
from ..._context import Context
from ..._data import catalog
from ..._data import settings as registry
from ..._probe.nvcc import nvcc_environ, parse_banner
from ...errors import ToolError
from .rules import Candidate, major_of

#: Origins, as they are shown to people.
CUDA_HOME, CUDA_PATH, USR_LOCAL_CUDA, PATH, CONDA = (
    "CUDA_HOME", "CUDA_PATH", "/usr/local/cuda", "nvcc on PATH", "CONDA_PREFIX")
#: The explicit origin: a folder the user named (``--toolkit PATH``).
GIVEN = "--toolkit"
#: Origins a person chose by setting them: listed even when they hold no nvcc, so
#: that what is wrong with them can be said.
_CHOSEN = frozenset({CUDA_HOME, CUDA_PATH, GIVEN})

_VERSIONED = re.compile(r"^cuda-(\d+)\.(\d+)$")

#: What a conda environment's ``bin`` holds of CUDA's: only these are taken from it
#: (that ``bin`` also holds python, pip and every other tool of the environment, which
#: must not shadow the target's on a tree's PATH).
CONDA_TOOLS: frozenset[str] = frozenset(
    {"nvcc", "nvcc.profile", "ptxas", "cudafe++", "fatbinary", "nvlink", "bin2c", "crt",
     "__nvcc_device_query", "nvdisasm", "cuobjdump", "nvprune", "cu++filt"}
    | {f.split("/", 1)[1] for c in catalog.COMPILER for m in catalog.MAJORS
       for f in c.files.get(m, ()) if f.startswith("bin/")})

#: Libraries a real toolkit has beyond the wheels' catalog files, that a build links:
#: nvcc links ``-lcudart_static`` by default, relocatable device code ``-lcudadevrt``.
_LINKED = ("lib/libcudart_static.a", "lib/libcudadevrt.a")
#: What must be there before nvcc is asked its version.
_ASK_NVCC = ("bin/nvcc", "bin/nvcc.profile", "nvvm/bin/cicc")


def _under(path: str, folders: Sequence[str]) -> bool:
    real = os.path.realpath(path)
    for folder in folders:
        top = os.path.realpath(folder)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return True
    return False


def _versioned(usr_local: str) -> list[str]:
    """``cuda-X.Y`` folders of ``usr_local``, newest first."""
    try:
        names = os.listdir(usr_local)
    except OSError:
        return []
    found = [(int(m.group(1)), int(m.group(2)), n) for n in names if (m := _VERSIONED.match(n))]
    return [os.path.join(usr_local, n) for _, _, n in sorted(found, reverse=True)]


#: Where toolkits are searched besides CUDA_HOME, CUDA_PATH, PATH and conda: ``cuda``
#: and ``cuda-X.Y`` in this folder (a container may keep them in /opt).
ROOT_VAR = registry.LOCAL_ROOT.name


def candidate_paths(ctx: Context, *, skip: Sequence[str] = (), usr_local: str | None = None
                    ) -> list[tuple[str, str]]:
    """``(origin, folder)`` in order of preference, less those under ``skip`` (wheelcuda's
    cache) and those met before (by resolved path). Reads only names and links."""
    usr_local = usr_local or ctx.get(ROOT_VAR) or "/usr/local"
    out: list[tuple[str, str]] = []
    for var in (CUDA_HOME, CUDA_PATH):
        value = (ctx.get(var) or "").strip()
        if value:
            out.append((var, value))
    if os.path.isdir(os.path.join(usr_local, "cuda")):
        out.append((USR_LOCAL_CUDA, os.path.join(usr_local, "cuda")))
    out += [("/usr/local/cuda-X.Y", p) for p in _versioned(usr_local)]
    nvcc = shutil.which("nvcc", path=ctx.get("PATH") or "")
    if nvcc:
        out.append((PATH, os.path.dirname(os.path.dirname(os.path.realpath(nvcc)))))
    conda = (ctx.get("CONDA_PREFIX") or "").strip()
    if conda:
        out.append((CONDA, conda))
    seen: set[str] = set()
    kept = []
    for origin, given in out:
        path = os.path.abspath(os.path.expanduser(given))
        real = os.path.realpath(path)
        if real in seen or _under(path, skip):
            continue
        seen.add(real)
        kept.append((origin, path))
    return kept


def _read_version_json(path: str) -> dict[str, str]:
    """``name -> version`` of NVIDIA's version.json; empty when absent or unreadable."""
    try:
        with open(os.path.join(path, "version.json"), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: str(v["version"]) for k, v in data.items()
            if isinstance(v, dict) and isinstance(v.get("version"), str)}


def _first_dir(*paths: str) -> str:
    return next((p for p in paths if os.path.isdir(p)), paths[-1])


def _required(major: int | None) -> list[tuple[str, str]]:
    """``(part, relative path)`` of what a whole compiler set holds (the catalog's files
    for ``major``, less the parts' folder names, plus the libraries builds link)."""
    if major not in catalog.MAJORS:
        return []
    files = dict.fromkeys(f for c in catalog.COMPILER for f in c.files[major])
    files.update(dict.fromkeys(_LINKED))
    return [(f.split("/", 1)[0], f.split("/", 1)[1]) for f in files]


def probe(path: str, origin: str, ctx: Context,
          nvcc_version: Callable[[str, Context], str | None] | None = None) -> Candidate:
    """What the toolkit folder ``path`` is (version, parts, completeness)."""
    real = os.path.realpath(path)
    conda = os.path.isdir(os.path.join(real, "conda-meta")) or origin == CONDA
    target = os.path.join(real, "targets", catalog.target_dir())
    bin_dir = os.path.join(real, "bin")
    include = _first_dir(os.path.join(target, "include"), os.path.join(real, "include"))
    lib = _first_dir(os.path.join(target, "lib"), os.path.join(real, "lib64"),
                     os.path.join(real, "lib"))
    nvvm = os.path.join(real, "nvvm")
    info = _read_version_json(real)
    version, version_from = info.get(catalog.NVCC.name) or info.get("cuda"), "version.json"
    # nvcc is asked only where the parts every major needs are there: a folder that
    # only holds an nvcc (``/usr/local`` above a wrapper script) costs no process.
    if version is None and all(os.path.isfile(os.path.join(real, f)) for f in _ASK_NVCC):
        version = (nvcc_version or _nvcc_version)(os.path.join(bin_dir, "nvcc"), ctx)
        version_from = "nvcc --version"
    if version is None:
        version_from = ""
    major = major_of(version)
    where = {"bin": bin_dir, "include": include, "lib": lib, "nvvm": nvvm}
    missing: list[str] = []
    if not os.path.isdir(real):
        missing.append("the folder itself (it is not a folder)")
    elif version is None:
        missing += [f for f in _ASK_NVCC if not os.path.isfile(os.path.join(real, f))] or [
            "a version (no version.json, and `bin/nvcc --version` did not answer)"]
    elif major not in catalog.MAJORS:
        missing.append(f"a CUDA major wheelcuda knows (this is CUDA {version})")
    for part, rel in _required(major):
        full = os.path.join(where[part], rel)
        shown = os.path.relpath(full, real)
        if not os.path.exists(full) and shown not in missing:
            missing.append(shown)
    versions = tuple(sorted((k, v) for k, v in info.items() if k != "cuda"))
    return Candidate(path, real, origin, version, version_from, info.get("cuda"), versions,
                     bin_dir, include, lib, nvvm, conda, tuple(missing))


def _nvcc_version(nvcc: str, ctx: Context) -> str | None:
    """``nvcc --version``'s ``V13.0.88`` (one process, as _probe/nvcc.py reads it)."""
    try:
        banner = parse_banner(proc.capture([nvcc, "--version"], env=nvcc_environ(ctx),
                                           timeout=30))
    except ToolError:
        return None
    return banner[1] if banner else None


def find(ctx: Context, *, skip: Sequence[str] = (), usr_local: str | None = None,
         given: str | None = None) -> list[Candidate]:
    """Every toolkit candidate on this machine, in order (:func:`candidate_paths`), or
    only ``given`` (``--toolkit PATH``). A folder found by searching is listed when it
    holds ``bin/nvcc``; one a person set (CUDA_HOME, CUDA_PATH) when it exists; a given
    one always, so that what is wrong with it can be said."""
    pairs = [(GIVEN, given)] if given else candidate_paths(ctx, skip=skip, usr_local=usr_local)
    out = []
    for origin, path in pairs:
        if not os.path.isdir(path) and origin != GIVEN:
            continue
        if origin not in _CHOSEN and not os.path.isfile(os.path.join(path, "bin", "nvcc")):
            continue
        out.append(probe(path, origin, ctx))
    return out


