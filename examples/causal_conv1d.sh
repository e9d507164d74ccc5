#!/usr/bin/env bash
# causal-conv1d 1.7.0 from its sdist, the way a user runs it, on a machine where the
# system toolkit is out of reach: /usr/local hidden (unshare -m, as root), environment
# scrubbed. Pruned to one arch it takes about 3 minutes on 2 cores (3m16s on 2026-12-01;
# the package's own nine targets, --all-archs, take about 22), so it is a make target
# (`make causal-conv1d`), not part of `make test`.
#   usage: examples/causal_conv1d.sh WHEELCUDA TORCH_VENV [ARCH]
set -euo pipefail
wheelcuda=$1
venv=$(cd "$2" && pwd)
arch=${3:-9.0}
keep="HOME=$HOME PATH=/usr/bin:/bin"
for var in SSL_CERT_FILE UV_CACHE_DIR WHEELCUDA_CACHE_DIR WHEELCUDA_INSTALLER; do
    [ -n "${!var:-}" ] && keep="$keep $var=${!var}"
done
[ -z "${SSL_CERT_FILE:-}" ] && [ -n "${PIP_CERT:-}" ] && keep="$keep SSL_CERT_FILE=$PIP_CERT"
script=$(mktemp)
trap 'rm -f "$script"' EXIT
cat > "$script" <<EOS
set -e
test ! -e /usr/local/cuda || { echo 'system toolkit still visible' >&2; exit 99; }
$wheelcuda install --python $venv --arch $arch causal-conv1d==1.7.0
cd / && $venv/bin/python -c 'import torch, causal_conv1d_cuda, causal_conv1d; print("import ok:", causal_conv1d_cuda.__file__)'
EOS
if [ "$(id -u)" = 0 ]; then
    unshare -m sh -c "mount -t tmpfs none /usr/local && exec env -i $keep sh $script"
else
    echo "not root: /usr/local stays visible; the environment is still scrubbed" >&2
    env -i $keep sh "$script"
fi
