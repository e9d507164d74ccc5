#!/bin/sh
# The first user's own route on the GPU machine (16 cores, no network; ../shared/GPU.md),
# one lease, one build after the other, the machine otherwise idle:
#   1. flash-attn 2.8.3 by an unchanged `uv add` in a uv project after `wheelcuda uv-config
#      --write pyproject.toml` (isolation on): wall, every CPU second of the machine
#      (/proc/stat, so the floor is CPU / cores), peak memory in use, the order its files
#      started in (the tree's events), kernels checked against torch's attention;
#   2. causal-conv1d 1.7.0 the same way, then by `wheelcuda install`: wall, when its
#      critical file (causal_conv1d_bwd.cu) started, kernels checked.
# The machine's own CUDA 13.0 compiles (`--toolkit local`: nothing to carry but the
# sdists and the wheels its venv lacks, in .gpu/). uv's build environments take torch
# from an index repacked from the venv (examples/repack_installed.py).
#   UVROUTE_ONLY=flash-attn stops after the first (a lease is 30 minutes from its start).
#   usage: examples/uvroute_gpu.sh start, then `poll` in calls one right after the other
#   until it prints UVROUTE-DONE; each step prints one `UVROUTE {json}` line, and the
#   events, logs and typescripts come back in $OUT.
set -eu
PY=${PY:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-/tmp}
copy_out() {
    cp /root/uvr.log "$OUT"/ 2>/dev/null || true
    cp /root/uvrcache/events/*.jsonl /root/uvrcache/logs/*.jsonl "$OUT"/ 2>/dev/null || true
    cp /root/uvr-*.typescript /root/uvr-mem.txt "$OUT"/ 2>/dev/null || true
}
case "${1:?start or poll}" in
poll)  # until the run ends or this call's time is nearly spent: what it measured so far
    end=$(( $(date +%s) + ${WAIT_S:-540} ))
    while ! grep -q UVROUTE-DONE /root/uvr.log 2>/dev/null && [ "$(date +%s)" -lt "$end" ]
    do sleep 10; copy_out; done
    copy_out
    grep -E '^(UVROUTE|uvroute)' /root/uvr.log || true
    tail -3 /root/uvr.log; uptime
    exit 0
    ;;
start)
    # a copy of the repository: the next call's copy must not change the build that runs
    rm -rf /root/wc-repo && cp -a . /root/wc-repo
    setsid sh /root/wc-repo/examples/uvroute_gpu.sh run > /root/uvr.log 2>&1 < /dev/null &
    sleep 5
    exec sh "$0" poll
    ;;
run) ;;
*) echo "start or poll" >&2; exit 2 ;;
esac

repo=/root/wc-repo
gpu=$repo/.gpu
venv=$(dirname "$(dirname "$PY")")
site=$(echo "$venv"/lib/python3.*/site-packages)
unset TORCH_CUDA_ARCH_LIST  # the machine's environment sets 9.0a: the GPU must decide
export WHEELCUDA_TOOLKIT=local WHEELCUDA_CACHE_DIR=/root/uvrcache UV_OFFLINE=1 \
       UV_CACHE_DIR=/root/uvruv UV_PYTHON_DOWNLOADS=never
rm -rf /root/uvrcache /root/uvruv
uv pip install -q --target /root/wcdeps "$gpu"/tomlkit-*.whl
wc() { PYTHONPATH="$repo/src:/root/wcdeps" "$PY" -m wheelcuda "$@"; }
[ -d /root/idx/simple ] || "$PY" "$repo/examples/repack_installed.py" "$site" /root/idx "$gpu" \
    >/dev/null
export UV_DEFAULT_INDEX=file:///root/idx/simple
torch=$("$PY" -c "import importlib.metadata as m; print(m.version('torch'))")
commit=$(cat "$repo/.gpu/commit" 2>/dev/null || echo unknown)
nproc; free -g | sed -n 2p; nvidia-smi -L

