"""torch as a uv project's lock file pins it, for settings written before ``uv sync``.

``uv.lock`` names torch's version and, through the packages torch depends on, its CUDA:
a cu13 torch from PyPI requires ``cuda-toolkit[...]==13.0.3`` (the pin wheelcuda fetches
the compiler by, as for an installed torch); a cu12 one ``nvidia-cuda-runtime-cu12``;
a torch from PyTorch's own index carries it in its local version (``2.9.1+cu128``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import tomlkit
from tomlkit.exceptions import ParseError

from .._data import catalog
from .._values import Torch
from ..errors import ConfigError
from .source import find_up

LOCK = "uv.lock"


def find_lock(cwd: str) -> str | None:
    """The uv.lock of the project ``cwd`` is in (this folder or a parent)."""
    return find_up(cwd, LOCK)


def torch_of_cuda(cuda: str) -> Torch:
    """A stand-in torch known only by its CUDA (``--cuda 13.0``)."""
    if not re.fullmatch(r"\d+\.\d+", cuda.strip()):
        raise ConfigError(f"--cuda {cuda!r} is not a CUDA version",
                          "give major.minor, as torch.version.cuda says it: --cuda 13.0")
    return Torch(version="(not installed)", cuda=cuda.strip(), path="", toolkit_pin=None)


def read_lock(path: str) -> dict[str, Any]:
    """A uv.lock as plain data."""
    try:
        with open(path, encoding="utf-8") as f:
            doc: dict[str, Any] = tomlkit.parse(f.read()).unwrap()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}", "check the file") from None
    except ParseError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc})",
                          "run `uv lock` to write it again") from None
    return doc


def torch_from_lock(path: str) -> Torch | None:
    """torch as ``path`` (a uv.lock) pins it; None when the lock has no torch."""
    return parse_lock(read_lock(path).get("package", []))


def torch_registry(doc: Mapping[str, Any]) -> str | None:
    """The index a lock took torch from (``source = { registry = URL }``), if one."""
    torches = [p for p in doc.get("package", []) or []
               if isinstance(p, Mapping) and p.get("name") == "torch"]
    if not torches:
        return None
    found = _for_this_machine(torches).get("source")
    return str(found["registry"]) if isinstance(found, Mapping) and found.get("registry") \
        else None


def parse_lock(packages: Sequence[Mapping[str, Any]]) -> Torch | None:
    """torch among the lock's packages (pure)."""
    by_name: dict[str, list[Mapping[str, Any]]] = {}
    for p in packages:
        by_name.setdefault(str(p.get("name", "")), []).append(p)
    torches = by_name.get("torch", [])
    if not torches:
        return None
    torch = _for_this_machine(torches)
    version = str(torch.get("version", ""))
    deps = {str(d.get("name")) for d in torch.get("dependencies", []) if isinstance(d, Mapping)}
    pin = None
    cuda = None
    if catalog.METAPACKAGE in deps:
        toolkit = _version(by_name, catalog.METAPACKAGE)
        if toolkit:
            pin = f"=={toolkit}"
            cuda = ".".join(toolkit.split(".")[:2])
    local = re.search(r"\+cu(\d+)(\d)$", version)
    if cuda is None and local:
        cuda = f"{local.group(1)}.{local.group(2)}"
    if cuda is None:
        for dep in sorted(deps):
            m = re.fullmatch(r"nvidia-cuda-runtime(?:-cu(\d+))?", dep)
            runtime = _version(by_name, dep) if m else None
            if runtime:
                cuda = ".".join(runtime.split(".")[:2])
                break
    requires = tuple(f"{d}=={v}" for d in sorted(deps) if (v := _version(by_name, d)))
    return Torch(version=version or "unknown", cuda=cuda, path="", toolkit_pin=pin,
                 requires=requires)


def _version(by_name: Mapping[str, list[Mapping[str, Any]]], name: str) -> str | None:
    entries = by_name.get(name, [])
    return str(entries[0].get("version")) if entries and entries[0].get("version") else None


def _for_this_machine(torches: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    """The torch entry with a Linux wheel for this machine when the lock forks (CPU for
    macOS, CUDA for Linux), else the first."""
    import platform  # noqa: PLC0415

    arch = platform.machine()
    for t in torches:
        urls = [str(w.get("url", "")) for w in t.get("wheels", []) if isinstance(w, Mapping)]
        if any("linux" in u and arch in u for u in urls):
            return t
    return torches[0]
