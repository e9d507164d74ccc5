#!/bin/sh
# The corpus's isolated routes for the packages that build only on the GPU machine (one
# H200, no network; ../shared/GPU.md), with its own CUDA 13.0 (--toolkit local):
#   uv-pip  wheelcuda uv-config --write uv.toml SDIST, then uv pip install SDIST
#   pip     wheelcuda constraints + eval "$(wheelcuda env)", then pip install
#           --build-constraint SDIST
# both with build isolation on. Offline, each build environment takes torch and
# setuptools from an index of the venv's own distributions (examples/repack_installed.py).
# Prints one `CORPUS {json}` line per package and route, as examples/gpu_corpus.sh does.
#   usage: examples/gpu_corpus_routes.sh REPO WHEELS NAME...
#   WHEELS holds the sdists, tomlkit's wheel, pip's (>= 25.3, for --build-constraint) and
#   what packages import at run time (scipy for torch-cluster)
#   CORPUS_ROUTES="uv-pip" runs one route; the last line is CORPUS-DONE
set -u
repo=$(cd "$1" && pwd); wheels=$(cd "$2" && pwd); shift 2
venv=/opt/torch/.venv
py=$venv/bin/python3
cuobjdump=/usr/local/cuda/bin/cuobjdump
idx=/root/idx
rm -rf /root/wcdeps && uv pip install -q --no-deps --target /root/wcdeps \
    $(ls "$wheels"/*.whl | grep -v '/pip-')
if ls "$wheels"/pip-*.whl >/dev/null 2>&1; then  # the pip route's; uv-pip needs none
    uv pip install -q --python "$py" "$wheels"/pip-*.whl
fi
[ -d $idx/simple ] || "$py" "$repo/examples/repack_installed.py" \
    "$(echo $venv/lib/python3.*/site-packages)" $idx "$wheels" >/dev/null
export PYTHONPATH="$repo/src:/root/wcdeps" WHEELCUDA_TOOLKIT=local \
       WHEELCUDA_CACHE_DIR=/root/wccache UV_OFFLINE=1 UV_CACHE_DIR=/root/uvcache \
       UV_DEFAULT_INDEX=file://$idx/simple PIP_INDEX_URL=file://$idx/simple \
       PIP_CONFIG_FILE=/dev/null UV_PYTHON_DOWNLOADS=never
torch=$("$py" -c "import importlib.metadata as m; print(m.version('torch'))")
wc="$py -m wheelcuda"

for name in "$@"; do
    sdist=$(ls "$wheels"/$(echo "$name" | tr - _)-*.tar.gz "$wheels"/"$name"-*.tar.gz \
            2>/dev/null | head -1)
    for route in ${CORPUS_ROUTES:-uv-pip pip}; do
        w=/root/route-$name-$route; rm -rf "$w"; mkdir -p "$w"; log=$w/log
        "$py" -m pip uninstall -q -y "$name" >/dev/null 2>&1
        start=$(date +%s)
        case $route in
            uv-pip) (cd "$w" && $wc uv-config --python "$py" --write uv.toml "$sdist" &&
                     uv pip install --python "$py" --no-deps "torch==$torch" "$sdist") \
                        >"$log" 2>&1 ;;
            pip) (cd "$w" && $wc constraints --python "$py" -o c.txt &&
                  eval "$($wc env --python "$py")" &&
                  "$py" -m pip install --no-deps --build-constraint c.txt "$sdist") \
                     >"$log" 2>&1 ;;
        esac
        code=$?
        seconds=$(( $(date +%s) - start ))
        # the corpus's own probe (corpus/probe.py), then cuobjdump over the .so files it
        # lists; its stderr is kept: an import can abort the process
        probe=$(cd / && "$py" -P "$repo/corpus/probe.py" "$name" 2>"$w/probe.err" \
                | sed -n 's/^PROBE //p' | "$py" -c "
import json, subprocess, sys
got = json.loads(sys.stdin.read() or '{}')
archs = set()
for so in got.get('sos', []):
    out = subprocess.run([sys.argv[1], '--list-elf', so], capture_output=True, text=True).stdout
    archs |= {l.rsplit('.', 2)[-2] for l in out.splitlines() if l.strip()}
print(json.dumps({'archs': sorted(archs), 'errors': got.get('errors', ['no PROBE line'])}))" \
                "$cuobjdump")
        "$py" -c "import json, sys
print('CORPUS ' + json.dumps({'name': sys.argv[1], 'route': sys.argv[2],
      'code': int(sys.argv[3]), 'seconds': int(sys.argv[4]), 'probe': sys.argv[5],
      'tail': sys.argv[6], 'probe_err': sys.argv[7]}))" "$name" "$route" "$code" \
            "$seconds" "${probe:-}" "$(grep -v '^ *$' "$log" | tail -6)" \
            "$(tail -c 1500 "$w/probe.err")"
    done
done
echo CORPUS-DONE
