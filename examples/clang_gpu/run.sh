#!/usr/bin/env bash
# Run on the GPU machine (no compiler needed): both variants built by build.sh.
#   run.sh OUTDIR      (OUTDIR defaults to this script's directory; build.sh copies it there)
# Writes OUTDIR/{clang,nvcc}/{kernels,cc_harness}.txt, diffs the kernels
# outputs (lines starting with "detail:" excluded), shows the harness results
# side by side with clang/nvcc time ratios.  Exit status non-zero on any FAIL,
# any program error or a kernels-output difference.
set -uo pipefail

OUT=${1:-$(cd "$(dirname "$0")" && pwd)}
OUT=$(cd "$OUT" && pwd)
status=0

for v in clang nvcc; do
  for p in kernels cc_harness; do
    echo "== $v/$p"
    "$OUT/$v/$p" > "$OUT/$v/$p.txt" 2>&1
    rc=$?
    cat "$OUT/$v/$p.txt"
    if [ $rc -ne 0 ]; then echo "!! $v/$p exited with $rc"; status=1; fi
  done
done

echo
echo "== kernels: diff clang vs nvcc (detail: lines excluded)"
if diff <(grep -v '^detail:' "$OUT/clang/kernels.txt") <(grep -v '^detail:' "$OUT/nvcc/kernels.txt"); then
  echo "kernels outputs IDENTICAL"
else
  echo "kernels outputs DIFFER"; status=1
fi

echo
echo "== cc_harness side by side (left: clang, right: nvcc)"
paste -d'|' <(cut -c1-90 "$OUT/clang/cc_harness.txt") <(cut -c1-90 "$OUT/nvcc/cc_harness.txt") \
  | awk -F'|' '{printf "%-90s | %s\n", $1, $2}'

echo
echo "== timings (ms per launch) and ratio clang/nvcc"
for key in fwd_fp32_ms bwd_fp32_ms fwd_bf16_ms bwd_bf16_ms; do
  c=$(grep -m1 "^$key=" "$OUT/clang/cc_harness.txt" | cut -d= -f2)
  n=$(grep -m1 "^$key=" "$OUT/nvcc/cc_harness.txt" | cut -d= -f2)
  if [ -n "$c" ] && [ -n "$n" ]; then
    awk -v k="$key" -v c="$c" -v n="$n" 'BEGIN{printf "%-12s clang=%8.4f nvcc=%8.4f ratio=%.3f\n", k, c, n, c/n}'
  else
    echo "$key missing (clang='$c' nvcc='$n')"; status=1
  fi
done

if grep -q 'FAIL' "$OUT"/clang/*.txt "$OUT"/nvcc/*.txt; then
  echo; echo "FAIL lines:"; grep -H 'FAIL' "$OUT"/clang/*.txt "$OUT"/nvcc/*.txt; status=1
fi
echo
[ $status -eq 0 ] && echo "ALL OK" || echo "SOMETHING FAILED"
exit $status
