"""Pure decisions about a component set and torch: what is wrong, and what fixes it.

Each check returns :class:`Problem` values; callers decide whether to raise the first
(``env``, ``home``) or show them all (``doctor``). Nothing here touches the machine.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, TypeVar

from packaging.version import InvalidVersion, Version

from .._data import catalog
from ..errors import (
    ArchError,
    CacheError,
    ComponentError,
    HostCompilerError,
    ToolError,
    TorchError,
    WheelcudaError,
)

if TYPE_CHECKING:
    from .._values import Found, Inventory, Torch

T = TypeVar("T")

#: CUDA 12 wheels stop at ptxas: these parts of the compiler exist in no PyPI wheel.
_CU12_GAP = "bin/nvcc, nvvm/bin/cicc, bin/cudafe++, bin/fatbinary, bin/nvlink"


class Kind(str, Enum):
    """What a problem is about; each kind maps to one error type (:data:`ERRORS`)."""

    MISSING = "missing"  # compiler wheels absent: fetching them fixes it
    COMPONENTS = "components"  # incomplete or mixed compiler parts, a tree that fails
    TORCH = "torch"
    ARCH = "arch"
    HOST = "host"
    BUILD_NEEDS = "build-needs"  # setuptools, wheel, ninja, packaging for --no-build-isolation
    JOBS = "jobs"  # MAX_JOBS, WHEELCUDA_SPLIT_COMPILE
    CACHE = "cache"
    ENVIRONMENT = "environment"  # a CUDA_HOME of someone else's
    UNREACHABLE = "unreachable"  # the compiler's only source does not answer


class Severity(str, Enum):
    ERROR = "error"  # stops a build
    WARNING = "warning"  # a person should know


ERRORS: dict[Kind, type[WheelcudaError]] = {
    Kind.MISSING: ComponentError, Kind.COMPONENTS: ComponentError, Kind.TORCH: TorchError,
    Kind.ARCH: ArchError, Kind.HOST: HostCompilerError, Kind.BUILD_NEEDS: ToolError,
    Kind.JOBS: ToolError, Kind.CACHE: CacheError, Kind.ENVIRONMENT: WheelcudaError,
    Kind.UNREACHABLE: ComponentError,
}


@dataclass(frozen=True)
class Problem:
    """Something that stops a build (an error) or that a person should know (a warning)."""

    kind: Kind
    message: str
    fix: str | None = None
    severity: Severity = Severity.ERROR

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def error(self) -> WheelcudaError:
        """The exception that carries this problem to the command line."""
        return ERRORS[self.kind](self.message, self.fix)

    @classmethod
    def of(cls, kind: Kind, exc: WheelcudaError) -> Problem:
        return cls(kind, exc.message, exc.fix)

    def as_json(self) -> dict[str, str | None]:
        return {"kind": self.kind.value, "severity": self.severity.value,
                "message": self.message, "fix": self.fix}


def parse_version(version: str | None) -> Version | None:
    """A PEP 440 version, or None when there is none or it is not one (pure)."""
    try:
        return Version(version) if version else None
    except InvalidVersion:
        return None


def version_key(version: str | None) -> tuple[int, ...]:
    """The numbers of a version or a release label, to sort by (``12.8.1`` -> (12, 8, 1);
    a label ``13.0-3f2a9c`` of a manifest given as is sorts as (13, 0))."""
    return tuple(int(p) for p in re.split(r"[.+-]", version or "") if p.isdigit())


def release(version: str | None) -> str | None:
    """``13.0.88`` -> ``13.0`` (CUDA major.minor); None when unknown (pure)."""
    parsed = parse_version(version)
    return f"{parsed.major}.{parsed.minor}" if parsed else None


def prefer_release(candidates: Sequence[tuple[str | None, T]], wanted: str | None) -> T:
    """The first candidate whose version is of CUDA release ``wanted`` (``13.0``), else
    the first (pure): ``[("13.5.37", a), ("13.0.96", b)]`` with ``13.0`` -> ``b``."""
    if wanted is not None:
        for version, item in candidates:
            if release(version) == wanted:
                return item
    return candidates[0][1]


def wanted_specifier(torch: Torch | None, major: int) -> str:
    """The cuda-toolkit specifier to install: torch's own pin when it has one."""
    if torch is not None and torch.toolkit_pin and torch.cuda_major == major:
        return torch.toolkit_pin
    if torch is not None and torch.cuda and torch.cuda_major == major:
        return f"=={torch.cuda}.*"
    return f"=={major}.*"


