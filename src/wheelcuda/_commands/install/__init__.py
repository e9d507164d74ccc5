"""``wheelcuda install``: preflight, then one child process.

Preflight answers in seconds what would otherwise fail 25 minutes into a build: torch
present and built with CUDA, the arch list, MAX_JOBS, what the sources declare for their
build, then the matching compiler (fetched into the store if the environment lacks it:
the one slow step, so it comes after every cheap check), the host compiler. When
something may be built, the build needs of ``--no-build-isolation`` the target lacks
(setuptools, wheel, ninja, packaging: a ``uv venv`` has none) are installed into it
first. Then the installer runs with the environment of ``wheelcuda env`` plus what the
package table and the machine say (MAX_JOBS). ``--rebuild`` builds again whatever the
wheel cache holds, and has the installer reinstall the packages asked for.

The command's parts, one module each: what was given is read by ``_probe/given.py``;
``plan`` makes the plan (:class:`~.plan.Prepared`), ``pins`` pins each requirement to
the release the installer would take, ``explain`` says it (``--explain``,
``--no-fetch``), ``run`` runs the installer, ``failure`` says why a build failed, and
``share`` looks on a team's index before building and publishes after.
"""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ... import _pipeline as pipeline
from ... import _proc as proc
from ..._context import Context
from ..._pipeline import buildplan
from ..._probe.given import PackageArgs, read_package_args
from ..._rules import arch
from ..._store import wheels
from ..._team import rules as sharing
from ..._team import store_index as teamindex
from ..._team.rules import Sharing
from ...errors import ToolError, WheelcudaError
from ..common import NO_FETCH_HELP, add_all_archs, add_arch, add_toolkit, note, request
from . import explain, prebuilt, share
from .needs import bring_argv
from .plan import Prepared, prepare
from .run import execute

NAME = "install"


HELP = ("build and install CUDA extension packages (uv pip install --no-build-isolation); "
        "args after -- go to uv/pip")


SUMMARY = "build and install CUDA extension packages, for your GPUs"


USAGE = "%(prog)s [options] (PKG | -e DIR | -r FILE)... [-- ARGS...]"


TAKES_REST = True


