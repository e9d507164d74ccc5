"""mamba-ssm's selective scan (the built CUDA kernels) against the package's own
reference, ``selective_scan_ref``, forward and backward.

mamba_ssm's ``__init__`` imports its models (transformers, tilelang, ...), which a
kernel check does not need: the package is entered without running it. Run on a GPU
after `wheelcuda install mamba-ssm`; exits 1 if an error is above its tolerance.
"""

from __future__ import annotations

import importlib.util
import sys
import types

import torch

spec = importlib.util.find_spec("mamba_ssm")
assert spec is not None and spec.submodule_search_locations is not None
package = types.ModuleType("mamba_ssm")
package.__path__ = list(spec.submodule_search_locations)
sys.modules["mamba_ssm"] = package

from mamba_ssm.ops.selective_scan_interface import (  # noqa: E402
    selective_scan_fn,
    selective_scan_ref,
)

TOLERANCE = {torch.float32: 1e-3, torch.bfloat16: 3e-2}
SHAPES = [(2, 64, 128, 16), (2, 256, 1024, 16)]  # batch, dim, length, state


def worst(dtype: torch.dtype, batch: int, dim: int, length: int, state: int
          ) -> tuple[float, float]:
    u = torch.randn(batch, dim, length, device="cuda", dtype=dtype, requires_grad=True)
    delta = (0.5 * torch.rand(batch, dim, length, device="cuda", dtype=dtype)
             ).requires_grad_()
    a = (-0.5 * torch.rand(dim, state, device="cuda")).requires_grad_()
    b = torch.randn(batch, state, length, device="cuda", dtype=dtype, requires_grad=True)
    c = torch.randn(batch, state, length, device="cuda", dtype=dtype, requires_grad=True)
    d = torch.randn(dim, device="cuda", requires_grad=True)
    z = torch.randn(batch, dim, length, device="cuda", dtype=dtype, requires_grad=True)
    args = (u, delta, a, b, c, d, z)
    out = selective_scan_fn(*args, delta_softplus=True)
    leaves = [t.detach().float().requires_grad_() for t in args]
    want = selective_scan_ref(*leaves, delta_softplus=True)
    forward = float((out.float() - want).abs().max() / want.abs().max())
    grad = torch.randn_like(want)
    got = torch.autograd.grad(out, args, grad.to(out.dtype))
    ref = torch.autograd.grad(want, leaves, grad)
    backward = max(float((g.float() - r).abs().max() / r.abs().max())
                   for g, r in zip(got, ref, strict=True))
    return forward, backward


def main() -> int:
    torch.manual_seed(0)
    failed = False
    for dtype, tol in TOLERANCE.items():
        for shape in SHAPES:
            forward, backward = worst(dtype, *shape)
            ok = forward <= tol and backward <= 5 * tol
            failed |= not ok
            print(f"{str(dtype):15} shape {shape}: max relative error forward {forward:.2e}, "
                  f"backward {backward:.2e} ({'ok' if ok else 'ABOVE'} {tol:g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
