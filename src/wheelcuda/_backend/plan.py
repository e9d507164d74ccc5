"""What a build needs and sets, decided before the wrapped backend runs: torch of the
build environment (present, built with CUDA, the target's), the compiler set the
requirement hooks ask the frontend for, and the plan of a build hook (the variables of
``wheelcuda install``, what it says first, the store's toolkits it holds)."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from .. import _pipeline as pipeline
from .. import _report as report
from .._context import Context
from .._data import catalog
from .._pipeline import buildplan
from .._probe import frontend, locate
from .._probe import torch as torch_probe
from .._rules import arch as archmod
from .._rules import buildkey, checks, packages, uvtorch
from .._rules.checks import Kind
from .._values import Torch
from ..errors import ComponentError, TorchError
from .config import Config, Project


def check_torch(torch: Torch | None, python: str) -> Torch:
    """torch of the build environment, present and built with CUDA."""
    if torch is None:
        raise TorchError(
            f"torch is not installed in the build environment ({python}): the extension "
            "is built against the torch the build environment holds",
            'add "torch" to [build-system] requires in pyproject.toml (with '
            "--no-build-isolation, install torch into that environment first)")
    if torch.cuda is None:
        raise TorchError(
            f"torch {torch.version} in the build environment ({torch.path}) is a CPU-only "
            "build: a CUDA extension needs torch built with CUDA",
            "let the build environment get a CUDA build of torch: on Linux, torch from "
            "PyPI is one (pin it in [build-system] requires, e.g. torch==2.14.1); with "
            "another index, give the installer the CUDA one (PIP_EXTRA_INDEX_URL or "
            "UV_INDEX=https://download.pytorch.org/whl/cu130)")
    return torch


def check_target(ctx: Context, build: Torch, site_dirs: Sequence[str],
                 target: frontend.Target) -> None:
    """Stop when the environment the wheel is for holds another torch than the build
    environment: the extension would be built against the wrong one (an isolated build
    installs the newest torch the index has: a cu128 target got a binary linked to
    libcudart.so.13, installed silently). Unknown targets pass."""
    found = frontend.target_torch(target, ctx)
    have = locate.installed_version(site_dirs, "torch") or build.version
    if found is None or frontend.same_torch(found.version, found.cuda, have, build.cuda):
        return
    index = uvtorch.torch_index(found.version, None)
    flag = "--index" if target.frontend == "uv" else "--extra-index-url"
    extra = f" {flag} {index}" if index else ""
    if target.frontend == "uv" and target.lock:
        fix = ("give this package's build environment the project's torch: in the project "
               f"({os.path.dirname(target.lock)}), wheelcuda uv-config --write pyproject.toml "
               f"{ctx.cwd} (it writes the torch entry uv accepts for this package)")
    else:
        tool = "uv pip" if target.frontend == "uv" else "pip"
        fix = (f"pin torch in the build environment: wheelcuda constraints -o "
               f"build-constraints.txt (it writes torch=={found.version}), then {tool} "
               f"install --build-constraint build-constraints.txt{extra} ...")
    raise TorchError(
        f"the build environment holds torch {have} (CUDA {build.cuda}), but the environment "
        f"this wheel is for ({found.where}) holds torch {found.version} (CUDA "
        f"{found.cuda or '?'}): an extension built against one does not load beside the "
        "other. (A command that also installs another torch there: pin that one instead.)",
        fix)


def compiler_requirements(ctx: Context, python: str, config: Config) -> list[str]:
    """What the build environment lacks for a CUDA build: the compiler set torch's CUDA
    asks for (as ``wheelcuda install`` chooses it) when no other source has one, and
    ninja. Raises what no requirement can fix: no torch, a CPU-only one, another torch
    than the target's, archs below the CUDA major's floor. One read-only run of the
    pipeline answers (no tree: that comes with the build)."""
    # a build follows this hook: NVIDIA's archives are asked, as install asks them
    r = pipeline.resolve(ctx, dataclasses.replace(_request(python, config, tree=False),
                                                  looks=True))
    # a bad arch setting first: the user's own typo, whatever the environment holds
    r.raise_first(ignore=tuple(k for k in Kind if k is not Kind.ARCH))
    torch = check_torch(r.torch, python)
    site_dirs = r.target.site_dirs
    target = frontend.target_of_build(ctx)
    check_target(ctx, torch, site_dirs, target)
    # archs (the floor included), MAX_JOBS, the host compiler: before a 270 MB download;
    # the compiler set is what this hook asks for
    r.raise_first(ignore=pipeline.TOOLKIT_KINDS)
    wanted: list[str] = []
    if _wants_wheels(r):
        major = r.toolkit.major
        wanted += _installable(compiler_set(checks.wanted_specifier(torch, major), major),
                               site_dirs, target.frontend)
    if not (locate.installed_version(site_dirs, "ninja")
            or shutil.which("ninja", path=ctx.get("PATH") or os.defpath)):
        wanted.append("ninja")
    return wanted


def _request(python: str, config: Config, *, tree: bool = True,
             fetch: bool = False) -> pipeline.Request:
    """The pipeline's request for a build by ``python`` with ``config``."""
    return pipeline.Request(python=python, arch=config.arch, all_archs=config.all_archs,
                            arch_origin="-C wheelcuda.arch" if config.arch is not None
                            else None, need_torch=True, jobs=True, toolkit=config.toolkit,
                            tree=tree, fetch=fetch)


