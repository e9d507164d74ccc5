"""causal_conv1d_fn (the built CUDA kernels) against the package's own reference,
forward and backward (the backward kernels are causal_conv1d_bwd.cu, the file that
wheelcuda's --split-compile speeds up).

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


def worst(dtype: torch.dtype, batch: int, dim: int, length: int, width: int
          ) -> tuple[float, float]:
    """(forward error, backward error): the largest relative error of the output, and
    of the gradients of x, weight and bias relative to each one's largest value."""
    x = torch.randn(batch, dim, length, device="cuda", dtype=dtype, requires_grad=True)
    weight = torch.randn(dim, width, device="cuda", dtype=dtype, requires_grad=True)
    bias = torch.randn(dim, device="cuda", dtype=dtype, requires_grad=True)
    out = causal_conv1d_fn(x, weight, bias, activation="silu")
    leaves = [t.detach().float().requires_grad_() for t in (x, weight, bias)]
    want = causal_conv1d_ref(*leaves, activation="silu")
    forward = float(((out.float() - want).abs() / (want.abs() + 1e-2)).max())
    grad = torch.randn_like(want)
    got = torch.autograd.grad(out, (x, weight, bias), grad.to(dtype))
    ref = torch.autograd.grad(want, leaves, grad)
    backward = max(float((g.float() - r).abs().max() / r.abs().max())
                   for g, r in zip(got, ref, strict=True))
    return forward, backward


def main() -> int:
    torch.manual_seed(0)
    failed = False
    print(f"GPU: {torch.cuda.get_device_name()} (sm_{''.join(map(str, torch.cuda.get_device_capability()))})")
    for dtype, tol in TOLERANCE.items():
        for shape in SHAPES:
            forward, backward = worst(dtype, *shape)
            ok = forward <= tol and backward <= tol
            failed |= not ok
            print(f"{str(dtype):15} shape {shape}: max relative error forward {forward:.2e}, "
                  f"backward {backward:.2e} ({'ok' if ok else 'ABOVE'} {tol:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
