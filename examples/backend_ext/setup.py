"""The extension, declared as most torch extensions do: setup.py + BuildExtension.

The metadata is static, in pyproject.toml. Nothing here runs nvcc when the file is
imported: wheelcuda's backend runs it for the sdist and the build requirements before
the compiler is installed (with an empty CUDA_HOME), and only the wheel build compiles.
"""

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    ext_modules=[
        CUDAExtension(
            "wheelcuda_backend_ext._C",
            ["csrc/binding.cpp", "csrc/scaled_add.cu"],
            extra_compile_args={"cxx": ["-O3"], "nvcc": ["-O3"]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
