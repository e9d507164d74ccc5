"""Which wheels a fetch asks for, each pinned so that what the index serves today cannot
change the set (pure).

nvcc's wheel requires nvvm, crt and runtime with no version bound, and cuSPARSE and
cuSOLVER require nvJitLink with none: online, the index's newest release (CUDA 13.5 in
2026-11) arrives beside torch's (docs/facts.md). The compiler set is the metapackage at
torch's pin plus the unbounded parts held to its release (:func:`catalog.toolkit_requirements`);
the headers of torch's libraries are the versions torch itself requires.
"""

from __future__ import annotations

import hashlib

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from .._data import catalog
from .checks import wanted_specifier

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .._values import Torch


def header_wheels(major: int) -> tuple[str, ...]:
    """The wheels of torch's libraries, whose headers the store keeps (cuBLAS, cuRAND...)."""
    return tuple(c.wheels[major] for c in catalog.HEADER_COMPONENTS if major in c.wheels)


def _pins(requires: tuple[str, ...]) -> dict[str, str]:
    """torch's exact pins by canonical name: ``nvidia-cublas-cu12 -> ==12.8.4.1``."""
    out: dict[str, str] = {}
    for line in requires:
        try:
            req = Requirement(line)
        except InvalidRequirement:
            continue
        spec = str(req.specifier)
        if spec.startswith("==") and "," not in spec:
            out[str(canonicalize_name(req.name))] = spec
    return out


def header_requirements(torch: Torch, major: int) -> list[str]:
    """What brings the headers of torch's libraries: for CUDA 13 the metapackage's
    library extras at torch's pin (they pin each library exactly); for CUDA 12, each
    library at the version torch requires (no metapackage there), unpinned when torch's
    requirements are unknown (``--cuda`` alone)."""
    if major in catalog.WHEEL_COMPILER_MAJORS:
        extras = ",".join(catalog.HEADER_EXTRAS)
        return [f"{catalog.METAPACKAGE}[{extras}]{wanted_specifier(torch, major)}"]
    pins = _pins(torch.requires)
    return [f"{w}{pins.get(w, '')}" for w in header_wheels(major)]


def headers_tag(requirements: list[str]) -> str:
    """A short digest of a header set's requirements, for its store folder's name: two
    torch builds of one CUDA release may pin different library versions."""
    return hashlib.sha256("\n".join(requirements).encode()).hexdigest()[:8]
