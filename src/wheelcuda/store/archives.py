"""NVIDIA's redistributable archives, fetched into the store as a toolkit root.

torch built for CUDA 12 needs a CUDA 12 compiler, and no CUDA 12 wheel holds nvcc
(FACTS.md); NVIDIA's component archives do. :func:`fetch` reads the release's manifest
(checked against the sha256 pinned in :mod:`wheelcuda.data.redist`; one the user names
is used as given), downloads each archive the compiler set needs (resuming a ``.part``
file a stopped run left), checks its size and sha256, unpacks it member by member
(every member judged by :func:`wheelcuda.rules.redist.member_problem` first; no
``tarfile`` filter is relied on), and lays the result out like site-packages:

    <cache>/toolkits/cuda-redist-12.8.1-x86_64/
        nvidia/cuda_nvcc/{bin,include,nvvm,...}        (CUDA 13: nvidia/cu13/...)
        nvidia/cuda_runtime/{include,lib}
        nvidia/cuda_cccl/{include,lib/cmake}
        nvidia_cuda_nvcc_cu12-12.8.93.dist-info/METADATA   (Name, Version; licenses/)
        ...
        wheelcuda-store.json                              (the release and its archives)

so that :mod:`wheelcuda.probe.locate` finds every component, with its version, as it
finds wheels. As in :mod:`.toolkits`: one lock per folder (two installs download once),
the root is built beside its place and swapped in whole, marked complete only after
:mod:`~wheelcuda.probe.locate` found the whole compiler set in it, and what a killed run
left is removed by the next, except its downloads, which the next run resumes (they sit
in ``.fetch-<name>-downloads``, which ``wheelcuda cache prune`` removes when no fetch
holds the lock).
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import lzma
import os
import platform
import re
import shutil
import stat
import sys
import tarfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from ..data import catalog
from ..data import redist as data
from ..errors import CacheError, ComponentError
from ..probe import locate
from ..rules import redist as rules
from ..rules.checks import version_key
from . import fs, toolkits
from .layout import Layout

__all__ = ["PREFIX", "Plan", "Want", "download", "existing", "fetch", "folder_name",
           "listing", "read_manifest", "resolve"]

#: Store folders of this source: ``cuda-redist-<label>-<machine>`` for a release whose
#: manifest wheelcuda pins (only that manifest's content is ever accepted there), and
#: ``cuda-redist-<label>-sha<digest>-<machine>`` for a manifest the user named: named by
#: its digest, it never takes a pinned release's place, whatever label it carries.
PREFIX = "cuda-redist-"
#: The variable that lets an unpinned manifest be read over plain http from a host other
#: than this machine (read by the caller, through its Context).
ALLOW_HTTP_VAR = "WHEELCUDA_ALLOW_HTTP"
#: What a progress note goes to: one line, without the ``wheelcuda: `` prefix.
Note = Callable[[str], None]

_LOCK_WAIT = 1800.0  # a waiting run waits this long for the one downloading
_SOCKET_TIMEOUT = 60.0
_CHUNK = 256 * 1024
_MANIFEST_LIMIT = 16 * 1024 * 1024  # NVIDIA's are about 50 KB
_ATTEMPTS = 3  # a connection that drops is resumed this many times in one run
_AGENT = {"User-Agent": "wheelcuda"}


def _note(text: str) -> None:
    print(f"wheelcuda: {text}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Want:
    """What the caller asks for: torch's CUDA ``X.Y`` and where things come from.

    - ``manifest``: ``--redist-manifest URL|FILE``, used as given (no pin check);
    - ``base_url``: a mirror laid out like NVIDIA's (``WHEELCUDA_REDIST_URL``: an
      ``http(s)://`` or ``file://`` URL or a folder). Unset: the folder of an
      ``http(s)`` ``manifest``, else NVIDIA's;
    - ``source``: ``fetch --from DIR``: the archives (and a known release's
      ``redistrib_<label>.json``, when it is there) are taken from this folder, by file
      name or in NVIDIA's layout, never downloaded; the same checks apply.
    """

    cuda: str
    manifest: str | None = None
    base_url: str | None = None
    source: Path | None = None
    machine: str | None = None
    #: ``WHEELCUDA_ALLOW_HTTP=1``: a manifest given over plain http from another host
    allow_http: bool = False

    @property
    def host(self) -> str:
        return self.machine or platform.machine()


@dataclass(frozen=True)
class Plan:
    """A read manifest and the archives it gives for this build."""

    label: str
    platform: str
    manifest_url: str
    manifest_sha256: str
    #: checked against the sha256 wheelcuda pins for this release
    pinned: bool
    archives: tuple[rules.Archive, ...]


# -- reading from URLs and folders -------------------------------------------------------

def _where(location: str) -> tuple[str, str]:
    """("http", url) or ("file", path) for an http(s):// or file:// URL or a path."""
    try:
        scheme = urllib.parse.urlsplit(location).scheme.lower()
    except ValueError as exc:  # "http://[bad": an unclosed IPv6 bracket, a bad port
        raise ComponentError(f"cannot read {location}: not a URL ({exc})",
                             "name an http(s):// or file:// URL, or a path") from exc
    if scheme in ("http", "https"):
        return "http", location
    if scheme == "file":
        return "file", urllib.request.url2pathname(urllib.parse.urlsplit(location).path)
    if scheme and len(scheme) > 1:  # not a drive letter: an unknown scheme
        raise ComponentError(f"cannot read {location}: wheelcuda reads http(s)://, file:// "
                             "and plain paths only")
    return "file", location


