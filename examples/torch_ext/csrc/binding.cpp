// Registers the op with torch (TORCH_LIBRARY) and as a Python module, so the
// extension imports as wheelcuda_demo._C like any setup.py-built extension.
#include <torch/extension.h>

torch::Tensor scaled_add_cuda(const torch::Tensor& x, const torch::Tensor& y, double alpha);

static torch::Tensor scaled_add(const torch::Tensor& x, const torch::Tensor& y, double alpha) {
  TORCH_CHECK(x.is_cuda() && y.is_cuda(), "scaled_add: tensors must be on a CUDA device");
  TORCH_CHECK(x.sizes() == y.sizes(), "scaled_add: shapes differ");
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), "scaled_add: dtypes differ");
  return scaled_add_cuda(x.contiguous(), y.contiguous(), alpha);
}

TORCH_LIBRARY(wheelcuda_demo, m) {
  m.def("scaled_add(Tensor x, Tensor y, float alpha) -> Tensor");
}

TORCH_LIBRARY_IMPL(wheelcuda_demo, CUDA, m) {
  m.impl("scaled_add", &scaled_add);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "wheelcuda demo extension";
}
