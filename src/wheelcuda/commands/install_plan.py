"""The plan of ``wheelcuda install``, apart from making it (commands/install.py): what
it holds (:class:`Prepared`), the errors that stop it, the build key's fields, the wheels
the wheel cache serves, and what ``--explain`` prints.
"""

from __future__ import annotations

import os
import platform
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from .. import pipeline
from ..context import Context
from ..data import catalog
from ..data.recipes import RECIPES
from ..probe import source, uvforms
from ..probe import torch as torch_probe
from ..probe.given import Given
from ..rules import arch, buildkey, checks, installer
from ..rules.checks import Kind, Problem
from ..store import toolkits, wheels

__all__ = ["Prepared", "blocking", "compiler_fetch", "explain", "explain_refused", "identified",
           "kept_sources", "key_fields"]


@dataclass(frozen=True)
class Prepared:
    """Everything decided before the build starts; ``--explain`` prints it."""

    resolved: pipeline.Resolved
    tool: installer.Tool
    argv: list[str]
    variables: dict[str, str]  # what wheelcuda sets on top of the current environment
    names: list[str | None]
    key: str
    fields: dict[str, object]
    specs: tuple[str, ...] = ()
    would_fetch: str | None = None  # --explain: the set a real install would fetch
    origins: dict[str, str] = field(default_factory=dict)  # variable -> where it came from
    kept: bool = False  # every package installs a wheel kept in the wheel cache
    extra: tuple[str, ...] = ()  # the installer arguments after ``--``
    given: Given = field(default_factory=lambda: Given(()))


def blocking(r: pipeline.Resolved, would_fetch: str | None) -> list[Problem]:
    """The errors that stop an install: all of them, less those the fetch ``--explain``
    says it would make fixes (a missing set; NVIDIA's archives for a CUDA 12 torch)."""
    fixed = (Kind.MISSING, *(pipeline.REDIST_FIXES
                             if r.redist_fetchable or r.clang_fetchable else ()))
    return [p for p in r.errors() if not (would_fetch and p.kind in fixed)]


def compiler_fetch(r: pipeline.Resolved) -> str | None:
    """The requirement ``install`` would fetch, and where, when the compiler is missing."""
    if not r.fetchable:
        return None
    assert r.torch is not None  # fetchable
    spec = checks.wanted_specifier(r.torch, r.toolkit.major)
    return f"{catalog.toolkit_requirements(spec)[0]} into {toolkits.folder(r.layout, spec)}"


def kept_sources(r: pipeline.Resolved, key: str, pkgs: Sequence[str],
                 names: Sequence[str | None]) -> list[str]:
    """The wheels kept under this key when every package has one and its source is
    exact (a folder, a file, name==version), else the packages as given."""
    if all(buildkey.exact(p) for p in pkgs) and all(names):
        kept = wheels.cached_wheels(r.layout, key, [n for n in names if n])
        if kept:
            return kept
    return list(pkgs)


def identified(ctx: Context, spec: str) -> str:
    """The spec as the key holds it: a folder's or file's content hash (source_id), and
    for ``name==version`` the sdist's sha256 on the index uv would take it from (or the
    indexes searched, when none says): the same version from elsewhere is another key."""
    if os.path.exists(os.path.join(ctx.cwd, spec)):
        return spec
    found = uvforms.pinned_source(spec, ctx)
    return f"{spec} @ {found}" if found else spec


def key_fields(r: pipeline.Resolved, pkgs: Sequence[str], variables: dict[str, str],
               extra: Sequence[str], more: Sequence[str] = ()) -> dict[str, object]:
    """The build key's fields: the packages (and ``more``), torch, the compiler, the
    archs, the interpreter, the host compiler, ``variables`` and the installer's args."""
    torch = r.torch
    assert torch is not None  # the pipeline checked it (need_torch)
    host = r.host
    return buildkey.key_fields(
        packages=[*(source.source_id(p) for p in pkgs), *more], torch=torch.version,
        torch_cuda=torch.cuda, compiler=r.home.compiler if r.home else "(not fetched)",
        archs=arch.to_torch(r.archs), prune=not r.request.all_archs, python_tag=r.target.tag,
        cxx11_abi=torch_probe.cxx11_abi(torch), variables=variables, installer_args=extra,
        machine=platform.machine(), host_compiler=f"{host.family} {host.version or host.path}")


