// The Python module wheelcuda_backend_ext._C: scaled_add (needs a GPU) and
// compiled_archs (does not: it says which GPU archs the kernels were built for).
#include <torch/extension.h>

#include <string>

torch::Tensor scaled_add_cuda(const torch::Tensor& x, const torch::Tensor& y, double alpha);
std::string compiled_archs();

static torch::Tensor scaled_add(const torch::Tensor& x, const torch::Tensor& y, double alpha) {
  TORCH_CHECK(x.is_cuda() && y.is_cuda(), "scaled_add: tensors must be on a CUDA device");
  TORCH_CHECK(x.sizes() == y.sizes(), "scaled_add: shapes differ");
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), "scaled_add: dtypes differ");
  return scaled_add_cuda(x.contiguous(), y.contiguous(), alpha);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "wheelcuda backend example extension";
  m.def("scaled_add", &scaled_add, "out = x + alpha * y on the GPU", pybind11::arg("x"),
        pybind11::arg("y"), pybind11::arg("alpha"));
  m.def("compiled_archs", &compiled_archs,
        "the GPU archs the kernels were compiled for, as nvcc's __CUDA_ARCH_LIST__ (\"900\")");
}
