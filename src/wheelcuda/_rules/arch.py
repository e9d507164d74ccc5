"""GPU architecture lists: parse, choose, and check against what nvcc can build (pure).

The syntax is torch's TORCH_CUDA_ARCH_LIST, read by the grammar the tree's nvcc wrapper
reads too (_standalone/_archlist.py); ``native`` means the visible GPUs, as in torch.
Order of choice: ``--arch``, then an existing TORCH_CUDA_ARCH_LIST, then the visible
GPUs, else an error (torch itself crashes with IndexError there).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .._data.archs import CUDA_FLOOR, KNOWN
from .._sources.clang.data import INDEX_CLANG_VERSION
from .._standalone import _archlist
from ..errors import ArchError
from .checks import parse_version

_FIX = "pass --arch with your GPU's compute capability, e.g. --arch 12.0 (RTX PRO 6000 " \
       "Blackwell) or --arch 9.0 (H100/H200); several: --arch '8.0;9.0'; or export " \
       "TORCH_CUDA_ARCH_LIST=9.0"


@dataclass(frozen=True, order=True)
class Arch:
    """One target: compute capability ``major.minor`` with an optional family suffix."""

    major: int
    minor: int
    suffix: str = ""
    ptx: bool = False

    @property
    def number(self) -> str:
        """``90``, ``120a``: as nvcc's sm_/compute_ names spell it."""
        return f"{self.major}{self.minor}{self.suffix}"

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}{self.suffix}{'+PTX' if self.ptx else ''}"


def parse(text: str) -> tuple[Arch, ...]:
    """A whole list, sorted and without duplicates; empty text is an error."""
    try:
        items = _archlist.targets(text)
    except ValueError as exc:
        raise ArchError(f"not a GPU architecture: {exc.args[0]!r}", _FIX) from None
    if not items:
        raise ArchError("the GPU architecture list is empty", _FIX)
    merged: dict[tuple[int, int, str], bool] = {}
    for major, minor, suffix, ptx in items:  # "9.0;9.0+PTX" is one target with PTX
        key = (major, minor, suffix)
        merged[key] = merged.get(key, False) or ptx
    return tuple(sorted(Arch(*key, ptx) for key, ptx in merged.items()))


def to_torch(archs: Sequence[Arch]) -> str:
    """TORCH_CUDA_ARCH_LIST form: ``8.0;9.0+PTX``."""
    return ";".join(str(a) for a in archs)


def to_cmake(archs: Sequence[Arch]) -> str:
    """CUDAARCHS / CMAKE_CUDA_ARCHITECTURES form: ``80-real;90`` (``90`` = SASS + PTX)."""
    return ";".join(a.number if a.ptx else f"{a.number}-real" for a in archs)


def from_capabilities(caps: Iterable[str]) -> tuple[Arch, ...]:
    """The visible GPUs' compute capabilities (``12.0``, ``12.0``, ...) as a list."""
    return parse(";".join(caps)) if caps else ()


def choose(cli: str | None, env_list: str | None, gpu_caps: Sequence[str],
           gpu_reason: str | None) -> tuple[tuple[Arch, ...], str]:
    """The arch list and where it came from; raise when nothing says which GPU."""
    if cli and cli.strip().lower() != "native":
        return parse(cli), "--arch"
    if env_list and env_list.strip() and env_list.strip().lower() != "native":
        try:
            return parse(env_list), "TORCH_CUDA_ARCH_LIST"
        except ArchError as exc:
            raise ArchError(f"TORCH_CUDA_ARCH_LIST={env_list!r} in your environment: "
                            f"{exc.message}", f"unset TORCH_CUDA_ARCH_LIST, or {_FIX}") from exc
    if gpu_caps:
        return from_capabilities(gpu_caps), "visible GPUs"
    why = f" ({gpu_reason})" if gpu_reason else ""
    raise ArchError(f"no GPU architecture given and no GPU seen{why}", _FIX)