#: Installer options install takes itself (the key, the recipes and the wheel cache
#: must know of them): after ``--`` they would land after the packages (``DIR -e``).
_OWN = re.compile(r"-[er]|--(editable|requirement)(=|$)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_toolkit(p)
    p.add_argument("packages", nargs="*", metavar="PKG",
                   help="a requirement (causal-conv1d==1.7.0), a folder or an sdist")
    p.add_argument("-e", "--editable", action="append", default=[], metavar="DIR",
                   help="install this project folder in editable mode, as pip's and uv's -e "
                        "(built for your GPUs each time: never taken from or kept in the "
                        "wheel cache); may be given more than once")
    p.add_argument("-r", "--requirement", action="append", default=[], metavar="FILE",
                   help="install what this requirements file names, as pip's and uv's -r "
                        "(the package table's variables apply to the packages it names); "
                        "may be given more than once")
    add_arch(p)
    p.add_argument("--no-fetch", action="store_true", help=NO_FETCH_HELP)
    share.add_arguments(p)
    p.add_argument("--rebuild", action="store_true",
                   help="build again even when wheelcuda's wheel cache (or a team's index) "
                        "has this build's wheel, and reinstall the packages named (uv's "
                        "--reinstall-package; pip's --force-reinstall --no-deps when they "
                        "are installed already): the new wheel replaces the kept one")
    p.add_argument("--explain", action="store_true",
                   help="print what would be set and run, and stop (downloads nothing, builds no "
                        "package; the tree is made, as by `wheelcuda env`)")
    add_all_archs(p)


def main(args: argparse.Namespace, ctx: Context) -> int:
    if not (args.packages or args.editable or args.requirement):
        args.parser.error("give what to install: PKG..., -e DIR or -r FILE, e.g. "
                          "wheelcuda install causal-conv1d")
    own = [a for a in args.rest if _OWN.match(a)]
    if own:  # `install DIR -- -e` reached uv as `DIR -e`
        args.parser.error(f"give {own[0]} before --, as install's own option "
                          "(wheelcuda install -e DIR, wheelcuda install -r FILE): the "
                          "wheel cache and the package table must see what it names")
    if "--rebuild" in args.rest:  # uv and pip have no such option: theirs would fail
        args.parser.error("give --rebuild before --: it is install's own option, not uv's "
                          "or pip's (wheelcuda install --rebuild PKG)")
    # read before any probe: a bad file or folder is named first
    given = read_package_args(ctx, args.packages, args.editable, args.requirement)
    fetch = not args.no_fetch and not args.explain  # --explain downloads nothing
    req = request(args, need_torch=True, build_needs=True, jobs=True, fetch=fetch,
                  looks=not fetch)
    resolved = pipeline.resolve(ctx, req) if args.explain else None
    if resolved is not None:
        refused = explain.explain_refused(resolved, given)
        if refused is not None:
            print(refused, end="")
            return 1
    team = share.settings(ctx, args)
    prepared, looked = (None, None) if args.explain or args.rebuild else \
        _without_a_build(ctx, given, req, args.rest, team)
    prepared = prepared or prepare(ctx, given, req, args.rest, explain=args.explain,
                                   resolved=resolved, pinned_by=looked, rebuild=args.rebuild)
    if args.explain:
        print(explain.explain(prepared), end="")
        for line in buildplan.warnings(prepared.resolved):
            note(line)
        return 0
    r = prepared.resolved
    for line in [*prepared.pins, *buildplan.warnings(r)]:
        note(line)
    if prepared.from_cache:  # say what really happens: no build
        note(f"installing the wheel built before for this key ({prepared.key}) from "
             f"wheelcuda's wheel cache with {prepared.tool.name}: {shlex.join(prepared.argv)}")
    else:
        _bring(ctx, prepared)
        note(f"building with {prepared.tool.name} for {arch.to_torch(r.archs)} "
             f"(from {r.arch_source}): {shlex.join(prepared.argv)}")
    code, summary = execute(ctx, prepared)
    note(summary)
    if code == 0 and team.publish and share.shareable(prepared):
        built = wheels.cached_wheels(r.layout, prepared.key, [n for n in prepared.names if n])
        teamindex.publish_wheels(ctx.environ, team.publish, [Path(w) for w in built or ()],
                                     wanted=prepared.build_key.shared(),
                                     profile=wheels.profile_of(r.layout, prepared.key))
    return code


#: Four wheels (setuptools, wheel, ninja, packaging: about 3 MB together).
_BRING_TIMEOUT_S = 600


def _bring(ctx: Context, p: Prepared) -> None:
    """Install the build needs the target lacks (:attr:`Prepared.brings`) before the
    build: ``--no-build-isolation`` builds use the environment's own, and a venv made
    by ``uv venv`` has none of them. With the user's own installer settings (the key's
    installer cache is the build's)."""
    if not p.brings:
        return
    python = p.resolved.target.python
    argv = bring_argv(p)
    note(f"installing {', '.join(p.brings)} into {python} first (--no-build-isolation "
         f"builds use the environment's own): {shlex.join(argv)}")
    try:
        proc.capture(argv, env=proc.child_environ(ctx.environ, drop=sharing.TEAM_VARS),
                     timeout=_BRING_TIMEOUT_S)
    except WheelcudaError as exc:
        raise ToolError(f"could not install the build needs {', '.join(p.brings)} into "
                        f"{python}: {exc.message}",
                        f"install them yourself, then install again: {shlex.join(argv)}"
                        ) from exc


def _without_a_build(ctx: Context, given: PackageArgs, req: pipeline.Request, extra: Sequence[str],
                     team: Sharing) -> tuple[Prepared | None, Prepared | None]:
    """With a team's or a prebuilt index configured: the install, when this key's wheels
    are in the wheel cache or on an index, planned without fetching a compiler (none is
    needed to install a wheel, and a machine that only installs has none), else None when
    a build is needed; and the plan whose pins the build's plan takes (the indexes are
    asked for a release once)."""
    if not given.cacheable or not (team.indexes or team.prebuilt):
        return None, None  # without an index, the one plan below (a kept wheel included)
    look = replace(req, fetch=False)
    first = prepare(ctx, given, look, extra, explain=True)
    if first.from_cache:
        return first, first
    if share.from_indexes(ctx, first, team) or \
            prebuilt.from_prebuilt(ctx, first, team):
        again = prepare(ctx, given, look, extra, explain=True, resolved=first.resolved,
                        pinned_by=first)
        if again.from_cache:
            return again, first
    return None, first
