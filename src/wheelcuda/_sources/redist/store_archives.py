"""NVIDIA's redistributable archives, fetched into the store as a toolkit root.

torch built for CUDA 12 needs a CUDA 12 compiler, and no CUDA 12 wheel holds nvcc (only
ptxas); NVIDIA's component archives do. :func:`fetch` reads the release's manifest
(checked against the sha256 pinned in :mod:`wheelcuda._sources.redist.data`; one the user names
is used as given), downloads each archive the compiler set needs (resuming a ``.part``
file a stopped run left: :mod:`.transfer`), checks its size and sha256, unpacks it
member by member (:mod:`.extract`: every member judged by
:func:`wheelcuda._sources.redist.rules.member_problem` first; no ``tarfile`` filter is relied
on), and lays the result out like site-packages (:mod:`.store_roots`:
``<cache>/toolkits/cuda-redist-12.8.1-x86_64/nvidia/cuda_nvcc/...``), so that
:mod:`wheelcuda._probe.locate` finds every component, with its version, as it finds
wheels. As in :mod:`.toolkits`: one lock per folder (two installs download once),
the root is built beside its place and swapped in whole, marked complete only after
:mod:`~wheelcuda._probe.locate` found the whole compiler set in it, and what a killed run
left is removed by the next, except its downloads, which the next run resumes (they sit
in ``.fetch-<name>-downloads``, which ``wheelcuda cache prune`` removes when no fetch
holds the lock). What is said of it (the offline listing, doctor's line) is
:mod:`wheelcuda._sources.redist.rules_text`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ... import _report as report
from ..._data import settings as registry
from ..._store import fs, transfer
from ..._store.layout import Layout
from ...errors import ComponentError
from . import data, rules
from . import rules_text as prose
from . import store_roots as redistroots
from .rules import Plan
from .store_roots import folder_name

#: The variable that lets an unpinned manifest be read over plain http from a host other
#: than this machine (read by the caller, through its Context).
ALLOW_HTTP_VAR = registry.ALLOW_HTTP.name
#: What a progress note goes to: one line, without the ``wheelcuda: `` prefix.
Note = Callable[[str], None]

_LOCK_WAIT = 1800.0  # a waiting run waits this long for the one downloading
_MANIFEST_LIMIT = 16 * 1024 * 1024  # NVIDIA's are about 50 KB


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
    #: ``WHEELCUDA_ALLOW_HTTP`` on: a manifest given over plain http from another host
    allow_http: bool = False

    @property
    def host(self) -> str:
        return self.machine or platform.machine()


# -- the manifest and the plan ------------------------------------------------------------

def _read(location: str) -> bytes:
    raw = transfer.read(location, _MANIFEST_LIMIT + 1, fix=prose.UNREACHABLE_FIX)
    if len(raw) > _MANIFEST_LIMIT:
        raise ComponentError(f"{location} is larger than any CUDA manifest "
                             f"({_MANIFEST_LIMIT // 2**20} MB or more)")
    return raw


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


def _refuse_plain_http(location: str, want: Want) -> None:
    """A manifest used as given is what every archive's sha256 is checked against: over
    plain http anyone on the way could change it, so it is refused unless it comes from
    this machine or the user says so."""
    if transfer.plain_http(location) and not want.allow_http:
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
        kind, where = transfer.where(want.manifest)
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
    local = transfer.where(location)[0] == "file"
    then = prose.next_step(location, local=local, known=release is not None)
    if network or local:
        plan = resolve(want)
        return prose.listing_planned(plan, want.cuda, then)
    return prose.listing_offline(want.cuda, release, platform=platform_name, location=location,
                                 known=_known(want), base=_archive_base(want), then=then)


def missing_from_source(want: Want) -> None:
    """``fetch --from DIR`` goes nowhere else: raise naming every file DIR lacks (the
    manifest, the archives as wheelcuda knows them, each with its URL, size and sha256)
    before anything is read (an empty DIR must not send the run to the network, whose
    fix would be the command just run)."""
    if want.source is None or want.manifest:
        return
    release = rules.choose_release(want.cuda)
    manifest = data.manifest_name(release.label)
    base = _archive_base(want)
    known = _known(want) or ()
    lacking = [] if (want.source / manifest).is_file() else \
        [f"{rules.join_url(want.base_url or data.BASE_URL, manifest)}  sha256 "
         f"{release.manifest_sha256}"]
    lacking += [f"{a.url}  {a.size} bytes  sha256 {a.sha256}" for a in known
                if not any(p.is_file() for p in (want.source / a.filename,
                                                 want.source / a.path))]
    if not lacking:
        return
    have = sorted(p.name for p in want.source.iterdir()) if want.source.is_dir() else []
    held = f" (it holds {', '.join(have[:6])}{', ...' if len(have) > 6 else ''})" if have \
        else " (it is empty)"
    raise ComponentError(
        f"--from {want.source}: it lacks {len(lacking)} of the files of the CUDA "
        f"{want.cuda} compiler, release {release.label}{held}; nothing was downloaded",
        f"copy these into {want.source} (from {base} on a machine with the network), then "
        "run the same command again:\n    " + "\n    ".join(lacking))


def _known(want: Want) -> tuple[rules.Archive, ...] | None:
    """The archives of torch's release as wheelcuda knows them without the network
    (data.KNOWN_ARCHIVES), when no manifest was named."""
    _, release = _location(want)
    platform_name = rules.platform_of(want.host)
    if release is None or want.manifest:
        return None
    return rules.known_archives(release.label, platform_name, want.cuda, _archive_base(want))


def answers(want: Want) -> str | None:
    """None when the manifest a fetch would read answers (a folder's copy is there; a
    URL's server answers within a few seconds), else why not (:func:`transfer.answers`).
    A ``--from`` folder without the manifest is said by the fetch itself."""
    location, _ = _location(want)
    if want.source is not None:
        return None
    return transfer.answers(location)


def summary(want: Want) -> str:
    """One line for doctor, without the network: the release, its size when known (a
    known release, or a manifest on disk), and where it comes from."""
    location, release = _location(want)
    platform_name = rules.platform_of(want.host)
    known = _known(want)
    if known is None and transfer.where(location)[0] == "file":
        try:
            plan = resolve(want)
        except ComponentError:
            pass  # said in full when the fetch runs
        else:
            return prose.summary_listed(plan, location)
    return prose.summary(release, location, platform=platform_name, known=known,
                         base=_archive_base(want))


# -- downloads ----------------------------------------------------------------------------

class _Progress:
    def __init__(self, archive: rules.Archive, note: Note, every: float) -> None:
        self.archive, self.note, self.every = archive, note, every
        self.last = time.monotonic()

    def __call__(self, have: int) -> None:
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            a = self.archive
            self.note(f"downloading {a.name} {a.version}: {prose.mb(have, a.size)} of "
                      f"{prose.mb(a.size, a.size)} MB")


def _check(path: Path, archive: rules.Archive, origin: str) -> None:
    """Size, then sha256, as the manifest says; a file that differs is deleted."""
    transfer.check(path, archive.size, archive.sha256, name=f"{archive.filename} from {origin}",
                   fix=prose.DAMAGED_FIX)


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
             note: Note = report.note, every: float = 5.0) -> Path:
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
    kind, where = transfer.where(archive.url)
    origin = archive.url
    if source is not None or kind == "file":
        found = _find_in(source, archive) if source is not None else Path(where)
        origin = str(found)
        note(f"copying {archive.name} {archive.version} from {found}")
        try:
            shutil.copyfile(found, part)
        except OSError as exc:
            raise transfer.unreachable(str(found), exc, prose.UNREACHABLE_FIX) from exc
    else:
        note(f"downloading {archive.name} {archive.version} "
             f"({prose.mb(archive.size, archive.size)} MB) from {archive.url}")
        transfer.fill(archive.url, part, archive.size, progress=progress, note=note,
                      fix=prose.UNREACHABLE_FIX)
    _check(part, archive, origin)
    os.replace(part, final)
    return final


# -- the store ----------------------------------------------------------------------------

def fetch(layout: Layout, want: Want, *, note: Note = report.note, every: float = 5.0) -> Path:
    """The root for ``want``: reused when fetched whole from the same manifest before,
    else fetched under the folder's lock (once, however many runs ask at once). When the
    network fails, the error lists what to bring instead."""
    try:
        return _fetch(layout, want, note, every)
    except transfer.Unreachable as exc:
        try:
            bring = listing(want, network=False)
        except ComponentError:  # the manifest named is what cannot be read
            raise exc from None
        raise transfer.Unreachable(exc.message, f"{exc.fix}; without the network, {bring}") \
            from exc


def _fetch(layout: Layout, want: Want, note: Note, every: float) -> Path:
    kits = layout.private(layout.toolkits)
    plan: Plan | None = None
    sha: str | None
    if want.manifest:  # its label and digest name the folder: read it first
        plan = resolve(want)
        final, sha = kits / redistroots.plan_folder(plan, want.host), plan.manifest_sha256
    else:  # a known release: its folder and manifest hash are known without the network
        release = rules.choose_release(want.cuda)
        final, sha = kits / folder_name(release.label, want.host), release.manifest_sha256
    if redistroots.complete(final, sha):
        return final
    missing_from_source(want)
    with fs.locked(layout.lock(kits, final.name), f"fetching into {final}", _LOCK_WAIT):
        if redistroots.complete(final, sha):
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
            redistroots.assemble(tmp, plan, files)
            fs.swap_in(tmp, final)
        except OSError as exc:  # a full disk, a folder we may not write
            raise transfer.unwritable(Path(exc.filename or tmp), exc) from exc
        finally:
            fs.discard(tmp)
        fs.discard(downloads)
    return final