class _Unreachable(ComponentError):
    """A manifest or an archive could not be read: :func:`fetch` adds what to bring."""


def _unreachable(location: str, exc: BaseException) -> ComponentError:
    if isinstance(exc, urllib.error.HTTPError):
        exc.close()  # it holds the connection open
        why = f"the server answered HTTP {exc.code} ({exc.reason})"
    elif isinstance(exc, urllib.error.URLError):
        why = f"could not connect ({exc.reason})"
    elif isinstance(exc, OSError) and exc.strerror:
        why = exc.strerror
    else:
        why = str(exc) or type(exc).__name__
    return _Unreachable(
        f"could not read {location}: {why}",
        f"check the address; a mirror laid out like {data.BASE_URL} is named by "
        f"{data.MIRROR_VAR}")


def _open(url: str, offset: int = 0) -> http.client.HTTPResponse:
    headers = dict(_AGENT)
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)  # noqa: S310 (http(s) only: _where)
    response: http.client.HTTPResponse = urllib.request.urlopen(  # noqa: S310
        request, timeout=_SOCKET_TIMEOUT)
    return response


def _read(location: str) -> bytes:
    kind, target = _where(location)
    try:
        if kind == "file":
            with open(target, "rb") as f:
                raw = f.read(_MANIFEST_LIMIT + 1)
        else:
            with _open(target) as response:
                raw = response.read(_MANIFEST_LIMIT + 1)
    except (OSError, http.client.HTTPException) as exc:
        raise _unreachable(location, exc) from exc
    if len(raw) > _MANIFEST_LIMIT:
        raise ComponentError(f"{location} is larger than any CUDA manifest "
                             f"({_MANIFEST_LIMIT // 2**20} MB or more)")
    return raw


# -- the manifest and the plan ------------------------------------------------------------

def _location(want: Want) -> tuple[str, data.Release | None]:
    """Where the manifest is read, and the known release it must match: the one the
    user names (``--redist-manifest``: used as given), else the newest known release of
    torch's CUDA, from the ``--from`` folder when it is there, else from the mirror or
    NVIDIA."""
    if want.manifest:
        return want.manifest, None
    release = rules.choose_release(want.cuda)
    name = data.manifest_name(release.label)
    if want.source is not None and (want.source / name).is_file():
        return str(want.source / name), release
    return rules.join_url(want.base_url or data.BASE_URL, name), release


def _loopback(host: str | None) -> bool:
    return host in ("127.0.0.1", "::1", "localhost")