def unbuildable(archs: Sequence[Arch], supported: Iterable[str]) -> list[Arch]:
    """Archs this nvcc cannot target; ``supported`` is ``nvcc --list-gpu-code`` output."""
    numbers = {s.removeprefix("sm_") for s in supported}
    return [a for a in archs if f"{a.major}{a.minor}" not in numbers]


def check_floor(archs: Sequence[Arch], major: int) -> None:
    """Raise when CUDA ``major`` builds nothing for some of ``archs`` (known before any
    compiler is there: CUDA 13 dropped everything below 7.5)."""
    floor = CUDA_FLOOR.get(major)
    old = [a for a in archs if floor and (a.major, a.minor) < floor]
    if old and floor:
        names = ", ".join(f"sm_{a.number}" for a in old)
        raise ArchError(
            f"CUDA {major} dropped {names} (it builds nothing below "
            f"sm_{floor[0]}{floor[1]}); a CUDA {major} compiler cannot build for that GPU",
            "those GPUs need a torch built for CUDA 12 (e.g. torch 2.9.1 from PyPI, built "
            "with CUDA 12.8); wheelcuda then takes the compiler from NVIDIA's CUDA 12 "
            "archives (or a local toolkit: --toolkit /path/to/cuda-12.x); or drop them "
            "from --arch")


def _older_than_the_index(compiler: str) -> bool:
    """Whether the clang the key names (``clang 19.1.7 + ptxas ...``) is older than the
    package index's, which wheelcuda can fetch (pure)."""
    found = re.match(r"clang (\d+(?:\.\d+)*)", compiler)
    mine, index = (parse_version(found.group(1)) if found else None,
                   parse_version(INDEX_CLANG_VERSION))
    return mine is None or index is None or mine < index


def check(archs: Sequence[Arch], supported: Sequence[str], nvcc_version: str,
          compiler: str = "") -> None:
    """Raise when the tree's compiler cannot build one of ``archs`` (sm_120 needs nvcc
    12.8 or newer; CUDA 13 builds nothing below 7.5). ``compiler`` is what compiles, as
    the key names it (``clang 22.1.8 + ptxas 12.8.93 (<digest>)`` on the clang route,
    where "nvcc 12.8.93 cannot build" named the wrong tool and sent people to NVIDIA's
    archives, which had just been found unreachable)."""
    version = parse_version(nvcc_version)
    check_floor(archs, version.major if version else 0)
    bad = unbuildable(archs, supported)
    if not bad:
        return
    names = ", ".join(f"sm_{a.number}" for a in bad)
    clang = compiler.startswith("clang")
    who = re.sub(r"\s*\([0-9a-f]{6,}\)$", "", compiler) if clang else f"nvcc {nvcc_version}"
    if any(f"{a.major}{a.minor}" not in KNOWN for a in bad):
        raise ArchError(
            f"{names}: no CUDA release builds for a GPU of that compute capability "
            f"({who} builds {' '.join(supported)})",
            "pass --arch with your GPU's compute capability: 9.0 (H100, H200), 12.0 (RTX PRO "
            "6000 Blackwell, RTX 50xx), 8.0 (A100); `nvidia-smi --query-gpu=compute_cap "
            "--format=csv` says it")
    if clang and _older_than_the_index(compiler):
        newer = (f"a newer clang (WHEELCUDA_CLANG=index: clang {INDEX_CLANG_VERSION} from "
                 "the package index), or a toolkit of torch's release (--toolkit "
                 "/path/to/cuda-12.x)")
    elif clang:  # the newest clang wheelcuda knows: its ptxas (the CUDA 12 wheels') is short
        newer = ("a CUDA 12 toolkit whose ptxas builds it (--toolkit /path/to/cuda-12.x; "
                 "this clang already is the package index's)")
    elif version and version.major == 12:
        newer = ("a CUDA 12 compiler of torch's own release: --toolkit redist (NVIDIA's "
                 "archives)")
    else:
        newer = "a newer compiler: uv pip install \"cuda-toolkit[nvcc,cccl]==13.*\""
    raise ArchError(f"{who} cannot build {names}; it builds {' '.join(supported)}",
                    f"use {newer}, or pass --arch with one of the archs above")
