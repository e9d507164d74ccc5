#!/usr/bin/env bash
# The main job on the built-in example: a torch environment without any compiler wheel
# (.venv-torch), then `wheelcuda install` builds and installs examples/torch_ext.
#   usage: examples/demo.sh WHEELCUDA TORCH_VENV
set -euo pipefail
wheelcuda=$1
venv=$(cd "$2" && pwd)
repo=$(cd "$(dirname "$0")/.." && pwd)
# Where pip trusts a site CA bundle (PIP_CERT), let uv use the same one.
if [ -z "${SSL_CERT_FILE:-}" ] && [ -n "${PIP_CERT:-}" ]; then export SSL_CERT_FILE=$PIP_CERT; fi
gpu=no
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then gpu=yes; fi
arch_flag=()
if [ -n "${ARCH:-}" ]; then
    arch_flag=(--arch "$ARCH")
elif [ "$gpu" = no ]; then
    arch_flag=(--arch 9.0)   # no GPU here: build for H100/H200 so the demo still builds
    echo "demo: no GPU seen, building for --arch 9.0" >&2
fi

echo "== wheelcuda doctor (before: the environment has torch but no compiler)" >&2
"$wheelcuda" doctor --python "$venv" "${arch_flag[@]}" || true

echo "== wheelcuda install examples/torch_ext" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$repo/examples/torch_ext" "$work/"
"$wheelcuda" install --python "$venv" "${arch_flag[@]}" "$work/torch_ext"

echo "== wheelcuda doctor (after)" >&2
"$wheelcuda" doctor --python "$venv" "${arch_flag[@]}"
(cd / && "$venv/bin/python" -c "import wheelcuda_demo; print('demo: import ok:', wheelcuda_demo.__file__)")

if [ "$gpu" = yes ]; then
    echo "== GPU found: checking the extension against plain torch" >&2
    "$venv/bin/python" -m pip install -q pytest
    (cd "$work/torch_ext" && "$venv/bin/python" -m pytest -q tests)
fi