def explain_refused(r: pipeline.Resolved, given: Given) -> str | None:
    """``--explain`` when something stops the install: the plan as far as it goes and
    every problem with its fix, as doctor shows them (issue 18: it stopped at the first,
    and showed no plan); None when nothing does (then :func:`explain` shows it all)."""
    would_fetch = pipeline.redist_summary(r) or pipeline.clang_summary(r) or compiler_fetch(r)
    errors = blocking(r, would_fetch)
    if not errors:
        return None
    archs = f"{arch.to_torch(r.archs)} (from {r.arch_source})" if r.archs else "unknown"
    lines = [f"target     {r.target.python}   ({r.target.why})",
             f"installer  {r.installer.name if r.installer else 'none usable'}",
             f"archs      {archs}", *_compiler_lines(r, would_fetch),
             f"packages   {' '.join(given.sources) or '-'}"]
    for p in r.problems:
        if p.is_error and p not in errors:
            continue  # what the fetch would fix is said on the compiler line
        lines += [f"{p.severity.value.upper()}: {p.message}"] + ([f"  fix: {p.fix}"] if p.fix
                                                              else [])
    lines.append("NOT OK: install would stop here; fix the errors above")
    return "\n".join(lines) + "\n"


def _compiler_lines(r: pipeline.Resolved, would_fetch: str | None) -> list[str]:
    lines = []
    if r.toolkit.fetched:
        lines.append(f"compiler   fetched into {r.toolkit.fetched}")
    if would_fetch:
        lines.append(f"compiler   would fetch {would_fetch.splitlines()[0]}")
    else:
        lines.append(f"compiler   {r.toolkit.source}: {r.toolkit.description}")
    return lines + [f"also       {other}" for other in r.toolkit.others]


def explain(p: Prepared) -> str:
    """What ``install`` would set and run, without running it."""
    r = p.resolved
    mode = "the package's own list" if r.request.all_archs else "pruned to these"
    lines = [f"target     {r.target.python}   ({r.target.why})", f"installer  {p.tool.name}",
             f"archs      {arch.to_torch(r.archs)} (from {r.arch_source}; {mode})",
             f"cache key  {p.key}"]
    if p.would_fetch and "\n" in p.would_fetch:  # NVIDIA's archives: the whole listing
        lines += [f"compiler   would fetch {p.would_fetch.splitlines()[0]}",
                  *(f"           {line}" for line in p.would_fetch.splitlines()[1:])]
        lines += [f"also       {other}" for other in r.toolkit.others]
    else:
        lines += _compiler_lines(r, p.would_fetch)
    for name in p.names:
        recipe = RECIPES.get(name or "")
        if recipe:
            lines.append(f"package    {name}: {recipe.note}")
    lines += [f"set        {k}={v}" + (f"   ({p.origins[k]})" if k in p.origins else "")
              for k, v in p.variables.items()]
    lines += [f"keep       {k}={r.ctx.environ[k]}   (yours)" for k, origin in p.origins.items()
              if origin.startswith("yours")]
    if not p.given.cacheable:
        why = " and ".join(w for w, on in (("-e installs lead back into their folder",
                                            p.given.editable),
                                           ("-r files name what they like",
                                            p.given.requirements)) if on)
        lines.append(f"wheels     not taken from or kept in the wheel cache ({why})")
    lines.append("run        " + shlex.join(p.argv))
    return "\n".join(lines) + "\n"
