"""A torch CUDAExtension built the way most packages do: setup.py + BuildExtension."""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    packages=["wheelcuda_demo"],
    ext_modules=[
        CUDAExtension(
            "wheelcuda_demo._C",
            ["csrc/binding.cpp", "csrc/scaled_add.cu"],
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
