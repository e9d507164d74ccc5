#!/usr/bin/env bash
# The clang toolkit end to end, the way a user with a CUDA 12 torch and no
# way to NVIDIA runs it: torch 2.9.1+cu128 with all its dependencies (`make
# cu128-full-venv`, about 7 GB), /usr/local hidden (unshare -m, as root), environment
# scrubbed, clang-22 from Debian. Builds examples/torch_ext and causal-conv1d 1.7.0 with
# `--toolkit clang`, checks the archs with cuobjdump and imports both under that torch
# (no GPU here: the kernels run on the GPU machine, examples/clang_gpu). About 6 min
# on 2 cores (4m56s for causal-conv1d on 2026-12-01), so a make target
# (`make clang-cu128`), not part of `make test`.
#   usage: examples/clang_cu128.sh WHEELCUDA CU128_FULL_VENV CUOBJDUMP [ARCH]
set -euo pipefail
wheelcuda=$1
venv=$(cd "$2" && pwd)
cuobjdump=$3
arch=${4:-9.0}
here=$(cd "$(dirname "$0")" && pwd)
keep="HOME=$HOME PATH=/usr/bin:/bin WHEELCUDA_CLANG=${WHEELCUDA_CLANG:-/usr/bin/clang++-22}"
for var in SSL_CERT_FILE UV_CACHE_DIR WHEELCUDA_CACHE_DIR; do
    [ -n "${!var:-}" ] && keep="$keep $var=${!var}"
done
[ -z "${SSL_CERT_FILE:-}" ] && [ -n "${PIP_CERT:-}" ] && keep="$keep SSL_CERT_FILE=$PIP_CERT"
script=$(mktemp)
cache=$(mktemp -d)  # a fresh cache: both are built, not taken from an earlier run's
trap 'rm -rf "$script" "$cache"' EXIT
[ -n "${WHEELCUDA_CACHE_DIR:-}" ] || keep="$keep WHEELCUDA_CACHE_DIR=$cache"
"$venv/bin/python" -m pip uninstall -q -y wheelcuda-demo-ext causal-conv1d 2>/dev/null || true
cat > "$script" <<EOS
set -e
test ! -e /usr/local/cuda || { echo 'system toolkit still visible' >&2; exit 99; }
$wheelcuda doctor --toolkit clang --arch $arch --python $venv | sed -n '/^Compiler/,/^GPUs/p;/^Clang/,\$p'
start=\$(date +%s)
$wheelcuda install --toolkit clang --arch $arch --python $venv $here/torch_ext
echo "torch_ext: \$((\$(date +%s) - start)) s"
start=\$(date +%s)
$wheelcuda install --toolkit clang --arch $arch --python $venv causal-conv1d==1.7.0
echo "causal-conv1d: \$((\$(date +%s) - start)) s"
cd /
$venv/bin/python -c 'import torch, wheelcuda_demo._C as d, causal_conv1d_cuda as c; print("import ok:", torch.__version__, d.__file__, c.__file__)'
EOS
if [ "$(id -u)" = 0 ]; then
    unshare -m sh -c "mount -t tmpfs none /usr/local && exec env -i $keep sh $script"
else
    echo "not root: /usr/local stays visible; the environment is still scrubbed" >&2
    env -i $keep sh "$script"
fi
site=$(echo "$venv"/lib/python3*/site-packages)
for so in "$site"/wheelcuda_demo/_C*.so "$site"/causal_conv1d_cuda*.so; do
    echo "$(basename "$so"): $(stat -c %s "$so") bytes; $("$cuobjdump" --list-elf "$so" | grep -o 'sm_[0-9a-z]*\.cubin' | sort -u | tr '\n' ' ')"
    if "$cuobjdump" --list-elf "$so" | grep -v "sm_${arch/./}\." | grep -q cubin; then
        echo "another arch than $arch in $so" >&2; exit 1
    fi
done
