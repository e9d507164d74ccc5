"""What the recipe table asks of a build, for a set of packages (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..data.recipes import DEFAULT_JOB_GB, RECIPES
from . import arch as archmod

__all__ = ["every_order", "first_order", "job_gb", "prefixes", "recipe_env", "user_wins"]


def recipe_env(names: Sequence[str | None], archs: Sequence[archmod.Arch], gpu_seen: bool
               ) -> dict[str, str]:
    """The variables the known packages among ``names`` need (pure)."""
    out: dict[str, str] = {}
    for name in names:
        recipe = RECIPES.get(name or "")
        if recipe is None:
            continue
        out.update(recipe.env)
        if not gpu_seen:
            out.update(recipe.no_gpu_env)
        if recipe.arch_var and archs:
            numbers = sorted({a.major * 10 + a.minor for a in archs})
            out[recipe.arch_var] = ";".join(map(str, numbers))
    return out


def job_gb(names: Sequence[str | None]) -> float:
    """The heaviest per-job memory among the packages (for MAX_JOBS)."""
    return max([DEFAULT_JOB_GB] + [RECIPES[n].job_gb for n in names if n and n in RECIPES])


def first_order(names: Sequence[str | None]) -> dict[str, float]:
    """The recipes' guess of each source's compile seconds, for the longest-first order
    of a package's first build (pure)."""
    return {f: s for n in names if n and n in RECIPES for f, s in RECIPES[n].order.items()}


def every_order() -> dict[str, float]:
    """Every recipe's guess of its sources' seconds, by base name (pure): the tree's ninja
    orders a build that no variable orders by it. A package that vendors flash-attn's
    kernel files under the same names (xformers, vllm-flash-attn) is ordered by it too,
    which suits it: the files are the same."""
    return first_order(sorted(RECIPES))


def user_wins(wanted: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Drop what the user already set: their environment always wins (pure)."""
    return {k: v for k, v in wanted.items() if k not in environ}


def prefixes(names: Sequence[str | None]) -> list[str]:
    """The variable prefixes of the known packages among ``names``."""
    return [p for n in names if n in RECIPES for p in RECIPES[n or ""].prefixes]