def _refuse_plain_http(location: str, want: Want) -> None:
    """A manifest used as given is what every archive's sha256 is checked against: over
    plain http anyone on the way could change it, so it is refused unless it comes from
    this machine or the user says so."""
    try:
        parts = urllib.parse.urlsplit(location)
    except ValueError:
        return  # _where says what is wrong with it
    if parts.scheme.lower() == "http" and not _loopback(parts.hostname) and not want.allow_http:
        raise ComponentError(
            f"refusing the manifest {location}: it is used as given, unchecked, and plain "
            "http lets anyone on the way change it (and with it every archive's sha256)",
            f"serve it over https://, pass a file (--redist-manifest ./redistrib.json), or "
            f"allow it knowingly: {ALLOW_HTTP_VAR}=1")


def read_manifest(want: Want) -> tuple[rules.Manifest, str, str, data.Release | None]:
    """(manifest, where it was read, its sha256, the known release it was checked
    against or None). A known release's manifest must have the pinned sha256; one used
    as given is not read over plain http from another host (:func:`_refuse_plain_http`)."""
    location, release = _location(want)
    if release is None:
        _refuse_plain_http(location, want)
    raw = _read(location)
    digest = hashlib.sha256(raw).hexdigest()
    if release is not None and release.manifest_sha256 and digest != release.manifest_sha256:
        raise ComponentError(
            f"the manifest {location} does not match the one wheelcuda pins for CUDA "
            f"{release.label}: expected sha256 {release.manifest_sha256}, got {digest}",
            "a mirror must serve NVIDIA's file unchanged; if you trust this one, pass it "
            f"as given: --redist-manifest {location}")
    return rules.parse_manifest(raw, location), location, digest, release


def _archive_base(want: Want) -> str:
    """Where the archives' relative paths start: WHEELCUDA_REDIST_URL, else beside a
    manifest given (a URL, or a file), else NVIDIA's."""
    if want.base_url:
        return want.base_url
    if want.manifest:
        kind, where = _where(want.manifest)
        if kind == "http":
            return want.manifest.rsplit("/", 1)[0] + "/"
        return str(Path(where).resolve().parent) + "/"
    return data.BASE_URL


def resolve(want: Want) -> Plan:
    """Read the manifest (the network, for a few KB) and plan the archives."""
    platform_name = rules.platform_of(want.host)
    manifest, location, digest, release = read_manifest(want)
    archives = rules.plan(manifest, want.cuda, platform_name, _archive_base(want), location)
    label = (release.label if release else manifest.label) or f"{want.cuda}-{digest[:12]}"
    return Plan(label, platform_name, location, digest, release is not None, archives)


def listing(want: Want, *, network: bool = False) -> str:
    """What to bring to a machine without the network (``--no-fetch``): each file's URL,
    size and sha256 when the manifest can be read (a local file, or with ``network``),
    else the manifest to download first and what to take from it."""
    location, release = _location(want)
    platform_name = rules.platform_of(want.host)
    local = _where(location)[0] == "file"
    named = location if local else f"DIR/{location.rsplit('/', 1)[-1]}"
    then = ("wheelcuda fetch --from DIR" if release else
            f"wheelcuda fetch --redist-manifest {named} --from DIR")
    if network or local:
        plan = resolve(want)
        lines = rules.listing(plan.archives, plan.manifest_url, plan.manifest_sha256)
        return "\n".join([
            f"the CUDA {want.cuda} compiler from NVIDIA's archives (release {plan.label}, "
            f"{plan.platform}) is these files: download them into one folder DIR, then run: "
            f"{then}", *(f"  {line}" for line in lines)])
    pin = f" (sha256 {release.manifest_sha256})" if release and release.manifest_sha256 else ""
    known = _known(want)
    if release and known:
        lines = rules.listing(known, location, release.manifest_sha256 or "(not pinned)")
        return "\n".join([
            f"the CUDA {want.cuda} compiler from NVIDIA's archives (release {release.label}, "
            f"{platform_name}, {_total(known)}): the manifest and these files (as "
            f"wheelcuda knows them; each is checked by size and sha256), in one folder DIR, "
            f"then: {then}", *(f"  {line}" for line in lines)])
    names = ", ".join(p.name for p in data.PARTS[int(want.cuda.split(".", 1)[0])])
    return (f"the CUDA {want.cuda} compiler from NVIDIA's archives ({platform_name}): "
            f"download {location}{pin} and the {names} archives it lists for {platform_name} "
            f"(each entry's relative_path under {_archive_base(want)}) into one folder DIR, "
            f"then run: {then}")


