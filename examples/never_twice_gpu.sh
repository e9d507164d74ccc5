#!/bin/sh
# "Never the same kernel twice" on the GPU machine (16 cores, no network; ../shared/GPU.md),
# one lease, one build after the other, the machine otherwise idle, causal-conv1d 1.7.0:
#   1. plain: `wheelcuda install` without the compile cache (the cold build);
#   2. machine A: `wheelcuda install` with the compile cache over an empty store (the
#      first build: every compile a miss);
#   3. machine B: a fresh wheelcuda cache at A's path (a second container of one image),
#      its own sccache server, A's store: `uv add causal-conv1d==1.7.0` in a uv project
#      after `wheelcuda uv-config --write pyproject.toml`, isolation on, so uv unpacks the
#      sdist into a random folder of its own and builds against torch in a random
#      environment.
# Each: wall, sccache's counts, kernels checked against the package's reference. The
# machine's own CUDA 13.0 compiles (`--toolkit local`); sccache 0.16.0, tomlkit and the
# sdist travel in .gpu/. uv's build environment takes torch from an index repacked from
# the venv (examples/repack_installed.py).
#   usage: examples/never_twice_gpu.sh start, then `poll` in calls one right after the
#   other until it prints NEVERTWICE-DONE; each step prints one `NEVERTWICE {json}` line.
set -eu
PY=${PY:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-/tmp}
case "${1:?start or poll}" in
poll)
    end=$(( $(date +%s) + ${WAIT_S:-540} ))
    while ! grep -q NEVERTWICE-DONE /root/nt.log 2>/dev/null && [ "$(date +%s)" -lt "$end" ]
    do sleep 10; done
    cp /root/nt.log /root/nt-*.out "$OUT"/ 2>/dev/null || true
    grep -E '^(NEVERTWICE|never_twice)' /root/nt.log || true
    tail -3 /root/nt.log; uptime
    exit 0
    ;;
start)
    rm -rf /root/wc-repo && cp -a . /root/wc-repo
    setsid sh /root/wc-repo/examples/never_twice_gpu.sh run > /root/nt.log 2>&1 < /dev/null &
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
export WHEELCUDA_TOOLKIT=local WHEELCUDA_CACHE_DIR=/root/ntcache UV_OFFLINE=1 \
       UV_CACHE_DIR=/root/ntuv UV_PYTHON_DOWNLOADS=never
rm -rf /root/ntcache /root/ntuv /root/ntstore
uv pip install -q --target /root/wcdeps "$gpu"/tomlkit-*.whl "$gpu"/sccache-*.whl
sc=$(find /root/wcdeps -name sccache -type f -perm -u+x | head -1)
wc() { PYTHONPATH="$repo/src:/root/wcdeps" "$PY" -m wheelcuda "$@"; }
[ -d /root/idx/simple ] || "$PY" "$repo/examples/repack_installed.py" "$site" /root/idx "$gpu" \
    >/dev/null
export UV_DEFAULT_INDEX=file:///root/idx/simple
torch=$("$PY" -c "import importlib.metadata as m; print(m.version('torch'))")
commit=$(cat "$gpu/commit" 2>/dev/null || echo unknown)
nproc; nvidia-smi -L

stats() {  # sccache's counts since the last zero, then zeroed
    "$sc" --show-stats --stats-format json | "$PY" -c "import json, sys
s = json.loads(sys.stdin.read())['stats']
print(json.dumps({'hits': s['cache_hits']['adv_counts'], 'misses': s['cache_misses']['adv_counts']}))"
    "$sc" --zero-stats > /dev/null
}
checked() {
    if (cd / && "$1" "$repo/examples/causal_conv1d_check.py") > /root/check.out 2>&1; then
        tail -1 /root/check.out; else tail -5 /root/check.out; echo FAILED; fi
}
row() {  # machine route wall counts kernels
    "$PY" -c "import json, sys; print('NEVERTWICE ' + json.dumps({'machine': sys.argv[1],
        'route': sys.argv[2], 'wall_s': int(sys.argv[3]), 'sccache': sys.argv[4],
        'kernels': sys.argv[5], 'cores': int(sys.argv[6]), 'torch': sys.argv[7],
        'commit': sys.argv[8], 'date': sys.argv[9]}))" \
        "$1" "$2" "$3" "$4" "$5" "$(nproc)" "$torch" "$commit" "$(date -u +%F)"
}

# 1. plain
wc env --python "$venv" > /dev/null  # the tree, untimed
t0=$(date +%s)
wc install --python "$venv" "$gpu/causal_conv1d-1.7.0.tar.gz" -- --no-deps \
    > /root/nt-plain.out 2>&1 || { tail -30 /root/nt-plain.out; exit 1; }
row plain "wheelcuda install, no compile cache" $(( $(date +%s) - t0 )) "" "$(checked "$PY")"
uv pip uninstall -q --python "$PY" causal-conv1d

# 2. machine A
export WHEELCUDA_COMPILE_CACHE=$sc SCCACHE_DIR=/root/ntstore SCCACHE_IDLE_TIMEOUT=0
export SCCACHE_SERVER_PORT=47321
rm -rf /root/ntcache
wc env --python "$venv" > /dev/null
"$sc" --start-server > /dev/null 2>&1
t0=$(date +%s)
wc install --python "$venv" "$gpu/causal_conv1d-1.7.0.tar.gz" -- --no-deps \
    > /root/nt-a.out 2>&1 || { tail -30 /root/nt-a.out; exit 1; }
wall=$(( $(date +%s) - t0 ))
row a "wheelcuda install, compile cache over an empty store" "$wall" "$(stats)" \
    "$(checked "$PY")"
"$sc" --stop-server > /dev/null 2>&1 || true
uv pip uninstall -q --python "$PY" causal-conv1d

# 3. machine B: a fresh cache at A's path, its own server, A's store; uv add
export SCCACHE_SERVER_PORT=47322
rm -rf /root/ntcache
proj=/root/nt-proj; rm -rf $proj; mkdir $proj; cd $proj
uv init -q --name proj --no-workspace -p "$PY" .
sed -i 's/^requires-python = .*/requires-python = "~=3.12.0"/' pyproject.toml
printf '\n[tool.uv]\nenvironments = ["sys_platform == '"'"'linux'"'"' and platform_machine == '"'"'x86_64'"'"'"]\n' \
    >> pyproject.toml
uv add -q "torch==$torch" einops
wc uv-config --write pyproject.toml causal-conv1d 2> /root/nt-b-uvconfig.log
"$sc" --start-server > /dev/null 2>&1
t0=$(date +%s)
uv add causal-conv1d==1.7.0 > /root/nt-b.out 2>&1 || {
    tail -30 /root/nt-b.out; exit 1; }
wall=$(( $(date +%s) - t0 ))
row b "uv add after uv-config, a fresh wheelcuda cache at A's path, A's store" "$wall" \
    "$(stats)" "$(checked $proj/.venv/bin/python)"
"$sc" --stop-server > /dev/null 2>&1 || true
echo NEVERTWICE-DONE
