"""NVIDIA's redistributable archives: reading a manifest, choosing a release, planning
the archives, and judging each tar member before anything is written (pure).

A manifest (``redistrib_<label>.json``, docs/facts.md) maps each component to its version
and, per platform, ``relative_path``, ``sha256``, ``md5`` and ``size`` (a string). An
archive holds one top folder named like the file; its folders (``bin``, ``include``,
``lib``, ``nvvm``) go into the catalog's folder for that component, its top-level files
(``LICENSE``) into the ``.dist-info`` folder written for it.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ..._data import catalog
from ..._rules.checks import version_key
from ...errors import ComponentError
from . import data

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SUFFIX = ".tar.xz"

#: What a tar member is, as far as extraction cares; "other" (devices, fifos) is refused.
Kind = Literal["file", "dir", "symlink", "hardlink", "other"]


@dataclass(frozen=True)
class Download:
    """One archive of one component for one platform, as the manifest lists it."""

    relative_path: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Package:
    """One component of the manifest: its version, its archives, and the platform
    entries that could not be read (refused only if a build needs them)."""

    key: str
    name: str
    version: str
    downloads: Mapping[str, Download]
    broken: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Manifest:
    label: str | None
    date: str | None
    packages: Mapping[str, Package]


@dataclass(frozen=True)
class Archive:
    """One archive to fetch and where its contents go in the root."""

    part: data.Part
    major: int
    version: str
    #: the manifest's ``relative_path``, and the URL it makes under the base
    path: str
    url: str
    size: int
    sha256: str

    @property
    def name(self) -> str:
        """The manifest's name for it (``cuda_nvcc``)."""
        return self.part.name

    @property
    def filename(self) -> str:
        return posixpath.basename(self.url)

    @property
    def top(self) -> str:
        """The one top folder inside: the file name without ``.tar.xz``."""
        return self.filename[:-len(_SUFFIX)]

    @property
    def folder(self) -> str:
        """Where its folders go, relative to the root (``nvidia/cuda_nvcc``)."""
        return self.part.folder(self.major)

    @property
    def dist(self) -> str:
        """The distribution name its metadata takes (``nvidia-cuda-nvcc-cu12``)."""
        return self.part.dist(self.major)


@dataclass(frozen=True)
class Plan:
    """A read manifest and the archives it gives for this build."""

    label: str
    platform: str
    manifest_url: str
    manifest_sha256: str
    #: checked against the sha256 wheelcuda pins for this release
    pinned: bool
    archives: tuple[Archive, ...]


# -- the manifest -------------------------------------------------------------------------

def _bad(source: str, what: str) -> ComponentError:
    return ComponentError(
        f"the CUDA redistributable manifest {source} is malformed: {what}",
        "use NVIDIA's own manifest (leave out --redist-manifest and WHEELCUDA_REDIST_URL), "
        f"or fix the mirror that served it; NVIDIA's are at {data.BASE_URL}")


def _download(entry: Mapping[str, object]) -> Download | str:
    """The platform entry as a :class:`Download`, or what is wrong with it."""
    rel, sha, size = entry.get("relative_path"), entry.get("sha256"), entry.get("size")
    if not isinstance(rel, str) or not rel:
        return "no relative_path"
    if not isinstance(sha, str) or not _SHA256.match(sha.lower()):
        return f"sha256 {sha!r} is not 64 hex digits"
    if not isinstance(size, str) or not size.isdigit():  # a string in NVIDIA's manifests
        return f"size {size!r} is not a number in a string"
    return Download(rel, sha.lower(), int(size))


def _package(key: str, value: Mapping[str, object], source: str) -> Package:
    version = value.get("version")
    if not isinstance(version, str) or not version:
        raise _bad(source, f"component {key} has no version")
    downloads: dict[str, Download] = {}
    broken: dict[str, str] = {}
    for platform, entry in value.items():
        if isinstance(entry, dict) and "relative_path" in entry:
            got = _download(entry)
            if isinstance(got, Download):
                downloads[platform] = got
            else:
                broken[platform] = got
    name = value.get("name")
    return Package(key, name if isinstance(name, str) else key, version, downloads, broken)


