"""The backend's inputs: the ``wheelcuda.*`` config settings a frontend passes
(``-C wheelcuda.arch=9.0``), what it reads of the project's pyproject.toml (``[project]
name``, ``[tool.wheelcuda] build-backend``), and the backend it wraps, imported."""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import WheelcudaError

#: The config settings of ours: ``-C wheelcuda.arch=9.0``.
PREFIX = "wheelcuda."
SETTINGS = ("arch", "all-archs", "build-backend", "toolkit")
DEFAULT_BACKEND = "setuptools.build_meta"
#: The backend users name in [build-system]: it cannot wrap itself.
_SELF = "wheelcuda.build_meta"

_SETTINGS_FIX = ("wheelcuda takes -C wheelcuda.arch=9.0, -C wheelcuda.all-archs=true, "
                 "-C wheelcuda.toolkit=auto|wheels|local|redist|clang|PATH and "
                 "-C wheelcuda.build-backend=MODULE")
_BACKEND_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*)?$")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


@dataclass(frozen=True)
class Config:
    """The ``wheelcuda.*`` config settings, and the rest, handed to the inner backend."""

    arch: str | None = None
    all_archs: bool = False
    backend: str | None = None
    inner: dict[str, Any] | None = None
    #: where the compiler comes from, as ``--toolkit`` (None: WHEELCUDA_TOOLKIT, else auto)
    toolkit: str | None = None


def parse_config(settings: Mapping[str, Any] | None) -> Config:
    """Our settings out of the frontend's (pure). A setting given twice (pip's ``-C``
    repeated) arrives as a list: archs are joined, otherwise the last one wins."""
    if settings is None:
        return Config()
    ours: dict[str, Any] = {}
    inner: dict[str, Any] = {}
    for key, value in settings.items():
        if key.startswith(PREFIX):
            ours[key[len(PREFIX):]] = value
        else:
            inner[key] = value
    unknown = sorted(set(ours) - set(SETTINGS))
    if unknown:
        raise WheelcudaError(f"unknown config setting {PREFIX}{unknown[0]}", _SETTINGS_FIX)
    arch = ours.get("arch")
    if isinstance(arch, list):
        arch = ";".join(str(a) for a in arch)
    backend = _last(ours.get("build-backend"))
    return Config(arch=None if arch is None else str(arch),
                  all_archs=_switch(_last(ours.get("all-archs"))),
                  backend=backend or None, inner=inner,
                  toolkit=_last(ours.get("toolkit")) or None)


def _last(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[-1] if value else None
    return None if value is None else str(value)


def _switch(value: str | None) -> bool:
    if value is None:
        return False
    if value.strip().lower() in _TRUE:
        return True
    if value.strip().lower() in _FALSE:
        return False
    raise WheelcudaError(f"-C wheelcuda.all-archs={value!r} is neither true nor false",
                         "-C wheelcuda.all-archs=true (keep the project's own archs) or leave "
                         "it out (build only the archs given)")


@dataclass(frozen=True)
class Project:
    """What this backend reads of the project's pyproject.toml."""

    name: str | None = None
    backend: str | None = None


def read_project(folder: str) -> Project:
    """``[project] name`` and ``[tool.wheelcuda] build-backend`` (tomlkit)."""
    path = os.path.join(folder, "pyproject.toml")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return Project()
    except OSError as exc:
        raise WheelcudaError(f"cannot read {path}: {exc.strerror or exc}") from None
    import tomlkit  # noqa: PLC0415 (only the backend reads TOML)

    try:
        doc = tomlkit.parse(text).unwrap()
    except Exception as exc:  # tomlkit's ParseError and friends
        raise WheelcudaError(f"cannot read {path}: {exc}", "correct its TOML syntax") from None
    tool = doc.get("tool")
    ours = tool.get("wheelcuda") if isinstance(tool, dict) else None
    backend = ours.get("build-backend") if isinstance(ours, dict) else None
    if backend is not None and not isinstance(backend, str):
        raise WheelcudaError(f"[tool.wheelcuda] build-backend in {path} is not a string",
                             'build-backend = "setuptools.build_meta" (a module, or '
                             'module:object, as in [build-system])')
    project = doc.get("project")
    name = project.get("name") if isinstance(project, dict) else None
    return Project(name if isinstance(name, str) else None, backend)


def backend_name(config: Config, project: Project) -> str:
    return config.backend or project.backend or DEFAULT_BACKEND


def load_backend(name: str) -> Any:
    """The wrapped backend: a module, or ``module:object`` as ``build-backend`` takes."""
    if not _BACKEND_NAME.match(name):
        raise WheelcudaError(f"{name!r} is not a build backend name",
                             "name a module (or module:object), as [build-system] "
                             "build-backend does: setuptools.build_meta, scikit_build_core.build")
    module, _, attrs = name.partition(":")
    if module == _SELF:
        raise WheelcudaError(f"{name} is wheelcuda's own backend: it cannot wrap itself",
                             "name the backend it wraps in [tool.wheelcuda] build-backend "
                             f"(default {DEFAULT_BACKEND})")
    where = ("set by -C wheelcuda.build-backend or [tool.wheelcuda] build-backend in "
             "pyproject.toml; the default is " + DEFAULT_BACKEND)
    try:
        backend: Any = importlib.import_module(module)
        for attr in filter(None, attrs.split(".")):
            backend = getattr(backend, attr)
    except (ImportError, AttributeError) as exc:
        top = module.split(".")[0]
        raise WheelcudaError(
            f"cannot import the build backend {name} ({type(exc).__name__}: {exc})",
            f"add the package that provides {top} to [build-system] requires in "
            f"pyproject.toml, or correct the name ({where})") from None
    return backend

