"""``wheelcuda doctor``: one screen a person can act on.

Gathers everything (never stopping at the first problem), as a JSON-ready mapping;
:func:`to_text` lays it out. A build would work exactly when no problem is an error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from . import api, arch, catalog, checks, environ, gpus, hostcc, proc, torchinfo
from .errors import WheelcudaError
from .materialize import Home


def _components(setup: api.Setup) -> list[dict[str, Any]]:
    rows = []
    for c in catalog.COMPONENTS:
        f = setup.inventory.get(c.name, setup.major)
        status = "missing" if f is None else ("ok" if f.complete else "incomplete")
        rows.append({
            "name": c.name, "wheel": c.wheels[setup.major], "required": c.compiler,
            "status": status, "version": f.version if f else None,
            "path": f.folder if f else None, "missing_files": list(f.missing) if f else [],
        })
    return rows


def _torch(setup: api.Setup) -> dict[str, Any] | None:
    t = setup.torch
    if t is None:
        return None
    return {"version": t.version, "cuda": t.cuda, "path": t.path,
            "cxx11_abi": torchinfo.cxx11_abi(t), "toolkit_pin": t.toolkit_pin}


def _gpus(release: str | None) -> dict[str, Any]:
    probe = gpus.probe_gpus()
    rows = [{"index": g.index, "name": g.name, "compute_capability": g.compute_capability,
             "driver": g.driver_version, "driver_cuda": g.driver_cuda,
             "driver_runs_toolkit": gpus.driver_runs(g.driver_cuda, release) if release else None}
            for g in probe.gpus]
    return {"devices": rows, "reason": probe.reason}


def _host(home: Home | None, environ_: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    cc = hostcc.probe_host_compiler(hostcc.host_compiler_command(environ_))
    info: dict[str, Any] = {"command": cc.command, "path": cc.path, "family": cc.family,
                            "version": cc.version, "reason": cc.reason}
    if home is None:
        return info, []
    info.update(gcc_max_major=home.gcc_max_major, clang_max_major=home.clang_max_major)
    limits = hostcc.HostLimits(home.gcc_max_major, home.clang_max_major)
    message = hostcc.check_host_compiler(cc, limits, home.nvcc_version)
    return info, [message] if message else []


def _arch(cli: str | None, environ_: Mapping[str, str], home: Home | None
          ) -> tuple[dict[str, Any], list[checks.Problem]]:
    try:
        archs, source = api.choose_archs(cli, environ_)
        if home is not None:
            arch.check(archs, home.gpu_codes, home.nvcc_version)
    except WheelcudaError as exc:
        return {"list": None, "source": None}, [checks.Problem("arch", exc.message, exc.fix)]
    return {"list": arch.to_torch(archs), "source": source}, []


def _home(setup: api.Setup) -> tuple[Home | None, list[checks.Problem]]:
    if any(p.severity == "error" and p.kind in ("missing", "components")
           for p in setup.problems()):
        return None, []
    try:
        return api.home_for(setup), []
    except WheelcudaError as exc:
        return None, [checks.Problem("components", exc.message, exc.fix)]


def _foreign(environ_: Mapping[str, str], home: Home | None) -> list[checks.Problem]:
    if home is None:
        return []
    homes = str(home.path.parent)
    other = environ.foreign_home(environ_, str(home.path), homes)
    if not other:
        return []
    return [checks.Problem(
        "environment", f"{other} is set: in this shell torch and CMake build with that "
        "toolkit, not with wheelcuda's tree (torch reads CUDA_HOME first)",
        'eval "$(wheelcuda env)" to use wheelcuda\'s tree, or unset it', severity="warning")]


def _run_nvcc(home: Home | None) -> tuple[str | None, list[checks.Problem]]:
    """Run the tree's nvcc now: the compiler builds will actually run."""
    if home is None:
        return None, []
    try:
        out = proc.capture([str(home.path / "bin" / "nvcc"), "--version"])
    except WheelcudaError as exc:
        return None, [checks.Problem("components", f"the tree's nvcc does not run: {exc}",
                                     "wheelcuda doctor again after reinstalling the wheels")]
    return out.strip().splitlines()[-2] if out.strip() else "", []