cpu_s() {  # every CPU second the machine has spent so far (user+nice+system+irq+softirq)
    awk -v hz="$(getconf CLK_TCK)" '/^cpu /{print ($2+$3+$4+$7+$8)/hz}' /proc/stat
}
memory() {  # the most memory in use while $1 runs, sampled every 2 s, into uvr-mem.txt
    while kill -0 "$1" 2>/dev/null; do
        awk '/MemTotal/{t=$2} /MemAvailable/{a=$2} END{print (t-a)/1048576}' /proc/meminfo
        sleep 2
    done | sort -n | tail -1 > /root/uvr-mem.txt
}
onpty() {  # typescript command: on a pty, as a person runs it (wheelcuda's lines on it)
    if command -v script >/dev/null; then script -qfec "$2" "$1"; else sh -c "$2"; fi
}
row() {  # package route wall cpu peak kernels
    "$PY" -c "import json, sys; print('UVROUTE ' + json.dumps({'package': sys.argv[1],
        'route': sys.argv[2], 'wall_s': int(sys.argv[3]), 'cpu_s': round(float(sys.argv[4])),
        'peak_gib': sys.argv[5], 'kernels': sys.argv[6], 'cores': int(sys.argv[7]),
        'torch': sys.argv[8], 'commit': sys.argv[9], 'date': sys.argv[10]}))" \
        "$1" "$2" "$3" "$4" "$5" "$6" "$(nproc)" "$torch" "$commit" "$(date -u +%F)"
}
checked() {  # python check-script
    if (cd / && "$1" "$repo/examples/$2") > /root/check.out 2>&1; then
        tail -1 /root/check.out; else tail -5 /root/check.out; echo FAILED; fi
}
measured() {  # package route python check command...: one build, measured
    package=$1 route=$2 python=$3 check=$4; shift 4
    c0=$(cpu_s); t0=$(date +%s)
    "$@" > "/root/uvr-$package-$route.out" 2>&1 &
    pid=$!
    memory "$pid" &
    wait "$pid" || { tail -40 "/root/uvr-$package-$route.out"; echo "uvroute: FAILED"; }
    wall=$(( $(date +%s) - t0 )); cpu=$(awk -v a="$c0" -v b="$(cpu_s)" 'BEGIN{print b-a}')
    sleep 3
    row "$package" "$route" "$wall" "$cpu" "$(cat /root/uvr-mem.txt)" "$(checked "$python" "$check")"
}
project() {  # a uv project with the venv's torch in its .venv
    proj=/root/uvr-proj; rm -rf $proj; mkdir $proj; cd $proj
    uv init -q --name proj --no-workspace -p "$PY" .
    sed -i 's/^requires-python = .*/requires-python = "~=3.12.0"/' pyproject.toml
    printf '\n[tool.uv]\nenvironments = ["sys_platform == '"'"'linux'"'"' and platform_machine == '"'"'x86_64'"'"'"]\n' \
        >> pyproject.toml
    uv add -q "torch==$torch" einops   # before the clock: the route's time is the build's
}

project
wc uv-config --write pyproject.toml flash-attn 2> /root/uvr-fa-uvconfig.log
grep -E 'MAX_JOBS|WHEELCUDA' pyproject.toml || true
measured flash-attn "uv add after uv-config" /root/uvr-proj/.venv/bin/python flash_attn_check.py \
    onpty /root/uvr-fa.typescript "uv add flash-attn==2.8.3"

if [ "${UVROUTE_ONLY:-}" = flash-attn ]; then echo UVROUTE-DONE; exit 0; fi
project
wc uv-config --write pyproject.toml causal-conv1d 2> /root/uvr-cc-uvconfig.log
measured causal-conv1d "uv add after uv-config" /root/uvr-proj/.venv/bin/python \
    causal_conv1d_check.py onpty /root/uvr-cc.typescript "uv add causal-conv1d==1.7.0"
cd /root
measured causal-conv1d "wheelcuda install" "$PY" causal_conv1d_check.py \
    wc install --python "$venv" "$gpu/causal_conv1d-1.7.0.tar.gz" -- --no-deps
uv pip uninstall -q --python "$PY" causal-conv1d || true
echo UVROUTE-DONE
