"""out = x + alpha * y computed by a CUDA kernel (float32, float16, bfloat16)."""

import torch

from . import _C  # noqa: F401  registers torch.ops.wheelcuda_demo.scaled_add


def scaled_add(x: torch.Tensor, y: torch.Tensor, alpha: float) -> torch.Tensor:
    return torch.ops.wheelcuda_demo.scaled_add(x, y, alpha)
