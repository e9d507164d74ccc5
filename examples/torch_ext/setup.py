"""A torch CUDAExtension built the way most packages do: setup.py + BuildExtension.

Like causal-conv1d and mamba-ssm, it can hard-code its own -gencode list
(DEMO_GENCODE="75;80;90"), which makes torch ignore TORCH_CUDA_ARCH_LIST: wheelcuda's
tests use it to show that the tree's nvcc still builds only the archs asked for.
"""

import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

gencode = []
for number in filter(None, os.environ.get("DEMO_GENCODE", "").split(";")):
    gencode += ["-gencode", f"arch=compute_{number},code=sm_{number}"]

setup(
    packages=["wheelcuda_demo"],
    ext_modules=[
        CUDAExtension(
            "wheelcuda_demo._C",
            ["csrc/binding.cpp", "csrc/scaled_add.cu"],
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3", *gencode]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
