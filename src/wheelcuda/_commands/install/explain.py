"""What install says instead of building: ``--explain``'s plan, and, when the compiler
is still to fetch, what a fetch would bring (``--explain``) or ``--no-fetch``'s error,
in its source's words."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from ... import _pipeline as pipeline
from ..._data.recipes import RECIPES
from ..._probe.given import PackageArgs
from ..._rules import arch, redact
from ..._rules.checks import Kind
from ..._sources import table as sources
from ...errors import ComponentError
from .needs import bring_argv

if TYPE_CHECKING:
    from .plan import Prepared


def fetch_text(r: pipeline.Resolved) -> str | None:
    """What ``--explain`` says install would fetch, in its source's words; None when
    nothing is to fetch."""
    source = sources.of(r.fetch)
    return source.explain(r.fetch) if source is not None else None


def no_fetch_error(r: pipeline.Resolved) -> ComponentError:
    """``--no-fetch`` when the compiler is still to fetch: what, and what to bring."""
    source = sources.of(r.fetch)
    assert source is not None  # called only when something is to fetch
    missing = next((p for p in r.errors() if p.kind is Kind.MISSING), None)
    return source.no_fetch(r.fetch, r.asked(source), missing)


def explain_refused(r: pipeline.Resolved, given: PackageArgs) -> str | None:
    """``--explain`` when something stops the install: the plan as far as it goes and
    every problem with its fix, as doctor shows them (not only the first, and
    with the plan); None when nothing does (then :func:`explain` shows it all)."""
    would_fetch = r.fetch.summary or None
    errors = r.blocking(fetching=would_fetch is not None)
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
    return redact.text("\n".join(lines)) + "\n"  # printed: no credential


def _compiler_lines(r: pipeline.Resolved, would_fetch: str | None) -> list[str]:
    lines = []
    if r.toolkit.fetched:
        lines.append(f"compiler   fetched into {r.toolkit.fetched}")
    if would_fetch:
        lines.append(f"compiler   would fetch {would_fetch.splitlines()[0]}")
    else:
        lines.append(f"compiler   {r.toolkit.source}: {r.toolkit.description}")
    return lines + _unreachable_lines(r) + [f"also       {other}" for other in r.toolkit.others]


def _unreachable_lines(r: pipeline.Resolved) -> list[str]:
    """NVIDIA's archives, asked and silent while clang stands in: what they would have
    brought (when nothing stands in, the pipeline's error says it)."""
    if not (r.fetch.unreachable and r.fetch.instead):
        return []
    return [f"not used   {r.fetch.instead}: they do not answer ({r.fetch.unreachable}); "
            "were they reachable, install would take them"]


def explain(p: Prepared) -> str:
    """What ``install`` would set and run, without running it."""
    r = p.resolved
    mode = "the package's own list" if r.request.all_archs else "pruned to these"
    lines = [f"target     {r.target.python}   ({r.target.why})", f"installer  {p.tool.name}",
             f"archs      {arch.to_torch(r.archs)} (from {r.arch_source}; {mode})",
             f"cache key  {p.key}" + ("" if r.home or r.fetch.compiler else
                                     "   (its compiler's exact version is known after the "
                                     "fetch: install keys by that)")]
    if p.would_fetch and "\n" in p.would_fetch:  # NVIDIA's archives: the whole listing
        lines += [f"compiler   would fetch {p.would_fetch.splitlines()[0]}",
                  *(f"           {line}" for line in p.would_fetch.splitlines()[1:])]
        lines += _unreachable_lines(r) + [f"also       {other}" for other in r.toolkit.others]
    else:
        lines += _compiler_lines(r, p.would_fetch)
    lines += [f"resolved   {pin}" for pin in p.pins]
    for name in p.names:
        recipe = RECIPES.get(name or "")
        if recipe:
            lines.append(f"package    {name}: {recipe.note}")
    lines += [f"set        {k}={v}" + (f"   ({p.origins[k]})" if k in p.origins else "")
              for k, v in p.variables.items()]
    lines += [f"keep       {k}={r.ctx.environ[k]}   (yours)" for k, origin in p.origins.items()
              if origin.startswith("yours")]
    if p.order:
        top = sorted(p.order, key=lambda f: -p.order[f])[:3]
        lines.append(f"order      {len(p.order)} compiles longest first ({', '.join(top)}...), "
                     + ("as this package's last build measured them (the recipe table's "
                        "guess for any it did not compile)" if p.profile else
                        "as the recipe table guesses them (its first build measures them)"))
    if not p.given.cacheable:
        why = " and ".join(w for w, on in (("-e installs lead back into their folder",
                                            p.given.editable),
                                           ("-r files name what they like",
                                            p.given.requirements)) if on)
        lines.append(f"wheels     not taken from or kept in the wheel cache ({why})")
    if p.rebuild:
        lines.append(f"rebuild    not taken from the wheel cache or an index; this key's "
                     f"{p.tool.name} cache emptied first, so that it builds again; the "
                     "new wheel replaces the kept one")
    if p.brings:
        lines.append(f"bring      {', '.join(p.brings)}, missing in {r.target.python} "
                     "(--no-build-isolation builds use the environment's own), first: "
                     + shlex.join(bring_argv(p)))
    lines.append("run        " + shlex.join(p.argv))
    return redact.text("\n".join(lines)) + "\n"  # printed: no credential
