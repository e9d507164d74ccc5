"""Step 3 of a run: what this run fetches, from the one :class:`~.fetchplan.Fetch` the
pipeline decided (:func:`plan`, pure), then fetched into the store in one step
(:func:`run`).

The pipeline reads once (which source has what), acquires once, then locates once more
what was acquired (locating after each fetch would cost a second per fetch and could see
a half-fetched set).
Only commands that build acquire (install, env, fetch, the backend); doctor and
``--explain`` read the plan and say what a build would fetch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import _report as report
from .._rules import checks, pins
from .._rules import installer as installer_rules
from .._rules.checks import Problem
from .._sources import table as sources
from .._sources.table import Fetch, Scene
from .._store import toolkits
from .._store.transfer import Unreachable
from .._values import SourceName
from .request import Request
from .toolkit import Toolkit, missing_headers


@dataclass(frozen=True)
class Acquire:
    """What one acquire step fetches: the compiler set (from the CUDA wheels, ``store``,
    or NVIDIA's archives, ``redist``), and the headers of torch's libraries."""

    compiler: SourceName | None = None
    headers: bool = False

    def __bool__(self) -> bool:
        return self.compiler is not None or self.headers


def plan(request: Request, toolkit: Toolkit, problems: Sequence[Problem], *,
         tool: installer_rules.Tool | None, fetch: Fetch) -> Acquire:
    """What this run fetches (pure once the toolkit is located and ``fetch`` decided):
    only when asked (``Request.fetch``), and only when the fetch fixes everything that
    is wrong (a fetch of hundreds of MB must not come before an error it cannot fix)."""
    if not request.fetch:
        return Acquire()
    errors = any(p.is_error for p in problems)
    compiler = fetch.source if fetch.fixes_all(problems) else None
    if compiler is not None and sources.by_name(compiler).via_installer and tool is None:
        compiler = None
    headers = bool(request.headers and tool is not None and (compiler or not errors)
                   and missing_headers(toolkit))
    return Acquire(compiler, headers)


def run(scene: Scene, wants: Acquire, fetch: Fetch) -> Path | None:
    """Fetch what ``wants`` names into the store; the compiler set's folder, if one was
    fetched (the pipeline then locates the toolkit again, once). A source that cannot be
    reached (NVIDIA's archives) gives way to its fallback (the clang toolkit) where that
    may stand in, when ``fetch`` found it silent already or when its download fails."""
    fetched = None
    if wants.compiler is not None:
        source = sources.by_name(wants.compiler)
        if fetch.replaced and fetch.unreachable:
            report.warn(source.instead(fetch.unreachable, scene))
        try:
            fetched = source.fetch(scene)
        except Unreachable as exc:
            fallback = sources.stand_in(source, scene)
            if fallback is None:
                raise
            report.warn(fallback.instead(exc.message, scene))
            fetched = fallback.fetch(scene)
    if wants.headers:
        assert scene.tool is not None
        toolkits.fetch(scene.layout, scene.ctx, scene.tool,
                       checks.wanted_specifier(scene.torch, scene.major), python=scene.python,
                       major=scene.major, headers=pins.header_requirements(scene.torch,
                                                                           scene.major))
    return fetched