def choose_major(inventory: Inventory, torch: Torch | None) -> int:
    """The CUDA major to build with: torch's, else the newest with compiler parts."""
    if torch is not None and torch.cuda_major in catalog.MAJORS:
        return torch.cuda_major
    majors = inventory.majors()
    return majors[0] if majors else catalog.MAJORS[0]


def _cu12_gap(inventory: Inventory, torch: Torch | None, python: str) -> Problem:
    nvcc = inventory.get(catalog.NVCC.name, 12)
    where = nvcc.folder if nvcc else "site-packages/nvidia/cuda_nvcc"
    fix = (
        "no PyPI wheel holds the CUDA 12 compiler: --toolkit auto or redist (wheelcuda "
        "fetches it from NVIDIA's archives), --toolkit /path/to/cuda-12.x (a toolkit on "
        "this machine), or move torch to its cu130 build: "
        + (cu130_command(torch, python, {}) if torch is not None and torch.cuda_major == 12
           else catalog.install_command("==13.0.*", python))
    )
    if torch is not None and torch.cuda_major == 13:
        fix = catalog.install_command(wanted_specifier(torch, 13), python)
    return Problem(
        Kind.COMPONENTS,
        f"the CUDA 12 wheels in {where} hold no compiler: {_CU12_GAP} are missing "
        "(nvidia-cuda-nvcc-cu12 ships only ptxas)",
        fix,
    )


def _missing(inventory: Inventory, major: int, torch: Torch | None, python: str
             ) -> list[Problem]:
    fix = catalog.install_command(wanted_specifier(torch, major), python)
    if torch is not None and torch.cuda_major == major:  # the store can take it instead
        fix = (f"wheelcuda fetch --python {shlex.quote(python)}   (into wheelcuda's store; "
               f"or into the environment itself: {fix})")
    absent = [c for c in catalog.COMPILER if inventory.get(c.name, major) is None]
    if not absent:
        return []
    names = ", ".join(c.wheels[major] for c in absent)
    where = ", ".join(inventory.roots) or "(no site folders)"
    return [Problem(Kind.MISSING, f"missing CUDA {major} wheels: {names} (looked in {where})",
                    fix)]


def _incomplete(found: Found, torch: Torch | None, python: str) -> Problem:
    return Problem(
        Kind.COMPONENTS,
        f"{found.wheel} {found.version or '?'} in {found.folder} is incomplete: "
        f"{', '.join(found.missing)} missing",
        catalog.install_command(wanted_specifier(torch, found.major), python).replace(
            "uv pip install", "uv pip install --reinstall"),
    )


def _mixed(parts: list[Found], torch: Torch | None, python: str) -> list[Problem]:
    """Parts of another CUDA release than nvcc's: nvcc refuses runtime headers of another
    release (CCCL's "CUDA compiler and CUDA toolkit headers are incompatible"), and CCCL
    of a newer one uses targets it does not know (CCCL 13.3 with nvcc 13.0: "expected a
    ';'" in warp_redux.cuh). A part of nvcc's release is what is missing, so the kind is
    MISSING: a fetch of torch's set into the store brings it, and the locate step then
    takes it over the other (torch 2.15's own dependencies bring CCCL 13.3
    beside its CUDA 13.2)."""
    nvcc = next((f for f in parts if f.component is catalog.NVCC), None)
    wanted = release(nvcc.version) if nvcc else None
    other = [f for f in parts if wanted and f.version and release(f.version) != wanted]
    if not other:
        return []
    listing = ", ".join(f"{f.wheel} {f.version}" for f in parts)
    names = ", ".join(f.wheel for f in other)
    return [Problem(
        Kind.MISSING,
        f"the compiler parts are from different CUDA releases ({listing}); there is no "
        f"{names} of nvcc's CUDA {wanted}, and nvcc fails with 'CUDA compiler and CUDA "
        "toolkit headers are incompatible'",
        catalog.install_command(wanted_specifier(torch, parts[0].major), python),
    )]


def component_problems(inventory: Inventory, major: int, torch: Torch | None,
                       python: str) -> list[Problem]:
    """Everything that stops the CUDA ``major`` compiler set from building; the fixes
    name ``python``, so that they work when pasted with no environment active."""
    parts = [f for c in catalog.COMPILER if (f := inventory.get(c.name, major))]
    nvcc = inventory.get(catalog.NVCC.name, major)
    if major == 12 and (nvcc is None or not nvcc.complete):
        return [_cu12_gap(inventory, torch, python)]
    problems = _missing(inventory, major, torch, python)
    problems += [_incomplete(f, torch, python) for f in parts if not f.complete]
    return problems + _mixed(parts, torch, python) + _shadowed(inventory, major)


