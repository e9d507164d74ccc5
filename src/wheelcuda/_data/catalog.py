"""What NVIDIA ships, as data.

One frozen :class:`Component` per piece of the toolkit, with the wheel that carries
it for each CUDA major version, the folder it unpacks to under site-packages, and the
files that prove it is complete. Adding a component or a CUDA version means editing
this table, never a chain of ifs (the shape follows cuda-pathfinder's
``header_descriptor_catalog.py``).

Layouts (docs/facts.md, "NVIDIA's CUDA wheels: the two layouts"):

- CUDA 13 wheels all unpack into one shared tree, ``nvidia/cu13/{bin,include,lib,nvvm}``.
- CUDA 12 wheels unpack one folder per component, ``nvidia/cuda_nvcc``,
  ``nvidia/cuda_runtime``, ... and the nvcc wheel holds ``ptxas`` but no compiler driver.
"""

from __future__ import annotations

import platform
import re
import shlex
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

#: CUDA major versions whose wheel layout wheelcuda knows.
MAJORS: Final = (13, 12)
#: The majors whose whole compiler ships as PyPI wheels (CUDA 12's nvcc wheel is ptxas
#: only: its compiler comes from NVIDIA's archives or a local toolkit).
WHEEL_COMPILER_MAJORS: Final = (13,)
#: What a fetch of the compiler wheels (``cuda-toolkit[nvcc,cccl]`` at torch's pin)
#: downloads, about: 270 MB for CUDA 13.0.3 on x86_64 (PyPI, 2026-11-30).
COMPILER_WHEELS_MB: Final = 270
#: torch and the packages built with it: a build environment must have the runtime's
#: versions (the extension links against torch's C++ API; torchvision and torchaudio
#: pin torch themselves), and they move to another CUDA build together.
TORCH_FAMILY: Final = ("torch", "torchvision", "torchaudio")


@dataclass(frozen=True)
class Component:
    """One NVIDIA component as it appears in pip wheels."""

    #: Short name used in messages and in ``version.json`` (NVIDIA's redistrib name).
    name: str
    #: What it is, for people.
    title: str
    #: Distribution name per CUDA major version.
    wheels: MappingProxyType[int, str]
    #: Folder under site-packages per CUDA major version.
    folders: MappingProxyType[int, str]
    #: Files (relative to the folder) that must exist for the component to be usable.
    files: MappingProxyType[int, tuple[str, ...]]
    #: Part of the compiler set: must be present and agree on CUDA major.minor.
    compiler: bool = True
    #: The pip extra of the ``cuda-toolkit`` metapackage that brings it.
    extra: str | None = None
    #: Where these versions are unrelated to the CUDA release (cuBLAS 13.1 ships in 13.0).
    versioned_with_cuda: bool = True
    #: nvidia-cuda-nvcc requires it with no version bound, and older cuda-toolkit
    #: releases do not pin it either: ``cuda-toolkit[nvcc]==13.0.2`` resolves nvcc 13.0.88
    #: with nvvm, crt and runtime 13.5.37, a set nvcc refuses. Fetches pin it themselves.
    pin_release: bool = False


def _component(
    name: str,
    title: str,
    *,
    wheels: dict[int, str],
    folders: dict[int, str],
    files: dict[int, tuple[str, ...]],
    compiler: bool = True,
    extra: str | None = None,
    versioned_with_cuda: bool = True,
    pin_release: bool = False,
) -> Component:
    return Component(
        name=name,
        title=title,
        wheels=MappingProxyType(wheels),
        folders=MappingProxyType(folders),
        files=MappingProxyType(files),
        compiler=compiler,
        extra=extra,
        versioned_with_cuda=versioned_with_cuda,
        pin_release=pin_release,
    )


_CU13 = "nvidia/cu13"

#: The compiler driver and the tools it calls. CUDA 12 wheels hold only ptxas.
NVCC = _component(
    "cuda_nvcc",
    "CUDA compiler driver (nvcc, ptxas, cudafe++, fatbinary, nvlink)",
    wheels={13: "nvidia-cuda-nvcc", 12: "nvidia-cuda-nvcc-cu12"},
    folders={13: _CU13, 12: "nvidia/cuda_nvcc"},
    files={
        13: ("bin/nvcc", "bin/nvcc.profile", "bin/ptxas", "bin/cudafe++",
             "bin/fatbinary", "bin/nvlink", "bin/bin2c"),
        12: ("bin/nvcc", "bin/nvcc.profile", "bin/ptxas", "bin/cudafe++",
             "bin/fatbinary", "bin/nvlink", "bin/bin2c"),
    },
    extra="nvcc",
)