def _known(want: Want) -> tuple[rules.Archive, ...] | None:
    """The archives of torch's release as wheelcuda knows them without the network
    (data.KNOWN_ARCHIVES), when no manifest was named."""
    _, release = _location(want)
    platform_name = rules.platform_of(want.host)
    known = data.KNOWN_ARCHIVES.get((release.label, platform_name)) if release else None
    if not known or want.manifest:
        return None
    major = int(want.cuda.split(".", 1)[0])
    parts = {n: p for p in data.PARTS[major] for n in p.names}
    base = _archive_base(want)
    return tuple(rules.Archive(parts[name], major, version, rel, rules.join_url(base, rel),
                               size, sha)
                 for name, version, size, sha in known if name in parts
                 for rel in [data.relative_path(name, platform_name, version)])


def _total(archives: Sequence[rules.Archive]) -> str:
    return f"{sum(a.size for a in archives) / 1e6:.0f} MB"


def summary(want: Want) -> str:
    """One line for doctor, without the network: the release, its size when known (a
    known release, or a manifest on disk), and where it comes from."""
    location, release = _location(want)
    platform_name = rules.platform_of(want.host)
    known = _known(want)
    if known is None and _where(location)[0] == "file":
        try:
            plan = resolve(want)
        except ComponentError:
            pass  # said in full when the fetch runs
        else:
            return (f"release {plan.label}, {platform_name}, {_total(plan.archives)}, as "
                    f"{location} lists them")
    label = f"release {release.label}" if release else f"the release {location} names"
    size = f", {_total(known)}" if known else " (sizes as its manifest lists them)"
    return f"{label}, {platform_name}{size}, from {_archive_base(want)}"


# -- downloads ----------------------------------------------------------------------------

def _mb(n: int, total: int) -> str:
    return f"{n / 1e6:.1f}" if total < 10_000_000 else f"{n / 1e6:.0f}"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _check(path: Path, archive: rules.Archive, origin: str) -> None:
    """Size, then sha256, as the manifest says; a file that differs is deleted."""
    size = path.stat().st_size
    got = f"{size} bytes" if size != archive.size else _sha256(path)
    want = f"{archive.size} bytes" if size != archive.size else archive.sha256
    if got == want:
        return
    path.unlink()
    what = "size" if size != archive.size else "sha256"
    raise ComponentError(
        f"{archive.filename} from {origin} does not match the manifest's {what}: "
        f"expected {want}, got {got} (its copy in wheelcuda's store was deleted)",
        "run again to download it anew; if it fails the same way, the server or mirror "
        "serves a damaged file: use NVIDIA's (unset WHEELCUDA_REDIST_URL)")


class _Progress:
    def __init__(self, archive: rules.Archive, note: Note, every: float) -> None:
        self.archive, self.note, self.every = archive, note, every
        self.last = time.monotonic()

    def __call__(self, have: int) -> None:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            a = self.archive
            self.note(f"downloading {a.name} {a.version}: {_mb(have, a.size)} of "
                      f"{_mb(a.size, a.size)} MB")


def _unwritable(path: Path, exc: OSError) -> CacheError:
    return CacheError(f"cannot write {path}: {exc.strerror or exc}",
                      "free some space there, or move the cache: export "
                      "WHEELCUDA_CACHE_DIR=/a/larger/disk/wheelcuda")


@contextlib.contextmanager
def _writing(path: Path, mode: str) -> Iterator[Callable[[bytes], None]]:
    """A writer to ``path`` whose failures (a full disk) are the store's errors, not a
    dropped connection to resume: only what it writes is caught, not the body's reads."""
    try:
        f = open(path, mode)  # noqa: SIM115 (closed below, after the body)
    except OSError as exc:
        raise _unwritable(path, exc) from exc

    def write(block: bytes) -> None:
        try:
            f.write(block)
            f.flush()  # so that closing has nothing left to fail on
        except OSError as exc:
            raise _unwritable(path, exc) from exc

    with f:
        yield write


