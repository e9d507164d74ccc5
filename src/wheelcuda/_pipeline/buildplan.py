"""What a build through the tree is given, for ``wheelcuda install`` and the PEP 517
backend alike: the packages' own variables (read from their setup.py, then the recipe
table), the variables of the run (the tree's, the user's kept, MAX_JOBS as a ceiling,
and what the package's last build measured: its memory per compile and its compiles'
order), setuptools' build folder, and the warnings said first.

Both read this module, so a build through ``pip install ./ext`` (the backend) and
``wheelcuda install ./ext`` get the same variables and the same key: a wheel one of them
published serves the other.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping, Sequence
from pathlib import Path

from .._context import Context
from .._data import settings as registry
from .._probe import gpus, index, machine, setup_vars
from .._probe import torch as torch_probe
from .._rules import arch as archmod
from .._rules import buildkey, jobs, packages
from .._rules.buildkey import BuildKey
from .._rules.checks import Kind, Severity
from .._standalone import _pool
from .isolated import torch_pins
from .resolved import Resolved

#: setuptools reads extra configuration from the file this names (its
#: ``setuptools.dist.Distribution.find_config_files``): wheelcuda moves ``build/`` there.
BUILD_BASE_VAR = "DIST_EXTRA_CONFIG"


def package_variables(ctx: Context, sources: Sequence[str], names: Sequence[str | None],
                      archs: Sequence[archmod.Arch], places: Sequence[tuple[str, bool]] = (),
                      *, pages: index.Pages | None = None
                      ) -> tuple[dict[str, str], dict[str, str]]:
    """What the packages need set to build from source, and where each value comes from:
    read from each source's setup.py (a folder, an sdist, or a requirement's sdist on
    the first of the installer's ``places`` that has it: ``*_FORCE_BUILD``,
    ``FORCE_CUDA``, its arch variables), then the recipe table for known names, which
    wins; the user's own environment wins over both (it is left as it is). ``archs``
    empty: the package's own arch list (``--all-archs``), so none of its arch variables
    is set either."""
    chosen: dict[str, str] = {}
    origins: dict[str, str] = {}
    for spec in sources:
        for w in setup_vars.wanted(spec, archs, places, pages):
            chosen.setdefault(w.name, w.value)
            origins.setdefault(w.name, w.origin)
    recipe = packages.recipe_env(names, archs, bool(gpus.probe_gpus(ctx).gpus))
    chosen.update(recipe)
    origins.update(dict.fromkeys(recipe, "the recipe table"))
    origins.update({k: "yours, kept" for k in chosen if k in ctx.environ})
    return chosen, origins


def run_variables(ctx: Context, r: Resolved, wanted: dict[str, str], *,
                  measured_gb: float | None = None, files: int = 0) -> dict[str, str]:
    """The build's variables on top of the current environment: the tree's (as ``env``
    sets them, with the target's bin on PATH), the packages' ``wanted`` ones the user
    did not set, then MAX_JOBS, a ceiling (the user's own kept; an empty one replaced;
    at least the ``files`` the packages' recipes know),
    and the memory one compile holds when the package's last build measured it
    (``measured_gb``; else the tree takes the recipe table's figure at compile time)."""
    variables = r.run_variables() if r.home else {}
    variables.update(packages.user_wins(wanted, ctx.environ))
    variables.update(jobs.for_build(ctx.environ, machine.cores(), measured_gb=measured_gb,
                                    files=files))
    return variables


def order_variables(order: Path | None) -> dict[str, str]:
    """The file of each source's seconds in the package's last build (``order``), for
    the compile pool's longest-first order; nothing without one (the tree then takes the
    recipe table's guess)."""
    return {} if order is None else {registry.ORDER.name: str(order)}


def temp_variables(ctx: Context, folder: str) -> dict[str, str]:
    """The build's temporary files in ``folder`` (in the user's TMPDIR, removed when the
    build ends: clang's that a Ctrl-C left, zero bytes each, stayed in /tmp), and the
    compile pool named as the user's TMPDIR would name it, so that this build still
    shares one budget with every other (the pool's folder follows TMPDIR)."""
    return {"TMPDIR": folder,
            registry.POOL.name: ctx.get(registry.POOL.name) or _pool.default_folder(
                ctx.environ)}


def build_base(ctx: Context, config: Path) -> dict[str, str]:
    """setuptools' ``build/`` moved to the folder ``config`` names (it is written by the
    store), unless the user set a configuration of their own. A folder built in place
    would otherwise hand ninja the objects of the last build, made for other archs
    (ninja does not see the arch variables), and a wrong wheel would be kept."""
    return {} if BUILD_BASE_VAR in ctx.environ else {BUILD_BASE_VAR: str(config)}


def warnings(r: Resolved) -> list[str]:
    """The warnings among the problems, as note lines (errors were raised before).
    Someone else's CUDA_HOME is not one: install, run and the backend set wheelcuda's
    for the build; nor are missing build needs, which install installs itself, and
    says so."""
    return [f"warning: {p.message}" + (f" ({p.fix})" if p.fix else "")
            for p in r.problems
            if p.severity is Severity.WARNING
            and p.kind not in (Kind.ENVIRONMENT, Kind.BUILD_NEEDS)]


def build_key(ctx: Context, r: Resolved, sources: Sequence[str], names: Sequence[str | None],
              recipe: Mapping[str, str], *, installer_args: Sequence[str] = ()) -> BuildKey:
    """This run's build key, for every route (install, the backend's team lookup and
    uv-config's key for uv's cache): one builder, so that none leaves out a field another
    keys on. ``sources`` as the key names them (content hashes, pinned sdists);
    ``recipe`` the variables the build is given (package_variables): what of them, and of
    the user's, enters the key is decided here (buildkey.build_variables). Before a tree
    exists (the backend asks a team's index first), the compiler is the release a fetch
    would bring."""
    variables = buildkey.build_variables(recipe, ctx.environ, packages.prefixes(names))
    torch, host = r.torch, r.host
    assert torch is not None  # the pipeline checked it (need_torch)
    release = r.shared_compiler
    return BuildKey(
        packages=tuple(sources), torch=torch.version, torch_cuda=torch.cuda,
        compiler=r.compiler if r.home is not None or r.fetch.compiler else
        (release or torch.cuda or "?"),
        archs=archmod.to_torch(r.archs), python=r.target.tag,
        cxx11_abi=torch_probe.cxx11_abi(torch), prune=not r.request.all_archs,
        variables=tuple(variables.items()), installer_args=tuple(installer_args),
        machine=platform.machine(), host_compiler=f"{host.family} {host.version or host.path}",
        cxx_std=r.cxx_std, names=tuple(n or "" for n in names), libc=machine.libc(),
        release=release, torch_dist=torch_pins(r.target).get("torch", ""))

