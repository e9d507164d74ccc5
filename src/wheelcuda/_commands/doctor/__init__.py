"""``wheelcuda doctor``: one screen a person can act on.

Gathers everything (never stopping at the first problem), as a JSON-ready mapping;
:func:`~.text.to_text` lays it out. A build would work exactly when no problem is an
error. The report's parts are :mod:`.sections`; the problems doctor adds to install's
own are :mod:`.problems`; the clang toolkit's section is :mod:`.clang`.
"""

from __future__ import annotations

import argparse
from typing import Any

from ... import _pipeline as pipeline
from ..._context import Context
from ..._probe import compile_cache
from ..._rules import arch, checks, render
from ..common import add_arch, add_toolkit, request
from . import clang
from .problems import cu130_move, fetchable, isolated, read_only, uv_project
from .sections import (
    cache_does,
    cache_problems,
    components,
    gpu_section,
    host_section,
    run_nvcc,
    team,
    toolkit_section,
    torch_section,
)
from .text import to_text

NAME = "doctor"


HELP = "show what is there, what is missing, and how to fix it"


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_toolkit(p)
    p.add_argument("--json", action="store_true")
    add_arch(p)


def diagnose(ctx: Context, req: pipeline.Request) -> dict[str, Any]:
    """Everything doctor shows, as data; ``ok`` is True when a build would work. The
    checks are install's own (one pipeline), so doctor and install agree. doctor only
    looks: it writes nothing into the cache (:func:`pipeline.resolve_read_only`)."""
    with pipeline.resolve_read_only(ctx, req) as r:
        return _diagnose(ctx, r)


def _diagnose(ctx: Context, r: pipeline.Resolved) -> dict[str, Any]:
    banner, nvcc_problems = run_nvcc(r)
    release = (r.home.nvcc_release if r.home
               else checks.compiler_release(r.toolkit.inventory, r.toolkit.major))
    gpus_seen = gpu_section(ctx, release)
    cache = compile_cache.find(ctx)
    problems = [*read_only(r, isolated(ctx, r, fetchable(r))), *nvcc_problems,
                *cu130_move(r, gpus_seen), *uv_project(ctx), *cache_problems(cache)]
    home = r.home
    return {
        "ok": not any(p.is_error for p in problems),
        "environment": {"python": r.target.python, "why": r.target.why,
                        "prefix": r.target.prefix,
                        "version": ".".join(map(str, r.target.version)),
                        "site_dirs": list(r.target.site_dirs)},
        "torch": torch_section(r), "cuda_major": r.toolkit.major, "components": components(r),
        "toolkit": toolkit_section(r),
        "home": str(home.path) if home and r.home_cached else None,
        "home_built": r.home_cached,
        "nvcc": {"path": str(home.path / "bin" / "nvcc") if r.home_cached else None,
                 "version": home.nvcc_version,
                 "release": home.nvcc_release, "banner": banner,
                 "gpu_codes": list(home.gpu_codes)} if home else None,
        "host_compiler": host_section(r), "gpus": gpus_seen,
        "arch": {"list": arch.to_torch(r.archs) if r.archs else None,
                 "source": r.arch_source},
        "team": team(ctx), "clang": clang.section(r), "compile_cache": cache,
        "compile_cache_does": cache_does(r),
        "problems": [p.as_json() for p in problems],
    }


def main(args: argparse.Namespace, ctx: Context) -> int:
    report = diagnose(ctx, request(args, need_torch=True, build_needs=True, jobs=True))
    if args.json:
        print(render.envelope("doctor", report), end="")
    else:
        print(to_text(report), end="")
    return 0 if report["ok"] else 1
