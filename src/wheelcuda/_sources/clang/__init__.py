"""The clang toolkit: clang compiling CUDA over NVIDIA's CUDA 12 wheels (see
:mod:`.source`)."""
