"""A package source's setup.py, read without running or extracting it, and the variables
that make it build from source instead of downloading a prebuilt wheel.

:func:`read_setup_sources` reads ``setup.py`` from a project folder, or
``<top>/setup.py`` straight out of an sdist (``.tar.gz``, ``.tgz``, ``.tar.bz2``,
``.tar.xz``, ``.tar``, ``.zip``), and :func:`from_index` that of the sdist a
requirement (``name``, ``name==1.0``) builds from, read from the index the installer
would take it from: nothing is written to disk, a member larger than
:data:`MAX_SETUP_BYTES` or one that is not a regular file is not read, and member names
that climb out (``../``, absolute) are never taken for the setup.py. A URL gives None.
Nothing here raises for a broken archive or an unreadable file; the result says why no
text came.

:func:`wanted` ties it to _rules/setup_vars.py: the build-from-source variables the
setup.py reads, each with its origin for ``--explain``. The caller merges them under
the recipe table (a recipe wins over setup.py) and the user's environment (which wins
over both).
"""

from __future__ import annotations

import io
import os
import tarfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from packaging.requirements import InvalidRequirement, Requirement

from .._rules import arch as archmod
from .._rules import setup_vars as rules
from ..errors import WheelcudaError
from . import index

#: A setup.py larger than this is not read (real ones are 5-40 kB).
MAX_SETUP_BYTES = 5 * 1024 * 1024
#: Archive members looked at before giving up on finding setup.py.
_MAX_MEMBERS = 200_000
_TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar")
_ZIP_SUFFIXES = (".zip",)


@dataclass(frozen=True)
class SetupSource:
    """A source's setup.py: its text, or why there is none.

    ``where`` names it for ``--explain``: ``/src/pkg/setup.py`` for a folder,
    ``/dl/pkg-1.0.tar.gz!pkg-1.0/setup.py`` for a member of an sdist (or the folder or
    file alone when no setup.py was found in it).
    """

    where: str
    text: str | None
    #: Why ``text`` is None ("no setup.py", "not an archive: ...", ...); else "".
    problem: str = ""


class Wanted(NamedTuple):
    """One variable the setup.py reads, the value that builds from source, and whence."""

    name: str
    value: str
    origin: str  # "read from /src/pkg/setup.py"


def read_setup_sources(spec: str) -> SetupSource | None:
    """The setup.py of a folder or an sdist file; None for a requirement (nothing local).

    Never raises: a missing, unreadable, oversized or broken source comes back with
    ``text=None`` and a ``problem``.
    """
    return read_top_file(spec, "setup.py")


