#!/bin/sh
# B11 on the GPU machine (one H200, 16 cores, 125 GiB, no network; ../shared/GPU.md):
# causal-conv1d 1.7.0 built twice (the second time another key, with the first build's
# profile: its measured memory per job and its longest-first order), its kernels
# checked; then flash-attn 2.8.3 started in the background (longer than one call: poll
# with `examples/b11_gpu.sh poll`), its kernels checked when it is done. The machine's
# own CUDA 13.0 serves (`--toolkit local`), so only the sdists travel, in .gpu/ (with
# the tomlkit and einops wheels the machine's venv lacks).
# `flash-attn` starts flash-attn alone, each nvcc phase timed (nvcc --time, through
# NVCC_APPEND_FLAGS, into /root/nvcc-time.csv); `poll [SECONDS]` waits up to SECONDS
# (540) for it, then says where it is and, once it is done, copies what it measured
# (the output, build.json with the profile, nvcc's phase times, ninja's log) to $OUT.
#   usage: examples/b11_gpu.sh start | flash-attn | poll [SECONDS]
set -eu
PY=${PY:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-/tmp}
if [ "${1:-start}" = poll ]; then
    # what it measured so far is copied to $OUT every 10 s, which comes back even from a
    # call cut short by its limit: a machine given back takes the build with it
    waited=0
    while [ ! -e /root/fa.done ] && [ "$waited" -lt "${2:-540}" ]; do
        sleep 10; waited=$((waited + 10))
        cp /root/b11cache/logs/*.jsonl /root/nvcc-time.csv "$OUT"/ 2>/dev/null || true
        uptime > "$OUT"/uptime.txt
    done
    tail -4 /root/fa.out 2>/dev/null || echo "b11: no flash-attn run here"
    uptime; free -g | sed -n 2p
    echo "compiles done: $(cat /root/b11cache/logs/*.jsonl 2>/dev/null | grep -c '"end"')"
    cp /root/b11cache/logs/*.jsonl /root/nvcc-time.csv "$OUT"/ 2>/dev/null || true
    find /root/b11cache -name build.ninja -exec cp {} "$OUT"/ \; 2>/dev/null || true
    if [ -e /root/fa.done ]; then
        cp /root/fa.out /root/nvcc-time.csv /root/b11cache/logs/*.log "$OUT"/ 2>/dev/null || true
        for f in /root/b11cache/builds/*/build.json; do
            cp "$f" "$OUT/$(basename "$(dirname "$f")").json"; done
        find /root/b11cache -name .ninja_log -exec cp {} "$OUT"/ninja_log \; 2>/dev/null || true
        echo "b11: flash-attn done"
    fi
    exit 0
fi
# a copy of the repository: the next call's copy must not change a build that runs on
rm -rf /root/wc-repo && cp -a . /root/wc-repo && cd /root/wc-repo
"$PY" -m pip install -q --no-index --no-deps .gpu/tomlkit-*.whl .gpu/einops-*.whl
export WHEELCUDA_CACHE_DIR=/root/b11cache UV_OFFLINE=1
rm -rf "$WHEELCUDA_CACHE_DIR" /root/fa.out /root/fa.done /root/nvcc-time.csv
nproc; free -g | head -2; nvidia-smi -L
if [ "${1:-start}" = flash-attn ]; then
    export NVCC_APPEND_FLAGS="--time /root/nvcc-time.csv"
else
"$PY" examples/b11_build.py . "$PY" .gpu/causal_conv1d-1.7.0.tar.gz causal-conv1d-first
"$PY" examples/b11_build.py . "$PY" .gpu/causal_conv1d-1.7.0.tar.gz causal-conv1d-profiled \
    -- --no-cache-dir
(cd / && "$PY" /root/wc-repo/examples/causal_conv1d_check.py) | tail -3
cp "$WHEELCUDA_CACHE_DIR"/builds/*/build.json "$OUT"/ 2>/dev/null || true
for f in "$WHEELCUDA_CACHE_DIR"/builds/*/build.json; do
    cp "$f" "$OUT/cc-$(basename "$(dirname "$f")").json"; done
fi
setsid sh -c "'$PY' examples/b11_build.py . '$PY' .gpu/flash_attn-2.8.3.tar.gz flash-attn \
    > /root/fa.out 2>&1; (cd / && '$PY' /root/wc-repo/examples/flash_attn_check.py) \
    >> /root/fa.out 2>&1; touch /root/fa.done" > /dev/null 2>&1 < /dev/null &
echo "b11: flash-attn started"
