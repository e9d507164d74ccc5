"""torch's version, CUDA version, C++ ABI and CUDA pins, read without importing torch.

Importing torch costs seconds and may fail for reasons unrelated to the build; its
files tell us all we need: ``torch/version.py`` (``__version__``, ``cuda``), the
distribution metadata (the ``cuda-toolkit==X`` pin torch's CUDA wheels require), and
``libc10.so`` (``__cxx11`` symbols mean the new C++ ABI).
"""

from __future__ import annotations

import ast
import mmap
import os
from collections.abc import Sequence
from importlib import metadata

from packaging.requirements import InvalidRequirement, Requirement

from .._data import catalog
from .._rules import cxxstd
from .._values import Torch


def parse_version_py(text: str) -> dict[str, str | None]:
    """Literal assignments of torch/version.py (``__version__``, ``cuda``, ...) (pure)."""
    values: dict[str, str | None] = {}
    for node in ast.parse(text).body:
        assign = isinstance(node, ast.Assign)
        target = node.targets[0] if assign else getattr(node, "target", None)  # type: ignore[attr-defined]
        value = getattr(node, "value", None)
        if (isinstance(target, ast.Name) and isinstance(value, ast.Constant)
                and (value.value is None or isinstance(value.value, str))):
            values[target.id] = value.value
    return values


def toolkit_pin(requires: Sequence[str]) -> str | None:
    """The specifier of the ``cuda-toolkit`` requirement among ``requires`` (pure)."""
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        if req.name == catalog.METAPACKAGE and str(req.specifier):
            return str(req.specifier)
    return None


def find_torch(roots: Sequence[str]) -> Torch | None:
    """torch in the first root that holds ``torch/version.py``; None when absent."""
    for root in roots:
        version_py = os.path.join(root, "torch", "version.py")
        if not os.path.isfile(version_py):
            continue
        with open(version_py, encoding="utf-8") as f:
            values = parse_version_py(f.read())
        requires: list[str] = []
        for dist in metadata.distributions(name="torch", path=[root]):
            requires = list(dist.requires or [])
            break
        return Torch(
            version=values.get("__version__") or "unknown",
            cuda=values.get("cuda"),
            path=os.path.dirname(version_py),
            toolkit_pin=toolkit_pin(requires),
            requires=tuple(requires),
        )
    return None


def cxx11_abi(torch: Torch) -> bool | None:
    """Whether torch was built with ``_GLIBCXX_USE_CXX11_ABI=1``; None when unknown.

    libc10.so exports functions taking ``std::string``; under the new ABI their
    mangled names hold ``St7__cxx11``. Reading it costs about a millisecond.
    """
    lib = os.path.join(torch.path, "lib", "libc10.so")
    try:
        with open(lib, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return m.find(b"St7__cxx11") >= 0
    except (OSError, ValueError):
        return None


def cxx_standard(torch: Torch) -> int | None:
    """The C++ standard torch's headers need (``ATen/ATen.h``'s ``__cplusplus`` check:
    _rules/cxxstd.py), else by its version when they cannot be read."""
    for rel in ("include/ATen/ATen.h", "include/torch/csrc/api/include/torch/all.h"):
        try:
            with open(os.path.join(torch.path, rel), encoding="utf-8", errors="replace") as f:
                found = cxxstd.from_header(f.read(4096))
        except OSError:
            continue
        if found:
            return found
    return cxxstd.from_version(torch.version)
