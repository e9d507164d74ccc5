"""``install`` and a team's index of built wheels: the options and settings that name the
indexes, and, before a build, the wheel of this key from them, checked and kept in the
wheel cache (the command publishes after a build, through :mod:`wheelcuda._team.store_index`).
An index that cannot serve never fails an install: it is a warning, and the build goes on."""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ... import _report as report
from ..._context import Context
from ..._probe import index as index_probe
from ..._rules import buildkey
from ..._store import wheels
from ..._team import probe as shareconf
from ..._team import probe_credentials as credentials
from ..._team import rules_key as sharekey
from ..._team import store_index as teamindex
from ..._team import store_wheelfile as wheelfile
from ..._team.rules import INDEX_VAR, PUBLISH_VAR, Sharing
from .plan import Prepared


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


def _download_all(index: credentials.Index, names: Sequence[str], *, wanted: Mapping[str, Any],
                  tag: str, tmp: Path) -> list[Path]:
    got = []
    for name in names:
        path = teamindex.take(index, name, wanted, tag, tmp)
        if path is None:
            return []
        got.append(path)
    return got

