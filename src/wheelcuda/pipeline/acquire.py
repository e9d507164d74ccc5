"""Step 3 of a run: what this run fetches, from the one :class:`~.fetchplan.Fetch` the
pipeline decided (:func:`plan`, pure), then fetched into the store in one step
(:func:`run`).

The pipeline reads once (which source has what), acquires once, then locates once more
what was acquired (locating again after each fetch cost a second per fetch and could see
a half-fetched set).
Only commands that build acquire (install, env, fetch, the backend); doctor and
``--explain`` read the plan and say what a build would fetch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import report
from ..context import Context
from ..rules import checks, pins
from ..rules import installer as installer_rules
from ..rules.checks import Problem
from ..rules.clangfit import Clang
from ..store import archives, toolkits
from ..store.layout import Layout
from ..store.transfer import Unreachable
from ..values import SourceName, Target, Torch
from .fetchplan import Fetch, named_archives, redist_want
from .request import Request
from .toolkit import Toolkit, missing_headers

__all__ = ["Acquire", "plan", "run"]


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
    if compiler in (SourceName.STORE, SourceName.CLANG) and tool is None:
        compiler = None  # the wheels come through an installer
    headers = bool(request.headers and tool is not None and (compiler or not errors)
                   and missing_headers(toolkit))
    return Acquire(compiler, headers)


def run(ctx: Context, layout: Layout, request: Request, wants: Acquire, *, target: Target,
        torch: Torch, tool: installer_rules.Tool | None, toolkit: Toolkit,
        clang: Clang | None = None, fetch: Fetch | None = None) -> Path | None:
    """Fetch what ``wants`` names into the store; the compiler set's folder, if one was
    fetched (the pipeline then locates the toolkit again, once). ``clang`` (the clang
    that would serve, when ``auto`` allows it): NVIDIA's archives that cannot be reached
    give way to the clang toolkit, when ``fetch`` found them silent already or when
    their download fails."""
    fetched = None
    major = toolkit.major
    if wants.compiler is SourceName.CLANG and fetch is not None and fetch.unreachable \
            and clang is not None:
        report.warn(_instead(fetch.unreachable, clang, torch, request))
    if wants.compiler is SourceName.REDIST:
        try:
            fetched = archives.fetch(layout, redist_want(ctx, request, torch))
        except Unreachable as exc:
            if clang is None or tool is None or named_archives(ctx, request):
                raise
            report.warn(_instead(exc.message, clang, torch, request))
            wants = Acquire(SourceName.CLANG, wants.headers)
    if wants.compiler is SourceName.CLANG:
        assert tool is not None
        if clang is not None and clang.fetch:  # no clang on the machine serves
            toolkits.fetch(layout, ctx, tool, "", python=target.python, major=major,
                           clang_index=True)
        fetched = toolkits.fetch(layout, ctx, tool, checks.wanted_specifier(torch, major),
                                 python=target.python, major=major, clang=True)
    elif wants.compiler is SourceName.STORE:
        assert tool is not None
        fetched = toolkits.fetch(layout, ctx, tool, checks.wanted_specifier(torch, major),
                                 python=target.python, major=major)
    if wants.headers:
        assert tool is not None
        toolkits.fetch(layout, ctx, tool, checks.wanted_specifier(torch, major),
                       python=target.python, major=major,
                       headers=pins.header_requirements(torch, major))
    return fetched


def _instead(why: str, clang: Clang, torch: Torch, request: Request) -> str:
    """The line that says NVIDIA's archives gave way to the clang toolkit, and why."""
    return (f"{why}; {request.action} {clang.describe()} over NVIDIA's CUDA "
            f"{torch.cuda} wheels instead (--toolkit clang; --toolkit redist insists on "
            "NVIDIA's archives)"
            + ("; that clang comes from the package index" if clang.fetch else ""))
