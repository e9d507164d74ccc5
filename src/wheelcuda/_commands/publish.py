"""``wheelcuda publish``: push wheels already in the wheel cache to a team's index
of built wheels, each labelled with its key (``1.7.0+wc<12 hex>``, the key inside its
.dist-info), so that ``install`` on another machine takes it instead of building; or, with
``--variants DIR``, write them into a folder as wheel variants (PEP 825) that uv itself
picks by the machine's GPU (``uv pip install`` with its ``wheel-variants`` preview)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._context import Context
from .._probe import index as index_probe
from .._store import wheels
from .._store.layout import Layout
from .._team import rules_key as sharekey
from .._team import rules_variants as variants
from .._team import store_index as teamindex
from .._team import store_variants as variantdir
from .._team import store_wheelfile as wheelfile
from ..errors import ConfigError
from .common import note
from .install import share as install_share

NAME = "publish"
HELP = ("upload wheels from wheelcuda's wheel cache to a team's package index, each "
        "labelled with its build key, so that `install` elsewhere takes it instead of "
        "building")
SUMMARY = "upload built wheels to a team's package index"
NO_PYTHON = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("which", nargs="*", metavar="KEY|PKG",
                   help="a cache key (as `cache list` shows it) or a package name; several "
                        "may be given; with --variants also a wheel file that `publish` "
                        "labelled (one taken from the team's index)")
    p.add_argument("--all", action="store_true", help="every wheel in the wheel cache")
    install_share.add_arguments(p, lookup=False)
    p.add_argument("--variants", metavar="DIR", type=Path,
                   help="instead of uploading, write each wheel into DIR as a wheel variant "
                        "(PEP 825: its SASS archs and CUDA as the NVIDIA provider's "
                        "properties, pinned to its torch) and make DIR's "
                        "{name}-{version}-variants.json again; serve DIR as it is (python "
                        "-m http.server, nginx) as uv's find-links. Needs wheelcuda[team]")


def main(args: argparse.Namespace, ctx: Context) -> int:
    if bool(args.which) == bool(args.all):
        args.parser.error("give what to publish: KEY or PKG..., or --all")
    if args.variants is not None:
        if args.publish:
            args.parser.error("--variants writes a folder, --publish uploads: give one")
        return _to_variants(args, ctx)
    if any(w.endswith(".whl") for w in args.which):
        args.parser.error("a wheel file is published with --variants DIR only")
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
        failed += teamindex.publish_wheels(
            ctx.environ, team.publish, [Path(f) for f in files],
            wanted=teamindex.recorded_share(entry.record.get("fields", {})),
            profile=entry.record.get("profile"))
    note(f"{sum(map(len, found.values())) - failed} published or already there, "
         f"{failed} failed, to {index_probe.shown(team.publish)}")
    return 1 if failed else 0


def _from_files(names: Sequence[str]) -> list[tuple[Path, dict[str, Any], Any]]:
    """Wheel files given by path, each with the key it carries (a wheel without one,
    or with another wheelcuda's, is refused: its archs and torch are unknown)."""
    out = []
    for name in names:
        path = Path(name)
        if not path.is_file():
            raise ConfigError(f"no wheel at {path}", "give the path of a .whl file, a cache "
                              "key or a package name (`wheelcuda cache list`)")
        key = wheelfile.read_key(path)
        if key is None or not isinstance(key.get("fields"), dict):
            raise ConfigError(f"{path.name} holds no wheelcuda key ({sharekey.KEY_FILE} in "
                              "its .dist-info): which GPUs and which torch it serves is "
                              "unknown", "publish wheels from wheelcuda's wheel cache "
                              "(`wheelcuda publish --all --variants DIR`), or one that "
                              "`wheelcuda publish` labelled")
        if (other := sharekey.other_format(key)) is not None:
            raise ConfigError(f"{path.name}'s key is of format {other}; this wheelcuda "
                              f"reads format {sharekey.KEY_FORMAT}",
                              "publish it with the wheelcuda that made it")
        out.append((path, key["fields"], key.get("profile")))
    return out


def _from_cache(ctx: Context, names: Sequence[str], every: bool
                ) -> list[tuple[Path, dict[str, Any], Any]]:
    """The wheel cache's wheels of these keys or packages (every one: ``--all``), each
    with its key as it travels; those taken from an index are not a build of this
    machine's, and are left (said)."""
    if not names and not every:
        return []
    layout = Layout.for_environ(ctx.environ)
    layout.check()
    out = []
    for entry in wheels.entries(layout):
        if not (every or entry.path.name in names
                or any(wheels.matches(entry, n) for n in names)):
            continue
        files = sorted((entry.path / "wheels").glob("*.whl"))
        if files and entry.downloaded:
            note(f"not publishing {entry.path.name}: its wheels came from an index, not "
                 "from a build here")
            continue
        recorded = entry.record.get("fields", {})
        # the shared key, and torch's distribution version the variant pins (not shared:
        # the same binary whichever index torch came from; variants.torch_pin)
        fields = {**teamindex.recorded_share(recorded),
                  **{k: v for k, v in recorded.items() if k == "torch_dist"}}
        out += [(f, fields, entry.record.get("profile")) for f in files]
    return out


def _to_variants(args: argparse.Namespace, ctx: Context) -> int:
    """Every wheel chosen judged first (its properties and torch pin: a bad one stops
    the run before anything is written), then each written into the folder."""
    files = [w for w in args.which if w.endswith(".whl")]
    chosen = _from_files(files) + _from_cache(
        ctx, [w for w in args.which if w not in files], args.all)
    if not chosen:
        raise ConfigError(f"no wheel in the wheel cache for {' '.join(args.which) or '--all'}",
                          "`wheelcuda cache list` shows the keys; `wheelcuda install PKG` "
                          "builds one")
    for wheel, fields, _profile in chosen:
        try:
            variants.properties(fields)
            variants.torch_pin(fields)
        except variants.VariantError as exc:
            raise ConfigError(f"{wheel.name} cannot be a wheel variant: {exc.message}",
                              exc.fix) from None
    folder = args.variants.expanduser().absolute()
    for wheel, fields, profile in chosen:
        made = variantdir.publish(folder, wheel, fields, profile=profile)
        note(f"wrote {made.name} and {variantdir.json_name(made.name)} to {folder} "
             f"({', '.join(variants.properties(fields))}; requires "
             f"{variants.torch_pin(fields)})")
    return 0
