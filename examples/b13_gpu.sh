#!/bin/sh
# B13 on the GPU machine (one H200, 16 cores, 125 GiB, no network; ../shared/GPU.md): the
# first user's own route against `wheelcuda install`, side by side in one run, cold each
# time, kernels checked against the package's reference after each build.
#   causal-conv1d 1.7.0: `wheelcuda install` of its sdist, then in a uv project
#     `wheelcuda uv-config --write pyproject.toml` and an unchanged `uv add` (isolation on);
#   mamba-ssm 2.3.2.post1: `wheelcuda install`, then `wheelcuda uv-config --write uv.toml`
#     and an unchanged `uv pip install` (isolation on).
# Both routes build through the same tree (the machine's own CUDA 13.0, `--toolkit local`:
# nothing to carry), so the ratio is the routes' alone. uv's build environments take torch
# from an index repacked from the venv (examples/repack_installed.py). uv's run goes through
# util-linux `script`, so its terminal, wheelcuda's lines on it included, comes back
# ($OUT/*.typescript). Each step prints one `B13 {json}` line (benchmarks/run.py --b13 reads
# them from the call's output, kept in benchmarks/b13_gpu.json).
#   usage: examples/b13_gpu.sh start, then `wait` in calls one right after the other until
#   it prints B13-DONE (.gpu/ holds the sdists and tomlkit); or the phases install|uv alone
set -eu
PY=${PY:-/opt/torch/.venv/bin/python3}
OUT=${OUT:-/tmp}
repo=$(pwd)
gpu=$repo/.gpu
venv=$(dirname "$(dirname "$PY")")
site=$(echo "$venv"/lib/python3.*/site-packages)
unset TORCH_CUDA_ARCH_LIST  # the machine's environment sets 9.0a: the GPUs must decide
export WHEELCUDA_TOOLKIT=local WHEELCUDA_CACHE_DIR=/root/b13cache UV_OFFLINE=1 \
       UV_CACHE_DIR=/root/b13uv UV_PYTHON_DOWNLOADS=never
[ -d /root/wcdeps ] || uv pip install -q --target /root/wcdeps "$gpu"/tomlkit-*.whl
wc() { PYTHONPATH="$repo/src:/root/wcdeps" "$PY" -m wheelcuda "$@"; }
t0=$(date +%s)
[ -d /root/idx/simple ] || "$PY" "$repo/examples/repack_installed.py" "$site" /root/idx "$gpu" \
    >/dev/null
echo "b13: index ready in $(( $(date +%s) - t0 )) s"
export UV_DEFAULT_INDEX=file:///root/idx/simple
torch=$("$PY" -c "import importlib.metadata as m; print(m.version('torch'))")
commit=$(cat "$repo/.gpu/commit" 2>/dev/null || echo unknown)

row() {  # name route seconds check
    "$PY" -c "import json, sys; print('B13 ' + json.dumps({'package': sys.argv[1],
        'route': sys.argv[2], 'wall_s': int(sys.argv[3]), 'kernels': sys.argv[4],
        'torch': sys.argv[5], 'commit': sys.argv[6], 'date': sys.argv[7]}))" \
        "$1" "$2" "$3" "$4" "$torch" "$commit" "$(date -u +%F)"
}

checked() {  # python check-script
    if (cd / && "$1" "$repo/examples/$2") > /root/check.out 2>&1; then
        tail -1 /root/check.out; else tail -5 /root/check.out; echo FAILED; fi
}

onpty() {  # typescript command: run on a pty where util-linux script is there
    if command -v script >/dev/null; then script -qfec "$2" "$1"; else sh -c "$2"; fi
}

timed() {  # log command...: seconds (the command's output to log and $OUT)
    log=$1; shift
    start=$(date +%s)
    "$@" > "/root/$log" 2>&1 || { tail -30 "/root/$log"; cp "/root/$log" "$OUT/"; exit 1; }
    echo $(( $(date +%s) - start ))
}

cc=$gpu/causal_conv1d-1.7.0.tar.gz
mamba=$(ls "$gpu"/mamba_ssm-*.tar.gz)
case "${1:?install, uv, again, start or wait}" in
start)  # install then uv, detached: both routes on one machine in one lease, longer than
        # one call (a machine idle 30 s between calls is given back with what it held)
    mkdir -p /root/b13out
    OUT=/root/b13out setsid sh -c "sh '$0' install && sh '$0' uv; echo B13-DONE" \
        > /root/b13.log 2>&1 < /dev/null &
    exec sh "$0" wait
    ;;
