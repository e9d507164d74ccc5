"""Step 1 of a run: what a command asks for (:class:`Request`), where the compiler may
come from (a source :class:`Choice`, from ``--toolkit``), the cache layout and the
target interpreter (:class:`Located`). Nothing here reads torch or a toolkit."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .._context import Context
from .._data import settings as registry
from .._probe import interpreter
from .._rules import settings_read
from .._sources import table as sources
from .._sources.choice import Choice
from .._store import memo, paths
from .._store.layout import Layout
from .._values import Target, Torch
from ..errors import ComponentError, WheelcudaError

#: What --no-build-isolation builds need from the environment.
BUILD_NEEDS = ("setuptools", "wheel", "ninja", "packaging")


@dataclass(frozen=True)
class Request:
    """What a command asks for; the flags switch on the checks only some commands need."""

    python: str | None = None
    arch: str | None = None
    #: who gave ``arch`` when not the command line (the backend: ``-C wheelcuda.arch``):
    #: then an empty one is an error, and errors and the arch source name it
    arch_origin: str | None = None
    all_archs: bool = False
    #: torch must be there and built with CUDA (install, run, doctor; not env or home).
    need_torch: bool = False
    #: the arch list must be known (everything but home).
    need_archs: bool = True
    #: setuptools, wheel, ninja, packaging in the target (install, doctor).
    build_needs: bool = False
    #: MAX_JOBS and WHEELCUDA_SPLIT_COMPILE must be counts (install, run, doctor).
    jobs: bool = False
    #: fetch a missing compiler set into the store (install without --no-fetch/--explain).
    fetch: bool = False
    #: what the command does with the compiler, as a warning says it ("building with
    #: clang ... instead"; ``wheelcuda fetch`` builds nothing)
    action: str = "building with"
    #: the command says what a fetch would bring (doctor, install --explain/--no-fetch):
    #: NVIDIA's archives are asked whether they answer, as for a fetch
    looks: bool = False
    #: the tree must outlive the target environment (``uv-config``: build environments
    #: wheelcuda cannot see use it): the target's own wheels are no source, neither for
    #: the compiler nor for the headers of torch's libraries (those are fetched).
    portable: bool = False
    #: torch as given (read from uv.lock, or only its CUDA from ``--cuda``) instead of
    #: the target's: for settings written before the environment exists.
    torch: Torch | None = None
    #: ``--toolkit``: auto, wheels, local, redist, or a toolkit folder (None:
    #: WHEELCUDA_TOOLKIT, else auto).
    toolkit: str | None = None
    #: ``--redist-manifest``: NVIDIA's release manifest to use as given (a URL or a file;
    #: None: WHEELCUDA_REDIST_MANIFEST, else the pinned one of torch's release).
    redist_manifest: str | None = None
    #: ``fetch --from DIR``: take NVIDIA's archives from this folder, not the network.
    redist_from: str | None = None
    #: the host compiler and the tree (False: which source, and what is wrong; the
    #: backend's get_requires asks only that)
    tree: bool = True
    #: with ``fetch``: the headers of torch's libraries (cuBLAS, cuRAND...) into
    #: the store too, when the sources lack them. A tree for build environments
    #: wheelcuda cannot see (``uv-config``) must not lean on any one environment.
    headers: bool = False


@dataclass(frozen=True)
class Located:
    """Step 1: what everything else needs, resolved first (the warm path stamps it)."""

    ctx: Context
    request: Request
    layout: Layout
    target: Target


def locate(ctx: Context, request: Request, *, scratch: Path | None = None) -> Located:
    """The cache layout and the target; raises when either is unusable. With
    ``scratch``, the run only looks (:func:`looking`)."""
    layout = dataclasses.replace(Layout.for_environ(ctx.environ), scratch=scratch)
    layout.check()  # a cache that cannot serve is named first, before anything it lacks
    toolkit_choice(ctx, request)  # a bad --toolkit stops here, before anything is read
    if request.redist_from and not os.path.isdir(os.path.join(ctx.cwd, request.redist_from)):
        raise ComponentError(f"--from {request.redist_from}: no such folder",
                             "name the folder holding the manifest and the archives that "
                             "`wheelcuda install --no-fetch PKG` lists")
    if request.redist_manifest:  # the redist source reads it, as it reads the variable
        ctx = ctx.with_env(**{registry.REDIST_MANIFEST.name: request.redist_manifest})
    return Located(ctx, request, layout, resolve_target(ctx, layout, request.python))


#: ``--toolkit`` words and the sources each allows (None: all, in order of preference).
TOOLKITS: Mapping[str, tuple[str, ...] | None] = sources.WORDS


def toolkit_choice(ctx: Context, request: Request) -> Choice:
    """What ``--toolkit`` (or WHEELCUDA_TOOLKIT, or the command's own sources) allows."""
    own = not request.portable
    given = settings_read.read(registry.TOOLKIT, ctx.environ, given=request.toolkit)
    word = given.text or "auto"
    if word in TOOLKITS:
        return Choice(TOOLKITS[word], target_libraries=own)
    folder = os.path.normpath(os.path.join(ctx.cwd, os.path.expanduser(word)))
    if os.path.isdir(folder):
        return Choice.folder(folder, target_libraries=own)
    origin = given.origin
    raise ComponentError(f"{origin} {word!r} is neither {', '.join(TOOLKITS)} nor a folder",
                         f"{origin} {', '.join(TOOLKITS)} (auto is the default), or the "
                         "folder of a CUDA toolkit (the one holding bin/nvcc)")


def resolve_target(ctx: Context, layout: Layout, python: str | None) -> Target:
    """The target interpreter, asked once and remembered until it changes (its answer is
    kept in the memo, so the warm path spawns no child). ``Target.why`` says what chose
    it (never wheelcuda's own tool environment unless asked: a ``uv tool install``
    wheelcuda has no torch, and building for it is not what anyone means)."""
    choice = interpreter.choose_python(python, ctx)
    path = interpreter.chosen_executable(choice, ctx)
    if path == ctx.executable:
        return interpreter.target(path, interpreter.ask(path, ctx), choice)
    root = str(layout.root)
    info = memo.load(root, "interpreter", path)
    if not isinstance(info, dict):
        info = interpreter.ask(path, ctx)
        if layout.scratch is not None:  # a run that only looks keeps no memo
            return interpreter.target(path, info, choice)
        with contextlib.suppress(OSError, WheelcudaError):  # costs time, not correctness
            layout.private()
            memo.save(root, "interpreter", path, info, paths.stamps(interpreter.watch(path, info)))
    return interpreter.target(path, info, choice)
