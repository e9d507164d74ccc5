"""``wheelcuda builds``: the builds running on this machine, each with its progress.

Read from the events the tree's compilers write (_store/buildlog.py, _progress.py): for
``wheelcuda install``'s builds, and for every other build through one of this cache's
trees (``uv add`` after uv-config, pip after ``env``, the build backend), which the
compilers record by themselves. What is compiling, how far along, the time left from
the last build of the same key (or the recipe table's guess for the package).
"""

from __future__ import annotations

import argparse
import time

from .._context import Context
from .._data.recipes import RECIPES
from .._rules import progress, render
from .._standalone import _events, _tree
from .._store import buildlog, wheels
from .._store.buildlog import Running
from .._store.layout import Layout
from .common import note

NAME = "builds"
HELP = ("the builds running on this machine through wheelcuda's trees (install's, uv's, "
        "pip's, the backend's), with their progress")
SUMMARY = "the builds running now, with their progress"
NO_PYTHON = True


#: Who ran a tree's build, as `builds` names it (_standalone/_build.py ``installer``).
_BY = {"uv": "uv", "pip": "pip", "build": "python -m build"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true",
                   help="print them as JSON (a versioned envelope)")


def _before(layout: Layout, build: Running) -> tuple[list[_events.Compile], str]:
    """What the time left is read against: install's last build of the key, else the
    recipe table's guess for the package a tree build builds."""
    if build.key is not None:
        return progress.from_profile(wheels.profile_of(layout, build.key)), ""
    recipe = RECIPES.get(_tree.canonical(build.name.split()[0])) if build.name else None
    if recipe is not None and recipe.order:
        return _events.guess(recipe.order), "the recipe's guess"
    return [], ""


def main(args: argparse.Namespace, ctx: Context) -> int:
    layout = Layout.for_environ(ctx.environ)
    layout.check()
    rows = []
    now = time.time()
    for build in buildlog.running(layout):
        state = build.state or _events.State()
        before, source = _before(layout, build)
        row = {"name": build.name, "pid": build.pid,
               "started": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(build.started)),
               # install's builds have its key; a tree's, the installer that ran them
               **({"key": build.key} if build.key else {}),
               "by": "wheelcuda install" if build.key else _BY.get(state.by, state.by or "python"),
               "log": str(build.output or build.events), "done": len(state.done),
               "running": sorted(str(e.get("file")) for e in state.running.values()),
               "waiting_for": sorted(set(state.waiting.values())),
               "status": _events.status_line(state, now, now - build.started, before=before,
                                             source=source, jobs=max(1, len(state.running)),
                                             width=200)}
        rows.append(row)
    if args.json:
        print(render.envelope("builds", {"builds": rows}), end="")
        return 0
    for row in rows:
        print(f"{row['name']}  ({row['by']}, pid {row['pid']}, since {row['started']})")
        print(f"    {row['status']}")
        print(f"    {'log' if 'key' in row else 'events'}: {row['log']}")
    if not rows:
        note(f"no build is running (through a tree of {layout.root})")
    return 0
