"""wheelcuda: a CUDA_HOME made from NVIDIA's pip-installed CUDA wheels.

Public API (see README): :func:`cuda_home`, :func:`build_env`, :func:`inspect`, and the
error types in :mod:`wheelcuda.errors`. They are imported on first use, so that the
``wheelcuda`` command's warm path (:mod:`wheelcuda._entry`) starts as fast as Python does.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing costs milliseconds the warm path does not have
if TYPE_CHECKING:
    from typing import Any

    from .api import Found, build_env, cuda_home, inspect
    from .errors import WheelcudaError

__version__ = "0.1.0"
__all__ = ["Found", "WheelcudaError", "__version__", "build_env", "cuda_home", "inspect"]

_HOMES = {"Found": "api", "build_env": "api", "cuda_home": "api", "inspect": "api",
          "WheelcudaError": "errors"}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