def from_index(spec: str, places: Sequence[tuple[str, bool]],
               pages: index.Pages | None = None) -> SetupSource | None:
    """The setup.py of the sdist the requirement ``spec`` builds from: the pinned
    version's (``==``), else the newest release's, on the first of ``places`` (an index
    URL or a find-links folder or page, and whether it is flat) that has one. A name
    says nothing local, and chamferdist's setup.py builds its CUDA code only with a GPU
    or FORCE_CUDA=1: `uv-config chamferdist`, then `uv add`, built it CPU-only. None for
    anything but a requirement, or when no place has its sdist; never raises."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return None
    if req.url:
        return None
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
    version = pinned[0] if len(pinned) == 1 else None
    for url, flat in places:
        try:
            found = index.newest_sdist((pages or index.Pages()).files(url, req.name, flat=flat),
                                       req.name, version)
        except (WheelcudaError, ValueError):
            continue
        if found is None:
            continue
        where = index.shown(found.url)
        try:
            data = index.download(found)
        except WheelcudaError as exc:
            return SetupSource(where, None, exc.message)
        return _from_archive(where, found.filename, io.BytesIO(data), "setup.py")
    return None


def read_top_file(spec: str, filename: str) -> SetupSource | None:
    """:func:`read_setup_sources` for another file at the top of a source
    (``pyproject.toml``)."""
    if os.path.isdir(spec):
        return _from_folder(spec, filename)
    lower = spec.lower()
    is_tar, is_zip = lower.endswith(_TAR_SUFFIXES), lower.endswith(_ZIP_SUFFIXES)
    if not (is_tar or is_zip):
        return None
    if "://" in spec:  # a URL: the caller downloads it first
        return None
    if not os.path.isfile(spec):
        return SetupSource(spec, None, "no such file")
    return _from_archive(spec, spec, spec, filename)


def _from_archive(spec: str, name: str, archive: str | io.BytesIO, filename: str
                  ) -> SetupSource:
    """FILENAME at the top of the sdist ``archive`` (a path or the bytes read), named
    ``spec`` in what it says; ``name`` (its file name) tells tar from zip."""
    try:
        if name.lower().endswith(_ZIP_SUFFIXES):
            return _from_zip(spec, archive, filename)
        return _from_tar(spec, archive, filename)
    except Exception as exc:  # a broken archive is an answer here, not an error
        why = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        return SetupSource(spec, None, f"cannot read the archive ({why})")


def _from_folder(folder: str, filename: str) -> SetupSource:
    path = os.path.join(folder, filename)
    try:
        if not os.path.isfile(path):
            return SetupSource(folder, None, f"no {filename}")
        if os.path.getsize(path) > MAX_SETUP_BYTES:
            return SetupSource(path, None, f"{filename} is larger than {MAX_SETUP_BYTES} bytes")
        with open(path, "rb") as f:
            raw = f.read(MAX_SETUP_BYTES + 1)
    except OSError as exc:
        return SetupSource(path, None, f"cannot read {filename}: {exc.strerror or exc}")
    return _decoded(path, raw, filename)  # it may have grown between the stat and the read


def _rank(name: str, filename: str) -> int | None:
    """0 for ``<top>/FILENAME``, 1 for a bare ``FILENAME``, None for anything else
    (deeper files, and names that climb out: ``../setup.py``, ``/abs/setup.py``)."""
    if name.startswith("/") or "\\" in name or "\0" in name:
        return None
    while name.startswith("./"):
        name = name[2:]
    parts = name.split("/")
    if parts == [filename]:
        return 1
    if len(parts) == 2 and parts[1] == filename and parts[0] not in ("", ".", ".."):
        return 0
    return None


def _pick(spec: str, name: str, size: int, regular: bool, filename: str
          ) -> SetupSource | None:
    """Why a member cannot be read, or None when it can."""
    where = f"{spec}!{name}"
    if not regular:
        return SetupSource(where, None, f"{filename} is not a regular file in the archive")
    if size > MAX_SETUP_BYTES:
        return SetupSource(where, None, f"{filename} is larger than {MAX_SETUP_BYTES} bytes")
    return None


def _decoded(where: str, raw: bytes, filename: str) -> SetupSource:
    if len(raw) > MAX_SETUP_BYTES:  # the header lied about the size
        return SetupSource(where, None, f"{filename} is larger than {MAX_SETUP_BYTES} bytes")
    return SetupSource(where, raw.decode("utf-8", errors="replace"))


def _from_tar(spec: str, archive: str | io.BytesIO, filename: str) -> SetupSource:
    best: tarfile.TarInfo | None = None
    best_rank = 2
    with (tarfile.open(archive, mode="r:*") if isinstance(archive, str)
          else tarfile.open(fileobj=archive, mode="r:*")) as tar:
        for count, member in enumerate(tar):  # member by member: stops at <top>/FILENAME
            if count >= _MAX_MEMBERS:
                break
            rank = _rank(member.name, filename)
            if rank is not None and rank < best_rank:
                best, best_rank = member, rank
            if best_rank == 0:
                break
        if best is None:
            return SetupSource(spec, None, f"no {filename} in the archive")
        refused = _pick(spec, best.name, best.size, best.isreg(), filename)
        if refused is not None:
            return refused
        stream = tar.extractfile(best)
        if stream is None:
            return SetupSource(f"{spec}!{best.name}", None, f"{filename} cannot be read")
        with stream:
            return _decoded(f"{spec}!{best.name}", stream.read(MAX_SETUP_BYTES + 1), filename)


def _from_zip(spec: str, source: str | io.BytesIO, filename: str) -> SetupSource:
    with zipfile.ZipFile(source) as archive:
        infos = archive.infolist()[:_MAX_MEMBERS]
        ranked = sorted((rank, i, info) for i, info in enumerate(infos)
                        if (rank := _rank(info.filename, filename)) is not None)
        if not ranked:
            return SetupSource(spec, None, f"no {filename} in the archive")
        info = ranked[0][2]
        mode = info.external_attr >> 16
        regular = not info.is_dir() and (mode == 0 or (mode & 0o170000) in (0, 0o100000))
        refused = _pick(spec, info.filename, info.file_size, regular, filename)
        if refused is not None:
            return refused
        with archive.open(info) as stream:
            return _decoded(f"{spec}!{info.filename}", stream.read(MAX_SETUP_BYTES + 1),
                            filename)


def wanted(spec: str, archs: Sequence[archmod.Arch],
           places: Sequence[tuple[str, bool]] = (), pages: index.Pages | None = None
           ) -> list[Wanted]:
    """The variables ``spec``'s setup.py reads that wheelcuda sets to build from source,
    in the order the setup.py reads them, each ``(name, value, "read from <where>")``;
    a requirement's from its sdist on the first of ``places`` that has one.

    Empty for a source without a readable setup.py, or one that reads none of them.
    Decisions are _rules/setup_vars.py's :func:`build_from_source`.
    """
    source = read_setup_sources(spec) or from_index(spec, places, pages)
    return [] if source is None else from_source(source, archs)


def from_source(source: SetupSource, archs: Sequence[archmod.Arch]) -> list[Wanted]:
    """:func:`wanted` for a setup.py already read (to show ``source.problem`` too)."""
    if source.text is None:
        return []
    decided = rules.build_from_source(rules.reads(source.text), archs)
    origin = f"read from {source.where}"
    return [Wanted(name, value, origin) for name, value in decided.items()]
