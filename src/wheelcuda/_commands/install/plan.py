"""The plan of ``wheelcuda install``: what it holds (:class:`Prepared`), how it is made
(:func:`prepare`: the errors that stop it, the build key, the wheels the wheel cache
serves), whether anything may be built (and so needs the build needs), and how
``--rebuild`` has each installer reinstall."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ... import _pipeline as pipeline
from ..._context import Context
from ..._pipeline import buildplan, preflight
from ..._probe import index, source
from ..._probe.given import PackageArgs
from ..._rules import buildkey, cxxstd, installer, jobs, packages, progress
from ..._rules.buildkey import BuildKey
from ..._standalone import _events
from ..._store import wheels
from .explain import fetch_text, no_fetch_error
from .needs import build_requirements_missing, builds, reinstall_args
from .pins import identified, pinned, places


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


def prepare(ctx: Context, pkgs: Sequence[str] | PackageArgs, req: pipeline.Request,
            extra: Sequence[str], *, explain: bool = False,
            resolved: pipeline.Resolved | None = None,
            pinned_by: Prepared | None = None, rebuild: bool = False) -> Prepared:
    """Preflight and the full plan of the install; raises before any build starts.
    With ``explain``, a missing compiler set is what install would fetch, not an error.
    ``pinned_by``: an earlier plan of the same install, whose pins this one takes (each
    pin asks the indexes again, and their answer may change between two asks).
    ``rebuild``: built again, never taken from the wheel cache, and reinstalled."""
    given = pkgs if isinstance(pkgs, PackageArgs) else PackageArgs(tuple(pkgs))
    r = resolved or pipeline.resolve(ctx, req)
    would_fetch = fetch_text(r) if explain else None
    if r.fetch and not explain and not req.fetch:
        raise no_fetch_error(r)
    for p in r.blocking(fetching=would_fetch is not None):
        raise p.error()
    given, pins, sdists = (pinned_by.given, list(pinned_by.pins), pinned_by.sdists) \
        if pinned_by is not None else pinned(ctx, r, given, extra)
    pkgs = given.specs
    searched = places(ctx, r)[0]
    names = [source.distribution_name(p) for p in given.sources]
    # --all-archs: the package's own list, so none of its arch variables is set either
    pages = index.Pages()  # the key's sdist and its setup.py: one read of its page
    recipe, origins = buildplan.package_variables(
        ctx, given.sources, names, () if r.request.all_archs else r.archs,
        [(p.url, p.flat) for p in searched], pages=pages)
    if r.cxx_std and r.torch is not None:
        origins[cxxstd.VAR] = (f"torch {r.torch.version}'s headers need C++{r.cxx_std}: an "
                               f"older -std is raised; {cxxstd.VAR}=keep keeps the build's own")
    # an editable install and a file's list are other keys than the same folder's wheel
    build_key = buildplan.build_key(
        ctx, r, [*(source.source_id(identified(ctx, p, searched, sdists, pages)) for p in pkgs),
                 *(f"-e {source.source_id(d)}" for d in given.editable),
                 *(f"-r {source.source_id(f)}" for f in given.files)], names, recipe,
        installer_args=extra)
    key = build_key.id
    # memory per job and the compile order measured in the last build, when one ran
    profile = progress.from_profile(wheels.profile_of(r.layout, key, [n for n in names if n]))
    floor = progress.job_floor(profile, packages.first_order(names), packages.job_gb(names))
    measured = None if r.request.all_archs else progress.measured_job_gb(
        profile, len(r.archs), floor=floor)
    variables = buildplan.run_variables(ctx, r, recipe, measured_gb=measured,
                                        files=packages.known_files(names))
    if jobs.JOB_GB_VAR in variables:
        origins[jobs.JOB_GB_VAR] = (
            f"measured in this package's last build (its largest compile, with "
            f"{progress.MEASURED_MARGIN:g}x room): each compile holds that much of the "
            "machine's compile budget")
    if "MAX_JOBS" in variables:
        origins["MAX_JOBS"] = ("a ceiling (twice the cores, at least the recipe's files, so "
                               "that ninja starts them all): how many compiles run at once "
                               "is decided as each starts, by the memory free then and the "
                               "cores")
    tool = r.installer
    assert tool is not None  # request.build_needs: chosen by the pipeline, or raised above
    # Not the user's to win: a shared installer cache hands back wheels built against
    # another torch (uv 16850, 3599). Each key gets its own.
    variables.update(wheels.installer_cache(r.layout, tool.name, key))
    # each key builds in its own folder (wheels.building writes the file)
    variables.update(buildplan.build_base(ctx, wheels.setuptools_config(r.layout, key)))
    chosen = kept_sources(r, key, pkgs, names) if given.cacheable and not rebuild \
        else list(pkgs)
    from_cache = chosen != list(pkgs)
    # what a build needs from the environment, only when something may be built: a uv
    # venv has none of it, and an install from the wheel cache or of what is installed
    # already builds nothing
    brings: tuple[str, ...] = ()
    if builds(r.target.site_dirs, given, pkgs, extra, from_cache=from_cache, rebuild=rebuild):
        brings = tuple(preflight.missing_build_needs(ctx, r.target))
        lacking = build_requirements_missing(r, given.sources, brings)
        if lacking is not None:
            raise lacking.error()
    again = reinstall_args(r.target.site_dirs, tool, given, pkgs, names) if rebuild else []
    argv = tool.install_argv(r.target.python, chosen, [*again, *extra],
                             editable=given.editable, requirements=given.requirements)
    return Prepared(r, tool, argv, variables, names, build_key, tuple(pkgs), would_fetch,
                    origins, from_cache=from_cache, extra=tuple(extra), given=given,
                    pins=tuple(pins), sdists=sdists, profile=tuple(profile),
                    order=progress.longest_first(profile, packages.first_order(names)),
                    brings=brings, rebuild=rebuild)


def kept_sources(r: pipeline.Resolved, key: str, pkgs: Sequence[str],
                 names: Sequence[str | None]) -> list[str]:
    """The wheels kept under this key when every package has one and its source is
    exact (a folder, a file, name==version), else the packages as given."""
    if all(buildkey.exact(p) for p in pkgs) and all(names):
        kept = wheels.cached_wheels(r.layout, key, [n for n in names if n])
        if kept:
            return kept
    return list(pkgs)

















