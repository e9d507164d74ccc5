"""What a fetch would bring for this run's compiler, decided once (:func:`decide`): the
source it takes it from, what it would download, the compiler's identity in the wheel
cache's key, and whether NVIDIA's archives answer.

Every command reads the one :class:`Fetch` the pipeline resolves: doctor and
``install --explain`` say what install will do because they read what install reads.

NVIDIA's archives are asked, with a short timeout, only when they are the source a
fetch would take, and only once a run: when they do not answer and their fallback (the
clang toolkit) may stand in (``sources.stand_in``), the fallback is the source; what the
archives would have brought is said beside it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from .._context import Context
from .._data import catalog
from .._rules import installer as installer_rules
from .._rules.checks import Problem
from .._sources import table as sources
from .._sources.choice import Choice
from .._sources.clang.rules import Clang
from .._sources.redist import store_archives as archives
from .._sources.table import TOOLKIT_KINDS, Fetch, Scene
from .._store.layout import Layout
from .._values import SourceName, Target, Torch
from .request import Request
from .toolkit import Toolkit


def wheels_hold_compiler(torch: Torch | None) -> bool:
    """Whether package-index wheels hold a compiler for torch's CUDA (13: yes; 12: only
    ptxas, so NVIDIA's archives or a local toolkit serve) (pure)."""
    return torch is not None and torch.cuda_major in catalog.WHEEL_COMPILER_MAJORS


def _source(torch: Torch, choice: Choice, *, clang: bool) -> SourceName | None:
    """Where a fetch would take torch's compiler set from, as the choice allows (pure):
    the first source in order of preference that fetches one for torch and that ``auto``
    may take or the choice names (the CUDA wheels for CUDA 13, NVIDIA's archives for
    the others or ``--toolkit redist``, the clang toolkit when named)."""
    return next((s.name for s in sources.SOURCES
                 if s.fixes and choice.allows(s.name)
                 and (s.auto_fetch or choice.only == (s.name,))
                 and s.can_fetch(torch, clang=clang)), None)


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
    source = sources.by_name(name)
    planned = source.plan(scene)
    if planned.want is None:  # nothing to ask: only NVIDIA's archives are asked first
        return planned
    why = answers(planned.want)
    if why is None:
        return planned
    fallback = sources.stand_in(source, scene)
    if fallback is None:
        return dataclasses.replace(planned, unreachable=why)
    return dataclasses.replace(fallback.plan(scene), want=planned.want, unreachable=why,
                               instead=f"{source.brings} ({planned.summary})",
                               replaced=source.name)


def scene(ctx: Context, request: Request, layout: Layout, *, target: Target,
           torch: Torch | None, toolkit: Toolkit, tool: installer_rules.Tool | None,
           clang: Clang | None) -> Scene | None:
    """What the sources need to plan or run a fetch (None without torch: nothing to fetch)."""
    if torch is None:
        return None
    return Scene(ctx, layout, torch, toolkit.major, target.python, tool, clang,
                 fetch_from=request.redist_from, action=request.action)


def for_run(request: Request, layout: Layout, scene: Scene | None,
           problems: list[Problem], choice: Choice) -> Fetch:
    """What a fetch would bring for the compiler, whatever else is wrong (doctor says it
    beside the other errors; the acquire step also needs those to be none)."""
    if scene is None:
        return Fetch()
    toolkit_problems = [p for p in problems if p.kind in TOOLKIT_KINDS]
    # only a command that fetches or says what a fetch would do asks NVIDIA (home, run
    # and the backend's metadata hooks fetch nothing: a few seconds there buy nothing)
    asks = request.fetch or request.looks or layout.scratch is not None
    return decide(scene, toolkit_problems, choice,
                            answers=archives.answers if asks else unasked)

