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
compiler set, the tree's plan), :mod:`.acquire` (what a fetch brings, and the fetch).

Problems are gathered, not raised: ``doctor`` shows them all, the others raise the
first error (:meth:`Resolved.raise_first`), so doctor and the commands agree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .. import _report as report
from .. import _sources as sources
from .._context import Context
from .._probe import hostcc as hostcc_probe
from .._probe import torch as torch_probe
from .._rules import arch as archmod
from .._rules import checks, cxxstd, environ, jobs, sharekey
from .._rules import installer as installer_rules
from .._rules import tree as plan
from .._rules.checks import Kind, Problem
from .._rules.clangfit import Clang
from .._sources import TOOLKIT_KINDS, Asked, Choice, Fetch, Scene, Source
from .._sources import clang as clang_source
from .._store import archives, fs, trees
from .._store.layout import Layout
from .._store.trees import Home
from .._values import HostCompiler, SourceName, Target, Torch
from ..errors import CacheError, HostCompilerError, WheelcudaError
from . import acquire, fetchplan, preflight
from .fetchplan import redist_want
from .request import (
    BUILD_NEEDS,
    TOOLKIT_VAR,
    TOOLKITS,
    Located,
    Request,
    locate,
    resolve_target,
    toolkit_choice,
)
from .toolkit import (
    Toolkit,
    component_problems,
    headers_folder,
    locate_toolkit,
    missing_headers,
    tree_for,
    unavailable,
)

__all__ = [
    "BUILD_NEEDS",
    "TOOLKITS",
    "TOOLKIT_KINDS",
    "TOOLKIT_VAR",
    "Choice",
    "Fetch",
    "Located",
    "Request",
    "Resolved",
    "SourceName",
    "Toolkit",
    "headers_folder",
    "in_use",
    "in_use_locks",
    "locate",
    "locate_toolkit",
    "missing_headers",
    "redist_want",
    "resolve",
    "resolve_located",
    "resolve_read_only",
    "resolve_target",
    "toolkit_choice",
    "tree_for",
]


