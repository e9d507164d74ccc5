"""The problems doctor says beside install's own: what install fetches by itself (in the
source's words), a cache that cannot be written, torch's cu130 build as the other way,
and a uv project's isolated builds."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

from packaging.version import Version

from ... import _pipeline as pipeline
from ... import _proc as proc
from ..._context import Context
from ..._data import catalog
from ..._pipeline import preflight
from ..._probe import locate, uvforms
from ..._rules import checks
from ..._rules.checks import Kind, Problem, Severity
from ..._sources import table as sources
from ..._store import paths, trees
from ...errors import ToolError


def fetchable(r: pipeline.Resolved) -> list[Problem]:
    """A compiler set that is only to fetch is what ``install`` fetches by itself: for
    install's sake not an error (doctor answers "would install work?"), but said by the
    source it comes from, with ``wheelcuda fetch`` for home and run, which never download
    by themselves."""
    source = sources.of(r.fetch)
    if source is None or r.torch is None:
        return list(r.problems)
    return source.doctor(r.fetch, r.asked(source), r.problems)


def read_only(r: pipeline.Resolved, problems: list[Problem]) -> list[Problem]:
    """A fetch into a cache that cannot be written (mounted read-only) cannot work, nor
    can install's own: the fixes that name ``wheelcuda fetch`` move the cache to a
    folder that can be written first, and say why."""
    if not any(p.kind is Kind.CACHE and p.is_error for p in problems):
        return problems
    folder = preflight.writable_folder(r.ctx, r.layout)
    where = shlex.quote(str(folder)) if folder else "DIR"
    also = "" if folder else " (DIR: a folder of yours on a writable disk)"
    return [Problem(p.kind, f"{p.message}; not while the cache is {r.layout.root}, which "
                    "cannot be written (the cache ERROR above)",
                    f"export {paths.ENV_VAR}={where} && {p.fix}{also}", p.severity)
            if p.fix and p.fix.startswith("wheelcuda fetch") else p for p in problems]


def cu130_move(r: pipeline.Resolved, gpus_seen: dict[str, Any]) -> list[Problem]:
    """A CUDA 12 torch still without its compiler, on a driver that runs CUDA 13: moving
    torch to its cu130 build is the other way (the exact command)."""
    drivers = [d["driver_cuda"] for d in gpus_seen["devices"] if d["driver_cuda"]]
    source = sources.of(r.fetch)
    if r.torch is None or not drivers or not ((source is not None and source.move_instead)
                                              or r.errors()):
        return []
    newest = max(drivers, key=lambda v: checks.parse_version(v) or Version("0"))
    companions = {name: v for name in catalog.TORCH_FAMILY[1:]
                  if (v := locate.installed_version(r.target.site_dirs, name))}
    move = checks.cu130_move(r.torch, r.target.python, companions, newest)
    return [move] if move else []


def isolated(ctx: Context, r: pipeline.Resolved, problems: list[Problem]) -> list[Problem]:
    """For the environment of a uv project whose builds are isolated, its own build
    needs matter only to `wheelcuda install` and ``--no-build-isolation`` builds: a
    warning that says so, never an error (the project's ``uv add`` and ``uv sync``
    bring their own)."""
    venv = uvforms.isolated_project(ctx)
    if venv is None or os.path.realpath(venv) != os.path.realpath(r.target.prefix):
        return problems  # no such project, or another environment than its own
    return [Problem(p.kind, f"{p.message}; only `wheelcuda install` and --no-build-isolation "
                            f"builds need them: the uv project whose environment this is "
                            "builds in isolation, and `uv add`/`uv sync` bring their own", p.fix,
                    Severity.WARNING) if p.kind is Kind.BUILD_NEEDS else p
            for p in problems]


def uv_project(ctx: Context) -> list[Problem]:
    """Local folders the uv project here builds without wheelcuda's settings: a
    following `uv sync` builds them with no CUDA_HOME (`uv add ./ext` after
    `uv-config` without names died in torch's nvcc lookup)."""
    out = _broken_homes(ctx)
    missing = uvforms.uncovered(ctx)
    if not missing:
        return out
    names = ", ".join(f"{n} ({f})" for n, f in missing)
    folders = " ".join(shlex.quote(f) for _, f in missing)
    return [*out, Problem(Kind.ENVIRONMENT,
                          f"the uv project here builds {names} from a local folder, and its "
                          "uv settings give it no CUDA_HOME: uv would build it without one",
                          f"wheelcuda uv-config --write uv.toml {folders}", Severity.WARNING)]


def _broken_homes(ctx: Context) -> list[Problem]:
    """uv settings here whose CUDA_HOME is a tree that cannot build: gone, its nvcc's
    Python gone (the venv wheelcuda ran from was deleted: ``exec: …/python: not found``),
    a compiler it links to gone (``cannot run …/clang++``), or its nvcc failing."""
    broken: dict[str, list[str]] = {}
    for name, home in uvforms.settings_homes(ctx).items():
        why = _home_problem(ctx, Path(home))
        if why:
            broken.setdefault(f"{home} ({why})", []).append(name)
    return [Problem(Kind.ENVIRONMENT,
                    f"uv's settings here give {', '.join(names)} CUDA_HOME={what}: builds "
                    "through it fail",
                    "write the settings again with this wheelcuda (it makes the tree anew, "
                    "fetching what it lacks): wheelcuda uv-config --write uv.toml "
                    + " ".join(names) + "; then `wheelcuda cache prune` removes the old tree")
            for what, names in broken.items()]


def _home_problem(ctx: Context, home: Path) -> str | None:
    """Why the tree at ``home`` cannot build, from its files and then its nvcc's own
    answer; None when it can."""
    if not home.is_dir():
        return "it does not exist"
    why = trees.problem(home)
    if why:
        return why
    try:
        proc.capture([str(home / "bin" / "nvcc"), "--version"],
                     env=proc.child_environ(ctx.environ), timeout=60)
    except ToolError as exc:
        return f"its nvcc fails: {str(exc).splitlines()[-1].strip()}"
    return None
