"""What the recipe table asks of a build, for a set of packages (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .._data.recipes import DEFAULT_JOB_GB, RECIPES
from . import arch as archmod


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


def arch_variables() -> frozenset[str]:
    """The recipes' variables that take the arch list (pure)."""
    return frozenset(r.arch_var for r in RECIPES.values() if r.arch_var)


def first_order(names: Sequence[str | None]) -> dict[str, float]:
    """The recipes' guess of each source's compile seconds, for the longest-first order
    of a package's first build (pure)."""
    return {f: s for n in names if n and n in RECIPES for f, s in RECIPES[n].order.items()}


def job_gb(names: Sequence[str | None]) -> float:
    """The recipe table's memory per compile job for these packages (the largest), else
    the default (pure)."""
    return max((RECIPES[n].job_gb for n in names if n and n in RECIPES),
               default=DEFAULT_JOB_GB)


def tree_recipes() -> dict[str, dict[str, object]]:
    """What the tree's programs know of each recipe at compile time (pure): its memory
    per compile job and its guess of each source's seconds, by the package's name (the
    tree tells the package from the build's own folder: _standalone/_build.py)."""
    return {name: {"job_gb": r.job_gb, **({"order": dict(r.order)} if r.order else {})}
            for name, r in sorted(RECIPES.items())}


def known_files(names: Sequence[str | None]) -> int:
    """How many files the known packages among ``names`` compile at most, by their
    recipe's table (0: none known) (pure): MAX_JOBS lets ninja start them all."""
    return max((len(RECIPES[n].order) for n in names if n is not None and n in RECIPES),
               default=0)


def user_wins(wanted: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """Drop what the user already set: their environment always wins (pure)."""
    return {k: v for k, v in wanted.items() if k not in environ}


def prefixes(names: Sequence[str | None]) -> list[str]:
    """The variable prefixes of the known packages among ``names``."""
    return [p for n in names if n in RECIPES for p in RECIPES[n or ""].prefixes]
