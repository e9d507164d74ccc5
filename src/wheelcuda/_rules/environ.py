"""The variables a build needs, for a tree and an arch list (pure).

- CUDA_HOME and CUDA_PATH: torch.utils.cpp_extension reads CUDA_HOME, then CUDA_PATH,
  at import; CMake's FindCUDAToolkit and many setup.py files read them too.
- PATH with the tree's ``bin`` first: builds that run plain ``nvcc``. Earlier wheelcuda
  trees are dropped from PATH, so running ``env`` twice does not grow it.
- CUDACXX: how CMake's ``enable_language(CUDA)`` finds the compiler.
- TORCH_CUDA_ARCH_LIST (torch) and CUDAARCHS (CMake's default CMAKE_CUDA_ARCHITECTURES).
- WHEELCUDA_ARCHS / WHEELCUDA_ALL_ARCHS: what the tree's nvcc wrapper prunes to.
- WHEELCUDA_CXX_STD, CXX (the tree's host shim) and WHEELCUDA_REAL_CXX: a build that
  names an older C++ standard than torch's headers need is raised to it, and its host
  compiles wait for their turn in the machine's compile budget.

What an isolated build environment needs beyond them (:func:`isolated`), which ``env``
exports too: installers read build constraints and the packages' switches from the
environment, but make a build environment of their own, with the newest torch the index
has (2.15.0+cu132 against a cu12.8 tree, seen) unless told otherwise.

- UV_BUILD_CONSTRAINT and PIP_BUILD_CONSTRAINT (space-separated files, both: pip splits
  the value of an option it may take twice; pip >= 25.3): torch pinned to the target's.
  The user's own files are kept, first; ours comes last, once.
- The recipe table's switches (CAUSAL_CONV1D_FORCE_BUILD=TRUE: else its setup.py fetches
  a wheel from GitHub and dies offline) where the user set none, and its arch variables
  (FLASH_ATTN_CUDA_ARCHS), which follow the arch list as TORCH_CUDA_ARCH_LIST does.
- A torch from PyTorch's own index (``2.11.0+cu128``) is found in a build environment
  only there: PIP_EXTRA_INDEX_URL gets it, after the user's own (pip takes the best
  version of each package over all its indexes; the next env replaces it). uv gets no
  variable for it: an index in UV_INDEX comes before PyPI for every package, and uv takes
  each from the first index that has it, so the setuptools and requests of PyTorch's
  index would be every later uv command's (setuptools 70 there, where builds need 77);
  uv-config scopes that index to torch instead (buildplan.py says so).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from .._data import settings as registry
from . import arch as archmod
from . import cxxstd

#: Where uv and pip read build constraints from the environment.
BUILD_CONSTRAINT_VARS = ("UV_BUILD_CONSTRAINT", "PIP_BUILD_CONSTRAINT")
PIP_INDEX_VAR = "PIP_EXTRA_INDEX_URL"
#: Which index env added to PIP_EXTRA_INDEX_URL, so that the next env replaces it.
ENV_INDEX_VAR = registry.ENV_INDEX.name


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
    ``cxx_std``, what raises a build's C++ standard to it (_rules/cxxstd.py)."""
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


def constraints_text(python: str, pins: Mapping[str, str]) -> str:
    """Build constraints holding ``pins`` (torch and its companions) exactly (pure)."""
    lines = [f"# build constraints by `wheelcuda constraints` for {python}",
             "# use: pip install --build-constraint FILE ... (pip >= 25.3), "
             "uv pip install --build-constraint FILE ...,",
             "# or PIP_BUILD_CONSTRAINT=FILE / UV_BUILD_CONSTRAINT=FILE",
             *(f"{name}=={version}" for name, version in pins.items())]
    return "\n".join(lines) + "\n"


def _after(current: str, ours: str, our_folder: str, sep: str = " ") -> str:
    """``current`` (a list of files or URLs) with ``ours`` last, once: an earlier one of
    ours (a file in ``our_folder``, from env run before) left out (pure)."""
    prefix = our_folder.rstrip("/") + "/" if our_folder else None
    kept = [w for w in current.split() if w != ours and not (prefix and w.startswith(prefix))]
    return sep.join([*kept, ours])


def isolated(current: Mapping[str, str], *, constraints: str | None, constraints_dir: str,
             switches: Mapping[str, str], arch_vars: Mapping[str, str],
             index: str | None) -> dict[str, str]:
    """What ``env`` exports for isolated builds (see the module's docstring) (pure)."""
    out: dict[str, str] = {}
    if constraints:
        out.update({v: _after(current.get(v, ""), constraints, constraints_dir)
                    for v in BUILD_CONSTRAINT_VARS})
    out.update({k: v for k, v in switches.items() if k not in current})
    out.update(arch_vars)
    ours = current.get(ENV_INDEX_VAR)
    if index or ours:  # the one an earlier env added goes, whatever this one adds
        kept = [w for w in current.get(PIP_INDEX_VAR, "").split() if w != ours]
        out[PIP_INDEX_VAR] = " ".join([*kept, *([index] if index and index not in kept
                                                 else [])])
        out[ENV_INDEX_VAR] = index or ""
    return out
