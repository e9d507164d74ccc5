"""Which installer runs, and the argument lists it gets (argv building is pure).

uv is what our users run: ``uv pip install --no-build-isolation --python TARGET``.
Without uv, ``TARGET -m pip install --no-build-isolation`` (pip installs into the
interpreter it runs in). ``WHEELCUDA_INSTALLER=uv|pip`` forces one.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .errors import ToolError

ENV_VAR = "WHEELCUDA_INSTALLER"


@dataclass(frozen=True)
class Tool:
    name: str  # "uv" or "pip"
    command: tuple[str, ...]  # how to start it; empty for pip (the target's own python)


def _uv_binary() -> str | None:
    found = shutil.which("uv")
    if found:
        return found
    try:  # the uv wheel, installed beside wheelcuda (e.g. `uv tool install wheelcuda`)
        from uv import find_uv_bin  # noqa: PLC0415
    except ImportError:
        return None
    try:
        return str(find_uv_bin())
    except FileNotFoundError:
        return None


def choose(environ: Mapping[str, str] | None = None) -> Tool:
    """uv when it is there (or forced), else pip."""
    environ = os.environ if environ is None else environ
    wanted = environ.get(ENV_VAR, "").strip().lower()
    if wanted not in ("", "uv", "pip"):
        raise ToolError(f"{ENV_VAR}={wanted!r} is not an installer", f"set {ENV_VAR}=uv or pip")
    if wanted != "pip":
        uv = _uv_binary()
        if uv:
            return Tool("uv", (uv,))
        if wanted == "uv":
            raise ToolError(f"{ENV_VAR}=uv but uv was not found on PATH", "pip install uv")
    return Tool("pip", ())


def install_argv(tool: Tool, python: str, packages: Sequence[str], extra: Sequence[str]
                 ) -> list[str]:
    """``--no-build-isolation`` so the build uses the environment's own torch (pure)."""
    if tool.name == "uv":
        return [*tool.command, "pip", "install", "--no-build-isolation", "--python", python,
                *packages, *extra]
    return [python, "-m", "pip", "install", "--no-build-isolation", *packages, *extra]


def target_argv(tool: Tool, requirements: Sequence[str], target: str, python: str
                ) -> list[str]:
    """Install ``requirements`` into a plain folder (the toolkit store) (pure)."""
    if tool.name == "uv":
        return [*tool.command, "pip", "install", "--quiet", "--target", target, "--python",
                python, *requirements]
    return [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
            "--no-warn-script-location", "--target", target, *requirements]
