"""``wheelcuda install``: preflight, then one child process.

Preflight answers in seconds what would otherwise fail 25 minutes into a build: torch
present and built with CUDA, the arch list, MAX_JOBS, what the sources declare for their
build, then the matching compiler (fetched into the store if the environment lacks it:
the one slow step, so it comes after every cheap check), the host compiler. When
something may be built, the build needs of ``--no-build-isolation`` the target lacks
(setuptools, wheel, ninja, packaging: a ``uv venv`` has none) are installed into it
first. Then the installer runs with the environment of ``wheelcuda env`` plus what the
package table and the machine say (MAX_JOBS). ``--rebuild`` builds again whatever the
wheel cache holds, and has the installer reinstall the packages asked for.

What was given is read by ``_probe/given.py``; the plan's parts (the key's fields, the
wheels the cache serves) and ``--explain``'s text are in ``install_plan.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shlex
import signal
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .. import _pipeline as pipeline
from .. import _proc as proc
from .. import _report as report
from .._context import Context
from .._data import settings as registry
from .._pipeline import buildplan, preflight
from .._probe import locate, locks, source
from .._probe.given import PackageArgs, read_package_args
from .._rules import (
    arch,
    buildkey,
    compile_counts,
    cxxstd,
    jobs,
    packages,
    progress,
    redact,
    sharing,
)
from .._rules.sharing import Sharing
from .._standalone import _events, _nvcc_wrapper, _progress, _tree
from .._store import buildlog, fs, wheels
from ..errors import CacheError, ToolError, WheelcudaError
from . import build_watch, install_share
from . import compile_counts as sccache_counts
from .common import (
    NO_FETCH_HELP,
    add_all_archs,
    add_arch,
    add_toolkit,
    note,
    request,
)
from .install_plan import (
    Prepared,
    bring_argv,
    build_requirements_missing,
    builds,
    explain,
    explain_refused,
    fetch_text,
    identified,
    kept_sources,
    no_fetch_error,
    pinned,
    places,
    reinstall_args,
)

NAME = "install"
HELP = ("build and install CUDA extension packages (uv pip install --no-build-isolation); "
        "args after -- go to uv/pip")
SUMMARY = "build and install CUDA extension packages, for your GPUs"
USAGE = "%(prog)s [options] (PKG | -e DIR | -r FILE)... [-- ARGS...]"
TAKES_REST = True

#: Installer options install takes itself (the key, the recipes and the wheel cache
#: must know of them): after ``--`` they would land after the packages (``DIR -e``).
_OWN = re.compile(r"-[er]|--(editable|requirement)(=|$)")


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_toolkit(p)
    p.add_argument("packages", nargs="*", metavar="PKG",
                   help="a requirement (causal-conv1d==1.7.0), a folder or an sdist")
    p.add_argument("-e", "--editable", action="append", default=[], metavar="DIR",
                   help="install this project folder in editable mode, as pip's and uv's -e "
                        "(built for your GPUs each time: never taken from or kept in the "
                        "wheel cache); may be given more than once")
    p.add_argument("-r", "--requirement", action="append", default=[], metavar="FILE",
                   help="install what this requirements file names, as pip's and uv's -r "
                        "(the package table's variables apply to the packages it names); "
                        "may be given more than once")
    add_arch(p)
    p.add_argument("--no-fetch", action="store_true", help=NO_FETCH_HELP)
    install_share.add_arguments(p)
    p.add_argument("--rebuild", action="store_true",
                   help="build again even when wheelcuda's wheel cache (or a team's index) "
                        "has this build's wheel, and reinstall the packages named (uv's "
                        "--reinstall-package; pip's --force-reinstall --no-deps when they "
                        "are installed already): the new wheel replaces the kept one")
    p.add_argument("--explain", action="store_true",
                   help="print what would be set and run, and stop (downloads nothing, builds no "
                        "package; the tree is made, as by `wheelcuda env`)")
    add_all_archs(p)


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
    recipe, origins = buildplan.package_variables(
        ctx, given.sources, names, () if r.request.all_archs else r.archs,
        [(p.url, p.flat) for p in searched])
    if r.cxx_std and r.torch is not None:
        origins[cxxstd.VAR] = (f"torch {r.torch.version}'s headers need C++{r.cxx_std}: an "
                               f"older -std is raised; {cxxstd.VAR}=keep keeps the build's own")
    # an editable install and a file's list are other keys than the same folder's wheel
    build_key = buildplan.build_key(
        ctx, r, [*(source.source_id(identified(ctx, p, searched, sdists)) for p in pkgs),
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


#: The installer's exit code after wheelcuda passed it a signal (proc.call: 128 + its
#: number): "uv exited with 130", and the end of its output, told nothing.
_INTERRUPTED = {128 + signal.SIGINT: "Ctrl-C", 128 + signal.SIGTERM: "SIGTERM",
                128 + signal.SIGHUP: "the terminal closed: SIGHUP"}


def cuda_compiles(calls: Sequence[str]) -> int:
    """How many of the nvcc wrapper's logged calls compiled (pure)."""
    return sum(1 for c in calls if any(w in _nvcc_wrapper.COMPILES for w in c.split()))


