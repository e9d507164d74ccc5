"""Safe extraction of NVIDIA's archives into one root: no member escapes, links stay inside.

Each member of a ``.tar.xz`` is judged by :func:`wheelcuda._sources.redist.rules.member_problem`
before anything is written (no ``tarfile`` filter is relied on): a plain relative path
inside the archive's one top folder, no device or fifo, links only to somewhere inside
it. It is then written where :func:`wheelcuda._sources.redist.rules.destination` says, never
through a link (files opened with ``"x"``, folders made one by one and refused where
something else stands); a path two archives both write must hold the same content; a
hard link points only to a file its archive unpacked before it; and once every archive
is in, :func:`links_stay_inside` follows each link through the others and refuses one
that ends outside its component's folder.
"""

from __future__ import annotations

import lzma
import os
import shutil
import stat
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from .._sources.redist import rules
from ..errors import ComponentError
from .transfer import CHUNK, file_sha256, stream_sha256


def member_kind(member: tarfile.TarInfo) -> rules.Kind:
    if member.isreg():
        return "file"
    if member.isdir():
        return "dir"
    if member.issym():
        return "symlink"
    if member.islnk():
        return "hardlink"
    return "other"


@dataclass
class Unpack:
    """One root being filled: which archive wrote each path, which folders are real."""

    root: Path
    owners: dict[str, str] = field(default_factory=dict)
    real: set[Path] = field(default_factory=set)
    links: list[tuple[Path, rules.Archive]] = field(default_factory=list)

    def refuse(self, archive: rules.Archive, why: str) -> ComponentError:
        return ComponentError(f"refusing {archive.filename} from {archive.url}: {why}",
                              "this archive is not one NVIDIA published; use NVIDIA's "
                              "(unset WHEELCUDA_REDIST_URL, leave out --redist-manifest)")

    def folder(self, path: Path, archive: rules.Archive, name: str) -> None:
        """Make ``path`` and its parents below the root, refusing to pass a link."""
        if path == self.root or path in self.real:
            return
        if self.root not in path.parents:
            raise self.refuse(archive, f"member {name!r} is outside the archive's folder")
        self.folder(path.parent, archive, name)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            path.mkdir(mode=0o755)
        else:
            if not stat.S_ISDIR(st.st_mode):
                raise self.refuse(archive, f"member {name!r} needs {path.relative_to(self.root)}"
                                           " to be a folder, and it is not one")
        self.real.add(path)

    def clash(self, archive: rules.Archive, rel: str) -> ComponentError:
        other = self.owners.get(rel, archive.name)
        return self.refuse(archive, f"{rel} is also in {other}, with other content")


def _same(path: Path, data_: IO[bytes]) -> bool:
    digest = stream_sha256(data_)
    return path.is_file() and not path.is_symlink() and digest == file_sha256(path)


def _put(tar: tarfile.TarFile, member: tarfile.TarInfo, kind: rules.Kind,
         archive: rules.Archive, box: Unpack) -> None:
    rel = rules.destination(member.name, kind, archive)
    if rel is None:
        return
    dest = box.root / rel
    box.folder(dest.parent, archive, member.name)
    if kind == "dir":
        box.folder(dest, archive, member.name)
    elif kind == "file":
        stream = tar.extractfile(member)
        assert stream is not None  # a regular member always has data
        try:
            with open(dest, "xb") as out:  # "x": never through a link, never over a file
                shutil.copyfileobj(stream, out, CHUNK)
        except FileExistsError:
            if not _same(dest, stream):
                raise box.clash(archive, rel) from None
        os.chmod(dest, 0o755 if member.mode & 0o111 else 0o644)
    elif kind == "symlink":
        try:
            os.symlink(member.linkname, dest)
        except FileExistsError:
            if not (dest.is_symlink() and os.readlink(dest) == member.linkname):
                raise box.clash(archive, rel) from None
        box.links.append((dest, archive))
    else:  # a hard link: to a file of this archive, unpacked before it
        source = box.root / (rules.destination(member.linkname, "file", archive) or "")
        if source.parent not in box.real or not (source.is_file() and not source.is_symlink()):
            raise box.refuse(archive, f"hard link {member.name!r} points to "
                                      f"{member.linkname!r}, which it did not unpack before")
        try:
            os.link(source, dest)
        except FileExistsError:
            raise box.clash(archive, rel) from None
        except OSError:
            shutil.copy2(source, dest)
    box.owners[rel] = archive.name


def unpack(file: Path, archive: rules.Archive, box: Unpack) -> None:
    """Every member judged before it is written (no reliance on tarfile's filters)."""
    try:
        with tarfile.open(file, "r|xz") as tar:
            for member in tar:
                kind = member_kind(member)
                problem = rules.member_problem(member.name, kind, member.linkname, archive.top)
                if problem:
                    raise box.refuse(archive, problem)
                _put(tar, member, kind, archive, box)
    except (tarfile.TarError, lzma.LZMAError, EOFError) as exc:
        file.unlink(missing_ok=True)  # matched the manifest, yet broken: not kept for reuse
        raise ComponentError(f"{archive.filename} from {archive.url} cannot be unpacked: {exc}",
                             "the file matches the manifest's sha256, so the manifest lists "
                             "a broken archive: run again to download it anew, or name "
                             "another release with --redist-manifest") from exc


def links_stay_inside(box: Unpack) -> None:
    """Each link, followed through every other link, ends inside its component's folder
    (a chain of links that each look harmless alone can still lead out)."""
    for path, archive in box.links:
        folder = os.path.realpath(box.root / archive.folder)
        real = os.path.realpath(path)
        if real != folder and not real.startswith(folder + os.sep):
            raise box.refuse(archive, f"its link {path.relative_to(box.root)}, followed, "
                                      f"leads to {real}, outside {archive.folder}")
