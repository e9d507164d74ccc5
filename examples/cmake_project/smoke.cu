// A CUDA program used by the tests (nvcc directly and through CMake) that needs every part of the toolkit: cub (CCCL), cuda_bf16.h
// (runtime headers), a kernel launch (nvcc, cicc, ptxas, fatbinary, cudart).
#include <cstdio>
#include <cub/cub.cuh>
#include <cuda_bf16.h>
#ifdef WHEELCUDA_DRIVER
// Built with -lcuda: links against lib64/stubs/libcuda.so (no wheel ships one).
#include <cuda.h>
#endif

__global__ void scale(const __nv_bfloat16* in, float* out, int n, float factor) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __bfloat162float(in[i]) * factor;
}

int main() {
#ifdef WHEELCUDA_DRIVER
  int driver = 0;
  std::printf("driver API: cuDriverGetVersion -> %d\n", static_cast<int>(cuDriverGetVersion(&driver)));
#endif
  const int n = 256;
  __nv_bfloat16* in = nullptr;
  float* out = nullptr;
  float* sum = nullptr;
  if (cudaMalloc(&in, n * sizeof(*in)) != cudaSuccess) {
    // Built and linked; no GPU here. The build is what this program checks.
    std::printf("built; no usable GPU: %s\n", cudaGetErrorString(cudaGetLastError()));
    return 0;
  }
  cudaMalloc(&out, n * sizeof(float));
  cudaMalloc(&sum, sizeof(float));
  cudaMemset(in, 0, n * sizeof(*in));
  scale<<<(n + 127) / 128, 128>>>(in, out, n, 2.0f);
  void* temp = nullptr;
  size_t temp_bytes = 0;
  cub::DeviceReduce::Sum(temp, temp_bytes, out, sum, n);
  cudaMalloc(&temp, temp_bytes);
  cub::DeviceReduce::Sum(temp, temp_bytes, out, sum, n);
  float host = -1.0f;
  cudaMemcpy(&host, sum, sizeof(float), cudaMemcpyDeviceToHost);
  std::printf("sum=%g %s\n", host, host == 0.0f ? "ok" : "WRONG");
  return host == 0.0f ? 0 : 1;
}
