"""``wheelcuda env``: shell code that sets CUDA_HOME, PATH and the arch variables, and
what an installer's isolated build environment needs besides (build constraints that hold
torch to the target's, the recipe table's switches): after it, the seed's own
``uv pip install causal-conv1d`` and ``pip install causal-conv1d`` build, isolation on.

The exports are made for one environment and last as long as the shell: a later env (in
another venv) puts back what this one set and it does not, and ``env --unset`` puts back
all of it, after ``deactivate`` (_rules/environ.py keeps the record of what env set).

Its answer is kept for the warm path (:mod:`wheelcuda._warm`), with stamps of every file
it came from; an answer is not kept when one of them changed while it was read.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from .. import _pipeline as pipeline
from .. import _warm as warm
from .._context import Context
from .._pipeline import isolated as isolated_plan
from .._rules import environ, render
from .._rules import tree as plan
from .._store import named, paths
from .._store.layout import Layout
from ..errors import WheelcudaError
from .common import NO_FETCH_HELP, add_all_archs, add_arch, add_toolkit, request

NAME = "env"
HELP = ("print shell code that sets CUDA_HOME, PATH, arch variables and build constraints "
        "for any build, isolated ones included; they are made for one environment: after "
        "`deactivate` or in another one, `eval \"$(wheelcuda env --unset)\"` takes them back, "
        "and env run again replaces them")
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
                        "$GITHUB_ENV, which cannot unset one); a path such as $SHELL counts "
                        "by its name (default: sh)")
    add_arch(p)
    add_all_archs(p)
    p.add_argument("--no-fetch", action="store_true",
                   help=f"{NO_FETCH_HELP} (by default a missing one is fetched, as "
                        "`wheelcuda install` does, with progress on stderr)")
    p.add_argument("--unset", action="store_true",
                   help="print shell code that takes back what `wheelcuda env` exported in "
                        "this shell (after `deactivate`, or before working in another "
                        "environment): what it replaced comes back, what it added goes; "
                        "values you set or changed since stay yours")


def _shell(value: str) -> str:
    """``--shell /bin/bash`` (say ``"$SHELL"``) is bash."""
    return os.path.basename(value)


def main(args: argparse.Namespace, ctx: Context) -> int:
    shell = SHELL_NAMES.get(args.shell, args.shell)
    if args.unset:
        return _unset(args, ctx, shell)
    # What env reads: the shell's environment less what an earlier env derived from the
    # environment it was made for (_rules/environ.py, inputs); ``ctx`` stays the shell's.
    made = Context.of(environ.inputs(ctx.environ), ctx.cwd)
    # A bare torch environment gets its compiler set fetched, as install does (an
    # `eval "$(wheelcuda env)"` that sets nothing sends the next build to the
    # seed's NameError). The installer's output goes to stderr: stdout stays shell text.
    located = pipeline.locate(made, request(args, fetch=not args.no_fetch))
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
    isolated, said = isolated_plan.isolated_variables(made, r)
    constraints_dir = str(r.layout.constraints)
    looked: list[str] = []  # the user's constraints files, stamped: their notes hold
    notes = [*_notes(r), *said, *_constraint_notes(ctx, constraints_dir, looked)]
    earlier = environ.made_for(ctx.environ)
    if earlier and earlier != target.prefix:
        notes.append(f"note: these replace what wheelcuda env exported for {earlier}")
    variables, unset = environ.exports({**r.variables(), **isolated}, ctx.environ,
                                       target.prefix)
    text = _render(variables, shell, unset)
    err = "".join(f"wheelcuda: {n}\n" for n in notes)
    sys.stderr.write(err)
    sys.stdout.write(text)
    named.by_session(str(r.home.path.parent), r.home.path.name)  # prune keeps the tree
    late = [*r.toolkit.inventory.roots[len(target.site_dirs):],
            str(r.home.path / plan.MANIFEST),
            *(str(r.home.path / link.path) for link in r.tree.links),
            *(str(r.home.path / rel) for rel, _ in r.tree.files), r.host.path or "",
            *environ.own_constraints(isolated.get(environ.BUILD_CONSTRAINT_VARS[0], ""),
                                     constraints_dir), *looked]
    stamps = paths.stamps(early + late)
    if stamps[:len(early)] == before:
        warm.record(args.argv, ctx.environ, text, err, stamps, home=str(r.home.path))
    return 0


def _unset(args: argparse.Namespace, ctx: Context, shell: str) -> int:
    """``env --unset``: what takes back this shell's exports of env, whichever environment
    is active now (it needs none)."""
    given = [option for option, value in (
        ("--python", args.python), ("--arch", args.arch), ("--all-archs", args.all_archs),
        ("--toolkit", args.toolkit), ("--redist-manifest", args.redist_manifest),
        ("--no-fetch", args.no_fetch)) if value]
    if given:
        args.parser.error(f"--unset takes back what env exported, whatever the environment: "
                          f"it takes no {', '.join(given)}")
    layout = Layout.for_environ(ctx.environ)
    variables, unset = environ.undo(ctx.environ, str(layout.homes), str(layout.constraints))
    text = _render(variables, shell, unset)
    made_for = environ.made_for(ctx.environ)
    if made_for:
        sys.stderr.write(f"wheelcuda: taking back what wheelcuda env exported for {made_for}\n")
    elif not (variables or unset):
        sys.stderr.write("wheelcuda: nothing to take back: wheelcuda env exported nothing "
                         "in this environment\n")
    sys.stdout.write(text)
    return 0


def _render(variables: dict[str, str], shell: str, unset: list[str]) -> str:
    if unset and shell not in render.UNSETS:
        names = " ".join(unset)
        raise WheelcudaError(
            f"{shell} output cannot unset variables, and these exports would unset {names} "
            "(GITHUB_ENV holds NAME=value lines only, and an empty value is not an unset one)",
            f"unset them in the step's own shell (unset {names}), or use "
            f"--shell {' / '.join(render.UNSETS)}")
    return render.render(variables, shell, unset)


def _notes(r: pipeline.Resolved) -> list[str]:
    """What env says of the environment it resolved."""
    notes = []
    if r.torch is None:
        notes.append(f"note: torch is not installed in {r.target.python}; fine for CMake "
                     "or Makefile builds, torch extensions need it")
    if r.other_cuda_home:
        notes.append(f"warning: {r.other_cuda_home} was set; wheelcuda's tree wins once this "
                     "output is evaluated, because it exports CUDA_HOME and CUDA_PATH and torch "
                     "reads CUDA_HOME first. To keep your toolkit, do not eval wheelcuda env.")
    return notes


def _constraint_notes(ctx: Context, constraints_dir: str, looked: list[str]) -> list[str]:
    """What uv and pip will make of the user's own build constraints: a file under a path
    with a space, which they split into several, or a file that is not there (each stops
    every install). Their value is theirs: kept as it is, and said. ``looked`` gets every
    path looked at."""
    def is_file(word: str) -> bool:
        looked.append(os.path.join(ctx.cwd, word))
        return os.path.isfile(looked[-1])

    notes = []
    for var in environ.BUILD_CONSTRAINT_VARS:
        value = " ".join(w for w in ctx.environ.get(var, "").split(" ")
                         if not environ.own_constraints(w, constraints_dir))
        spaced, missing = environ.split_paths(value, is_file)
        notes += [f"warning: {var} names {shlex.quote(path)}, which uv and pip read as "
                  f"{len(path.split())} files, since they split it on spaces: uv stops with "
                  f"`File not found`, pip with `Could not open requirements file`; name it by "
                  f"its URL instead, which both read: {environ.constraint_word(path)}"
                  for path in spaced]
        notes += [f"warning: {var} names {shlex.quote(word)}, which is not a file: uv and pip "
                  f"stop every install on it; take it out of {var}" for word in missing]
    return notes
