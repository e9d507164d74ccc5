"""The plan of ``wheelcuda install``, apart from making it (_commands/install.py): what
it holds (:class:`Prepared`), the errors that stop it, the build key's fields, the wheels
the wheel cache serves, whether anything may be built (and so needs the build needs),
how ``--rebuild`` has each installer reinstall, and what ``--explain`` prints.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from .. import _pipeline as pipeline
from .. import _sources as sources
from .._context import Context
from .._data.recipes import RECIPES
from .._probe import locate, pick, pipconf, release, setup_vars, uvforms
from .._probe.given import PackageArgs
from .._rules import arch, buildkey, buildreqs, installer, redact
from .._rules.buildkey import BuildKey
from .._rules.checks import Kind, Problem
from .._standalone import _events
from .._store import wheels
from ..errors import ComponentError, WheelcudaError


@dataclass(frozen=True)
class Prepared:
    """Everything decided before the build starts; ``--explain`` prints it."""

    resolved: pipeline.Resolved
    tool: installer.Tool
    argv: list[str]
    variables: dict[str, str]  # what wheelcuda sets on top of the current environment
    names: list[str | None]
    build_key: BuildKey
    specs: tuple[str, ...] = ()
    would_fetch: str | None = None  # --explain: the set a real install would fetch
    origins: dict[str, str] = field(default_factory=dict)  # variable -> where it came from
    from_cache: bool = False  # every package installs a wheel kept in the wheel cache
    extra: tuple[str, ...] = ()  # the installer arguments after ``--``
    given: PackageArgs = field(default_factory=lambda: PackageArgs(()))
    #: the requirements pinned to the release the installer would take (notes)
    pins: tuple[str, ...] = ()
    #: each pinned requirement's sdist, as the installer named it (``sha256:...``)
    sdists: Mapping[str, str] = field(default_factory=dict)
    #: the compiles of this package's last build (the key's, else another key's of the
    #: same names): what the build's jobs and order are measured from
    profile: tuple[_events.Compile, ...] = ()
    #: each source's seconds, for the tree's ninja to start the longest first: the
    #: profile's, else the recipe's guess; empty: the build's own order
    order: Mapping[str, float] = field(default_factory=dict)
    #: the build needs install installs into the target before it builds (none when
    #: nothing would be built)
    brings: tuple[str, ...] = ()
    #: ``--rebuild``: built again whatever the wheel cache holds, the kept wheel replaced
    rebuild: bool = False

    @property
    def key(self) -> str:
        """The wheel cache's name for this build."""
        return self.build_key.id

    @property
    def fields(self) -> dict[str, Any]:
        """The build key as the wheel cache records it."""
        return self.build_key.fields()


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


def kept_sources(r: pipeline.Resolved, key: str, pkgs: Sequence[str],
                 names: Sequence[str | None]) -> list[str]:
    """The wheels kept under this key when every package has one and its source is
    exact (a folder, a file, name==version), else the packages as given."""
    if all(buildkey.exact(p) for p in pkgs) and all(names):
        kept = wheels.cached_wheels(r.layout, key, [n for n in names if n])
        if kept:
            return kept
    return list(pkgs)


#: Installer arguments that change where a release comes from or which one it is (uv
#: is asked which release it takes without them; its settings in files and variables it
#: reads itself): with any of them after ``--``, requirements are left to the installer,
#: unpinned.
_CHOOSING = re.compile(r"^(-i|-f|--index-url|--extra-index-url|--find-links|--index|"
                       r"--default-index|--no-index|--pre|--prerelease|--index-strategy|"
                       r"--upgrade-package|-P|--exclude-newer|--constraints?|-c|"
                       r"--overrides?|--config-file|--no-config|--only-binary|--no-binary|"
                       r"--prefer-binary|--no-sources)(=.*)?$")


def places(ctx: Context, r: pipeline.Resolved) -> tuple[list[uvforms.Place], bool]:
    """The indexes the installer would search, and whether it takes the first that has a
    project (uv's default ``first-index``) or the best of all (pip; uv's other
    ``UV_INDEX_STRATEGY`` values)."""
    if isinstance(r.installer, installer.Pip):
        return pipconf.indexes(ctx, r.target.prefix), False
    strategy = (ctx.get("UV_INDEX_STRATEGY") or "first-index").strip()
    return uvforms.indexes(ctx), strategy == "first-index"


