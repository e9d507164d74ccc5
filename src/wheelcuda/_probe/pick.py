"""Which release pip would take for a requirement that names no exact version
(``causal-conv1d``, ``causal-conv1d>=1.6``), read from the indexes it would search. uv
is asked itself (:mod:`.release`); pip cannot be: it builds an sdist's metadata to
resolve it, which for these packages means an isolated environment that downloads torch.

The wheel cache keys a build by the sdist it builds from; a bare name would otherwise
build again each time (the same command typed twice rebuilt causal-conv1d for 4.5
minutes). As installers do: the newest release that the requirement's specifier admits
(pre-releases only when it names one, as PEP 440 says), not yanked (PEP 592), whose
``Requires-Python`` admits the target interpreter; uv takes it from the first index that
has the project (its default ``first-index`` strategy) and the find-links places, pip
from all of them. When that release has a wheel for this machine and interpreter, the
installer takes the wheel and nothing is built: there is nothing to key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from packaging import tags
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from ..errors import WheelcudaError
from . import index, wheeltags
from .release import NotOnIndex
from .uvforms import Place


@dataclass(frozen=True)
class Pick:
    """The release an installer would take: ``spec`` pins it (extras kept)."""

    spec: str
    version: str
    where: str  # the place it was found, without credentials
    sdist: index.IndexFile | None
    #: a wheel for this machine and interpreter: the installer takes it, builds nothing
    wheel: bool


def _admits(requires: str | None, python: tuple[int, int, int]) -> bool:
    if not requires:
        return True
    try:
        return Version(".".join(map(str, python))) in SpecifierSet(requires)
    except (InvalidSpecifier, InvalidVersion):
        return True  # installers ignore what they cannot parse


def _release(f: index.IndexFile, name: str) -> tuple[Version, bool] | None:
    """(version, is a wheel) of a file of project ``name``; None for another's."""
    try:
        if f.filename.endswith(".whl"):
            wname, version, _, _ = parse_wheel_filename(f.filename)
            return (version, True) if wname == name else None
        sname, version = parse_sdist_filename(f.filename)
    except (InvalidSdistFilename, InvalidWheelFilename, InvalidVersion):
        return None
    return (version, False) if sname == name else None


def _candidates(req: Requirement, places: Sequence[Place], *, first_index: bool
                ) -> tuple[list[tuple[Place, index.IndexFile]], bool]:
    """The project's files on the places (uv: the first index that has it, and the
    find-links), and whether every place answered (a place that could not be read, or
    asked for credentials wheelcuda does not have, may hold it)."""
    name = canonicalize_name(req.name)
    found: list[tuple[Place, index.IndexFile]] = []
    every = bool(places)  # no place at all (offline): nothing answered
    taken_index = False
    for place in places:
        if first_index and taken_index and not place.flat:
            continue
        try:
            files = index.files(place.url, name, flat=place.flat)
        except (WheelcudaError, ValueError) as exc:
            # a simple index without the project answers 404: it answered
            every = every and isinstance(exc, index.IndexUnreadable) and exc.status == 404
            continue
        mine = [(place, f) for f in files if _release(f, name) is not None]
        found += mine
        taken_index = taken_index or (bool(mine) and not place.flat)
    return found, every


def applies(spec: str) -> bool:
    """Whether ``spec`` is a requirement by name without an exact version (pure): not a
    URL, no marker, no ``==X`` (a wildcard ``==1.*`` is not exact)."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return False
    return not (req.url or req.marker or any(s.operator in ("==", "===") and "*" not in
                                             s.version for s in req.specifier))


def _installable(f: index.IndexFile, supported: frozenset[tags.Tag]) -> bool:
    """An sdist (it builds here), or a wheel for this machine and interpreter."""
    if not f.filename.endswith(".whl"):
        return True
    return bool(parse_wheel_filename(f.filename)[3] & supported)


def newest(spec: str, places: Sequence[Place], python: tuple[int, int, int], *,
           first_index: bool) -> Pick | None:
    """The release an installer would take for ``spec`` (which :func:`applies`); None
    when not every place could be read and none that could has it. Raises
    :class:`NotOnIndex` when every place answered and none has it."""
    if not applies(spec):
        return None
    req = Requirement(spec)
    name = canonicalize_name(req.name)
    found, every = _candidates(req, places, first_index=first_index)
    shown = ", ".join(index.shown(p.url) for p in places)
    supported = wheeltags.supported(python[:2])
    fits = [(p, f, rel) for p, f in found if not f.yanked
            and _admits(f.requires_python, python) and _installable(f, supported)
            and (rel := _release(f, name)) is not None]
    # PEP 440: pre-releases only when the specifier names one, or when nothing else fits
    admitted = set(req.specifier.filter({rel[0] for _, _, rel in fits}))
    usable = [(p, f, rel) for p, f, rel in fits if rel[0] in admitted]
    if not every:
        return None  # a place that did not answer may hold it, or a newer release
    if not usable:
        what = f"no release of {req.name} that {spec} admits" if found else \
            f"no project named {req.name}"
        raise NotOnIndex(f"{what} on the indexes {'uv' if first_index else 'pip'} would "
                         f"search ({shown})" + (
                             f" for Python {python[0]}.{python[1]}" if found else ""),
                         "check the name and the version (`uv pip install` or `pip "
                         "install` would fail the same way), or name the index it lives on "
                         "(UV_INDEX / PIP_EXTRA_INDEX_URL)")
    best = max(rel[0] for _, _, rel in usable)
    at_best = [(p, f, rel) for p, f, rel in usable if rel[0] == best]
    wheel = any(rel[1] for _, _, rel in at_best)  # only installable ones are left
    sdists = [(p, f) for p, f, rel in at_best if not rel[1]]
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    place, sdist = sdists[0] if sdists else (at_best[0][0], None)
    return Pick(f"{req.name}{extras}=={best}", str(best), index.shown(place.url), sdist, wheel)