def _installable(wanted: list[str], site_dirs: Sequence[str], tool: str) -> list[str]:
    """``wanted`` less what pip would refuse: a requirement that the build environment
    already holds at a version outside it ("Some build dependencies ... conflict with the
    backend dependencies"; pip's two prefixes cannot hold two copies). The build then
    fetches that part of torch's release into the store (plan_build). uv resolves the
    whole build environment again and takes the pins."""
    if tool != "pip":
        return wanted
    out = []
    for line in wanted:
        req = Requirement(line)
        have = locate.installed_version(site_dirs, req.name)
        if have is None or req.specifier.contains(have, prereleases=True):
            out.append(line)
        else:
            report.note(f"not asking pip for {line}: the build environment holds {req.name} "
                  f"{have}, which pip will not replace; the build fetches one of torch's "
                  "release into wheelcuda's store instead")
    return out


def compiler_set(spec: str, major: int) -> list[str]:
    """``wheelcuda install``'s requirements for the set (the metapackage at torch's pin,
    the parts nvcc leaves unbounded held to its release), and every part by name too:
    pip counts a requirement as met by its name and version alone, extras left out, so
    ``cuda-toolkit[nvcc,cccl]==13.0.3`` is "met" by the ``cuda-toolkit`` that torch
    brought with other extras, and nvcc never came (pip 23.2 to 26.3: its build
    environment's ``check_requirements`` looks at the name and version only)."""
    wanted = catalog.toolkit_requirements(spec)
    release = catalog.release_of(spec)
    named = {w.split("=")[0] for w in wanted}
    wanted += [f"{c.wheels[major]}=={release}.*" if release else f"{c.wheels[major]}{spec}"
               for c in catalog.COMPILER if major in c.wheels and c.wheels[major] not in named]
    return wanted


def _wants_wheels(r: pipeline.Resolved) -> bool:
    """Whether the frontend must install the compiler wheels: the wheels would bring the
    compiler (the pipeline says: not for a CUDA 12 torch, nor when the choice leaves
    them out), the choice allows the build environment's own, and no allowed source has
    a whole set already (the build environment's wheels, the store, a local toolkit)."""
    return (r.compiler_wheels and r.choice.own_wheels
            and any(p.is_error and p.kind in pipeline.TOOLKIT_KINDS for p in r.problems))


# --- the build's environment -----------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """What a build hook sets for its length, and what it says first."""

    variables: dict[str, str]
    note: str
    warnings: tuple[str, ...] = ()
    #: lock files of the user's store that the build uses (held shared while it runs)
    in_use: tuple[Path, ...] = ()


def plan_build(ctx: Context, config: Config, project: Project, python: str, *,
               fetch: bool = True) -> Plan | None:
    """The variables of ``wheelcuda install`` for a build by ``python``, checked first;
    ``ctx`` names the (temporary) cache the tree is built in. Without ``fetch`` (the
    metadata hooks: no download for metadata) None when a compiler set is still to
    fetch (the placeholder serves). With it, the one pipeline run fetches what
    ``install`` would: NVIDIA's archives for a CUDA 12 torch or ``--toolkit redist``;
    the clang toolkit; or a CUDA 13 set the frontend could not install whole (pip
    refuses a part of another release beside one the build environment already holds:
    torch 2.15 brings CCCL 13.3 beside its 13.2), into the user's store
    (paths.STORE_VAR)."""
    located = pipeline.locate(ctx, _request(python, config, fetch=fetch))
    torch = check_torch(torch_probe.find_torch(located.target.site_dirs), python)
    check_target(ctx, torch, located.target.site_dirs, frontend.target_of_build(ctx))
    r = pipeline.resolve_located(located)
    if r.fetch and not fetch:
        return None
    _raise_first(r, torch, python)
    assert r.home is not None  # no error left
    nvcc = r.toolkit.inventory.get(catalog.NVCC.name, r.toolkit.major)
    where = f" in {nvcc.root}" if nvcc else ""
    mode = " (the project's own arch list kept)" if config.all_archs else ""
    note = (f"building for {archmod.to_torch(r.archs)} (from {r.arch_source}){mode} with "
            f"{buildkey.compiler_name(r.home.compiler)}{where} ({r.toolkit.source}), through "
            "the tree "
            f"{r.home.path}")
    warnings = buildplan.warnings(r)
    if r.other_cuda_home:
        warnings.append(f"note: your {r.other_cuda_home} is not used: this build uses "
                        "wheelcuda's tree (it matches torch's CUDA)")
    names = [project.name]
    wanted, _ = package_variables(ctx, config, names, r.archs)
    variables = buildplan.run_variables(ctx, r, wanted, files=packages.known_files(names))
    max_jobs = variables.get("MAX_JOBS") or ctx.get("MAX_JOBS")
    return Plan(variables, f"{note}; MAX_JOBS={max_jobs} at most, as many at once as the "
                "memory free lets each compile start", tuple(warnings),
                tuple(pipeline.in_use_locks(r)))


def package_variables(ctx: Context, config: Config, names: Sequence[str | None],
                      archs: Sequence[archmod.Arch]) -> tuple[dict[str, str], dict[str, str]]:
    """What the project being built (the working folder) needs set, as ``install``
    reads it for the same folder (its setup.py, then the recipe table)."""
    return buildplan.package_variables(ctx, [ctx.cwd], names,
                                       () if config.all_archs else archs)


def _raise_first(r: pipeline.Resolved, torch: Torch, python: str) -> None:
    for p in r.errors():
        if p.kind is Kind.MISSING:
            spec = checks.wanted_specifier(torch, r.toolkit.major)
            raise ComponentError(
                f"{p.message}: the build environment holds no compiler set",
                "wheelcuda's get_requires_for_build_wheel asks the frontend for it; a build "
                "that skips that (pip --no-build-isolation) needs it installed first: "
                + catalog.install_command(spec, python))
        raise p.error()