def parse_manifest(text: str | bytes, source: str) -> Manifest:
    """A manifest's JSON as a :class:`Manifest`; ``source`` names it in errors.

    Components are every object-valued top-level key; the release keys are strings.
    """
    try:
        raw = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise _bad(source, f"not JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise _bad(source, "not a JSON object")
    packages = {k: _package(k, v, source) for k, v in raw.items() if isinstance(v, dict)}
    if not packages:
        raise _bad(source, "it lists no components")
    label, date = raw.get("release_label"), raw.get("release_date")
    return Manifest(label if isinstance(label, str) else None,
                    date if isinstance(date, str) else None, packages)


# -- which release, which archives --------------------------------------------------------

def choose_release(cuda: str) -> data.Release:
    """The newest known release of torch's CUDA ``X.Y`` (``12.8`` -> 12.8.1)."""
    found = [r for r in data.RELEASES if r.cuda == cuda]
    major = int(cuda.split(".", 1)[0]) if cuda.split(".", 1)[0].isdigit() else None
    if not found and major not in data.PARTS:
        raise ComponentError(
            f"wheelcuda takes CUDA {cuda}'s compiler from no NVIDIA archive (it knows the "
            f"layouts of CUDA {', '.join(map(str, sorted(data.PARTS)))})",
            f"--toolkit /path/to/cuda-{cuda} (a toolkit on this machine), or a torch built "
            "with CUDA 12.8 or 13.0")
    if not found:
        known = ", ".join(r.label for r in data.RELEASES)
        raise ComponentError(
            f"wheelcuda knows no NVIDIA archive release for CUDA {cuda} (it knows {known})",
            "name a release's manifest yourself: --redist-manifest URL-or-FILE (a "
            f"redistrib_{cuda}.<patch>.json from {data.BASE_URL})")
    return max(found, key=lambda r: version_key(r.label))


def platform_of(machine: str) -> str:
    """``x86_64`` -> ``linux-x86_64``; an unknown machine is an error."""
    try:
        return data.PLATFORMS[machine]
    except KeyError:
        known = ", ".join(data.PLATFORMS)
        raise ComponentError(f"NVIDIA publishes no CUDA archives wheelcuda knows for "
                             f"{machine} (it knows {known})") from None


def join_url(base: str, relative: str) -> str:
    """``base`` (a URL or folder, with or without ``/``) joined with a relative path."""
    return f"{base.rstrip('/')}/{relative.lstrip('/')}"


def _unsafe_path(rel: str) -> bool:
    parts = rel.split("/")
    return (rel.startswith("/") or "\\" in rel or ":" in parts[0]
            or any(p in ("", ".", "..") for p in parts))


def _package_for(manifest: Manifest, part: data.Part, source: str) -> Package:
    for name in part.names:
        if name in manifest.packages:
            return manifest.packages[name]
    raise ComponentError(f"the CUDA redistributable manifest {source} has no {part.name} "
                         f"(it lists {', '.join(sorted(manifest.packages))})",
                         "use a manifest of a full CUDA release: leave out --redist-manifest")


def _archive(part: data.Part, package: Package, *, major: int, platform: str, base: str,
             source: str) -> Archive:
    if platform in package.broken:
        raise _bad(source, f"{package.key} for {platform}: {package.broken[platform]}")
    got = package.downloads.get(platform)
    if got is None:
        raise ComponentError(f"the CUDA redistributable manifest {source} has no "
                             f"{package.key} {package.version} for {platform} (it has "
                             f"{', '.join(sorted(package.downloads)) or 'no platform'})")
    if _unsafe_path(got.relative_path) or not got.relative_path.endswith(_SUFFIX):
        raise _bad(source, f"{package.key}'s relative_path {got.relative_path!r} is not "
                           f"a plain relative path to a {_SUFFIX} file")
    return Archive(part, major, package.version, got.relative_path,
                   join_url(base, got.relative_path), got.size, got.sha256)


def plan(manifest: Manifest, cuda: str, platform: str, base: str, source: str
         ) -> tuple[Archive, ...]:
    """The archives of torch's CUDA ``X.Y`` compiler set for ``platform``, with their
    URLs under ``base``; an error when the manifest is for another CUDA or lacks one."""
    major = int(cuda.split(".", maxsplit=1)[0])
    if major not in data.PARTS:
        raise ComponentError(f"wheelcuda knows no NVIDIA archive layout for CUDA {major} "
                             f"(it knows {', '.join(map(str, data.PARTS))})")
    archives = tuple(_archive(part, _package_for(manifest, part, source), major=major,
                              platform=platform, base=base, source=source)
                     for part in data.PARTS[major])
    nvcc = next(a for a in archives if a.part.component is catalog.NVCC)
    if not (nvcc.version + ".").startswith(cuda + "."):
        raise ComponentError(
            f"the CUDA redistributable manifest {source} is for another CUDA: its "
            f"cuda_nvcc is {nvcc.version}, torch was built with CUDA {cuda}",
            f"give a manifest of a CUDA {cuda} release, or leave out --redist-manifest")
    return archives


def known_archives(label: str, platform: str, cuda: str, base: str
                   ) -> tuple[Archive, ...] | None:
    """The archives of release ``label`` for ``platform`` as wheelcuda knows them without
    the network (``data.KNOWN_ARCHIVES``), with their URLs under ``base``; None when it
    knows none."""
    known = data.KNOWN_ARCHIVES.get((label, platform))
    if not known:
        return None
    major = int(cuda.split(".", 1)[0])
    parts = {n: p for p in data.PARTS[major] for n in p.names}
    return tuple(Archive(parts[name], major, version, rel, join_url(base, rel), size, sha)
                 for name, version, size, sha in known if name in parts
                 for rel in [data.relative_path(name, platform, version)])


def known_nvcc(cuda: str, machine: str) -> str | None:
    """nvcc's version in the archives of torch's CUDA ``X.Y`` for ``machine``, when
    wheelcuda knows them without the network (the wheel cache's key takes it before the
    fetch); None when it does not (pure)."""
    try:
        label, platform = choose_release(cuda).label, platform_of(machine)
    except ComponentError:
        return None
    for name, version, _, _ in data.KNOWN_ARCHIVES.get((label, platform), ()):
        if name == "cuda_nvcc":
            return version
    return None


def listing(archives: tuple[Archive, ...], manifest_url: str, manifest_sha256: str
            ) -> list[str]:
    """``URL  size  sha256`` for the manifest and each archive: what a person brings
    to a machine without the network (``fetch --from DIR``)."""
    lines = [f"{manifest_url}  sha256 {manifest_sha256}"]
    lines += [f"{a.url}  {a.size} bytes  sha256 {a.sha256}" for a in archives]
    return lines


# -- the members of an archive ------------------------------------------------------------

def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _clean(name: str) -> str:
    """A member name as tar tools write it, less a leading ``./`` and a trailing ``/``."""
    name = name[2:] if name.startswith("./") else name
    return name.rstrip("/")


def _link_problem(rel: str, kind: Kind, linkname: str, top: str) -> str | None:
    if kind == "symlink":
        if not linkname or linkname.startswith("/"):
            return f"link {rel!r} points to {linkname!r}, not to a relative path"
        target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), linkname))
        if not _inside(target, top):
            return f"link {rel!r} points to {linkname!r}, outside the archive's folder"
    elif kind == "hardlink":
        target = _clean(linkname)
        if not target or _unsafe_path(target) or not _inside(target, top) or target == top:
            return f"hard link {rel!r} points to {linkname!r}, outside the archive's folder"
    return None