def compile_summary(calls: Sequence[str], compiler: str) -> str:
    """"3 CUDA compiles by nvcc 13.0.88, split-compile 2" from the nvcc wrapper's log
    (``compiler`` as the key names it); "" for none (pure)."""
    compiles = [words for words in (c.split() for c in calls)
                if any(w in _nvcc_wrapper.COMPILES for w in words)]
    if not compiles:
        return ""
    splits = sorted({w.split("=", 1)[1] for words in compiles for w in words
                     if w.startswith("--split-compile=")}, key=lambda v: (len(v), v))
    ordered = any(c.startswith(_progress.AHEAD_MARK) for c in calls)
    count = f"{len(compiles)} CUDA compile{'s' if len(compiles) != 1 else ''}"
    return f"{count} by {buildkey.compiler_name(compiler)}" + (
        f", split-compile {'/'.join(splits)}" if splits else "") + (
        ", started longest first" if ordered else "")


def _upstream(r: pipeline.Resolved, specs: Sequence[str]) -> str:
    """After a failed build: an sdist published without files its build needs cannot
    build anywhere (corpus: gaussian-splatting 2.11.0, fast-hadamard-transform 1.1.0)."""
    dirs = [str(r.home.path / "include")] if r.home else []
    if r.torch is not None:
        dirs += [os.path.join(r.torch.path, "include"),
                 os.path.join(r.torch.path, "include/torch/csrc/api/include")]
    dirs += ["/usr/include", "/usr/local/include"]

    def external(header: str) -> bool:
        return any(os.path.exists(os.path.join(d, header)) for d in dirs)

    for spec in specs:
        missing = source.missing_sources(spec, external) if os.path.isfile(spec) else []
        if missing:
            shown = ", ".join(sorted({h for _, h in missing})[:4])
            return (f"\n  note: {os.path.basename(spec)} does not hold {shown}, which its "
                    f"build needs ({missing[0][0]} names it): an sdist published without its "
                    "sources cannot build anywhere; build from the project's repository (with "
                    "its submodules), and tell its authors")
    return ""


def unpruned_calls(calls: Sequence[str]) -> int:
    """How many compiles the nvcc wrapper left unpruned (link-time optimization) (pure)."""
    return sum(1 for c in calls if c.startswith(_nvcc_wrapper.UNPRUNED))


