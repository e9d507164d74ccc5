"""What a build through the tree is given, for ``wheelcuda install`` and the PEP 517
backend alike: the packages' own variables (read from their setup.py, then the recipe
table), the variables of the run (the tree's, the user's kept, MAX_JOBS and the nvcc
pool for this machine), setuptools' build folder, and the warnings said first.

Both read this module, so a build through ``pip install ./ext`` (the backend) and
``wheelcuda install ./ext`` get the same variables and the same key: a wheel one of them
published serves the other.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from ..context import Context
from ..probe import gpus, machine, setup_vars
from ..rules import arch as archmod
from ..rules import jobs, packages, tree
from ..rules.checks import Kind, Severity
from ..standalone import _ninja
from . import Resolved

__all__ = ["BUILD_BASE_VAR", "build_base", "order_variables", "package_variables",
           "run_variables", "warnings"]

#: setuptools reads extra configuration from the file this names (its
#: ``setuptools.dist.Distribution.find_config_files``): wheelcuda moves ``build/`` there.
BUILD_BASE_VAR = "DIST_EXTRA_CONFIG"


def package_variables(ctx: Context, sources: Sequence[str], names: Sequence[str | None],
                      archs: Sequence[archmod.Arch]) -> tuple[dict[str, str], dict[str, str]]:
    """What the packages need set to build from source, and where each value comes from:
    read from each source's setup.py (a folder or an sdist: ``*_FORCE_BUILD``,
    ``FORCE_CUDA``, its arch variables), then the recipe table for known names, which
    wins; the user's own environment wins over both (it is left as it is). ``archs``
    empty: the package's own arch list (``--all-archs``), so none of its arch variables
    is set either."""
    chosen: dict[str, str] = {}
    origins: dict[str, str] = {}
    for spec in sources:
        for w in setup_vars.wanted(spec, archs):
            chosen.setdefault(w.name, w.value)
            origins.setdefault(w.name, w.origin)
    recipe = packages.recipe_env(names, archs, bool(gpus.probe_gpus(ctx).gpus))
    chosen.update(recipe)
    origins.update(dict.fromkeys(recipe, "the recipe table"))
    origins.update({k: "yours, kept" for k in chosen if k in ctx.environ})
    return chosen, origins


def run_variables(ctx: Context, r: Resolved, names: Sequence[str | None],
                  wanted: dict[str, str], *, measured_gb: float | None = None
                  ) -> dict[str, str]:
    """The build's variables on top of the current environment: the tree's (as ``env``
    sets them, with the target's bin on PATH), the packages' ``wanted`` ones the user
    did not set, then MAX_JOBS and the nvcc pool for this machine's cores and memory
    (the user's own MAX_JOBS kept; an empty one replaced). A job's memory is
    ``measured_gb`` when the package's last build measured it, else the recipe's guess
    (flash-attn's guess of 8 GiB a job, against 4.3 measured on the GPU machine, cost it a
    core's job and every split)."""
    variables = r.run_variables() if r.home else {}
    variables.update(packages.user_wins(wanted, ctx.environ))
    variables.update(jobs.for_build(measured_gb or packages.job_gb(names), ctx.environ,
                                    machine.cores(), machine.available_memory()))
    return variables


def order_variables(r: Resolved, order: Path | None) -> dict[str, str]:
    """The compile order for the tree's ninja (``order``: the file of each source's
    seconds), and the tree's ``site`` folder as PYTHONPATH, whose sitecustomize puts the
    tree's bin back in front of the build environment's on PATH (uv puts its own first,
    and the ninja wheel lies there: standalone/_site.py); nothing without an order or a
    tree."""
    if order is None or r.home is None:
        return {}
    # the folder alone: a build never gets the user's PYTHONPATH (proc.child_environ
    # drops it), which could import another torch than the one the key names
    return {_ninja.ORDER_VAR: str(order),
            "PYTHONPATH": str(r.home.path / os.path.dirname(tree.SITE))}


def build_base(ctx: Context, config: Path) -> dict[str, str]:
    """setuptools' ``build/`` moved to the folder ``config`` names (it is written by the
    store), unless the user set a configuration of their own. A folder built in place
    would otherwise hand ninja the objects of the last build, made for other archs
    (ninja does not see the arch variables), and a wrong wheel would be kept."""
    return {} if BUILD_BASE_VAR in ctx.environ else {BUILD_BASE_VAR: str(config)}


def warnings(r: Resolved) -> list[str]:
    """The warnings among the problems, as note lines (errors were raised before).
    Someone else's CUDA_HOME is not one: install, run and the backend set wheelcuda's
    for the build."""
    return [f"warning: {p.message}" + (f" ({p.fix})" if p.fix else "")
            for p in r.problems
            if p.severity is Severity.WARNING and p.kind is not Kind.ENVIRONMENT]
