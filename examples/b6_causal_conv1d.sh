#!/bin/sh
# B6: the default `wheelcuda install` of causal-conv1d 1.7.0 on the GPU machine (16 cores,
# 125 GiB, no network; see ../shared/GPU.md). Goal: <= 200 s, peak memory <= half of RAM.
# Prints the seconds, wheelcuda's summary line (its split-compile counts) and the peak of
# used memory, MemTotal - MemAvailable sampled every second (time -v's "Maximum resident
# set size" is one process's). As root, the system toolkit is hidden (a private mount
# namespace) and the environment scrubbed; the compiler wheels and the sdist come from
# WHEELS, offline; the cache is a fresh folder, so the compiler is fetched and the
# package built, not taken from a cache.
#   usage: examples/b6_causal_conv1d.sh REPO PYTHON WHEELS
set -eu
repo=$(cd "$1" && pwd); py=$(command -v "$2"); wheels=$(cd "$3" && pwd)
case $py in /*) ;; *) py=$PWD/$py ;; esac
if [ -z "${B6_INNER:-}" ] && [ "$(id -u)" = 0 ]; then
    empty=$(mktemp -d); hide=""
    for d in /usr/local/cuda-*; do [ -d "$d" ] && hide="$hide mount --bind $empty $d &&"; done
    exec unshare -m sh -c "$hide exec env -i B6_INNER=1 HOME=$HOME \
        PATH=/usr/local/bin:/usr/bin:/bin sh $0 $repo $py $wheels"
fi
test ! -e /usr/local/cuda/bin/nvcc || echo "b6: the system toolkit is visible" >&2
export PYTHONPATH="$repo/src" UV_OFFLINE=1 UV_FIND_LINKS="$wheels" WHEELCUDA_INSTALLER=uv
WHEELCUDA_CACHE_DIR=$(mktemp -d); export WHEELCUDA_CACHE_DIR
used() { awk '/^MemTotal:/ {t = $2} /^MemAvailable:/ {a = $2} END {print t - a}' /proc/meminfo; }
log=$(mktemp); peak=$(mktemp); before=$(used); echo "$before" > "$peak"
(m=$before; while sleep 1; do u=$(used); [ "$u" -le "$m" ] || { m=$u; echo $m > "$peak"; }; done) &
sampler=$!
timer=""; [ -x /usr/bin/time ] && timer="/usr/bin/time -v"
uv pip uninstall -q --python "$py" causal-conv1d >/dev/null 2>&1 || true  # else uv builds nothing
start=$(date +%s)
$timer "$py" -m wheelcuda install --python "$py" "$wheels/causal_conv1d-1.7.0.tar.gz" > "$log" 2>&1 || {
    kill $sampler; tail -40 "$log"; exit 1; }
seconds=$(( $(date +%s) - start ))
kill $sampler
gib() { awk -v k="$1" 'BEGIN {printf "%.1f GiB", k / 1048576}'; }
total=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
grep -E "^wheelcuda: (fetching|installed)|Maximum resident" "$log"
echo "b6: ${seconds} s; peak used memory $(gib "$(cat "$peak")") of $(gib "$total")" \
     "($(gib "$before") before the build); goal <= 200 s and <= $(gib $((total / 2)))"
(cd / && "$py" "$repo/examples/causal_conv1d_check.py")
