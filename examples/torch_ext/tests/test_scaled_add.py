"""The extension against plain torch. Needs a GPU; run by `make demo` when one is there."""

import pytest
import torch

import wheelcuda_demo

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.parametrize(("dtype", "tol"), [(torch.float32, 1e-6), (torch.float16, 1e-3),
                                            (torch.bfloat16, 1e-2)])
@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_matches_torch(dtype: torch.dtype, tol: float, n: int) -> None:
    x = torch.randn(n, device="cuda", dtype=dtype)
    y = torch.randn(n, device="cuda", dtype=dtype)
    got = wheelcuda_demo.scaled_add(x, y, 0.5)
    want = (x.float() + 0.5 * y.float()).to(dtype)
    torch.testing.assert_close(got, want, rtol=tol, atol=tol)
