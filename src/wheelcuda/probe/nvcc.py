"""What an nvcc says of itself: its release and the GPU codes it can build."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .. import proc
from ..context import Context
from ..errors import ToolError

__all__ = ["probe_nvcc"]

_RELEASE = re.compile(r"release (\d+\.\d+), V([\d.]+)")


def probe_nvcc(nvcc: Path, ctx: Context) -> dict[str, Any]:
    """``nvcc_release``, ``nvcc_version`` and ``gpu_codes`` of ``nvcc``; raises
    :class:`ToolError` when it does not run or does not answer like nvcc."""
    env = proc.child_environ(ctx.environ)
    for var in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        env.pop(var, None)
    text = proc.capture([str(nvcc), "--version"], env=env)
    m = _RELEASE.search(text)
    if not m:
        raise ToolError(f"{nvcc} --version printed no 'release X.Y, VX.Y.Z' line:\n{text}")
    codes = proc.capture([str(nvcc), "--list-gpu-code"], env=env).split()
    return {"nvcc_release": m.group(1), "nvcc_version": m.group(2), "gpu_codes": codes}