def identified(ctx: Context, spec: str, searched: Sequence[uvforms.Place] | None = None,
               sdists: Mapping[str, str] | None = None) -> str:
    """The spec as the key holds it: a folder's or file's content hash (source_id), and
    for ``name==version`` the sdist's sha256 on the index the installer would take it
    from (or the indexes searched, when none says): the same version from elsewhere is
    another key."""
    if os.path.exists(os.path.join(ctx.cwd, spec)):
        return spec
    found = (sdists or {}).get(spec) or uvforms.pinned_source(spec, ctx, searched)
    return f"{spec} @ {found}" if found else spec


def _check_spec(spec: str) -> None:
    """A package that is no folder or file here must be a requirement (PEP 508) or a URL
    (``git+https://...``, which the installers take unnamed)."""
    if "://" in spec:
        return
    looks_like_path = spec.startswith((".", "/", "~")) or os.sep in spec.split("@", 1)[0]
    try:
        Requirement(spec)
    except InvalidRequirement as exc:
        if looks_like_path:
            raise WheelcudaError(f"{spec}: there is no such folder or file",
                                 "name a project folder, an sdist or a wheel that exists, "
                                 "or a requirement such as causal-conv1d==1.7.0") from exc
        raise WheelcudaError(f"{spec}: not a requirement ({str(exc).splitlines()[0]})",
                             "a name, name==version, name>=version, or a folder or sdist "
                             "that exists: wheelcuda install causal-conv1d==1.7.0") from exc
    if looks_like_path and "@" not in spec:
        raise WheelcudaError(f"{spec}: there is no such folder or file",
                             "name a project folder, an sdist or a wheel that exists")


def pinned(ctx: Context, r: pipeline.Resolved, given: PackageArgs,
           extra: Sequence[str] = ()) -> tuple[PackageArgs, list[str], dict[str, str]]:
    """``given`` with each requirement that names no exact version pinned to the release
    the installer would take, so that the wheel cache keys it by its sdist and serves it
    the next time; what was pinned, as notes; and each pin's sdist, as the key holds it
    (``sha256:...``: the file the installer takes, on the index it takes it from). uv
    says which itself (_probe/release.py); pip's is read from its indexes (_probe/pick.py),
    as pip cannot be asked without building. A requirement whose release comes as
    a wheel for this machine, or that the installer cannot answer for, stays as it is;
    one with no release at all stops here (the installer would fail the same way)."""
    choosing = next((f"{a} after --" for a in extra if _CHOOSING.match(a)), None)
    if not choosing and isinstance(r.installer, installer.Pip):
        choosing = pipconf.choosing(ctx, r.target.prefix)  # only pip reads it
    searched = None if isinstance(r.installer, installer.Uv) else places(ctx, r)
    specs, notes, sdists = [], [], {}
    for spec in given.specs:
        if os.path.exists(os.path.join(ctx.cwd, spec)):
            specs.append(spec)
            continue
        _check_spec(spec)
        if not pick.applies(spec):
            specs.append(spec)
            if not choosing and (sdist := _uvs_sdist(ctx, r, spec)):
                sdists[spec] = sdist
            continue
        if choosing:
            specs.append(spec)
            notes.append(f"{spec}: not pinned ({choosing} tells the installer where and "
                         "what to take): the wheel cache neither serves nor keeps it")
            continue
        found, unknown = _pick(ctx, r, spec, searched)
        specs.append(found.spec if found and not found.wheel else spec)
        if unknown:
            notes.append(f"{spec}: not pinned ({unknown}): the wheel cache neither serves "
                         "nor keeps it")
        elif found and not found.wheel:
            if isinstance(found, release.Release) and found.sha256:
                sdists[found.spec] = f"sha256:{found.sha256}"
            notes.append(f"{spec}: {r.installer.name if r.installer else 'the installer'} "
                         f"takes {found.version} ({found.where}): installing {found.spec}")
    return dataclasses.replace(given, specs=tuple(specs)), notes, sdists


#: Build requirements whose wheel is a program, which a system install on PATH serves too.
_PROGRAMS = ("cmake", "ninja")


