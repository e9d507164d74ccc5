"""wheelcuda: a CUDA_HOME made from NVIDIA's pip-installed CUDA wheels.

Public API (see README): :func:`cuda_home`, :func:`build_env`, :func:`inspect`, and the
error types in :mod:`wheelcuda.errors`.
"""

from __future__ import annotations

from .api import Setup, build_env, cuda_home, inspect
from .errors import WheelcudaError

__version__ = "0.1.0"
__all__ = ["Setup", "WheelcudaError", "__version__", "build_env", "cuda_home", "inspect"]