def diagnose(python: str | None = None, cli_arch: str | None = None,
             environ_: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Everything doctor shows, as data; ``ok`` is True when a build would work."""
    environ_ = os.environ if environ_ is None else environ_
    setup = api.inspect(python)
    problems = setup.problems()
    home, more = _home(setup)
    release = home.nvcc_release if home else checks.compiler_release(setup.inventory,
                                                                     setup.major)
    host, host_msgs = _host(home, environ_)
    arch_info, arch_problems = _arch(cli_arch, environ_, home)
    banner, nvcc_problems = _run_nvcc(home)
    problems += more + nvcc_problems + arch_problems + _foreign(environ_, home)
    problems += [checks.Problem("host", m) for m in host_msgs]
    return {
        "ok": not any(p.severity == "error" for p in problems),
        "environment": {"python": setup.target.python, "prefix": setup.target.prefix,
                        "version": ".".join(map(str, setup.target.version)),
                        "site_dirs": list(setup.target.site_dirs)},
        "torch": _torch(setup), "cuda_major": setup.major, "components": _components(setup),
        "home": str(home.path) if home else None,
        "nvcc": {"path": str(home.path / "bin" / "nvcc"), "version": home.nvcc_version,
                 "release": home.nvcc_release, "banner": banner,
                 "gpu_codes": list(home.gpu_codes)} if home else None,
        "host_compiler": host, "gpus": _gpus(release), "arch": arch_info,
        "problems": [{"kind": p.kind, "severity": p.severity, "message": p.message,
                      "fix": p.fix} for p in problems],
    }


def _line(label: str, value: object) -> str:
    return f"  {label:<14} {value}"


def _text_components(report: dict[str, Any]) -> list[str]:
    lines = [f"CUDA {report['cuda_major']} components"]
    for c in report["components"]:
        if c["status"] == "missing" and not c["required"]:
            continue
        mark = {"ok": "ok", "incomplete": "INCOMPLETE", "missing": "MISSING"}[c["status"]]
        where = c["path"] or ""
        extra = f"  (missing: {', '.join(c['missing_files'])})" if c["missing_files"] else ""
        lines.append(f"  {mark:<10} {c['wheel']:<24} {c['version'] or '-':<12} {where}{extra}")
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


def to_text(report: dict[str, Any]) -> str:
    """The report as a person reads it."""
    env, t, n, h, a = (report[k] for k in ("environment", "torch", "nvcc", "host_compiler",
                                            "arch"))
    torch_text = (f"{t['version']} (CUDA {t['cuda'] or 'none: CPU-only'}, "
                  f"C++11 ABI {t['cxx11_abi']})  {t['path']}" if t else "not installed")
    lines = ["Environment", _line("python", f"{env['python']} ({env['version']})"),
             _line("torch", torch_text), *_text_components(report), "Compiler",
             _line("CUDA_HOME", report["home"] or "not built (see problems)")]
    if n:
        lines += [_line("nvcc", f"{n['path']}"), _line("", n["banner"])]
    limit = f" (this nvcc takes gcc <= {h['gcc_max_major']})" if h.get("gcc_max_major") else ""
    lines += [_line("host compiler", f"{h['command']} {h['version'] or h['reason']}{limit}"),
              *_text_gpus(report), "Architectures",
              _line("list", f"{a['list']} (from {a['source']})" if a["list"] else "unknown")]
    for p in report["problems"]:
        lines += [f"{p['severity'].upper()}: {p['message']}"] + (
            [f"  fix: {p['fix']}"] if p["fix"] else [])
    lines.append("OK: a build would work" if report["ok"] else "NOT OK: fix the errors above")
    return "\n".join(lines) + "\n"
