"""``wheelcuda run -- CMD``: CMD with the build environment; its exit code."""

from __future__ import annotations

import argparse

from .. import pipeline, proc
from ..context import Context
from ..data.recipes import DEFAULT_JOB_GB
from ..pipeline import buildplan
from ..probe import machine
from ..rules import jobs
from .common import add_all_archs, add_arch, add_toolkit, note, request

__all__ = ["HELP", "NAME", "TAKES_REST", "USAGE", "add_arguments", "main"]

NAME = "run"
HELP = "run a command (after --) with the build environment"
USAGE = "%(prog)s [options] -- CMD [ARGS...]"
TAKES_REST = True


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_toolkit(p)
    add_arch(p)
    add_all_archs(p)


def main(args: argparse.Namespace, ctx: Context) -> int:
    if not args.rest:
        args.parser.error("give the command after --, e.g. "
                          "wheelcuda run --arch 12.0 -- cmake -S . -B build")
    r = pipeline.resolve(ctx, request(args, jobs=True))
    r.raise_first()
    for line in buildplan.warnings(r):
        note(line)
    variables = r.run_variables()
    # No split here: cmake --build, make -j and others run their own job counts, which
    # the split's memory model (MAX_JOBS calls at once) would not hold for.
    variables.update(jobs.for_build(DEFAULT_JOB_GB, ctx.environ, machine.cores(),
                                    machine.available_memory(), split=False))
    with pipeline.in_use(r):  # cache clear and prune leave the tree and toolkit be
        return proc.call(args.rest, env=proc.child_environ(ctx.environ, variables))
