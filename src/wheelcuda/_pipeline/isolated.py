"""What builds an installer isolates get from ``wheelcuda env`` (uv's and pip's build
environments, which wheelcuda never sees): torch's pins as build constraints, every
recipe's switches and arch variables, and PyTorch's index for a torch from there."""

from __future__ import annotations

from packaging.version import Version

from .._context import Context
from .._data import catalog
from .._data.recipes import RECIPES
from .._probe import gpus, locate
from .._rules import environ, packages, uvtorch
from .._store import constraints
from .._values import Target
from ..errors import CacheError
from .resolved import Resolved

#: pip learned --build-constraint / PIP_BUILD_CONSTRAINT in 25.3.
PIP_NEEDED = Version("25.3")


def torch_pins(target: Target) -> dict[str, str]:
    """torch and its companions as the target holds them: what build constraints pin."""
    return {name: v for name in catalog.TORCH_FAMILY
            if (v := locate.installed_version(target.site_dirs, name))}

def isolated_variables(ctx: Context, r: Resolved) -> tuple[dict[str, str], list[str]]:
    """What ``wheelcuda env`` exports for builds an installer isolates (_rules/environ.py
    :func:`~wheelcuda._rules.environ.isolated`): torch's pins as build constraints (the file
    written into the cache), every recipe's switches and arch variables, PyTorch's index
    for a torch from there; and the notes that go with them."""
    pins = torch_pins(r.target)
    notes = []
    path = ""
    if "torch" in pins:
        text = environ.constraints_text(r.target.python, pins)
        try:
            path = str(constraints.write(r.layout, text))
        except CacheError as exc:  # a read-only cache still serves env its tree
            notes.append(f"warning: {exc.message}: isolated builds get no build "
                         "constraints, so they may take another torch (wheelcuda constraints "
                         "-o FILE writes them elsewhere)")
        pip = locate.installed_version(r.target.site_dirs, "pip")
        if pip and Version(pip) < PIP_NEEDED:
            notes.append(f"warning: pip {pip} in {r.target.python} ignores build "
                         f"constraints (they came in pip {PIP_NEEDED}), so pip's isolated "
                         "builds may take another torch: "
                         f"{r.target.python} -m pip install -U 'pip>={PIP_NEEDED}'")
    archs = () if r.request.all_archs else r.archs
    every = packages.recipe_env(sorted(RECIPES), archs, bool(gpus.probe_gpus(ctx).gpus))
    arch_vars = {k: v for k, v in every.items() if k in packages.arch_variables()}
    index = uvtorch.torch_index(pins.get("torch"), None)
    if index:
        notes.append(f"torch {pins['torch']} comes from {index}: PIP_EXTRA_INDEX_URL names "
                     "it for pip's build environments; uv's find it only where it is scoped "
                     "to torch (in a uv project: wheelcuda uv-config --write pyproject.toml; "
                     f"for uv pip: --index {index} --index-strategy unsafe-best-match)")
    variables = environ.isolated(
        ctx.environ, constraints=path or None, constraints_dir=str(r.layout.constraints),
        switches={k: v for k, v in every.items() if k not in arch_vars}, arch_vars=arch_vars,
        index=index)
    return variables, notes
