"""The backend and a team's index of built wheels: before a build, the wheel of this build's
key from the indexes configured (then the frontend is asked for no compiler, and the
build hook hands the wheel over unbuilt); after a build, the wheel published. As for
``install``: an index that cannot serve is a warning and a build, a failed upload a
warning.

The key is install's, for the project folder being built (its content digest), so a
wheel published by ``wheelcuda install ./ext`` on one machine serves ``pip install
./ext`` through the backend on another, and the other way round."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from packaging.utils import canonicalize_name

from .. import _pipeline as pipeline
from .. import _report as report
from .._context import Context
from .._pipeline import buildplan
from .._probe import index as index_probe
from .._probe import source
from .._team import probe as shareconf
from .._team import probe_credentials as credentials
from .._team import rules_key as sharekey
from .._team import store_index as teamindex
from .._team import store_wheelfile as wheelfile
from ..errors import WheelcudaError
from .config import Config, read_project
from .plan import _request, package_variables


def key_fields(ctx: Context, config: Config, python: str) -> dict[str, Any] | None:
    """This build's key as it travels (read only: no compiler needed), built as install
    builds it (_pipeline/buildplan.py); None when the build cannot be keyed (no torch, no
    archs: the build hook says why)."""
    r = pipeline.resolve(ctx, _request(python, config, tree=False))
    name = _name(ctx)
    if r.torch is None or r.torch.cuda is None or not r.archs or name is None:
        return None
    wanted, _ = package_variables(ctx, config, [name], r.archs)
    return buildplan.build_key(ctx, r, [source.source_id(ctx.cwd)], [name], wanted).shared()


def _name(ctx: Context) -> str | None:
    """The project's name, canonical (pyproject's [project], else what setup.py says)."""
    name = read_project(ctx.cwd).name or source.distribution_name(ctx.cwd)
    return str(canonicalize_name(name)) if name else None


def lookup(ctx: Context, config: Config, python: str, dest: Path) -> Path | None:
    """The team's wheel of this build, checked and copied into ``dest``; None when no
    index has it (or none is configured)."""
    try:
        team = shareconf.read(ctx)
    except WheelcudaError as exc:
        report.warn(f"warning: {exc.message}; building")
        return None
    if not team.indexes:
        return None
    wanted = key_fields(ctx, config, python)
    name = _name(ctx)
    if wanted is None or not name:
        return None
    label = sharekey.local_label(sharekey.share_id(wanted))
    for url in team.indexes:
        index = credentials.credentials(url, ctx.environ)
        with tempfile.TemporaryDirectory(prefix="wheelcuda-index-") as tmp:
            path = teamindex.take(index, name, wanted, str(wanted["python"]), Path(tmp))
            if path is None:
                continue
            # the frontend checks the wheel's version against the project's metadata:
            # handed over without the label, the key still inside
            out = wheelfile.labelled(path, dest, wanted, label=False)
            report.note(f"found this build ({label}) on {index_probe.shown(url)}: handing "
                        "it over, nothing to compile")
            return out
    return None


def publishing(ctx: Context, config: Config, python: str) -> dict[str, Any] | None:
    """This build's key when a publish URL is set (None: nothing to publish)."""
    try:
        team = shareconf.read(ctx)
    except WheelcudaError:
        return None  # said when publish reads them
    return key_fields(ctx, config, python) if team.publish else None


def publish(ctx: Context, wheel: Path, wanted: dict[str, Any] | None) -> None:
    """Upload ``wheel``, labelled with this build's key ``wanted`` (taken before the build:
    a build that writes into the project must not change it), when a publish URL is
    set."""
    try:
        team = shareconf.read(ctx)
    except WheelcudaError as exc:
        report.warn(f"warning: {exc.message}; not published")
        return
    if not team.publish or wanted is None:
        return
    with tempfile.TemporaryDirectory(prefix="wheelcuda-publish-") as tmp:
        teamindex.publish(credentials.credentials(team.publish, ctx.environ), wheel, wanted,
                          Path(tmp))
