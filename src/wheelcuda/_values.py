"""The values every layer passes down: what a run found, as plain frozen data.

They sit below rules and probes: a rule that takes a :class:`Torch` must not
depend on the probe that reads one, and a probe returns these without defining them.
Each is built by one probe (named in its docstring) and read everywhere else.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from ._data import catalog
from ._data.catalog import Component


class SourceName(str, enum.Enum):
    """Where a compiler set comes from (:mod:`wheelcuda._sources`); compares equal to its
    text, which is what doctor shows and ``--toolkit`` takes."""

    VENV = "venv"  #: the target's own CUDA wheels
    STORE = "store"  #: the CUDA wheels wheelcuda fetched into its store
    LOCAL = "local"  #: a toolkit on the machine, through a shim of links
    REDIST = "redist"  #: NVIDIA's archives, unpacked in the store
    CLANG = "clang"  #: clang over NVIDIA's CUDA 12 wheels, which hold no nvcc
    WHEELS = "wheels"  #: venv and store together, as doctor and ``--toolkit`` name them

    def __str__(self) -> str:
        return self.value

    def __hash__(self) -> int:  # as its text: a dict or set holds either spelling once
        return hash(self.value)

    def __format__(self, spec: str) -> str:  # f-strings show the text on every Python
        return format(self.value, spec)


@dataclass(frozen=True)
class Torch:
    """torch as installed in the target environment (:mod:`wheelcuda._probe.torch`)."""

    version: str
    cuda: str | None  # "13.0"; None for a CPU-only build
    path: str  # the torch package folder
    toolkit_pin: str | None  # specifier of torch's cuda-toolkit requirement, "==13.0.3"
    #: torch's own requirements (``nvidia-cublas-cu12==12.8.4.1; ...``): a CUDA 12 torch
    #: pins its libraries one by one, and their headers must be those versions.
    requires: tuple[str, ...] = ()

    @property
    def cuda_major(self) -> int | None:
        return int(self.cuda.split(".")[0]) if self.cuda else None


@dataclass(frozen=True)
class Target:
    """A Python environment wheelcuda reads from and installs into
    (:mod:`wheelcuda._probe.interpreter`)."""

    python: str
    prefix: str
    version: tuple[int, int, int]
    site_dirs: tuple[str, ...]
    #: Why this is the target (``interpreter.Choice.why``): not part of its identity.
    why: str = field(default="", compare=False)
    #: What the search for it looked at and did not find (``interpreter.Choice.watch``).
    watch: tuple[str, ...] = field(default=(), compare=False)

    @property
    def tag(self) -> str:
        """``cp311`` style interpreter tag."""
        return f"cp{self.version[0]}{self.version[1]}"


@dataclass(frozen=True)
class HostCompiler:
    """A probed host compiler (:mod:`wheelcuda._probe.hostcc`); ``reason`` says why
    ``version`` is None."""

    command: str  # what nvcc will run, e.g. "gcc" or "/usr/bin/g++-12"
    path: str | None  # resolved with shutil.which, None when not found
    family: str  # "gcc", "clang" or "unknown"
    version: str | None  # "12.2.0"
    reason: str | None


@dataclass(frozen=True)
class Found:
    """One component found under one root, for one CUDA major layout
    (:mod:`wheelcuda._probe.locate`)."""

    component: Component
    major: int
    root: str
    folder: str
    version: str | None
    missing: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def wheel(self) -> str:
        return self.component.wheels[self.major]


@dataclass(frozen=True)
class Inventory:
    """Everything found, and where we looked (:func:`wheelcuda._probe.locate.locate`)."""

    found: tuple[Found, ...]
    roots: tuple[str, ...]
    #: copies passed over for one of nvcc's release (see _probe/locate.py)
    shadowed: tuple[Found, ...] = ()

    def get(self, name: str, major: int) -> Found | None:
        for f in self.found:
            if f.component.name == name and f.major == major:
                return f
        return None

    def majors(self) -> tuple[int, ...]:
        """CUDA majors with at least one compiler component present, newest first."""
        seen = {f.major for f in self.found if f.component.compiler}
        return tuple(m for m in catalog.MAJORS if m in seen)
