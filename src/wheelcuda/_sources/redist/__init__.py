"""NVIDIA's archives: an NVIDIA CUDA 12 compiler unpacked into the store (see
:mod:`.source`)."""
