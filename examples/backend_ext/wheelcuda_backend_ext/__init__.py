"""out = x + alpha * y computed by a CUDA kernel (float32, float16, bfloat16)."""

import torch

from . import _C  # also registers torch.ops.wheelcuda_backend_ext.scaled_add

__all__ = ["compiled_archs", "scaled_add"]


def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return torch.ops.wheelcuda_backend_ext.scaled_add(x, y, alpha)


def compiled_archs() -> str:
    """The GPU archs the kernels were built for, as nvcc names them: ``"900"``."""
    return _C.compiled_archs()