def _http_once(archive: rules.Archive, part: Path, progress: _Progress) -> None:
    """One request: resume ``part`` from its size when the server honours Range,
    else start over. Stops reading one byte past the expected size."""
    have = part.stat().st_size if part.exists() else 0
    try:
        response = _open(archive.url, have)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and have:  # the part is no prefix of what is served now
            exc.close()
            part.unlink()
            raise ConnectionError("the server refused to resume; starting over") from exc
        raise _unreachable(archive.url, exc) from exc
    except urllib.error.URLError as exc:  # no connection at all: nothing to resume
        raise _unreachable(archive.url, exc) from exc
    with response:
        resumed = bool(have) and response.status == 206 and response.headers.get(
            "Content-Range", "").startswith(f"bytes {have}-")
        if have and not resumed:
            progress.note(f"{archive.url} was sent whole, not from byte {have}: starting over")
            have = 0
        with _writing(part, "ab" if resumed else "wb") as out:
            while have <= archive.size:
                block = response.read(min(_CHUNK, archive.size + 1 - have))
                if not block:
                    break
                out(block)
                have += len(block)
                progress(have)


def _fill_http(archive: rules.Archive, part: Path, progress: _Progress) -> None:
    """Download into ``part``, resuming when the connection drops (a few times)."""
    last: BaseException | None = None
    for _ in range(_ATTEMPTS):
        before = part.stat().st_size if part.exists() else 0
        try:
            _http_once(archive, part, progress)
            last = None
        except (OSError, http.client.HTTPException) as exc:  # the connection dropped
            last = exc
        have = part.stat().st_size if part.exists() else 0
        if have >= archive.size:
            return
        if have <= before and last is None:
            break  # the server had nothing more to send: what it serves is short
    have = part.stat().st_size if part.exists() else 0
    raise ComponentError(
        f"the download of {archive.url} stopped at {have} of {archive.size} bytes"
        + (f" ({last})" if last else ": the server sent no more"),
        "run again: the download resumes from there (`wheelcuda cache prune` removes it)")


def _find_in(source: Path, archive: rules.Archive) -> Path:
    for path in (source / archive.filename, source / archive.path):
        if path.is_file():
            return path
    raise ComponentError(
        f"{archive.filename} is not in {source} (looked for {source / archive.filename} "
        f"and {source / archive.path})",
        f"download {archive.url} ({archive.size} bytes, sha256 {archive.sha256}) into "
        f"{source}")


def download(archive: rules.Archive, folder: Path, *, source: Path | None = None,
             note: Note = _note, every: float = 5.0) -> Path:
    """The archive in ``folder``, its size and sha256 checked: taken from ``source``
    (``fetch --from DIR``) or downloaded, resuming ``<file>.part`` where a stopped run
    left it (HTTP Range; a server that ignores it sends the whole file again)."""
    final = folder / archive.filename
    if final.is_file():
        with contextlib.suppress(ComponentError):  # checked by a run that then stopped
            _check(final, archive, str(final))
            return final
    part = folder / f"{archive.filename}.part"
    progress = _Progress(archive, note, every)
    kind, where = _where(archive.url)
    origin = archive.url
    if source is not None or kind == "file":
        found = _find_in(source, archive) if source is not None else Path(where)
        origin = str(found)
        note(f"copying {archive.name} {archive.version} from {found}")
        try:
            shutil.copyfile(found, part)
        except OSError as exc:
            raise _unreachable(str(found), exc) from exc
    else:
        note(f"downloading {archive.name} {archive.version} "
             f"({_mb(archive.size, archive.size)} MB) from {archive.url}")
        _fill_http(archive, part, progress)
    _check(part, archive, origin)
    os.replace(part, final)
    return final


# -- unpacking ----------------------------------------------------------------------------

def _kind(member: tarfile.TarInfo) -> rules.Kind:
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
class _Unpack:
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
    h = hashlib.sha256()
    for block in iter(lambda: data_.read(1 << 20), b""):
        h.update(block)
    return path.is_file() and not path.is_symlink() and h.hexdigest() == _sha256(path)


def _put(tar: tarfile.TarFile, member: tarfile.TarInfo, kind: rules.Kind,
         archive: rules.Archive, box: _Unpack) -> None:
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
                shutil.copyfileobj(stream, out, _CHUNK)
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


