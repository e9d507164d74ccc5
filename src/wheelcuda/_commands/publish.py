"""``wheelcuda publish``: push wheels already in the wheel cache to a team's index
of built wheels, each labelled with its key (``1.7.0+wc<12 hex>``, the key inside its
.dist-info), so that ``install`` on another machine takes it instead of building."""

from __future__ import annotations

import argparse
from pathlib import Path

from .._context import Context
from .._probe import index as index_probe
from .._store import wheels
from .._store.layout import Layout
from ..errors import ConfigError
from . import install_share
from .common import note

NAME = "publish"
HELP = ("upload wheels from wheelcuda's wheel cache to a team's package index, each "
        "labelled with its build key, so that `install` elsewhere takes it instead of "
        "building")
SUMMARY = "upload built wheels to a team's package index"
NO_PYTHON = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("which", nargs="*", metavar="KEY|PKG",
                   help="a cache key (as `cache list` shows it) or a package name; several "
                        "may be given")
    p.add_argument("--all", action="store_true", help="every wheel in the wheel cache")
    install_share.add_arguments(p, lookup=False)


def main(args: argparse.Namespace, ctx: Context) -> int:
    if bool(args.which) == bool(args.all):
        args.parser.error("give what to publish: KEY or PKG..., or --all")
    team = install_share.settings(ctx, args)
    if not team.publish:
        raise ConfigError("no index to publish to",
                          "--publish https://pypi.example.com/ (or WHEELCUDA_PUBLISH_URL, "
                          "or publish = \"...\" under [tool.wheelcuda])")
    layout = Layout.for_environ(ctx.environ)
    layout.check()
    chosen = [e for e in wheels.entries(layout)
              if args.all or e.path.name in args.which
              or any(wheels.matches(e, w) for w in args.which)]
    found = {e.path.name: sorted((e.path / "wheels").glob("*.whl")) for e in chosen}
    found = {k: v for k, v in found.items() if v}
    if not found:
        raise ConfigError(f"no wheel in the wheel cache for {' '.join(args.which) or '--all'}",
                          "`wheelcuda cache list` shows the keys; `wheelcuda install PKG` "
                          "builds one")
    failed = 0
    for entry in chosen:
        files = found.get(entry.path.name)
        if files and entry.downloaded:
            note(f"not publishing {entry.path.name}: its wheels came from an index, not "
                 "from a build here")
            found.pop(entry.path.name)
            continue
        if not files:
            continue
        failed += install_share.publish_wheels(
            ctx, team.publish, [Path(f) for f in files],
            wanted=install_share.recorded_share(entry.record.get("fields", {})),
            profile=entry.record.get("profile"))
    note(f"{sum(map(len, found.values())) - failed} published or already there, "
         f"{failed} failed, to {index_probe.shown(team.publish)}")
    return 1 if failed else 0
