"""``wheelcuda builds``: the builds running on this machine, each with its progress.

Read from the events the tree's nvcc writes for ``wheelcuda install`` (store/buildlog.py):
what is compiling, how far along, the time left from the last build of the same key. A
build that wheelcuda does not run (``uv add`` after uv-config, pip after constraints)
writes no events; its compiles are said on its own output (``uv -v``).
"""

from __future__ import annotations

import argparse
import time

from ..context import Context
from ..rules import progress, render
from ..store import buildlog, wheels
from ..store.layout import Layout
from .common import note

__all__ = ["HELP", "NAME", "NO_PYTHON", "SUMMARY", "add_arguments", "main"]

NAME = "builds"
HELP = "the builds `wheelcuda install` runs on this machine now, with their progress"
SUMMARY = "the builds running now, with their progress"
NO_PYTHON = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true",
                   help="print them as JSON (a versioned envelope)")


def main(args: argparse.Namespace, ctx: Context) -> int:
    layout = Layout.for_environ(ctx.environ)
    layout.check()
    rows = []
    now = time.time()
    for build in buildlog.running(layout):
        state = progress.read_events(build.log.events_text())
        before = progress.from_profile(wheels.profile_of(layout, build.key))
        rows.append({"key": build.key, "pid": build.pid,
                     "started": time.strftime("%Y-%m-%d %H:%M:%S",
                                              time.localtime(build.started)),
                     "log": str(build.log.output), "done": len(state.done),
                     "running": sorted(str(e.get("file")) for e in state.running.values()),
                     "status": progress.status_line(state, now, now - build.started,
                                                    before=before,
                                                    width=200)})
    if args.json:
        print(render.envelope("builds", {"builds": rows}), end="")
        return 0
    for row in rows:
        print(f"{row['key']}  (pid {row['pid']}, since {row['started']})")
        print(f"    {row['status']}")
        print(f"    log: {row['log']}")
    if not rows:
        note(f"no build is running (wheelcuda install's builds, under {layout.root})")
    return 0