def _unpack(file: Path, archive: rules.Archive, box: _Unpack) -> None:
    """Every member judged before it is written (no reliance on tarfile's filters)."""
    try:
        with tarfile.open(file, "r|xz") as tar:
            for member in tar:
                kind = _kind(member)
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


def _links_stay_inside(box: _Unpack) -> None:
    """Each link, followed through every other link, ends inside its component's folder
    (a chain of links that each look harmless alone can still lead out)."""
    for path, archive in box.links:
        folder = os.path.realpath(box.root / archive.folder)
        real = os.path.realpath(path)
        if real != folder and not real.startswith(folder + os.sep):
            raise box.refuse(archive, f"its link {path.relative_to(box.root)}, followed, "
                                      f"leads to {real}, outside {archive.folder}")


def _missing(root: Path, major: int) -> list[str]:
    """What of the compiler set :mod:`~wheelcuda.probe.locate` does not find whole,
    with its version, in ``root``."""
    found = locate.locate([str(root)], catalog.COMPILER)
    out = []
    for c in catalog.COMPILER:
        hit = found.get(c.name, major)
        if hit is None or hit.version is None:
            out.append(c.wheels[major])
        elif hit.missing:
            out.append(f"{c.wheels[major]} ({', '.join(hit.missing)})")
    return out


def _assemble(root: Path, plan: Plan, files: list[Path]) -> None:
    box = _Unpack(root)
    for archive, file in zip(plan.archives, files, strict=True):
        _unpack(file, archive, box)
        meta = root / rules.dist_info(archive.dist, archive.version)
        meta.mkdir(mode=0o755, exist_ok=True)
        fs.write_text(meta / "METADATA",
                      rules.metadata_text(archive.dist, archive.version,
                                          f"from NVIDIA's redistributable archive "
                                          f"{archive.filename}, unpacked by wheelcuda"),
                      0o644)
        fs.write_text(meta / "INSTALLER", "wheelcuda\n", 0o644)
    _links_stay_inside(box)
    major = plan.archives[0].major
    missing = _missing(root, major)
    if missing:
        raise ComponentError(
            f"NVIDIA's CUDA {plan.label} archives ({', '.join(a.filename for a in plan.archives)})"
            f" did not hold {', '.join(missing)}",
            "this release lays its archives out in a way wheelcuda does not know: name "
            "another with --redist-manifest, or report it")
    mark = {"source": "redist", "release": plan.label, "platform": plan.platform,
            "cuda": ".".join(plan.archives[0].version.split(".")[:2]),
            "manifest": {"url": plan.manifest_url, "sha256": plan.manifest_sha256,
                         "pinned": plan.pinned},
            "archives": [{"name": a.name, "version": a.version, "url": a.url,
                          "size": a.size, "sha256": a.sha256} for a in plan.archives]}
    fs.write_text(root / toolkits.MARK, json.dumps(mark, indent=1, sort_keys=True) + "\n")


# -- the store ----------------------------------------------------------------------------

def folder_name(label: str, machine: str | None = None, *,
                digest: str | None = None) -> str:
    """``cuda-redist-12.8.1-x86_64`` for a pinned release; with the ``digest`` of a
    manifest the user named, ``cuda-redist-<label>-sha<digest[:16]>-x86_64`` (pure). A
    label from such a manifest may hold anything: only ``[A-Za-z0-9.+-]`` is kept, and
    the digest part means it never names a pinned release's folder."""
    safe = re.sub(r"[^A-Za-z0-9.+-]", "_", label)
    tag = f"-sha{digest[:16]}" if digest else ""
    return f"{PREFIX}{safe}{tag}-{machine or platform.machine()}"


def _plan_folder(plan: Plan, machine: str) -> str:
    return folder_name(plan.label, machine, digest=None if plan.pinned else plan.manifest_sha256)


def _mark(folder: Path) -> dict[str, object] | None:
    try:
        mark = json.loads((folder / toolkits.MARK).read_text())
    except (OSError, ValueError):
        return None
    return mark if isinstance(mark, dict) and mark.get("source") == "redist" else None


def _complete(folder: Path, manifest_sha256: str | None) -> bool:
    mark = _mark(folder)
    if mark is None:
        return False
    manifest = mark.get("manifest")
    return manifest_sha256 is None or (isinstance(manifest, dict)
                                       and manifest.get("sha256") == manifest_sha256)


