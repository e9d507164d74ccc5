#!/usr/bin/env bash
# Build the GPU comparison programs for sm_90 twice:
#   OUTDIR/clang/  with wheelcuda's clang-route nvcc (clang++ -x cuda over the
#                  CUDA 12.8 pip wheels); dynamic libcudart.so.12 copied to
#                  OUTDIR/clang/lib and found through rpath $ORIGIN/lib
#   OUTDIR/nvcc/   with NVIDIA's nvcc 13.0; cudart linked statically
# Programs: kernels (kernels.cu) and cc_harness (causal-conv1d 1.7.0 fwd/bwd
# kernels + cc_harness.cpp, no libtorch).  No GPU is needed to build.
#
# Usage: build.sh OUTDIR
# Overridable: WHEELCUDA, WHEELCUDA_CACHE_DIR, CU128_PYTHON, NVCC13, CUOBJDUMP,
#              TORCH_INC, CC_SRC (directory with causal-conv1d's csrc files).
set -euo pipefail

OUT=${1:?usage: build.sh OUTDIR}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

REPO=$(cd "$HERE/../.." && pwd)
WHEELCUDA=${WHEELCUDA:-$REPO/.venv/bin/wheelcuda}
export WHEELCUDA_CLANG=${WHEELCUDA_CLANG:-/usr/bin/clang++-22}
CU128_PYTHON=${CU128_PYTHON:-$REPO/.venv-cu128/bin/python}
NVCC13=${NVCC13:-/usr/local/cuda-13.0/bin/nvcc}
CUOBJDUMP=${CUOBJDUMP:-$(ls "$REPO"/.venv/lib/python3*/site-packages/nvidia/cu*/bin/cuobjdump | head -1)}
TORCH_INC=${TORCH_INC:-$(ls -d "$REPO"/.venv-cu128/lib/python3*/site-packages/torch/include)}
CC_SRC=${CC_SRC:-$HERE/third_party/causal_conv1d}

ARCH="-gencode arch=compute_90,code=sm_90"
# kernels.cu: plain optimized build (no fast math, so libm-accurate results)
K_FLAGS="-O3 -std=c++17 $ARCH"
# causal-conv1d: the nvcc flags of its setup.py (1.7.0, CUDA branch), sm_90 only,
# plus -std=c++17 which torch's CUDAExtension adds.  Identical for both variants.
CC_FLAGS="-O3 -std=c++17 \
 -U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__ \
 -U__CUDA_NO_BFLOAT16_OPERATORS__ -U__CUDA_NO_BFLOAT16_CONVERSIONS__ \
 -U__CUDA_NO_BFLOAT162_OPERATORS__ -U__CUDA_NO_BFLOAT162_CONVERSIONS__ \
 --expt-relaxed-constexpr --expt-extended-lambda --use_fast_math \
 --ptxas-options=-v $ARCH --threads 4"
# setup.py also passes -lineinfo.  Left out by default: with the clang route it
# makes ptxas embed the PTX text (.nv_debug_ptx_txt, ~83 MB in the bwd cubin,
# ~39 MB compressed in the object), too big to carry.  CC_LINEINFO=1 adds it
# back to both variants.
[ "${CC_LINEINFO:-0}" = 1 ] && CC_FLAGS="$CC_FLAGS -lineinfo"
CC_INC="-I$TORCH_INC -I$TORCH_INC/torch/csrc/api/include -I$CC_SRC"

for f in causal_conv1d_fwd.cu causal_conv1d_bwd.cu causal_conv1d.h causal_conv1d_common.h static_switch.h; do
  [ -f "$CC_SRC/$f" ] || { echo "missing $CC_SRC/$f" >&2; exit 2; }
done

now() { date +%s.%N; }
secs() { python3 -c "print(f'{$2-$1:.1f}')"; }

# build_variant NAME NVCC LINKFLAGS
build_variant() {
  local name=$1 nvcc=$2 link=$3
  local d=$OUT/$name o=$OUT/$name/obj
  rm -rf "$d"; mkdir -p "$o"
  echo "== $name: $("$nvcc" --version | tail -n 2 | head -n 1)"
  "$nvcc" --version > "$d/nvcc_version.txt"
  local t0 t1 tk tc
  t0=$(now)
  "$nvcc" $K_FLAGS -c "$HERE/kernels.cu" -o "$o/kernels.o" 2> "$d/build_kernels.log"
  "$nvcc" $ARCH "$o/kernels.o" -o "$d/kernels" $link 2>> "$d/build_kernels.log"
  t1=$(now); tk=$(secs "$t0" "$t1")
  t0=$(now)
  for k in fwd bwd; do
    "$nvcc" $CC_FLAGS $CC_INC -c "$CC_SRC/causal_conv1d_$k.cu" -o "$o/causal_conv1d_$k.o" \
      > "$d/build_cc_$k.log" 2>&1 || { tail -n 30 "$d/build_cc_$k.log"; exit 1; }
  done
  "$nvcc" -O3 -std=c++17 -I"$CC_SRC" -c "$HERE/cc_harness.cpp" -o "$o/cc_harness.o"
  "$nvcc" $ARCH "$o/causal_conv1d_fwd.o" "$o/causal_conv1d_bwd.o" "$o/cc_harness.o" \
    -o "$d/cc_harness" $link
  t1=$(now); tc=$(secs "$t0" "$t1")
  echo "$name compile_seconds kernels=$tk cc_harness=$tc" | tee "$d/compile_times.txt"
  {
    for b in kernels cc_harness; do
      echo "### $b"
      "$CUOBJDUMP" --dump-resource-usage "$d/$b"
    done
  } > "$d/resources.txt" 2>&1 || echo "warning: cuobjdump failed for $name (see $d/resources.txt)"
  rm -rf "$o"
}

# ---- clang route
eval "$("$WHEELCUDA" env --toolkit clang --arch 9.0 --python "$CU128_PYTHON" 2>/dev/null)"
CLANG_NVCC=$CUDA_HOME/bin/nvcc
[ -x "$CLANG_NVCC" ] || { echo "clang-route nvcc not found (CUDA_HOME=$CUDA_HOME)" >&2; exit 2; }
build_variant clang "$CLANG_NVCC" "-Xlinker -rpath -Xlinker \$ORIGIN/lib"
mkdir -p "$OUT/clang/lib"
cp -L "$(readlink -f "$CUDA_HOME/lib64/libcudart.so.12")" "$OUT/clang/lib/libcudart.so.12"

# ---- NVIDIA nvcc 13.0, static cudart (self-contained binaries)
build_variant nvcc "$NVCC13" "-cudart static"

cp "$HERE/run.sh" "$OUT/run.sh"
echo "== sizes"
( cd "$OUT" && ls -l clang/kernels clang/cc_harness clang/lib/libcudart.so.12 nvcc/kernels nvcc/cc_harness | awk '{printf "%10d  %s\n", $5, $NF}' )
echo "== dynamic deps"
for b in clang/kernels clang/cc_harness nvcc/kernels nvcc/cc_harness; do
  echo "$b: $(cd "$OUT" && readelf -d "$b" | grep -E 'NEEDED|RUNPATH|RPATH' | sed 's/.*: //' | tr '\n' ' ')"
done
echo "== total $(du -sh "$OUT" | cut -f1) in $OUT"