def execute(ctx: Context, p: Prepared) -> tuple[int, str]:
    """Run the installer (output streams through) under the key's lock; the exit code
    and the summary line. Concurrent installs of one key build once: the second waits,
    then finds the wheel in the key's installer cache. The record and the kept wheels
    are written before the lock is let go; a failed build leaves no entry."""
    r = p.resolved
    with wheels.building(r.layout, p.key) as build, \
            tempfile.NamedTemporaryFile("r", prefix="wheelcuda-nvcc-") as log, \
            tempfile.TemporaryDirectory(prefix="wheelcuda-tmp-",
                                        dir=ctx.get("TMPDIR") or None) as tmp:
        p = _under_lock(p)
        output = build_watch.start_log(r.layout, p.key)
        echo = output is None or report.verbosity() > 0
        # each source's seconds in the last build: the compile pool starts the longest
        # first (without one, the recipe's guess the tree holds)
        order = build.write_order(p.order) if p.order else None
        lasting, cached, temp = _cache_counts(ctx, p, tmp)
        env = proc.child_environ(ctx.environ, {**p.variables, registry.NVCC_LOG.name: log.name,
                                               **build_watch.build_variables(output, echo,
                                                                             ctx.environ),
                                               **buildplan.order_variables(order), **temp},
                                 drop=[*sharing.TEAM_VARS, _progress.VAR])
        start = time.monotonic()
        # uv holds <venv>/.lock for a whole install and waits for it in silence (pip
        # takes no such lock)
        watch = locks.watching(
            Path(r.target.prefix) / ".lock", f"uv's lock on {r.target.prefix} (another "
            "install into this environment)", note, after=fs.NOTE_AFTER_S,
            every=fs.NOTE_EVERY_S) if p.tool.locks_environment else contextlib.nullcontext()
        # a first build is read against the recipe's guess of its files, where one exists
        before = list(p.profile) or _events.guess(p.order)
        # the installer's own output goes to the log; on the terminal with -v (or when
        # there is no log to keep it)
        with pipeline.in_use(r) as in_use, watch, build_watch.watching(
                output, before=before,
                source="" if p.profile else "the recipe's guess") as seen:
            # the log is kept: a token the installer prints (pip's "Looking in indexes"
            # line hides user:password, not a query's private_token) is not
            code = proc.call(p.argv, env=env, log=str(output.output) if output else None,
                             echo=echo, scrub=redact.text,
                             keep_fds=[*in_use, *([build.lock_fd] if build.lock_fd
                                                  is not None else [])])
        seconds = time.monotonic() - start
        calls = log.read().splitlines()
        compiles = compile_summary(calls, r.compiler)
        hits = compile_counts.difference(cached, sccache_counts.counts(lasting)) if compiles \
            and cached else None
        compiles += f"; {compile_counts.said(hits, cuda_compiles(calls))}" if hits else ""
        unpruned = unpruned_calls(calls)
        took = _events.duration(seconds)
        raised = _raised(r, calls, failed=code != 0)
        if code != 0:
            return code, _failed(p, build, output, code, took=took, raised=raised)
        done = _installed(p)
        # a wheel with unpruned (LTO) code is recorded as what it is, not as pruned
        fields = {**p.fields, "prune": False, "unpruned_calls": unpruned} if unpruned \
            else p.fields
        # -e and -r keep no wheel: the wheel cache never serves them (PackageArgs.cacheable)
        try:
            build.done(fields, done, seconds, p.tool.name,
                       [n for n in p.names if n] if p.given.cacheable else [],
                       built=bool(compiles) or p.from_cache,
                       profile=progress.profile(seen.done) if seen.done else None,
                       compile_cache=hits)
        except CacheError as exc:  # installed all the same: the cache's loss, said so
            report.warn(f"warning: {exc}")
        if output is not None:  # kept with the key as its profile; the log of a build stays
            output.discard_events() if compiles else output.discard()
        prune = p.tool.cache_prune_argv()
        if prune:
            with contextlib.suppress(WheelcudaError):
                proc.capture(prune,
                             env=proc.child_environ(ctx.environ, p.variables,
                                                    drop=sharing.TEAM_VARS), timeout=120)
    return 0, _summary(p, done, compiles, unpruned, f" in {took}") + raised


def _under_lock(p: Prepared) -> Prepared:
    """What to run once the key's lock is held: for --rebuild, the key's installer cache
    emptied (it would hand back the wheel it built); else, when another install of this
    key built it while this one waited, that wheel."""
    r = p.resolved
    if p.rebuild:
        for folder in wheels.installer_cache(r.layout, p.tool.name, p.key).values():
            fs.discard(Path(folder))
    elif not p.from_cache and p.given.cacheable:
        chosen = kept_sources(r, p.key, p.specs, p.names)
        if chosen != list(p.specs):
            note(f"another install built this key ({p.key}) meanwhile: installing it")
            return replace(p, argv=p.tool.install_argv(r.target.python, chosen, p.extra),
                           from_cache=True)
    return p


def _summary(p: Prepared, done: list[str], compiles: str, unpruned: int, took: str) -> str:
    """install's last line: what was installed, how long it took, and how (pure)."""
    r = p.resolved
    archs = ", ".join(f"sm_{a.number}" for a in r.archs)
    built = archs if not r.request.all_archs else "the package's own arch list (--all-archs)"
    if compiles and unpruned:
        built = (f"{built} and, in {unpruned} link-time-optimized compiles wheelcuda "
                 "left unpruned, every arch those asked for")
    how = (f"built {built} ({compiles})" if compiles
           else "from wheelcuda's wheel cache (nothing compiled)" if p.from_cache
           else "nothing compiled (already installed, or the key's installer cache had it)")
    return (f"installed {', '.join(done)} with {p.tool.name}{took}: {how}; "
            f"cache key {p.key}")


