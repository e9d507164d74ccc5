"""``wheelcuda home``: the synthesized CUDA_HOME's path, built if needed."""

from __future__ import annotations

import argparse

from .. import _pipeline as pipeline
from .._context import Context
from .._rules import render
from .._rules.checks import Kind
from .common import add_toolkit, request

NAME = "home"
HELP = "print the synthesized CUDA_HOME, building it if needed"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_toolkit(p)
    p.add_argument("--json", action="store_true",
                   help='print {"home": PATH} in a versioned JSON envelope')


def main(args: argparse.Namespace, ctx: Context) -> int:
    r = pipeline.resolve(ctx, request(args, need_archs=False))
    r.raise_first(ignore=(Kind.TORCH,))  # a tree needs no torch (CMake builds)
    assert r.home is not None
    if args.json:
        print(render.envelope("home", {"home": str(r.home.path)}), end="")
    else:
        print(r.home.path)
    return 0