wait)  # until the detached run ends or this call's time is nearly spent; what it made
    end=$(( $(date +%s) + ${WAIT_S:-560} ))
    while ! grep -q B13-DONE /root/b13.log && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
    cat /root/b13.log
    tar czf "$OUT/b13out.tgz" -C /root/b13out . 2>/dev/null || true
    exit 0
    ;;
install)  # both packages by wheelcuda install
    s=$(timed cc-install.log wc install --python "$venv" "$cc" -- --no-deps)
    tail -1 /root/cc-install.log
    row causal-conv1d "wheelcuda install" "$s" "$(checked "$PY" causal_conv1d_check.py)"
    s=$(timed m-install.log wc install --python "$venv" "$mamba" -- --no-deps)
    tail -1 /root/m-install.log
    row mamba-ssm "wheelcuda install" "$s" "$(checked "$PY" mamba_check.py)"
    uv pip uninstall -q --python "$PY" causal-conv1d mamba-ssm
    for f in "$WHEELCUDA_CACHE_DIR"/builds/*/build.json; do  # the profiles: splits, times
        cp "$f" "$OUT/$(basename "$(dirname "$f")").json"; done
    ;;
uv)  # the same two by the uv routes, isolation on
    proj=/root/b13proj; rm -rf $proj; mkdir $proj; cd $proj
    uv init -q --name proj --no-workspace -p "$PY" .
    sed -i 's/^requires-python = .*/requires-python = "~=3.12.0"/' pyproject.toml
    printf '\n[tool.uv]\nenvironments = ["sys_platform == '"'"'linux'"'"' and platform_machine == '"'"'x86_64'"'"'"]\n' \
        >> pyproject.toml
    uv add -q "torch==$torch"   # torch into .venv first: the route's time is the build's
    wc uv-config --write pyproject.toml causal-conv1d 2> /root/cc-uvconfig.log
    # on a pty, as a person runs it: uv draws its progress, wheelcuda's lines go above it
    s=$(timed cc-uvadd.log onpty /root/cc-uvadd.typescript "uv add causal-conv1d==1.7.0")
    cp /root/cc-uvadd.typescript "$OUT/" 2>/dev/null || true
    row causal-conv1d "uv add after uv-config" "$s" \
        "$(checked $proj/.venv/bin/python causal_conv1d_check.py)"
    work=/root/b13m; rm -rf $work; mkdir $work; cd $work
    wc uv-config --python "$venv" --write uv.toml mamba-ssm 2> /root/m-uvconfig.log
    tail -2 /root/m-uvconfig.log
    # --no-deps: its run-time needs (tilelang, transformers...) are not on this machine;
    # torch named, so that match-runtime finds it in the resolution
    s=$(timed m-uvpip.log onpty /root/m-uvpip.typescript \
        "uv pip install --python $PY --no-deps $mamba torch==$torch")
    cp /root/m-uvpip.typescript "$OUT/" 2>/dev/null || true
    row mamba-ssm "uv pip install after uv-config" "$s" "$(checked "$PY" mamba_check.py)"
    ;;
again)  # mamba-ssm once more, the other order (uv first), caches emptied: the noise
    rm -rf "$WHEELCUDA_CACHE_DIR" && uv cache clean -q mamba-ssm
    uv pip uninstall -q --python "$PY" mamba-ssm 2>/dev/null || true
    work=/root/b13m2; rm -rf $work; mkdir $work; cd $work
    wc uv-config --python "$venv" --write uv.toml mamba-ssm 2> /root/m-uvconfig.log
    s=$(timed m-uvpip2.log uv pip install --python "$PY" --no-deps "$mamba" "torch==$torch")
    row mamba-ssm "uv pip install after uv-config (second run, first)" "$s" \
        "$(checked "$PY" mamba_check.py)"
    uv pip uninstall -q --python "$PY" mamba-ssm
    cd /root
    s=$(timed m-install2.log wc install --python "$venv" "$mamba" -- --no-deps)
    row mamba-ssm "wheelcuda install (second run, second)" "$s" "$(checked "$PY" mamba_check.py)"
    ;;
esac
cp "$WHEELCUDA_CACHE_DIR"/logs/*.jsonl "$OUT/" 2>/dev/null || true
