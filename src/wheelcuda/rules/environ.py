"""The variables a build needs, for a tree and an arch list (pure).

- CUDA_HOME and CUDA_PATH: torch.utils.cpp_extension reads CUDA_HOME, then CUDA_PATH,
  at import; CMake's FindCUDAToolkit and many setup.py files read them too.
- PATH with the tree's ``bin`` first: builds that run plain ``nvcc``. Earlier wheelcuda
  trees are dropped from PATH, so running ``env`` twice does not grow it.
- CUDACXX: how CMake's ``enable_language(CUDA)`` finds the compiler.
- TORCH_CUDA_ARCH_LIST (torch) and CUDAARCHS (CMake's default CMAKE_CUDA_ARCHITECTURES).
- WHEELCUDA_ARCHS / WHEELCUDA_ALL_ARCHS: what the tree's nvcc wrapper prunes to.
- WHEELCUDA_CXX_STD, CXX (the tree's host shim) and WHEELCUDA_REAL_CXX: a build that
  names an older C++ standard than torch's headers need is raised to it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from . import arch as archmod
from . import cxxstd

__all__ = ["build_environ", "clean_path", "foreign_home"]


def clean_path(path: str, bin_dir: str, homes_dir: str) -> str:
    """``bin_dir`` first, then ``path`` without any wheelcuda tree's bin (pure)."""
    prefix = homes_dir.rstrip("/") + "/"
    kept = [p for p in path.split(os.pathsep)
            if p and p != bin_dir and not p.startswith(prefix)]
    return os.pathsep.join([bin_dir, *kept])


def build_environ(home: str, archs: Sequence[archmod.Arch], current: Mapping[str, str],
                  homes_dir: str, *, all_archs: bool = False,
                  cxx_std: int | None = None) -> dict[str, str]:
    """The variables ``wheelcuda env`` exports, in the order it prints them; with
    ``cxx_std``, what raises a build's C++ standard to it (rules/cxxstd.py)."""
    bin_dir = os.path.join(home, "bin")
    variables = {
        "CUDA_HOME": home,
        "CUDA_PATH": home,
        "CUDACXX": os.path.join(bin_dir, "nvcc"),
        "PATH": clean_path(current.get("PATH", os.defpath), bin_dir, homes_dir),
    }
    if archs:
        variables["TORCH_CUDA_ARCH_LIST"] = archmod.to_torch(archs)
        variables["CUDAARCHS"] = archmod.to_cmake(archs)
        # Read by the tree's nvcc wrapper: every nvcc call builds exactly these archs,
        # whatever -gencode list the package hard-coded (causal-conv1d's nine
        # targets ignore TORCH_CUDA_ARCH_LIST). --all-archs keeps it.
        variables["WHEELCUDA_ARCHS"] = archmod.to_torch(archs)
        variables["WHEELCUDA_ALL_ARCHS"] = "1" if all_archs else "0"
    variables.update(cxxstd.variables(cxx_std, home, current))
    return variables


def foreign_home(current: Mapping[str, str], home: str, homes_dir: str) -> str | None:
    """A CUDA_HOME/CUDA_PATH the user set to a toolkit other than ours, if any (pure)."""
    for var in ("CUDA_HOME", "CUDA_PATH"):
        value = current.get(var)
        if value and value.rstrip("/") != home and not value.startswith(homes_dir):
            return f"{var}={value}"
    return None
