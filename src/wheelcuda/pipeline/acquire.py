"""Step 3 of a run: what a fetch would bring, decided from the read-only resolve
(:func:`plan`, pure), then fetched into the store in one step (:func:`run`).

The pipeline reads once (which source has what), acquires once, then locates once more
what was acquired (issue 18: it used to locate again after each of three fetches).
Only commands that build acquire (install, env, fetch, the backend); doctor and
``--explain`` read the plan and say what a build would fetch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .. import report
from ..context import Context
from ..data import catalog
from ..data import redist as archives_data
from ..rules import checks, pins
from ..rules import installer as installer_rules
from ..rules.checks import Kind, Problem
from ..rules.clangfit import Clang
from ..store import archives, toolkits
from ..store.layout import Layout
from ..store.transfer import Unreachable
from ..values import SourceName, Target, Torch
from .request import Choice, Request
from .toolkit import Toolkit, missing_headers

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .fetchplan import Fetch

__all__ = ["REDIST_FIXES", "Acquire", "compiler_fix", "fixes", "named_archives", "plan",
           "redist_want", "run", "wheels_hold_compiler"]

#: The errors a fetch of NVIDIA's archives fixes: no compiler, parts missing, torch's
#: CUDA without its compiler.
REDIST_FIXES = (Kind.MISSING, Kind.COMPONENTS, Kind.TORCH)


@dataclass(frozen=True)
class Acquire:
    """What one acquire step fetches: the compiler set (from the CUDA wheels, ``store``,
    or NVIDIA's archives, ``redist``), and the headers of torch's libraries."""

    compiler: SourceName | None = None
    headers: bool = False

    def __bool__(self) -> bool:
        return self.compiler is not None or self.headers


def wheels_hold_compiler(torch: Torch | None) -> bool:
    """Whether package-index wheels hold a compiler for torch's CUDA (13: yes; 12: only
    ptxas, so NVIDIA's archives or a local toolkit serve) (pure)."""
    return torch is not None and torch.cuda_major in catalog.WHEEL_COMPILER_MAJORS


def compiler_fix(problems: Sequence[Problem], torch: Torch | None, choice: Choice, *,
                 clang: bool = False) -> SourceName | None:
    """The fetch that fixes every error among ``problems``, when one does: NVIDIA's
    archives when nothing else serves (a CUDA 12 torch, whose wheels hold no compiler,
    or ``--toolkit redist``), the CUDA 12 wheels for ``--toolkit clang`` when a clang
    serves (``clang``), else the CUDA wheels into the store when parts are only missing;
    None when no fetch fixes them all, or nothing is wrong (pure)."""
    errors = [p for p in problems if p.is_error]
    if torch is None or torch.cuda is None or torch.cuda_major is None or not errors:
        return None
    if choice.only == (SourceName.CLANG,):
        ok = clang and torch.cuda_major == 12 and all(p.kind in REDIST_FIXES for p in errors)
        return SourceName.CLANG if ok else None
    redist = choice.only == (SourceName.REDIST,) or not wheels_hold_compiler(torch)
    if redist:
        ok = choice.allows(SourceName.REDIST) and all(p.kind in REDIST_FIXES for p in errors)
        return SourceName.REDIST if ok else None
    ok = choice.allows(SourceName.STORE) and all(p.kind is Kind.MISSING for p in errors)
    return SourceName.STORE if ok else None


def fixes(source: SourceName) -> tuple[Kind, ...]:
    """The kinds of error a fetch of ``source`` fixes (pure): the wheels of torch's pin
    only a missing set; NVIDIA's archives and the clang toolkit also a compiler that
    does not match torch's CUDA."""
    return (Kind.MISSING,) if source is SourceName.STORE else REDIST_FIXES


def plan(request: Request, toolkit: Toolkit, problems: Sequence[Problem], *,
         tool: installer_rules.Tool | None, fetch: Fetch) -> Acquire:
    """What this run fetches (pure once the toolkit is located and ``fetch`` decided):
    only when asked (``Request.fetch``), and only when the fetch fixes everything that
    is wrong (a fetch of hundreds of MB must not come before an error it cannot fix)."""
    if not request.fetch:
        return Acquire()
    errors = any(p.is_error for p in problems)
    compiler = fetch.source
    if compiler is not None and not all(p.kind in fixes(compiler)
                                        for p in problems if p.is_error):
        compiler = None
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


def named_archives(ctx: Context, request: Request) -> bool:
    """Archives named on purpose (a folder, a manifest) stay the user's choice: clang
    never stands in for them."""
    return bool(request.redist_from or request.redist_manifest
                or ctx.get(archives_data.MANIFEST_VAR))


def _instead(why: str, clang: Clang, torch: Torch, request: Request) -> str:
    """The line that says NVIDIA's archives gave way to the clang toolkit, and why."""
    return (f"{why}; {request.action} {clang.describe()} over NVIDIA's CUDA "
            f"{torch.cuda} wheels instead (--toolkit clang; --toolkit redist insists on "
            "NVIDIA's archives)"
            + ("; that clang comes from the package index" if clang.fetch else ""))


def redist_want(ctx: Context, request: Request, torch: Torch) -> archives.Want:
    """What to take from NVIDIA's archives for ``torch``: its CUDA's release, from the
    mirror WHEELCUDA_REDIST_URL names, the manifest given, or a folder."""
    assert torch.cuda is not None
    manifest = request.redist_manifest or ctx.get(archives_data.MANIFEST_VAR) or None
    source = Path(ctx.cwd, request.redist_from) if request.redist_from else None
    return archives.Want(torch.cuda, manifest=manifest,
                         base_url=ctx.get(archives_data.MIRROR_VAR) or None, source=source,
                         allow_http=ctx.flag(archives.ALLOW_HTTP_VAR))