@dataclass(frozen=True)
class Resolved:
    """Everything a command needs, computed once."""

    ctx: Context
    request: Request
    layout: Layout
    target: Target
    torch: Torch | None
    toolkit: Toolkit
    archs: tuple[archmod.Arch, ...]
    arch_source: str | None
    host: HostCompiler
    tree: plan.TreePlan | None
    home: Home | None
    problems: tuple[Problem, ...] = field(default=())
    #: ``CUDA_HOME=/opt/cuda`` when the user set a toolkit other than our tree.
    other_cuda_home: str | None = None
    #: The installer, chosen once (install and fetch; None when not asked or unusable).
    installer: installer_rules.Tool | None = None
    #: Where the compiler set may come from (``--toolkit``).
    choice: Choice = field(default_factory=Choice)
    #: The clang the clang toolkit would use, for a CUDA 12 torch when allowed.
    clang: Clang | None = None
    #: What a fetch would still bring for the compiler (decided once: fetchplan.py).
    fetch: Fetch = field(default_factory=Fetch)

    @property
    def home_cached(self) -> bool:
        """The tree is the cache's (not one a run that only looks made in its scratch)."""
        scratch = self.layout.scratch
        return self.home is not None and (scratch is None
                                          or not self.home.path.is_relative_to(scratch))

    @property
    def compiler(self) -> str:
        """The compiler as the wheel cache's key names it: the tree's, else the one a
        fetch would bring when that is known before it (fetchplan.py)."""
        if self.home is not None:
            return self.home.compiler
        return self.fetch.compiler or "(not fetched)"

    @property
    def shared_compiler(self) -> str | None:
        """The compiler as a key that travels to a team's index names it
        (:func:`wheelcuda._rules.sharekey.compiler_release`): the tree's, else what a
        fetch would bring, else the compiler wheels' nvcc, else torch's CUDA release
        (machine B may have no compiler yet: that is what it would fetch). One answer
        for install and the backend, in which a clang build is never an nvcc build's."""
        release = checks.compiler_release(self.toolkit.inventory, self.toolkit.major) \
            or (self.torch.cuda if self.torch is not None else None)
        if self.home is not None:
            found: str | None = self.home.compiler or self.home.nvcc_release
        elif self.fetch.compiler:
            found = self.fetch.compiler
        elif self.toolkit.by_clang and self.clang is not None:
            # no tree (the backend keys before it builds one): the clang and the ptxas
            # of the CUDA 12 wheels, as the tree's banner would say
            found = f"clang {self.clang.version} + ptxas {release}"
        else:
            found = release
        return sharekey.compiler_release(found) if found else None

    @property
    def compiler_wheels(self) -> bool:
        """The CUDA wheels would bring the compiler: torch's CUDA has compiler wheels and
        the choice allows them (the backend then asks the frontend for them)."""
        return fetchplan.wheels_hold_compiler(self.torch) and self.choice.store_wheels

    def asked(self, source: Source) -> Asked:
        """Whom ``source``'s words about its fetch are for in this run (doctor,
        ``--no-fetch``); only with torch (nothing is to fetch without it)."""
        assert self.torch is not None
        return Asked(self.torch, self.target.python, named=self.choice.only == (source.name,),
                     manifest=self.request.redist_manifest, clang=self.clang)

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    def blocking(self, *, fetching: bool) -> list[Problem]:
        """The errors that stop a build: all of them, less those the fetch :attr:`fetch`
        fixes when it is to run first (``fetching``: doctor and ``install --explain``
        answer for a build that fetches by itself)."""
        return self.fetch.left(self.errors()) if fetching else self.errors()

    def raise_first(self, *, ignore: tuple[Kind, ...] = ()) -> None:
        """Raise the first error (less the ``ignore`` kinds) as its
        :class:`WheelcudaError`, if there is one."""
        for p in self.problems:
            if p.is_error and p.kind not in ignore:
                raise p.error()

    @property
    def cxx_std(self) -> int | None:
        """The C++ standard builds are raised to: torch's headers' (_rules/cxxstd.py),
        unless WHEELCUDA_CXX_STD says otherwise; None: each build's own."""
        if self.home is not None and any(c.isspace() for c in str(self.home.path)):
            return None  # CXX is split on whitespace: no shim at such a path
        known = torch_probe.cxx_standard(self.torch) if self.torch is not None else None
        return cxxstd.wanted(known, self.ctx.environ)

    def variables(self) -> dict[str, str]:
        """What ``wheelcuda env`` exports (after :meth:`raise_first`)."""
        assert self.home is not None, "raise_first() first"
        return environ.build_environ(str(self.home.path), self.archs, self.ctx.environ,
                                     str(self.layout.homes), all_archs=self.request.all_archs,
                                     cxx_std=self.cxx_std)

    def run_variables(self) -> dict[str, str]:
        """:meth:`variables` with the target's bin after the tree's (its ninja and
        console scripts, as if it were activated): for install and run."""
        variables = self.variables()
        target_bin = os.path.dirname(self.target.python)
        parts = variables["PATH"].split(os.pathsep)
        if target_bin not in parts:
            parts.insert(1, target_bin)
        variables["PATH"] = os.pathsep.join(parts)
        return variables


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
    found = _found(toolkit, torch, target, need_torch=request.need_torch)
    report.debug(f"target {target.python} ({target.why}); torch "
                 f"{torch.version if torch else 'none'}; archs "
                 f"{archmod.to_torch(archs) if archs else 'unknown'} (from {arch_source})")
    report.debug(f"compiler: {toolkit.source}: {toolkit.description or 'nothing found'}"
                 + "".join(f"; {other}" for other in toolkit.others))
    scene = _scene(ctx, request, layout, target=target, torch=torch, toolkit=toolkit,
                   tool=tool, clang=clang)
    fetch = _fetch(request, layout, scene, [*found, *problems], choice)
    wants = acquire.plan(request, toolkit, [*found, *problems], tool=tool, fetch=fetch)
    report.debug(f"acquire: {wants.compiler or 'no compiler'}"
                 f"{', the library headers' if wants.headers else ''}" if wants else
                 "acquire: nothing (nothing missing, not asked, or a fetch fixes not all)")
    if wants and scene is not None:  # acquire once, then read what it brought, once
        fetched = acquire.run(scene, wants, fetch)
        toolkit = locate_toolkit(target, torch, layout, ctx, fetched, choice=choice,
                                 archs=numbers)
        found = _found(toolkit, torch, target, need_torch=request.need_torch)
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
    tree, home, foreign = _tree(ctx, layout, request, toolkit, host=host, archs=archs,
                                found=found, problems=problems)
    report.debug(f"tree: {home.path if home else 'none'}; "
                 f"{sum(p.is_error for p in problems)} error(s)")
    return Resolved(ctx=ctx, request=request, layout=layout, target=target, torch=torch,
                    toolkit=toolkit, archs=archs, arch_source=arch_source, host=host,
                    tree=tree, home=home, problems=tuple(problems), other_cuda_home=foreign,
                    installer=tool, choice=choice, clang=clang, fetch=fetch)


