#!/bin/sh
# causal-conv1d 1.7.0 by an unchanged `uv add` (build isolation on) in a uv project, after
# `wheelcuda uv-config --write pyproject.toml`, on the GPU machine (one H200, no network;
# ../shared/GPU.md), system toolkit hidden, environment scrubbed. Then its kernels are
# checked against the package's reference, and `uv sync` into a fresh .venv is timed.
#
# Offline, uv's isolated build needs torch from an index: examples/repack_installed.py
# turns the torch venv's installed distributions into wheels and indexes them with the
# carried ones (the compiler wheels, tomlkit, causal-conv1d's sdist).
#   usage: examples/gpu_uv_add.sh REPO VENV WHEELS
#   UVADD_LOCAL=1: the machine's own CUDA 13.0 (--toolkit local) instead of the carried
#   compiler wheels (nothing 56 MB to carry); the system toolkit then stays visible.
set -eu
repo=$(cd "$1" && pwd); venv=$(cd "$2" && pwd); wheels=$(cd "$3" && pwd)
if [ -n "${UVADD_LOCAL:-}" ]; then
    export WHEELCUDA_TOOLKIT=local UVADD_INNER=1
fi
if [ -z "${UVADD_INNER:-}" ] && [ "$(id -u)" = 0 ]; then
    empty=$(mktemp -d); hide=""
    for d in /usr/local/cuda-*; do [ -d "$d" ] && hide="$hide mount --bind $empty $d &&"; done
    exec unshare -m sh -c "$hide exec env -i UVADD_INNER=1 HOME=$HOME \
        PATH=/usr/local/bin:/usr/bin:/bin sh $0 $repo $venv $wheels"
fi
[ -n "${UVADD_LOCAL:-}" ] || test ! -e /usr/local/cuda/bin/nvcc || {
    echo "uvadd: the system toolkit is visible" >&2; exit 99; }
py=$venv/bin/python3
site=$(echo "$venv"/lib/python3.*/site-packages)
idx=/root/idx
t0=$(date +%s)
[ -d $idx/simple ] || "$py" "$repo/examples/repack_installed.py" "$site" $idx "$wheels"
echo "uvadd: index ready in $(( $(date +%s) - t0 )) s"
export UV_DEFAULT_INDEX=file://$idx/simple UV_OFFLINE=1 UV_CACHE_DIR=/root/uvcache \
       UV_PYTHON_DOWNLOADS=never WHEELCUDA_CACHE_DIR=/root/wccache
rm -rf /root/wcdeps && uv pip install -q --target /root/wcdeps "$wheels"/tomlkit-*.whl
export PYTHONPATH="$repo/src:/root/wcdeps"
proj=/root/proj; rm -rf $proj; mkdir $proj; cd $proj
uv init -q --name proj --no-workspace -p "$py" .
"$py" - <<'EOF'
import re, pathlib
p = pathlib.Path("pyproject.toml")
text = re.sub(r'(?m)^requires-python = .*$', 'requires-python = "~=3.12.0"', p.read_text())
p.write_text(text + '\n[tool.uv]\nenvironments = ["sys_platform == \'linux\' and platform_machine == \'x86_64\'"]\n')
EOF
torch=$("$py" -c "import importlib.metadata as m; print(m.version('torch'))")
uv add -q --no-sync "torch==$torch"
"$py" -m wheelcuda uv-config --write pyproject.toml causal-conv1d
start=$(date +%s)
uv add causal-conv1d==1.7.0
echo "uvadd: uv add causal-conv1d (sync, torch into .venv, isolated build) took $(( $(date +%s) - start )) s"
(cd / && $proj/.venv/bin/python "$repo/examples/causal_conv1d_check.py")
rm -rf .venv
start=$(date +%s)
uv sync
echo "uvadd: uv sync into a fresh .venv took $(( $(date +%s) - start )) s"
(cd / && $proj/.venv/bin/python -c "import torch, causal_conv1d_cuda; print('uvadd: import ok', torch.__version__)")
