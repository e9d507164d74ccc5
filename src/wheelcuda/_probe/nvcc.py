"""What an nvcc says of itself: its release and the GPU codes it can build."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .. import _proc as proc
from .._context import Context
from ..errors import ToolError

_RELEASE = re.compile(r"release (\d+\.\d+), V([\d.]+)")
#: The clang toolkit's nvcc says what compiles (_clang_nvcc._version_text).
_CLANG = re.compile(r"wheelcuda_clang_([\w.]+)/ptxas_([\w.]+)(?:/(\w+))?")


def nvcc_environ(ctx: Context) -> dict[str, str]:
    """The environment nvcc is asked questions in: the user's extra flags left out."""
    env = proc.child_environ(ctx.environ)
    for var in ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        env.pop(var, None)
    return env


def parse_banner(text: str) -> tuple[str, str] | None:
    """``("13.0", "13.0.88")`` from ``nvcc --version``'s ``release 13.0, V13.0.88``."""
    m = _RELEASE.search(text)
    return (m.group(1), m.group(2)) if m else None


def probe_nvcc(nvcc: Path, ctx: Context) -> dict[str, Any]:
    """``nvcc_release``, ``nvcc_version`` and ``gpu_codes`` of ``nvcc``; raises
    :class:`ToolError` when it does not run or does not answer like nvcc."""
    env = nvcc_environ(ctx)
    text = proc.capture([str(nvcc), "--version"], env=env)
    banner = parse_banner(text)
    if not banner:
        raise ToolError(f"{nvcc} --version printed no 'release X.Y, VX.Y.Z' line:\n{text}")
    codes = proc.capture([str(nvcc), "--list-gpu-code"], env=env).split()
    clang = _CLANG.search(text)
    compiler = (f"clang {clang.group(1)} + ptxas {clang.group(2)}"
                + (f" ({clang.group(3)})" if clang and clang.group(3) else "")
                if clang else banner[1])
    return {"nvcc_release": banner[0], "nvcc_version": banner[1], "gpu_codes": codes,
            "compiler": compiler}
