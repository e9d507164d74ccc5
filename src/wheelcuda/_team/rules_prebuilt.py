"""Prebuilt wheels from a public index, by choice: which of an index's files
could serve this build, judged first by name (pure), then by the device code inside
(:mod:`wheelcuda._probe.fatbin`). Their local labels name what they were built for, in
several spellings: ``+cu128``, ``+cu12torch2.8cxx11abiTRUE``, ``+cu.12.8.torch.2.11``.
A file is a candidate when its public version is the one asked for (a pin, a project's
own version, the release a bare name resolves to: never the newest that happens to be
there), the label names torch's CUDA major.minor and torch's major.minor (and, when it
names one, the same C++ ABI), and one of its tags is among those the target installs
(:mod:`packaging.tags`: a ``musllinux`` or ``macosx`` file ending in ``x86_64`` is not one)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.tags import Tag
from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename
from packaging.version import InvalidVersion, Version

_CUDA = re.compile(r"cu\.?(\d{2})\.?(\d)?(?!\d)")
_TORCH = re.compile(r"(?:torch|pt)\.?(\d+)\.(\d+)")
_ABI = re.compile(r"cxx11abi(true|false)")


@dataclass(frozen=True)
class Label:
    """What a local label says a wheel was built for (None: it does not say)."""

    cuda: str | None
    torch: str | None
    cxx11_abi: bool | None


def parse_label(local: str | None) -> Label:
    text = (local or "").lower()
    cuda = _CUDA.search(text)
    torch = _TORCH.search(text)
    abi = _ABI.search(text)
    return Label(f"{int(cuda[1])}.{cuda[2]}" if cuda and cuda[2] else None,
                 f"{torch[1]}.{torch[2]}" if torch else None,
                 (abi[1] == "true") if abi else None)


def candidate(filename: str, name: str, version: Version, *, torch: str, cuda: str,
              cxx11_abi: bool | None, supported: frozenset[Tag]) -> bool:
    """Whether ``filename`` may serve: its name, its public version (``version``'s, local
    label aside), its label (torch ``2.11.0+cu128``'s major.minor, CUDA ``12.8``), and
    its tags against those the target installs (pure)."""
    try:
        project, found, _build, tags = parse_wheel_filename(filename)
    except (InvalidWheelFilename, InvalidVersion):
        return False
    if project != canonicalize_name(name) or Version(found.public) != Version(version.public):
        return False
    label = parse_label(found.local)
    wanted_torch = ".".join(torch.split("+", maxsplit=1)[0].split(".")[:2])
    if label.cuda != cuda or label.torch != wanted_torch:
        return False
    if label.cxx11_abi is not None and cxx11_abi is not None and label.cxx11_abi != cxx11_abi:
        return False
    return bool(tags & supported)
