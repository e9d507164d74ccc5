#!/usr/bin/env bash
# The main job on the built-in example: from a torch environment with NVIDIA's CUDA
# wheels and no system toolkit in use, build and install examples/torch_ext.
#   usage: examples/demo.sh WHEELCUDA TORCH_VENV
set -euo pipefail
wheelcuda=$1
venv=$(cd "$2" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
arch=${ARCH:-}
if [ -z "$arch" ] && ! command -v nvidia-smi >/dev/null; then
    arch=9.0   # no GPU here: build for H100/H200 so the demo still shows a real build
    echo "demo: no GPU seen, building for --arch $arch" >&2
fi
arch_flag=${arch:+--arch $arch}

echo "== wheelcuda doctor" >&2
"$wheelcuda" doctor --python "$venv" $arch_flag

echo "== eval \"\$(wheelcuda env)\" and pip install --no-build-isolation examples/torch_ext" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$repo/examples/torch_ext" "$work/"
eval "$("$wheelcuda" env --python "$venv" $arch_flag)"
echo "CUDA_HOME=$CUDA_HOME TORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST" >&2
start=$(date +%s)
"$venv/bin/python" -m pip install -q --no-build-isolation --no-deps "$work/torch_ext"
echo "demo: built and installed in $(( $(date +%s) - start )) s" >&2
(cd / && "$venv/bin/python" -c "import wheelcuda_demo; print('demo: import ok:', wheelcuda_demo.__file__)")

if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    echo "== GPU found: checking the extension against plain torch" >&2
    "$venv/bin/python" -m pip install -q pytest
    (cd "$work/torch_ext" && "$venv/bin/python" -m pytest -q tests)
fi