def member_problem(name: str, kind: Kind, linkname: str, top: str) -> str | None:
    """Why the member may not be extracted, or None when it may: no absolute path, no
    ``..``, nothing outside the one top folder, no device or fifo, and links only to
    somewhere inside the top folder. The store checks the links once more on disk."""
    rel = _clean(name)
    if not rel or _unsafe_path(rel) or "\0" in rel:
        return f"member {name!r} is not a plain relative path"
    if not _inside(rel, top):
        return f"member {name!r} is outside the archive's folder {top}/"
    if kind == "other":
        return f"member {name!r} is a device, fifo or other special file"
    return _link_problem(rel, kind, linkname, top)


def dist_info(dist: str, version: str) -> str:
    """``nvidia-cuda-nvcc-cu12``, ``12.8.93`` -> ``nvidia_cuda_nvcc_cu12-12.8.93.dist-info``."""
    return f"{re.sub(r'[-_.]+', '_', dist)}-{version}.dist-info"


def metadata_text(dist: str, version: str, summary: str) -> str:
    """The METADATA importlib.metadata reads (Name, Version), and where it came from:
    what a root that is not a wheel (an archive unpacked, a local toolkit linked) says of
    each component, so that locate reads its version as a wheel's."""
    return (f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n"
            f"Summary: {summary}\n")


def destination(name: str, kind: Kind, archive: Archive) -> str | None:
    """Where member ``name`` goes, relative to the root: the top folder's files directly
    in it (``LICENSE``) into the ``.dist-info`` folder's ``licenses/``, everything else
    into the component's folder; None for the top folder itself. Call after
    :func:`member_problem` found nothing wrong."""
    rel = _clean(name)
    if rel == archive.top:
        return None
    inner = rel[len(archive.top) + 1:]
    if kind == "file" and "/" not in inner:
        return f"{dist_info(archive.dist, archive.version)}/licenses/{inner}"
    return f"{archive.folder}/{inner}"
