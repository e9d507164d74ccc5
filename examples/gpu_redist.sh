#!/bin/sh
# The redist and local toolkit sources on the GPU machine (one H200, no network;
# ../shared/GPU.md):
#   redist: NVIDIA's archives, from a mirror served on 127.0.0.1 and made of the CUDA 13
#           wheels carried there (each wheel's files in the archive NVIDIA ships them in,
#           tests/redist_server.py); system toolkit hidden, environment scrubbed; the
#           example and causal-conv1d 1.7.0 built with `--toolkit redist` and checked
#           against torch and the package's reference (examples/gpu_check.sh).
#   local:  the machine's own CUDA 13.0 (/usr/local/cuda-13.0) with `--toolkit local`:
#           the example built through a wheelcuda tree over it, and checked.
#   usage: examples/gpu_redist.sh REPO PYTHON WHEELS
set -eu
repo=$(cd "$1" && pwd); py=$2; wheels=$(cd "$3" && pwd)
port=8765
manifest=http://127.0.0.1:$port/redistrib_13.0.2.json

t0=$(date +%s)
# wheelcuda's own dependency (uv-config's TOML editing), as a user's install would bring it
"$py" -m pip install -q --no-index --no-deps "$wheels"/tomlkit-*.whl
site=/root/redist-site
rm -rf $site /root/mirror
"$py" -m pip install -q --no-index --no-deps --target $site "$wheels"/nvidia_cuda_nvcc-*.whl \
    "$wheels"/nvidia_nvvm-*.whl "$wheels"/nvidia_cuda_crt-*.whl \
    "$wheels"/nvidia_cuda_runtime-*.whl "$wheels"/nvidia_cuda_cccl-*.whl
PYTHONPATH="$repo:$repo/src" "$py" -c "
from pathlib import Path
from tests import redist_server as rs
print('redist: mirror', rs.cu13_mirror(Path('/root/mirror'), Path('$site'), keep=None))"
du -sh /root/mirror
"$py" -m http.server $port --bind 127.0.0.1 -d /root/mirror >/root/http.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
echo "redist: mirror made and served in $(( $(date +%s) - t0 )) s"

# redist, system toolkit hidden: each /usr/local/cuda-* under an empty folder, env -i
empty=$(mktemp -d); hide=""
for d in /usr/local/cuda-*; do [ -d "$d" ] && hide="$hide mount --bind $empty $d &&"; done
for step in example causal; do
    unshare -m sh -c "$hide exec env -i HOME=$HOME PATH=/usr/local/bin:/usr/bin:/bin \
        WHEELCUDA_CACHE_DIR=/root/wc-redist WHEELCUDA_SPLIT_COMPILE=8 \
        WHEELCUDA_TOOLKIT=redist WHEELCUDA_REDIST_MANIFEST=$manifest \
        sh $repo/examples/gpu_check.sh $repo $py $wheels $step"
done
echo "redist: archives downloaded: $(grep -c 'GET .*tar.xz' /root/http.log)"
ls /root/wc-redist/toolkits

# local: the machine's own toolkit, through a tree of links
echo "== --toolkit local"
work=$(mktemp -d)
cp -r "$repo/examples/torch_ext" "$work/"
env -i HOME=$HOME PATH=/usr/local/bin:/usr/bin:/bin PYTHONPATH="$repo/src" UV_OFFLINE=1 \
    WHEELCUDA_CACHE_DIR=/root/wc-local WHEELCUDA_INSTALLER=uv sh -c "
set -e
$py -m wheelcuda doctor --toolkit local
$py -m pip uninstall -y -q wheelcuda-demo-ext
DEMO_GENCODE='80;90;100;120' $py -m wheelcuda install --toolkit local $work/torch_ext
cd / && $py -c \"
import torch, wheelcuda_demo
x = torch.randn(1 << 20, device='cuda'); y = torch.randn(1 << 20, device='cuda')
torch.testing.assert_close(wheelcuda_demo.scaled_add(x, y, 0.5), x + 0.5 * y)
print('local: scaled_add matches torch')\"
ls -l /root/wc-local/homes/*/bin/.nvcc-real"
