"""``install`` and a team's index of built wheels: before a build, the wheel of this key from
the indexes configured, checked and kept in the wheel cache; after a build, the kept
wheel published. Neither ever fails an install: an index that cannot serve is a
warning, and the build goes on."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from packaging.utils import parse_wheel_filename
from packaging.version import Version

from .. import _pipeline as pipeline
from .. import _report as report
from .._context import Context
from .._probe import credentials, fatbin, machine, shareconf, source, wheeltags
from .._probe import index as index_probe
from .._probe import torch as torch_probe
from .._rules import buildkey, prebuilt, sharekey
from .._rules.sharing import INDEX_VAR, PUBLISH_VAR, Sharing
from .._store import share, teamindex, wheelfile, wheels
from ..errors import WheelcudaError
from .install_plan import Prepared


def add_arguments(p: argparse.ArgumentParser, *, lookup: bool = True) -> None:
    """``--index``/``--no-index`` (where to look before building) and ``--publish``."""
    if lookup:
        p.add_argument("--index", action="append", default=[], metavar="URL",
                       help="a team's package index to look in for this build's wheel "
                            f"before building (repeatable; also {INDEX_VAR}, "
                            "[tool.wheelcuda] index)")
        p.add_argument("--no-index", action="store_true",
                       help="look in no team index, whatever the settings say")
    if lookup:
        p.add_argument("--prebuilt", action="append", default=[], metavar="URL",
                       help="also consult this public index of prebuilt wheels (after the "
                            "team's): a wheel there is taken when its label names torch's "
                            "and CUDA's major.minor and its own ELF holds SASS for every "
                            "arch asked for; off unless given (also WHEELCUDA_PREBUILT_URL)")
    p.add_argument("--publish", metavar="URL",
                   help="upload each wheel built to this index (its upload URL, or its "
                        f"/simple/ URL; also {PUBLISH_VAR}, [tool.wheelcuda] publish)")


def settings(ctx: Context, args: argparse.Namespace) -> Sharing:
    return shareconf.read(ctx, tuple(getattr(args, "index", ()) or ()),
                          getattr(args, "publish", None), getattr(args, "no_index", False),
                          tuple(getattr(args, "prebuilt", ()) or ()))


def recorded_share(fields: Mapping[str, Any]) -> dict[str, Any]:
    """The key that travels of a build the wheel cache recorded (``wheelcuda publish``):
    its fields as recorded, the compiler by its release, the C library it was built
    against (this machine's for a record older than that field)."""
    return sharekey.share_fields({**fields, "libc": fields.get("libc") or machine.libc()})


def shareable(p: Prepared) -> bool:
    """Whether this install's wheels may come from an index or go to one: every source
    exact (a folder, a file, ``name==version``: the key names what is built; a bare name
    is whatever the index has today), kept in the wheel cache, every name known."""
    return (not p.from_cache and p.given.cacheable and all(p.names)
            and all(buildkey.exact(spec) for spec in p.specs))


def from_indexes(ctx: Context, p: Prepared, s: Sharing) -> str | None:
    """The team's wheels of this key, downloaded into the wheel cache: the index they
    came from, or None (not there, or an index that cannot serve: said, then a build)."""
    if not s.indexes or not shareable(p):
        return None
    wanted = p.build_key.shared()
    label = sharekey.local_label(sharekey.share_id(wanted))
    for url in s.indexes:
        index = credentials.credentials(url, ctx.environ)
        with tempfile.TemporaryDirectory(prefix="wheelcuda-index-") as tmp:
            got = _download_all(index, [n for n in p.names if n], wanted=wanted,
                                tag=p.resolved.target.tag, tmp=Path(tmp))
            if got:
                carried = wheelfile.read_key(got[0]) or {}
                wheels.adopt(p.resolved.layout, p.key, p.fields, got, index_probe.shown(url),
                             profile=carried.get("profile"))
                report.note(f"found this build ({label}) on {index_probe.shown(url)}: "
                            "installing it, nothing to compile")
                return url
    return None


def from_prebuilt(ctx: Context, p: Prepared, s: Sharing) -> str | None:
    """A fat prebuilt wheel for each package from the public indexes named (Astral's
    GPU index, for one), kept in the wheel cache: the index it came from, or None. Judged by its
    label (torch's and CUDA's major.minor, the ABI, the Python and platform tags), then
    by the SASS its own shared objects hold: every arch asked for, or it is not taken."""
    r = p.resolved
    if not s.prebuilt or not shareable(p) or r.torch is None or r.torch.cuda is None \
            or not r.archs:
        return None
    wanted = {a.major * 10 + a.minor for a in r.archs}
    sources = p.given.sources or p.specs
    versions = [source.distribution_version(spec) for spec in sources]
    if None in versions or len(versions) != len(p.names):
        unknown = next((spec for spec, v in zip(sources, versions, strict=False) if v is None),
                       ", ".join(sources))
        report.note(f"not looking for a prebuilt wheel: the version {unknown} builds is "
                    "known only once it is built (a prebuilt wheel of another version is "
                    "never taken); pin it (name==version) to look")
        return None
    for url in s.prebuilt:
        # a third party: the team's credentials (WHEELCUDA_INDEX_*) are not sent there
        index = credentials.credentials(url, {"HOME": ctx.get("HOME") or ""})
        with tempfile.TemporaryDirectory(prefix="wheelcuda-prebuilt-") as tmp:
            got = [path for name, version in zip(p.names, versions, strict=True)
                   if name and version
                   if (path := _prebuilt_one(index, name, version, r=r, wanted=wanted,
                                             tmp=Path(tmp)))]
            if len(got) == len(p.names):
                wheels.adopt(r.layout, p.key, p.fields, got, index_probe.shown(url))
                report.note(f"took the prebuilt {', '.join(g.name for g in got)} from "
                            f"{index_probe.shown(url)}: it holds SASS for "
                            f"{', '.join(f'sm_{n}' for n in sorted(wanted))}")
                return url
    return None


def _prebuilt_one(index: credentials.Index, name: str, version: Version, *, r: pipeline.Resolved,
                  wanted: set[int], tmp: Path) -> Path | None:
    shown = index_probe.shown(index.url)
    torch = r.torch
    assert torch is not None and torch.cuda is not None  # from_prebuilt checked
    try:
        listed = index_probe.files(index.url, name)
    except WheelcudaError as exc:
        report.warn(f"warning: the prebuilt index {shown} could not be read: {exc.message}")
        return None
    supported = wheeltags.supported(r.target.version[:2])
    found = [f for f in listed if prebuilt.candidate(
        f.filename, name, version, torch=torch.version, cuda=torch.cuda,
        cxx11_abi=torch_probe.cxx11_abi(torch), supported=supported)]
    if not found:
        report.note(f"{shown} has no prebuilt {name} {version.public} for torch "
                    f"{torch.version} (CUDA {torch.cuda}) and {r.target.tag} on this machine")
    for f in sorted(found, key=lambda f: parse_wheel_filename(f.filename)[1], reverse=True):
        try:
            path = share.download(f, index, tmp)
        except WheelcudaError as exc:
            report.warn(f"warning: {f.filename} from {shown}: {exc.message}")
            continue
        try:
            wheelfile.check_metadata(path)
        except WheelcudaError as exc:
            report.note(f"not taking {f.filename} from {shown}: {exc.message}")
            path.unlink()
            continue
        code = fatbin.of_wheel(path)
        if wanted <= code.sass:
            return path
        held = ", ".join(f"sm_{n}" for n in sorted(code.sass)) or "none"
        report.note(f"not taking {f.filename} from {shown}: it holds SASS for {held}")
        path.unlink()
    return None


def _download_all(index: credentials.Index, names: Sequence[str], *, wanted: Mapping[str, Any],
                  tag: str, tmp: Path) -> list[Path]:
    got = []
    for name in names:
        path = teamindex.take(index, name, wanted, tag, tmp)
        if path is None:
            return []
        got.append(path)
    return got


def publish_wheels(ctx: Context, url: str, found: Sequence[Path], *,
                   wanted: Mapping[str, Any],
                   profile: Sequence[Mapping[str, Any]] | None = None) -> int:
    """Label each wheel with its key as it travels (``wanted``; the build's profile
    beside it, as data) and upload it to ``url``; how many failed (each said as a
    warning: a failed upload never fails an install)."""
    index = credentials.credentials(url, ctx.environ)
    with tempfile.TemporaryDirectory(prefix="wheelcuda-publish-") as tmp:
        return sum(not teamindex.publish(index, wheel, wanted, Path(tmp), profile)
                   for wheel in found)
