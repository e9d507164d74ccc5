"""The wheel cache's key: everything a built binary depends on, as data (pure).

The installers key their own caches by package name, version and source, but NOT by
the installed torch or the build-isolation mode (uv issues 16850 and 3599: a wheel
built against one torch is handed back after torch changed). This key adds what theirs
lacks: torch and its CUDA, the compiler, the arch list and pruning mode, the Python
tag, the C++ ABI, the host compiler and the build variables.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

from . import redact
from .cxxstd import REAL_CXX_VAR
from .tree import HOST_SHIM

__all__ = ["BUILD_VARIABLES", "NOT_BUILD_ARGS", "build_variables", "exact", "key_fields",
           "key_id"]

#: Variables that change what a build produces, beyond the package's own recipe.
BUILD_VARIABLES = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "CFLAGS", "CXXFLAGS",
                   "LDFLAGS", "NVCC_CCBIN", "CC", "CXX", "CUDAHOSTCXX", "TORCH_NVCC_FLAGS",
                   "PYTORCH_NVCC", "CMAKE_ARGS", "NVCC_FLAGS", "NVCC_THREADS")


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
               host_compiler: str = "", cxx_std: int | None = None) -> dict[str, Any]:
    """Everything the built binary depends on, as data (pure). ``installer_args`` are
    the arguments after ``--`` (config settings, indexes): they may change the build,
    except :data:`NOT_BUILD_ARGS`. ``host_compiler`` is nvcc's host compiler and its
    version ("gcc 12.2.0"): it compiles the host half of every file. ``cxx_std``: the
    C++ standard older ones are raised to (rules/cxxstd.py), None when not."""
    # the key and build.json hold no credential: a token changes no binary (redact.py)
    return {"packages": redact.args(packages), "torch": torch, "torch_cuda": torch_cuda,
            "compiler": compiler, "archs": archs, "prune": prune, "python": python_tag,
            "cxx11_abi": cxx11_abi, "variables": dict(sorted(variables.items())),
            "installer_args": redact.args([a for a in installer_args
                                           if a not in NOT_BUILD_ARGS]),
            "machine": machine, "host_compiler": host_compiler,
            "cxx_std": f"raised to c++{cxx_std}" if cxx_std else "the build's own"}


def key_id(fields: Mapping[str, Any]) -> str:
    """``causal-conv1d-<16 hex>``: readable, and unique per field set (pure)."""
    digest = hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:16]
    names = [n for n in fields.get("names", []) if n]
    label = (names or fields["packages"] or ["build"])[0]
    first = re.sub(r"[^A-Za-z0-9._-]+", "_", os.path.basename(str(label).rstrip("/")))[:40]
    return f"{first}-{digest}"


def exact(spec: str) -> bool:
    """A source that always builds the same thing: a folder, a file, or ``name==version``."""
    return os.path.exists(spec) or bool(re.match(r"^[A-Za-z0-9._-]+(\[[^\]]*\])?==[^*,;]+$",
                                                 spec.strip()))


def build_variables(recipe: Mapping[str, str], environ: Mapping[str, str],
                    prefixes: Sequence[str] = ()) -> dict[str, str]:
    """The variables that enter the key (pure): the recipe's (the user's value if they
    set it), every variable the user set under the packages' own prefixes (say
    CAUSAL_CONV1D_SKIP_CUDA_BUILD), and the general compiler flags."""
    out = {k: environ.get(k, v) for k, v in recipe.items() if k != "MAX_JOBS"}
    out.update({k: v for k, v in environ.items() if prefixes and k.startswith(tuple(prefixes))})
    out.update({k: environ[k] for k in BUILD_VARIABLES if environ.get(k)})
    if out.get("CXX", "").endswith("/" + HOST_SHIM):
        # `eval "$(wheelcuda env)"` set CXX to a tree's host shim (a path of this machine):
        # the compiler it runs is what the binary depends on
        out["CXX"] = environ.get(REAL_CXX_VAR) or "c++"
    return out
