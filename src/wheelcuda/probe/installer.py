"""Which installer runs: uv when it is there (or forced), else pip.

``WHEELCUDA_INSTALLER=uv|pip`` forces one. uv is looked for on PATH, then as the uv
wheel installed beside wheelcuda (``uv tool install wheelcuda`` brings it).
"""

from __future__ import annotations

import os
import shutil

from ..context import Context
from ..errors import ToolError
from ..rules.installer import Tool

__all__ = ["ENV_VAR", "choose"]

ENV_VAR = "WHEELCUDA_INSTALLER"


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
    wanted = (ctx.get(ENV_VAR) or "").strip().lower()
    if wanted not in ("", "uv", "pip"):
        raise ToolError(f"{ENV_VAR}={wanted!r} is not an installer", f"set {ENV_VAR}=uv or pip")
    if wanted != "pip":
        uv = _uv_binary(ctx.get("PATH") or os.defpath)
        if uv:
            return Tool("uv", (uv,))
        if wanted == "uv":
            raise ToolError(f"{ENV_VAR}=uv but uv was not found on PATH", "pip install uv")
    return Tool("pip", ())
