#!/bin/sh
# The corpus packages that need a GPU or many cores (corpus/packages.toml, where = "gpu"),
# on the GPU machine (one H200, no network; ../shared/GPU.md): each built from its PyPI
# sdist by `wheelcuda install` (no isolation) with the machine's own CUDA 13.0
# (`--toolkit local`: nothing to carry), its extension modules imported, their archs read
# with cuobjdump, and its kernels checked against the package's own reference where it
# ships one. Prints one `CORPUS {json}` line per package (corpus/run.py --gpu-log reads them).
#   usage: examples/gpu_corpus.sh REPO SDISTS [NAME...]
#   SDISTS holds the sdists, tomlkit's and einops' wheels, and the packages' run-time
#   dependencies as wheels (scipy for torch-cluster and torch-sparse)
set -u
repo=$(cd "$1" && pwd); sdists=$(cd "$2" && pwd); shift 2
py=/opt/torch/.venv/bin/python3
cuobjdump=/usr/local/cuda/bin/cuobjdump
# every wheel there: wheelcuda's own needs, and what packages import at run time (scipy)
rm -rf /root/wcdeps && uv pip install -q --no-deps --target /root/wcdeps "$sdists"/*.whl
export PYTHONPATH="$repo/src:/root/wcdeps" WHEELCUDA_TOOLKIT=local \
       WHEELCUDA_CACHE_DIR=/root/wccache UV_OFFLINE=1 UV_CACHE_DIR=/root/uvcache
names=${*:-"causal-conv1d mamba-ssm warp-rnnt DCNv4"}

check() {  # the package's kernels against its own reference, where it ships one
    case "$1" in
        causal-conv1d) (cd / && "$py" "$repo/examples/causal_conv1d_check.py") ;;
        mamba-ssm) (cd / && "$py" "$repo/examples/mamba_check.py") ;;
        *) (cd / && "$py" -c "import torch; print('no reference shipped: import only')") ;;
    esac
}

for name in $names; do
    sdist=$(ls "$sdists"/$(echo "$name" | tr - _)-*.tar.gz "$sdists"/"$name"-*.tar.gz \
            2>/dev/null | head -1)
    log=/root/corpus-$name.log
    start=$(date +%s)
    "$py" -m wheelcuda install --python "$py" "$sdist" -- --no-deps >"$log" 2>&1
    code=$?
    seconds=$(( $(date +%s) - start ))
    dist=$("$py" -c "import sys, importlib.metadata as m
for d in m.distributions():
    if d.metadata['Name'].lower().replace('_', '-') == sys.argv[1].lower(): print(d.metadata['Name'])" "$name" | head -1)
    probe=$(cd / && "$py" -c "
import importlib, importlib.metadata as md, json, sys, torch
dist = md.distribution(sys.argv[1]); mods, sos, errors = [], [], []
for f in dist.files or []:
    s = str(f)
    if s.endswith('.so') and not s.startswith('..'):
        sos.append(str(f.locate())); mod = s.split('.')[0].replace('/', '.')
        try: importlib.import_module(mod); mods.append(mod)
        except Exception as exc: errors.append(f'{mod}: {type(exc).__name__}: {exc}'[:300])
print(json.dumps({'sos': sos, 'errors': errors}))" "${dist:-$name}" 2>/dev/null | tail -1)
    archs=$(echo "$probe" | "$py" -c "import json, sys, subprocess
d = json.loads(sys.stdin.read() or '{\"sos\": []}')
found = set()
for so in d['sos']:
    out = subprocess.run([sys.argv[1], '--list-elf', so], capture_output=True, text=True).stdout
    found |= {l.rsplit('.', 2)[-2] for l in out.splitlines() if l.strip()}
print(','.join(sorted(found)))" "$cuobjdump")
    checked=$(check "$name" 2>&1 | tail -12)
    echo "$checked" | sed "s/^/$name: /"
    "$py" -c "import json, sys
print('CORPUS ' + json.dumps({'name': sys.argv[1], 'code': int(sys.argv[2]),
      'seconds': int(sys.argv[3]), 'archs': [a for a in sys.argv[4].split(',') if a],
      'probe': sys.argv[5], 'check': sys.argv[6], 'tail': sys.argv[7]}))" \
        "$name" "$code" "$seconds" "$archs" "$probe" "$checked" "$(tail -5 "$log")"
done