def _shadowed(inventory: Inventory, major: int) -> list[Problem]:
    """Copies of another release passed over for nvcc's (pip's two-prefix build
    environment): said, since the environment holds something unexpected."""
    out = []
    for f in inventory.shadowed:
        chosen = inventory.get(f.component.name, f.major)
        if f.major != major or chosen is None:
            continue
        out.append(Problem(
            Kind.COMPONENTS,
            f"{f.wheel} {f.version or '?'} in {f.root} is not of nvcc's CUDA release: "
            f"its files are left out, the tree takes {chosen.version or '?'} from {chosen.root}",
            f"pin it with the rest of the set: {f.wheel}=={release(chosen.version)}.*",
            Severity.WARNING))
    return out


def _compiler_for(torch: Torch, python: str) -> str:
    """How to get the compiler of torch's own CUDA: its wheels (CUDA 13), NVIDIA's
    archives or a local toolkit (CUDA 12: no wheel holds nvcc)."""
    if torch.cuda_major in catalog.WHEEL_COMPILER_MAJORS:
        return catalog.install_command(wanted_specifier(torch, torch.cuda_major or 13), python)
    return (f"--toolkit redist (NVIDIA's CUDA {torch.cuda} archives), or --toolkit "
            f"/path/to/cuda-{torch.cuda} (a toolkit on this machine)")


def compiler_release(inventory: Inventory, major: int) -> str | None:
    """CUDA major.minor of the compiler set (from nvcc's wheel version)."""
    nvcc = inventory.get(catalog.NVCC.name, major)
    return release(nvcc.version) if nvcc else None


def torch_problems(torch: Torch | None, compiler: str | None, python: str) -> list[Problem]:
    """torch missing, CPU-only, or built for another CUDA than the compiler's."""
    py = shlex.quote(python)
    if torch is None:
        return [Problem(Kind.TORCH, f"torch is not installed in {python}",
                        f"uv pip install --python {py} torch")]
    if torch.cuda is None:
        return [Problem(Kind.TORCH, f"torch {torch.version} in {torch.path} is a CPU-only build; "
                        "CUDA extensions need a CUDA build of torch",
                        f"uv pip install --python {py} --reinstall torch "
                        "--index-url https://download.pytorch.org/whl/cu130")]
    if compiler is None:
        return []
    if _major(torch.cuda) != _major(compiler):
        return [Problem(Kind.TORCH, f"torch {torch.version} is built with CUDA {torch.cuda} "
                        "but the "
                        f"compiler is CUDA {compiler}; torch refuses a different major version",
                        _compiler_for(torch, python))]
    if release(torch.cuda) != release(compiler):
        return [Problem(Kind.TORCH, f"torch is built with CUDA {torch.cuda}, the compiler is CUDA "
                        f"{compiler}: it usually works (torch warns), an exact match is safer",
                        _compiler_for(torch, python),
                        severity=Severity.WARNING)]
    return []


def _major(version: str) -> int | None:
    parsed = parse_version(version)
    return parsed.major if parsed else None  # unknown on both sides compares equal


#: PyTorch's first release with a CUDA 13.0 build (its cu130 index).
CU130_SINCE = Version("2.9.0")
PYTORCH_CU130 = "https://download.pytorch.org/whl/cu130"


def cu130_move(torch: Torch, python: str, companions: dict[str, str], driver_cuda: str
               ) -> Problem | None:
    """The other way for a CUDA 12 torch when the driver runs CUDA 13: its cu130 build
    (same version when there is one; torchvision/torchaudio with it), whose compiler
    comes in wheels. None for a torch that is not CUDA 12 or a driver older than 13."""
    if torch.cuda_major != 12 or (_major(driver_cuda) or 0) < 13:
        return None
    return Problem(Kind.TORCH,
                   f"the driver runs CUDA {driver_cuda}: the other way is torch's cu130 build, "
                   "whose compiler comes in NVIDIA's CUDA 13 wheels (no archive download)",
                   cu130_command(torch, python, companions), Severity.WARNING)


def cu130_command(torch: Torch, python: str, companions: dict[str, str]) -> str:
    """The command that moves ``torch`` (and its ``companions``, name -> version) to
    their cu130 builds: the same versions where PyTorch has them, else the first."""
    version = parse_version(torch.version)
    same = version is not None and Version(version.base_version) >= CU130_SINCE
    pins = [f"torch=={version.base_version}" if same and version else
            f"torch>={CU130_SINCE.base_version}"]
    for name, v in companions.items():
        theirs = parse_version(v)
        pins.append(f"{name}=={theirs.base_version}" if same and theirs else name)
    return (f"uv pip install --python {shlex.quote(python)} --reinstall "
            f"{' '.join(shlex.quote(p) for p in pins)} --index-url {PYTORCH_CU130}")