#: The NVVM front end (cicc) and libdevice. In CUDA 12 it lives in the nvcc wheel.
NVVM = _component(
    "libnvvm",
    "NVVM compiler (cicc) and libdevice",
    wheels={13: "nvidia-nvvm", 12: "nvidia-cuda-nvcc-cu12"},
    folders={13: _CU13, 12: "nvidia/cuda_nvcc"},
    files={
        13: ("nvvm/bin/cicc", "nvvm/libdevice/libdevice.10.bc"),
        12: ("nvvm/bin/cicc", "nvvm/libdevice/libdevice.10.bc"),
    },
    extra="nvcc",
    pin_release=True,
)

#: The compiler's own headers (crt/host_config.h says which host compilers it takes).
CRT = _component(
    "cuda_crt",
    "CUDA compiler headers (crt/)",
    wheels={13: "nvidia-cuda-crt", 12: "nvidia-cuda-nvcc-cu12"},
    folders={13: _CU13, 12: "nvidia/cuda_nvcc"},
    files={13: ("include/crt/host_config.h",), 12: ("include/crt/host_config.h",)},
    extra="nvcc",
    pin_release=True,
)

RUNTIME = _component(
    "cuda_cudart",
    "CUDA runtime (headers, libcudart)",
    wheels={13: "nvidia-cuda-runtime", 12: "nvidia-cuda-runtime-cu12"},
    folders={13: _CU13, 12: "nvidia/cuda_runtime"},
    files={
        13: ("include/cuda_runtime.h", "include/cuda.h", "lib/libcudart.so.13",
             "lib/libcudart_static.a", "lib/libcudadevrt.a"),
        12: ("include/cuda_runtime.h", "include/cuda.h", "lib/libcudart.so.12"),
    },
    extra="cudart",
    pin_release=True,
)

CCCL = _component(
    "cuda_cccl",
    "CUDA C++ Core Libraries (cub, thrust, libcu++)",
    wheels={13: "nvidia-cuda-cccl", 12: "nvidia-cuda-cccl-cu12"},
    folders={13: _CU13, 12: "nvidia/cuda_cccl"},
    files={13: ("include/cccl/cub/cub.cuh",), 12: ("include/cub/cub.cuh",)},
    extra="cccl",
    # torch 2.15's own dependencies bring CCCL 13.3 beside its CUDA 13.2 (unbounded), and
    # CCCL of a newer release does not compile with an older nvcc (seen by make live)
    pin_release=True,
)


def _library(name: str, title: str, cu13: str, cu12: str, header: str, *, extra: str
             ) -> Component:
    """A math or tool library: optional, linked in when present (torch's headers use them);
    ``extra``: the metapackage's extra that brings it."""
    return _component(
        name,
        title,
        wheels={13: cu13, 12: f"{cu13}-cu12"},
        folders={13: _CU13, 12: cu12},
        files={13: (f"include/{header}",), 12: (f"include/{header}",)},
        compiler=False,
        extra=extra,
        versioned_with_cuda=False,
    )


#: The libraries torch's cu12/cu13 wheels depend on (torch 2.14.1 asks for
#: ``cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,
#: nvrtc,nvtx]``); torch's own headers include three (ATen/cuda/CUDAContext.h pulls in
#: cublas_v2.h, cusparse.h, cusolverDn.h), and packages include the others.
LIBRARIES: Final = (
    _library("libcublas", "cuBLAS", "nvidia-cublas", "nvidia/cublas", "cublas_v2.h",
             extra="cublas"),
    _library("libcusparse", "cuSPARSE", "nvidia-cusparse", "nvidia/cusparse", "cusparse.h",
             extra="cusparse"),
    _library("libcusolver", "cuSOLVER", "nvidia-cusolver", "nvidia/cusolver", "cusolverDn.h",
             extra="cusolver"),
    _library("libcurand", "cuRAND", "nvidia-curand", "nvidia/curand", "curand.h",
             extra="curand"),
    _library("libcufft", "cuFFT", "nvidia-cufft", "nvidia/cufft", "cufft.h", extra="cufft"),
    _library("cuda_nvrtc", "NVRTC", "nvidia-cuda-nvrtc", "nvidia/cuda_nvrtc", "nvrtc.h",
             extra="nvrtc"),
    _library("libnvjitlink", "nvJitLink", "nvidia-nvjitlink", "nvidia/nvjitlink",
             "nvJitLink.h", extra="nvjitlink"),
    _library("cuda_nvtx", "NVTX", "nvidia-nvtx", "nvidia/nvtx", "nvtx3/nvToolsExt.h",
             extra="nvtx"),
    _library("cuda_cupti", "CUPTI", "nvidia-cuda-cupti", "nvidia/cuda_cupti", "cupti.h",
             extra="cupti"),
)

