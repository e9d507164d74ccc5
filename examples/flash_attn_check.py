"""flash_attn_func (the built CUDA kernels) against torch's own attention, forward and
backward, fp16 and bf16, head dims 64 and 128, causal and not.

Run on a GPU after `wheelcuda install flash-attn`; prints the largest error per case
(relative to the reference's largest value) and exits 1 if one is above its tolerance.
The reference runs in fp32 from the same inputs.
"""

from __future__ import annotations

import sys

import torch
import torch.nn.functional as F
from flash_attn import flash_attn_func

TOLERANCE = {torch.float16: 5e-3, torch.bfloat16: 3e-2}


def _relative(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.float() - want).abs().max() / want.abs().max().clamp_min(1e-6))


def worst(dtype: torch.dtype, hdim: int, causal: bool) -> tuple[float, float]:
    """(forward error, backward error) for batch 2, 8 heads, 512 tokens."""
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 512, 8, hdim, device="cuda", dtype=dtype, requires_grad=True)
               for _ in range(3))
    out = flash_attn_func(q, k, v, causal=causal)
    grad = torch.randn_like(out)
    out.backward(grad)
    leaves = [t.detach().float().requires_grad_() for t in (q, k, v)]
    # torch's layout is (batch, heads, tokens, dim)
    want = F.scaled_dot_product_attention(*(t.transpose(1, 2) for t in leaves),
                                          is_causal=causal).transpose(1, 2)
    want.backward(grad.float())
    forward = _relative(out, want.detach())
    backward = max(_relative(t.grad, ref.grad) for t, ref in zip((q, k, v), leaves,
                                                                  strict=True))
    return forward, backward


def main() -> int:
    bad = 0
    for dtype in (torch.float16, torch.bfloat16):
        for hdim in (64, 128):
            for causal in (False, True):
                fwd, bwd = worst(dtype, hdim, causal)
                ok = max(fwd, bwd) <= TOLERANCE[dtype]
                bad += not ok
                print(f"{'ok ' if ok else 'BAD'} {dtype!s:15} hdim {hdim:3} "
                      f"causal {causal!s:5}  fwd {fwd:.1e}  bwd {bwd:.1e}")
    print(f"flash_attn {'matches' if not bad else 'DOES NOT match'} torch's attention "
          f"({8 - bad} of 8 cases)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