def _cache_counts(ctx: Context, p: Prepared, tmp: str
                  ) -> tuple[dict[str, str], dict[str, int] | None, dict[str, str]]:
    """The environment that reaches sccache's server from outside the build; the
    server's counts before the build (None: no compile cache, nothing to build, or the
    clang toolkit's compiles, which do not go through it), whose difference after the
    summary gives; and the build's temporary folder. A build's own TMPDIR (``tmp``,
    removed when it ends) only while no compile goes through sccache: sccache 0.16's
    server makes its nvcc folders in the TMPDIR of the first compile that reaches it,
    for as long as it runs, and panics at src/compiler/nvcc.rs:391 once that folder is
    gone."""
    lasting = proc.child_environ(ctx.environ, p.variables,
                                 drop=[*sharing.TEAM_VARS, _progress.VAR])
    on = not p.resolved.toolkit.by_clang and \
        _tree.compile_cache(lasting)[1] is not None
    cached = sccache_counts.counts(lasting) if on and not p.from_cache else None
    return lasting, cached, {} if on else buildplan.temp_variables(ctx, tmp)


def _failed(p: Prepared, build: wheels.Build, output: buildlog.BuildLog | None, code: int, *,
            took: str, raised: str) -> str:
    """The summary of a build that failed: its cause, not the installer's traceback."""
    if code in _INTERRUPTED:  # the signal's own doing: no compiler error to look for
        return f"the build was interrupted ({_INTERRUPTED[code]}) after {took}; nothing " \
               "was installed"
    r = p.resolved
    origin = build.refused() if p.from_cache else None
    dropped = (f"; the wheel taken from {origin} is out of wheelcuda's wheel cache again, so "
               "the next install builds") if origin else ""
    why = "".join(f"\n  {line}" for line in build_watch.failure_lines(
        output, fixes=build_watch.unreachable_fixes(r.fetch.unreachable), route=_route_note(r)))
    if output is not None:  # the log stays for the reader; the events are done
        output.discard_events()
    return (f"{p.tool.name} exited with {code} after {took}; nothing was installed"
            f"{dropped}{_upstream(r, p.specs)}{raised}{why}")


def _route_note(r: pipeline.Resolved) -> str:
    """What a compile error on the clang route may be owed to, and what builds it else
    (pure): clang takes most of what nvcc takes, not all (docs/clang.md lists what it
    does not); nothing for NVIDIA's nvcc. NVIDIA's archives are named only where they
    were not found unreachable (clang stands in when they do not answer)."""
    if not r.toolkit.by_clang:
        return ""
    archives = "" if r.fetch.unreachable else \
        "from their archives (--toolkit redist, where they answer) or "
    return (f"these came from the clang toolkit ({buildkey.compiler_name(r.compiler)}, CUDA "
            "12 without NVIDIA's nvcc), which builds most CUDA code nvcc builds but not all "
            f"(docs/clang.md): NVIDIA's nvcc builds it {archives}from a CUDA 12 toolkit on "
            "this machine (--toolkit /path/to/cuda-12.x)")


def _raised(r: pipeline.Resolved, calls: Sequence[str], *, failed: bool) -> str:
    """What the tree's compilers did to the build's C++ standard (_rules/cxxstd.py)."""
    count, old = cxxstd.raised(calls)
    if not count or r.torch is None:
        return ""
    std = r.cxx_std
    said = (f"\n  note: the build asked for {', '.join(sorted(old))}; torch {r.torch.version}'s "
            f"headers need C++{std}, so wheelcuda raised it in {count} compiles "
            f"({cxxstd.VAR}=keep keeps the build's own)")
    if failed:
        said += (f"; if the errors above are C++{std} ones, the extension is not "
                 f"C++{std}-clean: build it against a torch whose headers take "
                 f"{', '.join(sorted(old))} (torch {cxxstd.LAST_CXX17} or older take C++17)")
    return said


def _installed(p: Prepared) -> list[str]:
    """``name==version`` of each package installed (the spec when its name is unknown),
    the editable ones marked."""
    r = p.resolved
    sources = p.given.sources or p.specs or ("",) * len(p.names)
    editable = set(p.given.editable)
    done = []
    for name, spec in zip(p.names, sources, strict=False):
        version = _version(r.target.site_dirs, name)
        shown = f"{name}=={version}" if version else (name or spec)
        done.append(f"{shown} (editable)" if spec in editable else shown)
    return done


def _version(site_dirs: Sequence[str], name: str | None) -> str | None:
    if not name:
        return None
    return locate.installed_version(site_dirs, name)


