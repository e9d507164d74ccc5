"""``wheelcuda env``: shell code that sets CUDA_HOME, PATH and the arch variables, and
what an installer's isolated build environment needs besides (build constraints that hold
torch to the target's, the recipe table's switches): after it, the seed's own
``uv pip install causal-conv1d`` and ``pip install causal-conv1d`` build, isolation on.

Its answer is kept for the warm path (:mod:`wheelcuda._warm`), with stamps of every file
it came from; an answer is not kept when one of them changed while it was read.
"""

from __future__ import annotations

import argparse
import os
import sys

from .. import _pipeline as pipeline
from .. import _warm as warm
from .._context import Context
from .._pipeline import buildplan
from .._rules import environ, render
from .._rules import tree as plan
from .._store import named, paths
from .common import NO_FETCH_HELP, add_all_archs, add_arch, add_toolkit, request

NAME = "env"
HELP = ("print shell code that sets CUDA_HOME, PATH, arch variables and build constraints "
        "for any build, isolated ones included")
SUMMARY = "print shell code setting CUDA_HOME, PATH and build variables"

#: The shells whose names people type, each read by one of the formats: bash, zsh,
#: dash, ksh and busybox's ash all read POSIX sh's ``export NAME='value'``.
SHELL_NAMES = {"bash": "sh", "zsh": "sh", "dash": "sh", "ksh": "sh", "mksh": "sh",
               "ash": "sh"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_toolkit(p)
    p.add_argument("--shell", choices=(*render.SHELLS, *SHELL_NAMES), default="sh",
                   type=_shell, metavar="SHELL",
                   help="the form of the output: sh (also bash, zsh, dash, ksh, mksh, ash), "
                        "fish, json (a versioned envelope), or github (NAME=value lines for "
                        "$GITHUB_ENV); a path such as $SHELL counts by its name "
                        "(default: sh)")
    add_arch(p)
    add_all_archs(p)
    p.add_argument("--no-fetch", action="store_true",
                   help=f"{NO_FETCH_HELP} (by default a missing one is fetched, as "
                        "`wheelcuda install` does, with progress on stderr)")


def _shell(value: str) -> str:
    """``--shell /bin/bash`` (say ``"$SHELL"``) is bash."""
    return os.path.basename(value)


def main(args: argparse.Namespace, ctx: Context) -> int:
    # A bare torch environment gets its compiler set fetched, as install does (an
    # `eval "$(wheelcuda env)"` that sets nothing sends the next build to the
    # seed's NameError). The installer's output goes to stderr: stdout stays shell text.
    located = pipeline.locate(ctx, request(args, fetch=not args.no_fetch))
    target = located.target
    # target.watch: a .venv appearing where the search found none changes the target
    early = [*warm.own_sources(), target.python, os.path.join(target.prefix, "pyvenv.cfg"),
             *target.site_dirs, str(located.layout.toolkits), *target.watch]
    before = paths.stamps(early)
    r = pipeline.resolve_located(located)
    # A plain CMake or Makefile build needs no torch: only a torch that cannot match the
    # compiler (CPU-only, another CUDA major) stops ``env``.
    r.raise_first()
    assert r.home is not None and r.tree is not None
    notes = []
    if r.torch is None:
        notes.append(f"note: torch is not installed in {target.python}; fine for CMake "
                     "or Makefile builds, torch extensions need it")
    if r.other_cuda_home:
        notes.append(f"warning: {r.other_cuda_home} was set; wheelcuda's tree wins once this "
                     "output is evaluated, because it exports CUDA_HOME and CUDA_PATH and torch "
                     "reads CUDA_HOME first. To keep your toolkit, do not eval wheelcuda env.")
    isolated, said = buildplan.isolated_variables(ctx, r)
    notes += said
    err = "".join(f"wheelcuda: {n}\n" for n in notes)
    text = render.render({**r.variables(), **isolated},
                         SHELL_NAMES.get(args.shell, args.shell))
    sys.stderr.write(err)
    sys.stdout.write(text)
    named.by_session(str(r.home.path.parent), r.home.path.name)  # prune keeps the tree
    late = [*r.toolkit.inventory.roots[len(target.site_dirs):],
            str(r.home.path / plan.MANIFEST),
            *(str(r.home.path / link.path) for link in r.tree.links),
            *(str(r.home.path / rel) for rel, _ in r.tree.files), r.host.path or "",
            *(isolated[v].split()[-1] for v in environ.BUILD_CONSTRAINT_VARS[:1]
              if v in isolated)]
    stamps = paths.stamps(early + late)
    if stamps[:len(early)] == before:
        warm.record(args.argv, ctx.environ, text, err, stamps, home=str(r.home.path))
    return 0
