"""A torch CUDAExtension built the way most packages do: setup.py + BuildExtension.

Like causal-conv1d and mamba-ssm, it can hard-code its own -gencode list
(DEMO_GENCODE="75;80;90"), which makes torch ignore TORCH_CUDA_ARCH_LIST: wheelcuda's
tests use it to show that the tree's nvcc still builds only the archs asked for. Like
chamferdist, it can name its own C++ standard (DEMO_STD=c++17), which torch 2.14's
headers refuse (its files then include all of torch's API, as chamferdist's do): the tests
show the tree's compilers raising it.
"""

import os

from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

std = [f"-std={os.environ['DEMO_STD']}"] if os.environ.get("DEMO_STD") else []
whole_api = ["-DDEMO_WHOLE_API"] if std else []
gencode = []
for number in filter(None, os.environ.get("DEMO_GENCODE", "").split(";")):
    gencode += ["-gencode", f"arch=compute_{number},code=sm_{number}"]

setup(
    packages=["wheelcuda_demo"],
    ext_modules=[
        CUDAExtension(
            "wheelcuda_demo._C",
            ["csrc/binding.cpp", "csrc/scaled_add.cu"],
            extra_compile_args={"cxx": ["-O3", *std, *whole_api],
                                "nvcc": ["-O3", *std, *whole_api, *gencode]},
        )
    ],
    cmdclass={"build_ext": BuildExtension},
)
