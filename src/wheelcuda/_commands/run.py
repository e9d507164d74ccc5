"""``wheelcuda run -- CMD``: CMD with the build environment; its exit code."""

from __future__ import annotations

import argparse

from .. import _pipeline as pipeline
from .. import _proc as proc
from .._context import Context
from .._pipeline import buildplan
from .._probe import machine
from .._rules import jobs
from .common import add_all_archs, add_arch, add_toolkit, note, request

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
    # MAX_JOBS for the builds that read it; make -j and cmake --build run their own
    # counts, and the tree's compilers hold each compile to the memory free then
    variables.update(jobs.for_build(ctx.environ, machine.cores()))
    # cache clear and prune leave the tree and toolkit be while CMD runs, wheelcuda killed
    # or not (CMD holds the locks too)
    with pipeline.in_use(r) as in_use:
        return proc.call(args.rest, env=proc.child_environ(ctx.environ, variables),
                         keep_fds=in_use)