#: The libraries whose headers a tree meant for build environments wheelcuda cannot see
#: (``uv-config``) keeps in the store (it is written before uv makes that environment,
#: and outlives a removed .venv), and the metapackage extras that bring them: torch's,
#: as that environment will hold them and a tree over an environment's wheels sees them.
#: Only torch's three once: nerfacc 0.5.3 (`#include <curand.h>`) built through
#: `install` and failed through uv-config + `uv pip install`, curand.h missing. Not
#: nvJitLink: the metapackage leaves it unbounded (the index's newest release), and a
#: tree never mixes two releases' headers in CUDA 13's one include folder.
HEADER_COMPONENTS: Final = tuple(c for c in LIBRARIES if c.name != "libnvjitlink")
HEADER_LIBRARIES: Final = tuple(c.name for c in HEADER_COMPONENTS)
HEADER_EXTRAS: Final = tuple(c.extra for c in HEADER_COMPONENTS if c.extra)

#: Everything the compiler needs, in the order doctor shows it.
COMPILER: Final = (NVCC, NVVM, CRT, RUNTIME, CCCL)
COMPONENTS: Final = COMPILER + LIBRARIES

#: The metapackage that pins one consistent compiler set (nvidia-cuda-nvcc bounds none).
METAPACKAGE: Final = "cuda-toolkit"
METAPACKAGE_EXTRAS: Final = ("nvcc", "cccl")

#: Top-level folders of a component folder and where they go in the synthesized tree.
#: ``lib`` becomes ``lib64`` because nvcc.profile links from ``lib64`` (docs/facts.md,
#: "nvcc.profile").
TREE_FOLDERS: Final = MappingProxyType({"bin": "bin", "include": "include", "lib": "lib64",
                                        "nvvm": "nvvm"})

#: ``targets/<dir>`` name per machine, as NVIDIA's installers lay it out.
TARGET_DIRS: Final = MappingProxyType({"x86_64": "x86_64-linux", "aarch64": "sbsa-linux"})


def target_dir(machine: str | None = None) -> str:
    """The ``targets/`` folder name for this machine (``x86_64-linux`` on x86_64)."""
    machine = machine or platform.machine()
    return TARGET_DIRS.get(machine, f"{machine}-linux")


def release_of(specifier: str) -> str | None:
    """``==13.0.3`` or ``==13.0.*`` -> ``13.0``; ``==13.*`` -> None (pure)."""
    m = re.match(r"^==\s*(\d+)\.(\d+)", specifier)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def header_requirements(specifier: str) -> list[str]:
    """The libraries of :data:`HEADER_LIBRARIES` at the metapackage's ``specifier``."""
    return [f'{METAPACKAGE}[{",".join(HEADER_EXTRAS)}]{specifier}']


def toolkit_requirements(specifier: str) -> list[str]:
    """One consistent compiler set: the metapackage at ``specifier`` (e.g. torch's own
    ``==13.0.3`` pin), and the parts nvcc leaves unbounded held to the same release."""
    reqs = [f'{METAPACKAGE}[{",".join(METAPACKAGE_EXTRAS)}]{specifier}']
    release = release_of(specifier)
    if release:
        major = int(release.split(".")[0])
        reqs += [f"{c.wheels[major]}=={release}.*" for c in COMPILER
                 if c.pin_release and major in c.wheels]
    return list(dict.fromkeys(reqs))  # CUDA 12's nvcc, nvvm and crt are one wheel


def install_command(specifier: str, python: str | None = None) -> str:
    """The command a person copies to install that set into an environment."""
    target = f" --python {shlex.quote(python)}" if python else ""
    quoted = " ".join(f'"{r}"' for r in toolkit_requirements(specifier))
    return f"uv pip install{target} {quoted}"