def main(args: argparse.Namespace, ctx: Context) -> int:
    if not (args.packages or args.editable or args.requirement):
        args.parser.error("give what to install: PKG..., -e DIR or -r FILE, e.g. "
                          "wheelcuda install causal-conv1d")
    own = [a for a in args.rest if _OWN.match(a)]
    if own:  # `install DIR -- -e` reached uv as `DIR -e`
        args.parser.error(f"give {own[0]} before --, as install's own option "
                          "(wheelcuda install -e DIR, wheelcuda install -r FILE): the "
                          "wheel cache and the package table must see what it names")
    if "--rebuild" in args.rest:  # uv and pip have no such option: theirs would fail
        args.parser.error("give --rebuild before --: it is install's own option, not uv's "
                          "or pip's (wheelcuda install --rebuild PKG)")
    # read before any probe: a bad file or folder is named first
    given = read_package_args(ctx, args.packages, args.editable, args.requirement)
    fetch = not args.no_fetch and not args.explain  # --explain downloads nothing
    req = request(args, need_torch=True, build_needs=True, jobs=True, fetch=fetch,
                  looks=not fetch)
    resolved = pipeline.resolve(ctx, req) if args.explain else None
    if resolved is not None:
        refused = explain_refused(resolved, given)
        if refused is not None:
            print(refused, end="")
            return 1
    team = install_share.settings(ctx, args)
    prepared, looked = (None, None) if args.explain or args.rebuild else \
        _without_a_build(ctx, given, req, args.rest, team)
    prepared = prepared or prepare(ctx, given, req, args.rest, explain=args.explain,
                                   resolved=resolved, pinned_by=looked, rebuild=args.rebuild)
    if args.explain:
        print(explain(prepared), end="")
        for line in buildplan.warnings(prepared.resolved):
            note(line)
        return 0
    r = prepared.resolved
    for line in [*prepared.pins, *buildplan.warnings(r)]:
        note(line)
    if prepared.from_cache:  # say what really happens: no build
        note(f"installing the wheel built before for this key ({prepared.key}) from "
             f"wheelcuda's wheel cache with {prepared.tool.name}: {shlex.join(prepared.argv)}")
    else:
        _bring(ctx, prepared)
        note(f"building with {prepared.tool.name} for {arch.to_torch(r.archs)} "
             f"(from {r.arch_source}): {shlex.join(prepared.argv)}")
    code, summary = execute(ctx, prepared)
    note(summary)
    if code == 0 and team.publish and install_share.shareable(prepared):
        built = wheels.cached_wheels(r.layout, prepared.key, [n for n in prepared.names if n])
        install_share.publish_wheels(ctx, team.publish, [Path(w) for w in built or ()],
                                     wanted=prepared.build_key.shared(),
                                     profile=wheels.profile_of(r.layout, prepared.key))
    return code


#: Four wheels (setuptools, wheel, ninja, packaging: about 3 MB together).
_BRING_TIMEOUT_S = 600


def _bring(ctx: Context, p: Prepared) -> None:
    """Install the build needs the target lacks (:attr:`Prepared.brings`) before the
    build: ``--no-build-isolation`` builds use the environment's own, and a venv made
    by ``uv venv`` has none of them. With the user's own installer settings (the key's
    installer cache is the build's)."""
    if not p.brings:
        return
    python = p.resolved.target.python
    argv = bring_argv(p)
    note(f"installing {', '.join(p.brings)} into {python} first (--no-build-isolation "
         f"builds use the environment's own): {shlex.join(argv)}")
    try:
        proc.capture(argv, env=proc.child_environ(ctx.environ, drop=sharing.TEAM_VARS),
                     timeout=_BRING_TIMEOUT_S)
    except WheelcudaError as exc:
        raise ToolError(f"could not install the build needs {', '.join(p.brings)} into "
                        f"{python}: {exc.message}",
                        f"install them yourself, then install again: {shlex.join(argv)}"
                        ) from exc


def _without_a_build(ctx: Context, given: PackageArgs, req: pipeline.Request, extra: Sequence[str],
                     team: Sharing) -> tuple[Prepared | None, Prepared | None]:
    """With a team's or a prebuilt index configured: the install, when this key's wheels
    are in the wheel cache or on an index, planned without fetching a compiler (none is
    needed to install a wheel, and a machine that only installs has none), else None when
    a build is needed; and the plan whose pins the build's plan takes (the indexes are
    asked for a release once)."""
    if not given.cacheable or not (team.indexes or team.prebuilt):
        return None, None  # without an index, the one plan below (a kept wheel included)
    look = replace(req, fetch=False)
    first = prepare(ctx, given, look, extra, explain=True)
    if first.from_cache:
        return first, first
    if install_share.from_indexes(ctx, first, team) or \
            install_share.from_prebuilt(ctx, first, team):
        again = prepare(ctx, given, look, extra, explain=True, resolved=first.resolved,
                        pinned_by=first)
        if again.from_cache:
            return again, first
    return None, first
