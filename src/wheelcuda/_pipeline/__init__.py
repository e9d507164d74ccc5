"""One answer to "which target, torch, toolkit, tree, archs and host compiler", per run.

Every command (env, home, doctor, install, run) and the Python API ask :func:`resolve`
once and read the :class:`Resolved` it returns; nothing below is computed twice (a
second derivation drifts: commands that computed their own answers disagreed). The
steps run cheap to expensive, and the expensive ones (fetching a compiler set, building
a tree) only when nothing cheaper already stops the build:

1. the cache layout and the target interpreter (these raise: nothing works without);
2. torch, MAX_JOBS, the arch list, the build needs (cheap reads);
3. the toolkit from the sources (:mod:`wheelcuda._sources`), read only
   (:mod:`.toolkit`); then one acquire step (:mod:`.acquire`) when asked and when a
   fetch fixes everything that is wrong, and one more read of what it brought;
4. the host compiler, the tree (built or reused), then the checks that need the tree's
   nvcc: can it build these archs, does it take this host compiler.

The parts: :mod:`.request` (what is asked, the target), :mod:`.toolkit` (which
compiler set, the tree's plan), :mod:`.fetchplan` (what a fetch would bring),
:mod:`.acquire` (the fetch), :mod:`.home` (step 4), :mod:`.resolved` (what a run found,
:class:`Resolved`).

Problems are gathered, not raised: ``doctor`` shows them all, the others raise the
first error (:meth:`~.resolved.Resolved.raise_first`), so doctor and the commands agree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Iterator
from pathlib import Path

from .. import _report as report
from .._context import Context
from .._probe import hostcc as hostcc_probe
from .._probe import torch as torch_probe
from .._rules import arch as archmod
from .._rules import checks, cxxstd, jobs
from .._rules.checks import Problem
from .._sources import table as sources
from .._sources.clang import source as clang_source
from .._sources.table import TOOLKIT_KINDS, Choice, Fetch
from .._values import SourceName
from . import acquire, fetchplan, preflight
from . import home as home_step
from .request import (
    BUILD_NEEDS,
    TOOLKITS,
    Located,
    Request,
    locate,
    resolve_target,
    toolkit_choice,
)
from .resolved import Resolved, in_use, in_use_locks
from .toolkit import (
    Toolkit,
    headers_folder,
    locate_toolkit,
    missing_headers,
    tree_for,
)
from .toolkit import found_problems as toolkit_found

__all__ = ["BUILD_NEEDS", "TOOLKITS", "TOOLKIT_KINDS", "Choice", "Fetch",
           "Located", "Request", "Resolved", "SourceName", "Toolkit", "headers_folder", "in_use",
           "in_use_locks", "locate", "locate_toolkit", "missing_headers", "resolve",
           "resolve_located", "resolve_read_only", "resolve_target", "toolkit_choice", "tree_for"]


def resolve(ctx: Context, request: Request) -> Resolved:
    """Every step, once (see the module's docstring)."""
    return resolve_located(locate(ctx, request))


@contextlib.contextmanager
def resolve_read_only(ctx: Context, request: Request) -> Iterator[Resolved]:
    """:func:`resolve` for a command that only looks (doctor): nothing is written into
    the cache. What a check must run and the cache lacks (a local toolkit's links, a
    tree) is made in a scratch folder that goes when the block ends (a doctor run must
    not leave trees in a cache it only reads); :attr:`Layout.scratch` then says the tree
    is not the cache's."""
    with tempfile.TemporaryDirectory(prefix="wheelcuda-look-",
                                     dir=ctx.get("TMPDIR") or None) as tmp:
        yield resolve_located(locate(ctx, dataclasses.replace(request, fetch=False),
                                     scratch=Path(tmp)))


def resolve_located(s: Located) -> Resolved:
    """Steps 2 to 4 for what :func:`locate` found."""
    ctx, request, layout, target = s.ctx, s.request, s.layout, s.target
    torch = request.torch or torch_probe.find_torch(target.site_dirs)
    problems: list[Problem] = []
    if torch is not None or request.need_torch:
        problems += checks.torch_problems(torch, None, target.python)
    if request.jobs:
        problems += jobs.problems(ctx.environ)
    if request.need_archs:  # what builds: home only names the tree
        problems += cxxstd.problems(ctx.environ)
    archs, arch_source = preflight.archs(ctx, request, problems)
    if request.build_needs:
        problems += preflight.build_needs(ctx, target)
        problems += preflight.cache_writable(layout)
    choice = toolkit_choice(ctx, request)
    numbers = tuple(f"{a.major}.{a.minor}" for a in archs)
    # read: a source that cannot be read or linked offers nothing and says why
    toolkit = locate_toolkit(target, torch, layout, ctx, choice=choice, archs=numbers)
    clang = clang_source.for_run(ctx, layout, torch, choice, numbers)
    host = hostcc_probe.probe_host_compiler(ctx)
    # What can be known before the compiler is there: a fetch (270 MB) must not come
    # before an error it cannot fix (sm_70, a missing host compiler).
    tool = preflight.installer(ctx, request, problems)
    problems += preflight.before_fetch(toolkit, archs, host)
    found = toolkit_found(toolkit, torch, target, need_torch=request.need_torch)
    report.debug(f"target {target.python} ({target.why}); torch "
                 f"{torch.version if torch else 'none'}; archs "
                 f"{archmod.to_torch(archs) if archs else 'unknown'} (from {arch_source})")
    report.debug(f"compiler: {toolkit.source}: {toolkit.description or 'nothing found'}"
                 + "".join(f"; {other}" for other in toolkit.others))
    scene = fetchplan.scene(ctx, request, layout, target=target, torch=torch, toolkit=toolkit,
                   tool=tool, clang=clang)
    fetch = fetchplan.for_run(request, layout, scene, [*found, *problems], choice)
    wants = acquire.plan(request, toolkit, [*found, *problems], tool=tool, fetch=fetch)
    report.debug(f"acquire: {wants.compiler or 'no compiler'}"
                 f"{', the library headers' if wants.headers else ''}" if wants else
                 "acquire: nothing (nothing missing, not asked, or a fetch fixes not all)")
    if wants and scene is not None:  # acquire once, then read what it brought, once
        fetched = acquire.run(scene, wants, fetch)
        toolkit = locate_toolkit(target, torch, layout, ctx, fetched, choice=choice,
                                 archs=numbers)
        found = toolkit_found(toolkit, torch, target, need_torch=request.need_torch)
        if wants.compiler is not None:  # fetched: what it left missing is an error now
            fetch = Fetch(unreachable=fetch.unreachable, instead=fetch.instead,
                          replaced=fetch.replaced)
    problems += found
    source = sources.of(fetch)
    silent = source.silent(fetch, torch) if source is not None and torch is not None else None
    if silent is not None:  # after what it lacks: a fetch, when one runs, says it itself
        problems.append(silent)
    release = checks.compiler_release(toolkit.inventory, toolkit.major)
    if torch is not None and torch.cuda is not None:
        problems += checks.torch_problems(torch, release, target.python)
    tree, home, foreign = home_step.prepare(ctx, layout, request, toolkit, host=host, archs=archs,
                                found=found, problems=problems)
    report.debug(f"tree: {home.path if home else 'none'}; "
                 f"{sum(p.is_error for p in problems)} error(s)")
    return Resolved(ctx=ctx, request=request, layout=layout, target=target, torch=torch,
                    toolkit=toolkit, archs=archs, arch_source=arch_source, host=host,
                    tree=tree, home=home, problems=tuple(problems), other_cuda_home=foreign,
                    installer=tool, choice=choice, clang=clang, fetch=fetch)


