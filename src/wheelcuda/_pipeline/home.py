"""Step 4 of a run: the host compiler's checks, the tree (built or reused) and the
checks that need its nvcc."""

from __future__ import annotations

from .._context import Context
from .._rules import arch as archmod
from .._rules import environ
from .._rules import tree as plan
from .._rules.checks import Kind, Problem
from .._store import trees
from .._store.layout import Layout
from .._store.trees import Home
from .._values import HostCompiler
from ..errors import CacheError, HostCompilerError, WheelcudaError
from . import preflight
from .request import (
    Request,
)
from .toolkit import (
    Toolkit,
    tree_for,
)


def prepare(ctx: Context, layout: Layout, request: Request, toolkit: Toolkit, *,
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
            home = _ensure(ctx, layout.writable(), tree, host, problems=problems)
        else:
            home = _ensure(ctx, layout, tree, host, problems=problems)
    if home is not None and not any(p.kind is Kind.ARCH for p in problems):
        problems += preflight.arch_problems(home, archs)  # the floor was checked before the fetch
        foreign = environ.foreign_home(ctx.environ, str(home.path), str(layout.homes))
        problems += preflight.other_cuda_home(foreign)
    return tree, home, foreign

def _ensure(ctx: Context, layout: Layout, tree: plan.TreePlan, host: HostCompiler, *,
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