def _tree(ctx: Context, layout: Layout, request: Request, toolkit: Toolkit, *,
          host: HostCompiler, archs: tuple[archmod.Arch, ...], found: list[Problem],
          problems: list[Problem]) -> tuple[plan.TreePlan | None, Home | None, str | None]:
    """Step 4: the host compiler's checks, the tree (built or reused) and the checks
    that need its nvcc; their problems go to ``problems``."""
    tree = home = foreign = None
    tree_wanted = request.tree and not any(
        p.is_error and p.kind in (Kind.MISSING, Kind.COMPONENTS, Kind.TORCH)
        for p in [*found, *problems])
    if tree_wanted:
        problems += preflight.host_problems(toolkit, host)
    if tree_wanted and not any(p.is_error and p.kind is Kind.HOST for p in problems):
        # the tree's driver stub is built with the host compiler: not with one refused
        tree = tree_for(ctx, layout, toolkit)
        if layout.scratch is not None and trees.read_valid(layout.home(tree.key), tree) is None:
            tree = tree_for(ctx, layout.writable(), toolkit)  # looking: made in the scratch
            home = _home(ctx, layout.writable(), tree, host, problems=problems)
        else:
            home = _home(ctx, layout, tree, host, problems=problems)
    if home is not None and not any(p.kind is Kind.ARCH for p in problems):
        problems += preflight.arch_problems(home, archs)  # the floor was checked before the fetch
        foreign = environ.foreign_home(ctx.environ, str(home.path), str(layout.homes))
        problems += preflight.other_cuda_home(foreign)
    return tree, home, foreign


def _scene(ctx: Context, request: Request, layout: Layout, *, target: Target,
           torch: Torch | None, toolkit: Toolkit, tool: installer_rules.Tool | None,
           clang: Clang | None) -> Scene | None:
    """What the sources need to plan or run a fetch (None without torch: nothing to fetch)."""
    if torch is None:
        return None
    return Scene(
        ctx, layout, torch, toolkit.major, target.python, tool, clang,
        want=redist_want(ctx, request, torch) if torch.cuda is not None else None,
        named_archives=fetchplan.named_archives(ctx, request), action=request.action)


def _fetch(request: Request, layout: Layout, scene: Scene | None,
           problems: list[Problem], choice: Choice) -> Fetch:
    """What a fetch would bring for the compiler, whatever else is wrong (doctor says it
    beside the other errors; the acquire step also needs those to be none)."""
    if scene is None:
        return Fetch()
    toolkit_problems = [p for p in problems if p.kind in TOOLKIT_KINDS]
    # only a command that fetches or says what a fetch would do asks NVIDIA (home, run
    # and the backend's metadata hooks fetch nothing: a few seconds there buy nothing)
    asks = request.fetch or request.looks or layout.scratch is not None
    return fetchplan.decide(scene, toolkit_problems, choice,
                            answers=archives.answers if asks else fetchplan.unasked)


def _found(toolkit: Toolkit, torch: Torch | None, target: Target, *,
           need_torch: bool) -> list[Problem]:
    """The toolkit's problems; when the one source allowed has nothing, why, in place of
    its errors. None when torch is needed and missing: its CUDA decides which compiler
    set a build needs (advice for CUDA 13 is wrong for someone about to install a cu128
    torch), so the missing torch is the one thing to say."""
    if torch is None and need_torch:
        return []
    found = component_problems(toolkit, torch, target)
    if toolkit.unavailable:
        found = [unavailable(toolkit, torch, target.python),
                 *(p for p in found if not p.is_error)]
    return found


def in_use_locks(r: Resolved) -> list[Path]:
    """The lock files of what a build through ``r`` uses from the cache: its tree, and
    the store's toolkits and local-toolkit links the tree leads into."""
    locks = [r.layout.lock(r.layout.homes, r.home.path.name)] if r.home else []
    for root in r.toolkit.inventory.roots:
        for parent in (r.layout.toolkits, r.layout.local):
            try:
                first = Path(root).relative_to(parent).parts[0]
            except (ValueError, IndexError):
                continue
            locks.append(r.layout.lock(parent, first))
    return sorted(set(locks))


def in_use(r: Resolved) -> contextlib.AbstractContextManager[list[int]]:
    """Shared locks on :func:`in_use_locks` for the length of a build or ``run``:
    ``cache clear`` and ``prune`` skip what they guard (a tree removed under a running
    build leaves it with ``nvcc: not found``). Yields their file descriptors, for the
    child to hold too (``proc.call(keep_fds=...)``)."""
    return fs.shared(in_use_locks(r), "in use by a build")


def _home(ctx: Context, layout: Layout, tree: plan.TreePlan, host: HostCompiler, *,
          problems: list[Problem]) -> Home | None:
    """The tree, built if needed (a second or so: ``install --explain`` builds it too,
    as ``env`` does, so that what it prints is what install would set)."""
    try:
        return trees.ensure(layout, tree, ctx, host.path or host.command)
    except WheelcudaError as exc:
        kind = (Kind.CACHE if isinstance(exc, CacheError) else
                Kind.HOST if isinstance(exc, HostCompilerError) else Kind.COMPONENTS)
        problems.append(Problem.of(kind, exc))
        return None
