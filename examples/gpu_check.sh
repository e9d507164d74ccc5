#!/bin/sh
# What ran on the GPU machine (one H200, no network; see ../shared/GPU.md), with its
# system toolkit hidden and the environment scrubbed:
#   doctor (GPU detection), install the example and test it against torch, then
#   install causal-conv1d from its sdist and check it against its reference.
# The compiler wheels and the sdist come from WHEELS (carried there), fetched by
# wheelcuda into its store offline through UV_FIND_LINKS.
#   usage: examples/gpu_check.sh REPO PYTHON WHEELS [STEP: example|causal]
set -e
repo=$1; py=$2; wheels=$3; step=${4:-example}
w="$py -m wheelcuda"
export PYTHONPATH="$repo/src" UV_OFFLINE=1 UV_FIND_LINKS="$wheels" WHEELCUDA_INSTALLER=uv
test ! -e /usr/local/cuda/bin/nvcc || { echo "system toolkit still visible" >&2; exit 99; }
command -v nvcc && { echo "an nvcc is on PATH" >&2; exit 99; }
if [ "$step" = example ]; then
    $w doctor || true
    work=$(mktemp -d)
    cp -r "$repo/examples/torch_ext" "$work/"
    DEMO_GENCODE="80;90;100;120" $w install "$work/torch_ext"
    (cd / && $py -c "
import torch, wheelcuda_demo
for dtype in (torch.float32, torch.float16, torch.bfloat16):
    for n in (1, 1000, 1 << 20):
        x = torch.randn(n, device='cuda', dtype=dtype); y = torch.randn(n, device='cuda', dtype=dtype)
        got = wheelcuda_demo.scaled_add(x, y, 0.5); want = (x.float() + 0.5 * y.float()).to(dtype)
        torch.testing.assert_close(got, want)
print('example: scaled_add matches torch for fp32/fp16/bf16')")
    $w doctor
else
    start=$(date +%s)
    $w install "$wheels/causal_conv1d-1.7.0.tar.gz"
    echo "causal-conv1d: install took $(( $(date +%s) - start )) s"
    (cd / && $py "$repo/examples/causal_conv1d_check.py")
fi
