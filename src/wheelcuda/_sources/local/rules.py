"""Which local CUDA toolkit serves torch: pure decisions over what
:mod:`wheelcuda._sources.local.probe` found.

torch refuses another CUDA major and only warns on another minor, so the same major is
required, an exact major.minor preferred, then the newest of that major; under ``auto``
an older minor than torch's is passed over, since NVIDIA's archives of torch's own
release then fit better (12.4 cannot build sm_120, 12.8 can).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..._rules.checks import parse_version, release, version_key


@dataclass(frozen=True)
class Candidate:
    """One toolkit folder, what it is, and the folders each part of it lives in."""

    #: The folder as found (``/usr/local/cuda``), and its resolved path.
    path: str
    real: str
    #: Where it was found: ``CUDA_HOME``, ``/usr/local/cuda``, ``nvcc on PATH``, ...
    origin: str
    #: nvcc's version (``13.0.88``), and where it was read: ``version.json`` or
    #: ``nvcc --version``; None when neither answered.
    version: str | None
    version_from: str
    #: ``cuda.version`` of version.json (``12.8.1``), when there is one.
    cuda: str | None
    #: Component versions from version.json (``cuda_cudart`` -> ``12.8.90``).
    versions: tuple[tuple[str, str], ...]
    #: Absolute folders of its parts: bin, include, lib (libcudart), nvvm.
    bin: str
    include: str
    lib: str
    nvvm: str
    #: A conda environment: its bin is shared with everything else installed there,
    #: and conda patches nvcc.profile (TOP under targets/).
    conda: bool
    #: Why it cannot build (files missing, no version); empty when it can.
    missing: tuple[str, ...]

    @property
    def release(self) -> str | None:
        """CUDA major.minor (``12.8``)."""
        return release(self.version)

    @property
    def major(self) -> int | None:
        return major_of(self.version)

    @property
    def complete(self) -> bool:
        return not self.missing

    def component_version(self, name: str) -> str | None:
        """A compiler component's version: version.json's when it is of the same
        release (its parts are installed together), else nvcc's."""
        own = dict(self.versions).get(name)
        return own if own and release(own) == self.release else self.version

    def describe(self) -> str:
        shown = self.path if self.path == self.real else f"{self.path} (-> {self.real})"
        origin = "" if self.origin == self.path else f" ({self.origin})"
        return f"CUDA {self.version or '?'} in {shown}{origin}"


@dataclass(frozen=True)
class Fit:
    """Which candidate serves a torch built with CUDA ``wanted``, and why."""

    chosen: Candidate | None
    #: One line for people: why this one, or why none.
    why: str
    #: Every other candidate with the reason it was passed over.
    passed: tuple[tuple[Candidate, str], ...] = ()
    #: torch will warn (another minor version): worth saying.
    warning: str | None = None


def major_of(version: str | None) -> int | None:
    """The CUDA major of a version (``12.8.93`` -> 12); None when it is none."""
    parsed = parse_version(version)
    return parsed.major if parsed else None


def fit(candidates: Sequence[Candidate], wanted: str | None, *, older: bool = True) -> Fit:
    """The candidate for a torch built with CUDA ``wanted`` (``12.8``; None: torch's
    CUDA unknown, the first whole one). ``older``: a toolkit of an older minor than
    torch's may serve (``--toolkit local``); `auto` says no, since NVIDIA's archives of
    torch's own release then fit better (12.4 cannot build sm_120, 12.8 can). Pure:
    decides over the facts gathered."""
    passed: dict[int, str] = {}
    usable = []
    for i, c in enumerate(candidates):
        if c.missing:
            passed[i] = f"incomplete: {', '.join(c.missing)} missing"
        else:
            usable.append((i, c))
    chosen: tuple[int, Candidate] | None = None
    why, warning = "", None
    wanted_major = major_of(wanted)
    if wanted is None or wanted_major is None:
        chosen = usable[0] if usable else None
        why = "torch's CUDA is unknown: the first whole toolkit"
    else:
        same = _same_major(usable, wanted, passed, older=older)
        exact = [(i, c) for i, c in same if c.release == release(wanted)]
        if exact:
            chosen = exact[0]
            why = f"CUDA {chosen[1].release}, as torch's"
        elif same:
            chosen = max(same, key=lambda ic: (version_key(ic[1].version), -ic[0]))
            why = f"the newest CUDA {wanted_major} here (torch is built with {wanted})"
            warning = (f"torch is built with CUDA {wanted}, the local toolkit is CUDA "
                       f"{chosen[1].release}: torch warns about another minor version")
        for i, c in same:
            if chosen is not None and i != chosen[0]:
                passed[i] = f"CUDA {c.release}: {chosen[1].describe()} fits better"
    rest = tuple((candidates[i], passed[i]) for i in sorted(passed))
    if chosen is None:
        return Fit(None, _none_fits(candidates, wanted, rest), rest)
    return Fit(chosen[1], f"{chosen[1].describe()}: {why}", rest, warning)


def _same_major(usable: list[tuple[int, Candidate]], wanted: str,
                passed: dict[int, str], *, older: bool) -> list[tuple[int, Candidate]]:
    """The candidates of torch's major (of its minor or newer unless ``older``); why each
    other is passed goes into ``passed``."""
    same = []
    for i, c in usable:
        if c.major != major_of(wanted):
            passed[i] = (f"CUDA {c.release}, torch is built with CUDA {wanted}: torch "
                         "refuses another major version")
        elif not older and version_key(c.release) < version_key(release(wanted)):
            passed[i] = (f"CUDA {c.release} is older than torch's {wanted}: NVIDIA's "
                         f"archives of {wanted} fit better (--toolkit local takes it)")
        else:
            same.append((i, c))
    return same


def _none_fits(candidates: Sequence[Candidate], wanted: str | None,
               passed: tuple[tuple[Candidate, str], ...]) -> str:
    need = f"torch's CUDA {wanted}" if wanted else "a build"
    if not candidates:
        return (f"no local CUDA toolkit for {need}: none in CUDA_HOME, CUDA_PATH, "
                "/usr/local/cuda*, the nvcc on PATH or CONDA_PREFIX")
    lines = "; ".join(f"{c.describe()}: {reason}" for c, reason in passed)
    return f"no local CUDA toolkit fits {need}: {lines}"


def summary(fit_: Fit) -> Mapping[str, object]:
    """The decision as plain data (doctor's JSON)."""
    def one(c: Candidate) -> dict[str, object]:
        return {"path": c.path, "real": c.real, "origin": c.origin, "version": c.version,
                "version_from": c.version_from, "complete": c.complete,
                "missing": list(c.missing)}
    return {"chosen": one(fit_.chosen) if fit_.chosen else None, "why": fit_.why,
            "warning": fit_.warning,
            "passed": [{**one(c), "reason": r} for c, r in fit_.passed]}
