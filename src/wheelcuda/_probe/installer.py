"""Which installer runs: uv when it is there (or forced), else pip.

``WHEELCUDA_INSTALLER=uv|pip`` forces one. uv is looked for on PATH, then as the uv
wheel installed beside wheelcuda (``uv tool install wheelcuda`` brings it).
"""

from __future__ import annotations

import os
import shutil

from .. import _proc as proc
from .._context import Context
from .._data import settings as registry
from .._rules import settings_read
from .._rules.installer import Pip, Tool, Uv
from ..errors import ToolError, WheelcudaError

ENV_VAR = registry.INSTALLER.name


def _uv_binary(path: str) -> str | None:
    found = shutil.which("uv", path=path)
    if found:
        return found
    try:
        from uv import find_uv_bin  # noqa: PLC0415 (optional)
    except ImportError:
        return None
    try:
        return str(find_uv_bin())
    except FileNotFoundError:
        return None


def choose(ctx: Context) -> Tool:
    """uv when it is there (or forced), else pip."""
    wanted = settings_read.read(registry.INSTALLER, ctx.environ).text
    if wanted != "pip":
        uv = _uv_binary(ctx.get("PATH") or os.defpath)
        if uv:
            return Uv((uv,))
        if wanted == "uv":
            raise ToolError(f"{ENV_VAR}=uv but uv was not found on PATH", "pip install uv")
    return Pip()


def uv_version(ctx: Context) -> tuple[str, str] | None:
    """(path, version) of the uv that would run, from ``uv --version``; None when there
    is no uv, or it does not answer."""
    uv = _uv_binary(ctx.get("PATH") or os.defpath)
    if not uv:
        return None
    try:
        words = proc.capture([uv, "--version"], env=ctx.environ, timeout=30).split()
    except WheelcudaError:
        return None
    return (uv, words[1]) if len(words) > 1 else None
