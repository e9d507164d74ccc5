"""What known CUDA extension packages need to build, as data.

Each :class:`Recipe` holds the variables a package's setup.py reads. The user's own
environment always wins: a variable already set is left as it is. Sources are cited per
entry (the packages' setup.py files, read for this table).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from .._standalone import _tree

#: Peak RSS of one nvcc/cicc job when the package table says nothing (GiB): the tree's
#: programs fall back to the same figure at compile time.
DEFAULT_JOB_GB = _tree.DEFAULT_JOB_GB

_EMPTY: Mapping[str, str] = MappingProxyType({})
_EMPTY_ORDER: Mapping[str, float] = MappingProxyType({})


@dataclass(frozen=True)
class Recipe:
    """Build settings of one package."""

    #: Always set: e.g. force a source build instead of downloading a prebuilt wheel.
    env: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    #: Set only when no GPU is visible (packages that look for one to decide on CUDA).
    no_gpu_env: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    #: A variable that takes the arch list as bare numbers (``80;90;120``), if any.
    arch_var: str | None = None
    #: Peak memory of one compile job (GiB): how much of the machine's compile budget one
    #: of its compiles holds (_standalone/_pool.py), until its own build measured it.
    job_gb: float = DEFAULT_JOB_GB
    #: Why, for ``--explain``.
    note: str = ""
    #: Prefixes of the package's own variables: any the user sets enter the cache key.
    prefixes: tuple[str, ...] = ()
    #: The first guess of each source's compile time (seconds, by base name), for the
    #: order the compile pool starts compiles in until the package's own build measured
    #: them (_standalone/_pool.py): longest first.
    order: Mapping[str, float] = field(default_factory=lambda: _EMPTY_ORDER)


def _m(**kw: str) -> Mapping[str, str]:
    return MappingProxyType(kw)


def _flash_attn_order() -> Mapping[str, float]:
    """flash-attn 2.8.x's 72 kernel files (hdim x dtype x causal for the forward, backward
    and split-KV forward passes), a guess of their seconds for one arch: the CPU seconds
    each took in a whole build on the GPU machine (16 cores, nvcc 13.0, sm_90, 16 jobs,
    2026-12-03, fp16 and bf16 averaged; they differ by under 10%). A causal file takes
    about 0.6 of its non-causal twin, and the time is not monotonic in hdim (split-KV
    hdim 64 is the longest), which the earlier guess, a line in hdim through files
    compiled alone on a 2-core machine, missed. The split-KV files are the longest, and
    setup.py lists them last: in its own order they run alone at the end of the build.
    A list schedule of that build's walls on 16 slots gives 1144 s in setup.py's order,
    1067 s in the line's and 1017 s in this table's. The forward hdim-96 pair is as
    measured: the only causal file no shorter than its twin (151/158 s against 160/161)."""
    # (non-causal, causal) seconds by kind and hdim
    seconds = {
        "flash_fwd_split": {32: (291, 181), 64: (376, 246), 96: (318, 205), 128: (359, 214),
                            192: (299, 175), 256: (352, 212)},
        "flash_bwd": {32: (207, 142), 64: (276, 175), 96: (232, 170), 128: (275, 183),
                      192: (243, 146), 256: (339, 210)},
        "flash_fwd": {32: (156, 109), 64: (184, 127), 96: (154, 160), 128: (218, 171),
                      192: (155, 108), 256: (263, 176)},
    }
    return MappingProxyType({
        f"{kind}_hdim{hdim}_{dtype}{causal}_sm80.cu": float(pair[bool(causal)])
        for kind, by_hdim in seconds.items() for hdim, pair in by_hdim.items()
        for dtype in ("fp16", "bf16") for causal in ("", "_causal")})


_FORCE_CUDA = _m(FORCE_CUDA="1")
_PYG = ("FORCE_CUDA", "FORCE_ONLY_CUDA", "FORCE_ONLY_CPU", "WITH_")
_PYG_NOTE = "FORCE_CUDA=1 without a visible GPU"

#: Keyed by canonical distribution name. Read from each package's setup.py (latest PyPI
#: sdists, 2026-11): the *_FORCE_BUILD switches take exactly "TRUE".
RECIPES: Mapping[str, Recipe] = MappingProxyType({
    # setup.py downloads a prebuilt wheel from GitHub releases unless forced, and catches
    # only HTTPError: offline, the build aborts (causal-conv1d 1.7.0's setup.py).
    # The order: each file's seconds in install's build on the GPU machine (nvcc 13.0,
    # sm_90, 2026-12-05): bwd is the critical path (2m58s; about 4.5 min on 2 cores with
    # clang), and setup.py lists it third, after the binding; without a table the first
    # to arrive took the cores and bwd started 6 to 36 s into uv's and pip's builds.
    "causal-conv1d": Recipe(prefixes=("CAUSAL_CONV1D_",), env=_m(CAUSAL_CONV1D_FORCE_BUILD="TRUE"),
                            note="build from source, never fetch a GitHub wheel",
                            order=MappingProxyType({
                                "causal_conv1d_bwd.cu": 178.0, "causal_conv1d.cpp": 38.5,
                                "causal_conv1d_fwd.cu": 15.9,
                                "causal_conv1d_update.cu": 6.9})),
    "mamba-ssm": Recipe(prefixes=("MAMBA_",), env=_m(MAMBA_FORCE_BUILD="TRUE"),
                        note="build from source, never fetch a GitHub wheel"),
    # FLASH_ATTN_CUDA_ARCHS: ";"-separated numbers; 2.8.3 acts on 80, 90, 100 and 120 only.
    # Without MAX_JOBS its setup.py imports psutil to pick one itself. job_gb is the first
    # guess (a build's own profile decides after it): 2.8.3 for sm_90 peaked at 65 GiB
    # with 15 jobs on the H200 machine (2026-12-01), about 4.3 GiB a job; 8 had cost it a
    # core's job and every split of the optimizer.
    "flash-attn": Recipe(prefixes=("FLASH_ATTENTION_", "FLASH_ATTN_"),
                         env=_m(FLASH_ATTENTION_FORCE_BUILD="TRUE"),
                         arch_var="FLASH_ATTN_CUDA_ARCHS", job_gb=5.5, order=_flash_attn_order(),
                         note="build from source; its own arch variable; heavy compile jobs"),
    # Builds CUDA only when a GPU is visible, FORCE_CUDA=1, or TORCH_CUDA_ARCH_LIST is set.
    "xformers": Recipe(prefixes=("XFORMERS_", "FORCE_CUDA"), no_gpu_env=_FORCE_CUDA, job_gb=6.0,
                       note="FORCE_CUDA=1: build the CUDA kernels without a visible GPU"),
    # pyg packages: CUDA only if torch.cuda.is_available() or FORCE_CUDA=1. (Whether a
    # package lists torch, which decides uv-config's torch entry, is read from its sdist.)
    "torch-scatter": Recipe(prefixes=_PYG, no_gpu_env=_FORCE_CUDA, note=_PYG_NOTE),
    "torch-sparse": Recipe(prefixes=_PYG, no_gpu_env=_FORCE_CUDA, note=_PYG_NOTE),
    "torch-cluster": Recipe(prefixes=_PYG, no_gpu_env=_FORCE_CUDA, note=_PYG_NOTE),
    "torch-spline-conv": Recipe(prefixes=_PYG, no_gpu_env=_FORCE_CUDA, note=_PYG_NOTE),
    # apex 25.09: environment variables replace the legacy --build-option=--cpp_ext.
    "apex": Recipe(prefixes=("APEX_",), env=_m(APEX_CPP_EXT="1", APEX_CUDA_EXT="1"),
                   note="build apex's C++ and CUDA extensions"),
    # DeepSpeed 0.19.8: prebuild ops, less those that need packages or libraries a plain
    # environment lacks (cutlass/ragged-device ops import dskernels; evoformer needs
    # CUTLASS; aio and gds need libaio and cuFile). Without a GPU it picks its CPU
    # accelerator unless DS_ACCELERATOR=cuda.
    "deepspeed": Recipe(prefixes=("DS_",), env=_m(DS_BUILD_OPS="1", DS_BUILD_CUTLASS_OPS="0",
                               DS_BUILD_RAGGED_DEVICE_OPS="0", DS_BUILD_EVOFORMER_ATTN="0",
                               DS_BUILD_AIO="0", DS_BUILD_GDS="0", DS_ENABLE_NINJA="1"),
                        no_gpu_env=_m(DS_ACCELERATOR="cuda"),
                        note="prebuild DeepSpeed's ops, less those needing extra libraries"),
})


