// out = x + alpha * y. Includes ATen/cuda/CUDAContext.h on purpose: it pulls in the
// cuBLAS, cuSPARSE and cuSOLVER headers, as most real extensions do.
#include <ATen/cuda/CUDAContext.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#ifdef DEMO_WHOLE_API  // set with DEMO_STD: all of ATen, as an older extension includes it
#include <ATen/ATen.h>
#endif

template <typename T>
__global__ void scaled_add_kernel(const T* x, const T* y, T* out, float alpha, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = static_cast<T>(static_cast<float>(x[i]) + alpha * static_cast<float>(y[i]));
  }
}

at::Tensor scaled_add_cuda(const at::Tensor& x, const at::Tensor& y, double alpha) {
  const c10::cuda::CUDAGuard guard(x.device());
  auto out = at::empty_like(x);
  const int64_t n = x.numel();
  if (n == 0) return out;
  const int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "scaled_add", [&] {
    scaled_add_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        x.data_ptr<scalar_t>(), y.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(),
        static_cast<float>(alpha), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