def existing(layout: Layout, cuda: str, machine: str | None = None, *,
             manifest: str | None = None) -> Path | None:
    """The newest complete root fetched for CUDA ``X.Y`` on this machine from a manifest
    wheelcuda pins, or None. A root fetched from a manifest the user named is taken only
    by a run that names the same ``manifest`` (its ``--redist-manifest`` or
    ``WHEELCUDA_REDIST_MANIFEST``), never for NVIDIA's release."""
    machine = machine or platform.machine()
    if manifest:
        return _existing_given(layout, cuda, machine, manifest)
    for release in sorted((r for r in data.RELEASES if r.cuda == cuda and r.manifest_sha256),
                          key=lambda r: version_key(r.label), reverse=True):
        path = layout.toolkits / folder_name(release.label, machine)
        mark = _mark(path)
        pin = mark.get("manifest") if mark else None
        if (isinstance(pin, dict) and pin.get("pinned") is True
                and pin.get("sha256") == release.manifest_sha256
                and mark is not None and mark.get("cuda") == cuda):
            return path
    return None


def _existing_given(layout: Layout, cuda: str, machine: str, manifest: str) -> Path | None:
    """The newest root fetched from the manifest named ``manifest`` (by the address it
    was read from, as its mark records), not from a pinned one."""
    best: tuple[float, Path] | None = None
    try:
        entries = list(layout.toolkits.iterdir())
    except OSError:
        return None
    for path in entries:
        if not (path.name.startswith(PREFIX) and path.name.endswith(f"-{machine}")):
            continue
        mark = _mark(path)
        given = mark.get("manifest") if mark else None
        if (mark is None or mark.get("cuda") != cuda or not isinstance(given, dict)
                or given.get("pinned") is not False or given.get("url") != manifest):
            continue
        with contextlib.suppress(OSError):
            when = (path / toolkits.MARK).stat().st_mtime
            if best is None or when > best[0]:
                best = (when, path)
    return best[1] if best else None


def fetch(layout: Layout, want: Want, *, note: Note = _note, every: float = 5.0) -> Path:
    """The root for ``want``: reused when fetched whole from the same manifest before,
    else fetched under the folder's lock (once, however many runs ask at once). When the
    network fails, the error lists what to bring instead."""
    try:
        return _fetch(layout, want, note, every)
    except _Unreachable as exc:
        try:
            bring = listing(want, network=False)
        except ComponentError:  # the manifest named is what cannot be read
            raise exc from None
        raise ComponentError(exc.message, f"{exc.fix}; without the network, {bring}") from exc


def _fetch(layout: Layout, want: Want, note: Note, every: float) -> Path:
    kits = layout.private(layout.toolkits)
    plan: Plan | None = None
    sha: str | None
    if want.manifest:  # its label and digest name the folder: read it first
        plan = resolve(want)
        final, sha = kits / _plan_folder(plan, want.host), plan.manifest_sha256
    else:  # a known release: its folder and manifest hash are known without the network
        release = rules.choose_release(want.cuda)
        final, sha = kits / folder_name(release.label, want.host), release.manifest_sha256
    if _complete(final, sha):
        return final
    with fs.locked(layout.lock(kits, final.name), f"fetching into {final}", _LOCK_WAIT):
        if _complete(final, sha):
            return final
        downloads = kits / f".fetch-{final.name}-downloads"
        for old in fs.leftovers(kits, final.name):  # a killed run's, but its downloads
            if old != downloads:
                fs.discard(old)
        plan = plan or resolve(want)
        downloads.mkdir(mode=0o700, exist_ok=True)
        files = [download(a, downloads, source=want.source, note=note, every=every)
                 for a in plan.archives]
        tmp = fs.new_folder(kits, final.name, "fetch")
        try:
            note(f"unpacking {', '.join(a.name for a in plan.archives)} into {final}")
            _assemble(tmp, plan, files)
            fs.swap_in(tmp, final)
        except OSError as exc:  # a full disk, a folder we may not write
            raise _unwritable(Path(exc.filename or tmp), exc) from exc
        finally:
            fs.discard(tmp)
        fs.discard(downloads)
    return final
