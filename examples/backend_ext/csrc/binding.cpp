// The Python module wheelcuda_backend_ext._C: compiled_archs (needs no GPU: it says which
// GPU archs the kernels were built for), and the op scaled_add registered with torch
// (needs a GPU; torch.ops.wheelcuda_backend_ext.scaled_add). It includes what it uses, as
// PyTorch's extension-cpp template does, not <torch/extension.h>: that header (all of
// torch's C++ API and pybind11) took 38 CPU-seconds to compile here against torch
// 2.14.1, these 7.
#include <Python.h>

#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <string>

at::Tensor scaled_add_cuda(const at::Tensor& x, const at::Tensor& y, double alpha);
std::string compiled_archs();

static at::Tensor scaled_add(const at::Tensor& x, const at::Tensor& y, double alpha) {
  TORCH_CHECK(x.is_cuda() && y.is_cuda(), "scaled_add: tensors must be on a CUDA device");
  TORCH_CHECK(x.sizes() == y.sizes(), "scaled_add: shapes differ");
  TORCH_CHECK(x.scalar_type() == y.scalar_type(), "scaled_add: dtypes differ");
  return scaled_add_cuda(x.contiguous(), y.contiguous(), alpha);
}

TORCH_LIBRARY(wheelcuda_backend_ext, m) {
  m.def("scaled_add(Tensor x, Tensor y, float alpha) -> Tensor");
}

TORCH_LIBRARY_IMPL(wheelcuda_backend_ext, CUDA, m) {
  m.impl("scaled_add", &scaled_add);
}

static PyObject* py_compiled_archs(PyObject*, PyObject*) {
  return PyUnicode_FromString(compiled_archs().c_str());
}

static PyMethodDef methods[] = {
    {"compiled_archs", py_compiled_archs, METH_NOARGS,
     "the GPU archs the kernels were compiled for, as nvcc's __CUDA_ARCH_LIST__ (\"900\")"},
    {nullptr, nullptr, 0, nullptr}};

PyMODINIT_FUNC PyInit__C(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, "_C",
                               "wheelcuda backend example extension", -1, methods};
  return PyModule_Create(&module);
}
