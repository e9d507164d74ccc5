// Registers the op with torch (TORCH_LIBRARY) and makes an empty Python module, so the
// extension imports as wheelcuda_demo._C like any setup.py-built extension. It includes
// what it uses, as PyTorch's extension-cpp template does, not <torch/extension.h>: that
// header (all of torch's C++ API and pybind11) took 38 CPU-seconds to compile here
// against torch 2.14.1, these 7, and every integration test builds this file.
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <torch/library.h>
#ifdef DEMO_WHOLE_API  // set with DEMO_STD: the whole API under the build's own -std, as
#include <torch/extension.h>  // chamferdist 1.0.3 includes it under -std=c++17
#endif

at::Tensor scaled_add_cuda(const at::Tensor& x, const at::Tensor& y, double alpha);

static at::Tensor scaled_add(const at::Tensor& x, const at::Tensor& y, double alpha) {
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

// The module holds nothing: importing it runs the registrations above.
PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C", "wheelcuda demo extension", -1,
                               nullptr};
  return PyModule_Create(&module);
}
