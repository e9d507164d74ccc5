"""The wheel cache's key: everything a built binary depends on, as data (pure).

The installers key their own caches by package name, version and source, but NOT by
the installed torch or the build-isolation mode (uv issues 16850 and 3599: a wheel
built against one torch is handed back after torch changed). This key adds what theirs
lacks: torch and its CUDA, the compiler, the arch list and pruning mode, the Python
tag, the C++ ABI, the host compiler and the build variables.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._team import rules_key as sharekey
from . import cxxstd, redact

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


#: a field's metadata: how it is written as data (the default: tuples as lists)
_SHOWN = "shown"
#: a field's metadata: it travels with a shared wheel (:meth:`BuildKey.fields`), and is
#: not part of this machine's :attr:`BuildKey.id`
_TRAVELS = "travels"


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _std_text(std: int | None) -> str:
    return f"raised to c++{std}" if std else "the build's own"


@dataclass(frozen=True)
class BuildKey:
    """Everything a built binary depends on: one value, built once for a run
    (_pipeline/buildplan.py ``build_key``), by install and the backend alike. :attr:`id`
    names the wheel cache's entry; :meth:`shared` is the part that decides whether the
    wheel serves another machine (_team/rules_key.py). ``installer_args`` are the
    arguments after ``--`` (config settings, indexes): they may change the build, except
    :data:`NOT_BUILD_ARGS`. ``host_compiler`` is nvcc's host compiler and its version
    ("gcc 12.2.0"): it compiles the host half of every file. ``cxx_std``: the C++
    standard older ones are raised to (_rules/cxxstd.py), None when not. Packages and
    arguments hold no credential: a token changes no binary (redact.py)."""

    packages: tuple[str, ...]
    torch: str
    torch_cuda: str | None
    compiler: str
    archs: str
    python: str
    cxx11_abi: bool | None
    prune: bool = True
    variables: tuple[tuple[str, str], ...] = field(default=(), metadata={_SHOWN: dict})
    installer_args: tuple[str, ...] = ()
    machine: str = ""
    host_compiler: str = ""
    cxx_std: int | None = field(default=None, metadata={_SHOWN: _std_text})
    names: tuple[str, ...] = ()
    #: the C library the wheel is built against: it travels with the wheel (a newer
    #: glibc's symbols do not load on an older one), not part of this machine's :attr:`id`
    libc: str = field(default="", metadata={_TRAVELS: True})
    #: the compiler as it travels, when it is not the release of ``compiler``: before a
    #: fetch, the release this machine would fetch (sharekey.compiler_release)
    release: str | None = field(default=None, metadata={_TRAVELS: True})
    #: torch's distribution version, where it is not :attr:`torch` (PyPI's torch is
    #: ``2.10.0`` to installers and ``2.10.0+cu128`` to itself): what a wheel variant pins
    #: (_team/rules_variants.py); the same binary either way, so not part of :attr:`id`
    torch_dist: str = field(default="", metadata={_TRAVELS: True})

    def __post_init__(self) -> None:
        object.__setattr__(self, "packages", tuple(redact.args(list(self.packages))))
        object.__setattr__(self, "installer_args", tuple(redact.args(
            [a for a in self.installer_args if a not in NOT_BUILD_ARGS])))
        object.__setattr__(self, "variables", tuple(sorted(dict(self.variables).items())))

    def fields(self) -> dict[str, Any]:
        """The key as data: what the wheel cache records with a build (``build.json``)."""
        return {**self._local(), "libc": self.libc,
                "compiler_release": self.release or sharekey.compiler_release(self.compiler),
                **({"torch_dist": self.torch_dist} if self.torch_dist else {})}

    def _local(self) -> dict[str, Any]:
        """Every field but those that only travel with a wheel, as data: derived from
        the dataclass's fields, so that a new field is in :attr:`id` unless it says not."""
        return {f.name: f.metadata.get(_SHOWN, _plain)(getattr(self, f.name))
                for f in dataclasses.fields(self) if not f.metadata.get(_TRAVELS)}

    @property
    def id(self) -> str:
        """The wheel cache's name for it: ``causal-conv1d-<16 hex>``."""
        return key_id(self._local())

    def label(self) -> str:
        """The key as one line for an installer's own cache (uv-config writes it into a
        package's extra-build-variables, which uv keys its built wheels by, where it does
        not key them by torch: uv issue 16850): what changes a binary, readable first,
        then the digest of every other field; uv keys by the package, its variables and
        the wheel's Python tag itself."""
        mode = f"archs {self.archs}" if self.prune else "all archs"
        rest = dataclasses.replace(self, packages=(), names=(), variables=(),
                                   installer_args=(), python="")
        return (f"torch {self.torch} (CUDA {self.torch_cuda}); "
                f"{compiler_name(self.compiler)}; {mode}; {self.host_compiler}; "
                f"key {rest.id.rsplit('-', 1)[1]}")

    def shared(self) -> dict[str, Any]:
        """The fields that travel with a shared wheel (sharekey.share_fields)."""
        return sharekey.share_fields(self.fields())


def compiler_name(compiler: object) -> str:
    """The key's ``compiler`` as people read it (pure): NVIDIA's nvcc by its version
    (``13.0.88`` -> ``nvcc 13.0.88``), the clang toolkit as it is, less the digest of this
    machine's paths (``clang 22.1.8 + ptxas 12.8.93``)."""
    text = str(compiler or "?")
    if re.fullmatch(r"\d+(\.\d+)+", text):
        return f"nvcc {text}"
    return re.sub(r"\s*\([0-9a-f]{6,}\)$", "", text)


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
    if out.get("CXX"):
        # the compiler the build runs (a tree's host shim set by `eval "$(wheelcuda env)"`
        # is a path of this machine: what it runs is what the binary depends on); plain
        # c++ is what no CXX runs, the same key (install after env found no kept wheel)
        host = cxxstd.host_command(environ)
        if host == ["c++"]:
            del out["CXX"]
        else:
            out["CXX"] = shlex.join(host)
    return out