def build_requirements_missing(r: pipeline.Resolved, sources: Sequence[str],
                               brought: Sequence[str] = ()) -> Problem | None:
    """What the local sources (folders, sdists) declare they need at build time that the
    target lacks (_rules/buildreqs.py): install builds without isolation, so nothing else
    would install it, and the build would fail in its own words. ``brought``: the build
    needs install installs first (:attr:`Prepared.brings`), not missing."""
    import shutil  # noqa: PLC0415 (only an install of local sources needs it)

    search = os.pathsep.join([os.path.dirname(r.target.python), r.ctx.get("PATH") or ""])

    def installed(name: str) -> str | None:
        if canonicalize_name(name) in brought:
            return "brought by install"
        # the cmake and ninja wheels are their programs: one on PATH does the same
        found = locate.installed_version(r.target.site_dirs, name)
        return found or ("on PATH" if name.lower() in _PROGRAMS and
                         shutil.which(name.lower(), path=search) else None)

    lacking: dict[str, list[str]] = {}
    for spec in sources:
        texts = [(found.text if (found := setup_vars.read_top_file(spec, f)) else None)
                 for f in ("setup.py", "pyproject.toml")]
        for req in buildreqs.missing(buildreqs.declared(*texts), installed, r.target.version):
            lacking.setdefault(str(req), []).append(os.path.basename(spec.rstrip("/")))
    if not lacking:
        return None
    said = "; ".join(f"{req} (for {', '.join(who)})" for req, who in lacking.items())
    return Problem(Kind.BUILD_NEEDS,
                   f"the build needs {said}, missing in {r.target.python}: install builds "
                   "with --no-build-isolation (so that it sees this environment's torch), "
                   "which installs no build requirement",
                   f"uv pip install --python {shlex.quote(r.target.python)} "
                   + " ".join(shlex.quote(req) for req in lacking))


#: Installer arguments after ``--`` that install what is installed already, or another
#: version of it: with one, a build may run whatever the target holds.
_REINSTALLING = re.compile(r"^(-U|--upgrade|--force-reinstall|--reinstall|"
                           r"--reinstall-package|--upgrade-package|-P|--refresh|"
                           r"--refresh-package|--no-binary)(=.*)?$")


