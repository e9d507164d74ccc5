"""causal_conv1d_fn (the built CUDA kernels) against the package's own reference.

Run on a GPU after `wheelcuda install causal-conv1d`; prints the largest relative
error per dtype and shape and exits 1 if one is above its tolerance.
"""

from __future__ import annotations

import sys

import torch
from causal_conv1d import causal_conv1d_fn
from causal_conv1d.causal_conv1d_interface import causal_conv1d_ref

TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 2e-2}
SHAPES = [(1, 64, 128, 4), (2, 256, 1024, 4), (4, 512, 2048, 3), (2, 1024, 4096, 2)]


def worst(dtype: torch.dtype, batch: int, dim: int, length: int, width: int) -> float:
    x = torch.randn(batch, dim, length, device="cuda", dtype=dtype)
    weight = torch.randn(dim, width, device="cuda", dtype=dtype)
    bias = torch.randn(dim, device="cuda", dtype=dtype)
    got = causal_conv1d_fn(x, weight, bias, activation="silu").float()
    want = causal_conv1d_ref(x.float(), weight.float(), bias.float(), activation="silu")
    return float(((got - want).abs() / (want.abs() + 1e-2)).max())


def main() -> int:
    torch.manual_seed(0)
    failed = False
    print(f"GPU: {torch.cuda.get_device_name()} (sm_{''.join(map(str, torch.cuda.get_device_capability()))})")
    for dtype, tol in TOLERANCE.items():
        for shape in SHAPES:
            err = worst(dtype, *shape)
            ok = err <= tol
            failed |= not ok
            print(f"{str(dtype):15} shape {shape}: max relative error {err:.2e} "
                  f"({'ok' if ok else 'ABOVE'} {tol:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