def satisfied(site_dirs: Sequence[str], spec: str) -> bool:
    """Whether the target holds a release ``spec`` (a requirement: no folder, file or
    URL, no marker) allows, so that the installer builds nothing for it (uv says
    "Audited", pip "Requirement already satisfied")."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return False
    if req.url or req.marker:
        return False
    found = locate.installed_version(site_dirs, req.name)
    return found is not None and req.specifier.contains(found, prereleases=True)


def builds(site_dirs: Sequence[str], given: PackageArgs, specs: Sequence[str],
           extra: Sequence[str], *, from_cache: bool, rebuild: bool) -> bool:
    """Whether the install may build: not when every wheel comes from the wheel cache,
    nor when every package asked for is installed already (the installer would only
    audit it); always for ``--rebuild``, ``-e``, ``-r`` and a folder or a file (their
    content decides), and with an installer argument that reinstalls or upgrades."""
    if rebuild:
        return True
    if from_cache:
        return False
    if given.editable or given.requirements or any(_REINSTALLING.match(a) for a in extra):
        return True
    return not all(satisfied(site_dirs, s) for s in specs)


def reinstall_args(site_dirs: Sequence[str], tool: installer.Tool, given: PackageArgs,
                   specs: Sequence[str], names: Sequence[str | None]) -> list[str]:
    """The installer's arguments under which ``--rebuild`` reinstalls the packages asked
    for and nothing else: an installed release the request allows would be left as it
    is. uv has ``--reinstall-package`` (which implies ``--refresh-package``). pip's one
    switch, ``--force-reinstall``, reinstalls every dependency too (torch, from the
    index, in the key's empty cache), so it comes with ``--no-deps``, and only when
    every package asked for is installed already (their dependencies are then there);
    when none is, pip installs them anyway, as it reinstalls a project folder whatever
    is installed (seen with pip 23.2.1), and with ``-e`` or ``-r`` it is left to pip; a
    mix is refused."""
    unnamed = [s for s, n in zip(given.sources, names, strict=False) if not n]
    if unnamed:
        raise WheelcudaError(
            f"--rebuild: {unnamed[0]}: which package it builds is not known before the build, "
            "so the installer cannot be told to reinstall it",
            "name it: wheelcuda install --rebuild 'NAME @ URL' (a folder: give it a static "
            "[project] name in pyproject.toml)")
    if isinstance(tool, installer.Uv):
        return [w for n in names if n for w in ("--reinstall-package", n)]
    installed = [satisfied(site_dirs, s) for s in specs]
    if given.sources != tuple(specs) or not any(installed):
        return []
    if all(installed):
        return ["--force-reinstall", "--no-deps"]
    there = [s for s, done in zip(specs, installed, strict=True) if done]
    rest = [s for s, done in zip(specs, installed, strict=True) if not done]
    raise WheelcudaError(
        f"--rebuild with pip: {', '.join(there)} installed, {', '.join(rest)} not: pip "
        "reinstalls an installed package only with --force-reinstall, which reinstalls "
        "every dependency too (torch among them), and --no-deps would leave the others' "
        "dependencies out",
        f"rebuild the installed ones on their own: wheelcuda install --rebuild "
        f"{' '.join(shlex.quote(s) for s in there)}; then install the others")


#: The installer arguments after ``--`` that say where packages come from, taking a
#: value, and those that take none: the build needs install brings come from there too.
_WHERE = frozenset({"-i", "-f", "--index-url", "--extra-index-url", "--find-links",
                    "--index", "--default-index", "--index-strategy", "--trusted-host",
                    "--cert", "--keyring-provider", "--config-file"})
_WHERE_FLAGS = frozenset({"--no-index", "--offline", "--no-config", "--native-tls"})


def bring_argv(p: Prepared) -> list[str]:
    """How install installs the build needs it brings (:attr:`Prepared.brings`): the
    same installer, from where the arguments after ``--`` say packages come from,
    wheels only (no build backend runs to install a build need)."""
    where: list[str] = []
    rest = iter(p.extra)
    for arg in rest:
        if arg in _WHERE_FLAGS or ("=" in arg and arg.split("=", 1)[0] in _WHERE):
            where.append(arg)
        elif arg in _WHERE:
            where += [arg, next(rest, "")]
    return p.tool.install_argv(p.resolved.target.python, p.brings,
                               [*(w for w in where if w), "--only-binary", ":all:"])


def _uvs_sdist(ctx: Context, r: pipeline.Resolved, spec: str) -> str | None:
    """``sha256:...`` of the sdist uv takes for an exact ``name==version``, asked of uv
    (its indexes, in its order, under its settings: the key's sdist is then the one uv
    builds); None for anything else, for a wheel, or when uv cannot say (the indexes are
    then read as uv would: :func:`identified`)."""
    if not isinstance(r.installer, installer.Uv) or not _exact(spec):
        return None
    try:
        found = release.by_uv(r.installer.command, spec, r.target.version, ctx)
    except release.Unanswered:
        return None
    return f"sha256:{found.sha256}" if found.sha256 and not found.wheel else None


def _exact(spec: str) -> bool:
    """``name==version`` (extras allowed), nothing else: no URL, marker or wildcard."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return False
    return not (req.url or req.marker) and len(req.specifier) == 1 and \
        all(s.operator == "==" and "*" not in s.version for s in req.specifier)


def _pick(ctx: Context, r: pipeline.Resolved, spec: str,
          searched: tuple[list[uvforms.Place], bool] | None
          ) -> tuple[release.Release | pick.Pick | None, str | None]:
    """The release the installer would take, or why it is not known: uv is asked, pip's
    is read from ``searched`` (its indexes, and whether the first that has it wins)."""
    if isinstance(r.installer, installer.Uv):
        try:
            return release.by_uv(r.installer.command, spec, r.target.version, ctx), None
        except release.Unanswered as exc:
            return None, f"uv could not say which release it takes: {exc.message}"
    assert searched is not None  # read once by the caller for every name
    found = pick.newest(spec, searched[0], r.target.version, first_index=searched[1])
    return found, None if found else "not every index the installer searches answered"


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
