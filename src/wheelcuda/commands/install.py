"""``wheelcuda install``: preflight, then one child process.

Preflight answers in seconds what would otherwise fail 25 minutes into a build: torch
present and built with CUDA, the arch list, MAX_JOBS, the build needs of
``--no-build-isolation``, then the matching compiler (fetched into the store if the
environment lacks it: the one slow step, so it comes after every cheap check), the host
compiler. Then the installer runs with the environment of ``wheelcuda env`` plus what
the package table and the machine say (MAX_JOBS).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import shlex
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from .. import _nvcc_wrapper, pipeline, proc
from ..context import Context
from ..data import catalog
from ..data.recipes import RECIPES
from ..errors import ComponentError, WheelcudaError
from ..probe import gpus, locate, machine, setup_vars, source, uvforms
from ..probe import torch as torch_probe
from ..rules import arch, buildkey, checks, installer, jobs, packages
from ..rules.checks import Kind, Problem
from ..store import archives, toolkits, wheels
from .common import (
    NO_FETCH_HELP,
    add_all_archs,
    add_arch,
    add_toolkit,
    note,
    request,
    warn_problems,
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
    p.add_argument("--explain", action="store_true",
                   help="print what would be set and run, and stop (downloads nothing, builds no "
                        "package; the tree is made, as by `wheelcuda env`)")
    add_all_archs(p)


@dataclass(frozen=True)
class Given:
    """What to install, as given: the packages, ``-e`` folders and ``-r`` files, and
    what the files name (nested ``-r`` files followed), with every file read."""

    specs: tuple[str, ...]
    editable: tuple[str, ...] = ()
    requirements: tuple[str, ...] = ()
    listed: tuple[str, ...] = ()  # the requirements and -e targets the files name
    files: tuple[str, ...] = ()  # every requirements file read, nested ones too

    @property
    def sources(self) -> tuple[str, ...]:
        """Every package source, in the order given (one per name)."""
        return (*self.specs, *self.editable, *self.listed)

    @property
    def cacheable(self) -> bool:
        """Whether the wheel cache may serve and keep this install's wheels: not with
        -e (the install leads back into the folder, whose files change after it) nor
        with -r (the file names what it likes, pinned or not, and other files)."""
        return not (self.editable or self.requirements)


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


def read_given(ctx: Context, specs: Sequence[str], editable: Sequence[str] = (),
               requirements: Sequence[str] = ()) -> Given:
    """Check ``-e`` folders and ``-r`` files, and read what the files name; raises with
    the fix before anything else is looked at."""
    folders = tuple(_editable(ctx, d) for d in editable)
    listed: list[str] = []
    files: list[str] = []
    for name in requirements:
        _requirements(ctx, name, None, listed, files)
    return Given(tuple(specs), folders, tuple(requirements), tuple(listed), tuple(files))


def _editable(ctx: Context, folder: str) -> str:
    """The folder as the installers take it (a bare relative name gets ``./``: uv reads
    ``-e ext`` as a package name)."""
    path = os.path.join(ctx.cwd, folder)
    fix = ("give the folder of a Python project (the one that holds pyproject.toml or "
           "setup.py), e.g. wheelcuda install -e ./my_ext; for a VCS URL, clone it first")
    if not os.path.exists(path):
        raise WheelcudaError(f"-e {folder}: there is no such folder ({os.path.abspath(path)})",
                             fix)
    if not os.path.isdir(path):
        raise WheelcudaError(f"-e {folder}: that is a file; -e takes a project folder",
                             f"install an sdist or a wheel without -e: wheelcuda install "
                             f"{shlex.quote(folder)}")
    if not any(os.path.isfile(os.path.join(path, n))
               for n in ("pyproject.toml", "setup.py", "setup.cfg")):
        raise WheelcudaError(f"-e {folder}: that folder holds no pyproject.toml, setup.py or "
                             "setup.cfg: it is not a Python project", fix)
    if os.path.isabs(folder) or folder.startswith("."):
        return folder
    return f"./{folder}"


def _requirements(ctx: Context, name: str, parent: str | None, listed: list[str],
                  files: list[str]) -> None:
    """Read one requirements file into ``listed`` (and ``files``); a nested ``-r`` is
    relative to the file that names it, as pip and uv read it."""
    path = os.path.join(os.path.dirname(parent) if parent else ctx.cwd, name)
    where = f"-r {name}" + (f" (named in {parent})" if parent else "")
    fix = ("give the path of a requirements file (one requirement a line, as pip and uv "
           "read it), e.g. wheelcuda install -r requirements.txt")
    if os.path.isdir(path):
        raise WheelcudaError(f"{where}: that is a folder, not a requirements file",
                             f"give the file inside it, e.g. -r "
                             f"{shlex.quote(os.path.join(name, 'requirements.txt'))}")
    if os.path.abspath(path) in map(os.path.abspath, files):
        return  # named twice, or a loop: read once
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        raise WheelcudaError(f"{where}: there is no such file ({os.path.abspath(path)})",
                             fix) from None
    except OSError as exc:
        raise WheelcudaError(f"{where}: cannot read it: {exc.strerror or exc}", fix) from exc
    files.append(path)
    for kind, value in installer.requirement_lines(text):
        if kind == "-r":
            _requirements(ctx, value, path, listed, files)
        else:
            listed.append(value)


def prepare(ctx: Context, pkgs: Sequence[str] | Given, req: pipeline.Request,
            extra: Sequence[str], *, explain: bool = False,
            resolved: pipeline.Resolved | None = None) -> Prepared:
    """Preflight and the full plan of the install; raises before any build starts.
    With ``explain``, a missing compiler set is what install would fetch, not an error."""
    given = pkgs if isinstance(pkgs, Given) else Given(tuple(pkgs))
    pkgs = given.specs
    r = resolved or pipeline.resolve(ctx, req)
    would_fetch = _would_fetch(r) if explain else None
    if r.redist_fetchable and r.torch is not None:
        # a CUDA 12 torch: the compiler comes from NVIDIA's archives (issue 11)
        listing = archives.listing(pipeline.redist_want(ctx, req, r.torch))
        if explain:
            would_fetch = listing
        elif not req.fetch:
            raise ComponentError(f"torch {r.torch.version} needs a CUDA {r.torch.cuda} "
                                 "compiler, which only NVIDIA's archives hold, and --no-fetch "
                                 "forbids fetching them", listing)
    for p in blocking(r, would_fetch):
        if p.kind is Kind.MISSING and not req.fetch:
            raise ComponentError(f"{p.message} (and --no-fetch forbids fetching them)", p.fix)
        raise p.error()
    names = [source.distribution_name(p) for p in given.sources]
    recipe, origins = _package_variables(ctx, given.sources, names, r)
    in_key = buildkey.build_variables(recipe, ctx.environ, packages.prefixes(names))
    # an editable install and a file's list are other keys than the same folder's wheel
    fields = _key_fields(r, [_identified(ctx, p) for p in pkgs], in_key, extra,
                         [f"-e {source.source_id(d)}" for d in given.editable]
                         + [f"-r {source.source_id(f)}" for f in given.files])
    fields["names"] = [n or "" for n in names]
    key = buildkey.key_id(fields)
    variables = r.run_variables() if r.home else {}
    variables.update(packages.user_wins(recipe, ctx.environ))
    # for_build keeps the user's own values itself (and replaces an empty MAX_JOBS).
    variables.update(jobs.for_build(packages.job_gb(names), ctx.environ, machine.cores(),
                                    machine.available_memory()))
    tool = r.installer
    assert tool is not None  # request.build_needs: chosen by the pipeline, or raised above
    # Not the user's to win: a shared installer cache hands back wheels built against
    # another torch (uv 16850, 3599). Each key gets its own.
    variables.update(wheels.installer_cache(r.layout, tool.name, key))
    # A local folder builds in place: setuptools' build/ would hand ninja the objects of
    # the last build, made for other archs (ninja does not see WHEELCUDA_ARCHS), and a
    # wrong wheel would be kept. Each key builds in its own folder (review of issue 9).
    if "DIST_EXTRA_CONFIG" not in ctx.environ:
        variables["DIST_EXTRA_CONFIG"] = str(wheels.setuptools_config(r.layout, key))
    chosen = _sources(r, key, pkgs, names) if given.cacheable else list(pkgs)
    argv = installer.install_argv(tool, r.target.python, chosen, extra,
                                  editable=given.editable, requirements=given.requirements)
    return Prepared(r, tool, argv, variables, names, key, fields, tuple(pkgs), would_fetch,
                    origins, kept=chosen != list(pkgs), extra=tuple(extra), given=given)


def blocking(r: pipeline.Resolved, would_fetch: str | None) -> list[Problem]:
    """The errors that stop an install: all of them, less those the fetch ``--explain``
    says it would make fixes (a missing set; NVIDIA's archives for a CUDA 12 torch)."""
    fixed = (Kind.MISSING, *(pipeline.REDIST_FIXES if r.redist_fetchable else ()))
    return [p for p in r.errors() if not (would_fetch and p.kind in fixed)]


def _package_variables(ctx: Context, pkgs: Sequence[str], names: Sequence[str | None],
                       r: pipeline.Resolved) -> tuple[dict[str, str], dict[str, str]]:
    """What the packages need set, and where each value comes from: read from the
    source's setup.py (a folder or an sdist: ``*_FORCE_BUILD``, ``FORCE_CUDA``, its arch
    variables; issue 9 item 7), then the recipe table, which wins; the user's own
    environment wins over both (it is left as it is)."""
    chosen: dict[str, str] = {}
    origins: dict[str, str] = {}
    # --all-archs: the package's own list, so none of its arch variables is set either
    archs = () if r.request.all_archs else r.archs
    for spec in pkgs:
        for w in setup_vars.wanted(spec, archs):
            chosen.setdefault(w.name, w.value)
            origins.setdefault(w.name, w.origin)
    recipe = packages.recipe_env(names, archs, bool(gpus.probe_gpus(ctx).gpus))
    chosen.update(recipe)
    origins.update(dict.fromkeys(recipe, "the recipe table"))
    origins.update({k: "yours, kept" for k in chosen if k in ctx.environ})
    return chosen, origins


def _would_fetch(r: pipeline.Resolved) -> str | None:
    """The requirement ``install`` would fetch, and where, when the compiler is missing."""
    if not r.fetchable:
        return None
    assert r.torch is not None  # fetchable
    spec = checks.wanted_specifier(r.torch, r.toolkit.major)
    return f"{catalog.toolkit_requirements(spec)[0]} into {toolkits.folder(r.layout, spec)}"


def _sources(r: pipeline.Resolved, key: str, pkgs: Sequence[str],
             names: Sequence[str | None]) -> list[str]:
    """The wheels kept under this key when every package has one and its source is
    exact (a folder, a file, name==version), else the packages as given."""
    if all(buildkey.exact(p) for p in pkgs) and all(names):
        kept = wheels.cached_wheels(r.layout, key, [n for n in names if n])
        if kept:
            return kept
    return list(pkgs)


def _identified(ctx: Context, spec: str) -> str:
    """The spec as the key holds it: a folder's or file's content hash (source_id), and
    for ``name==version`` the sdist's sha256 on the index uv would take it from (or the
    indexes searched, when none says): the same version from elsewhere is another key."""
    if os.path.exists(os.path.join(ctx.cwd, spec)):
        return spec
    found = uvforms.pinned_source(spec, ctx)
    return f"{spec} @ {found}" if found else spec


def _key_fields(r: pipeline.Resolved, pkgs: Sequence[str], variables: dict[str, str],
                extra: Sequence[str], more: Sequence[str] = ()) -> dict[str, object]:
    torch = r.torch
    assert torch is not None  # the pipeline checked it (need_torch)
    host = r.host
    return buildkey.key_fields(
        packages=[*(source.source_id(p) for p in pkgs), *more], torch=torch.version,
        torch_cuda=torch.cuda, compiler=r.home.nvcc_version if r.home else "(not fetched)",
        archs=arch.to_torch(r.archs), prune=not r.request.all_archs, python_tag=r.target.tag,
        cxx11_abi=torch_probe.cxx11_abi(torch), variables=variables, installer_args=extra,
        machine=platform.machine(), host_compiler=f"{host.family} {host.version or host.path}")


def explain_refused(r: pipeline.Resolved, given: Given) -> str | None:
    """``--explain`` when something stops the install: the plan as far as it goes and
    every problem with its fix, as doctor shows them (issue 18: it stopped at the first,
    and showed no plan); None when nothing does (then :func:`explain` shows it all)."""
    would_fetch = pipeline.redist_summary(r) or _would_fetch(r)
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


def compile_summary(calls: Sequence[str]) -> str:
    """"3 nvcc compiles, split-compile 2" from the nvcc wrapper's log; "" for none (pure)."""
    compiles = [words for words in (c.split() for c in calls)
                if any(w in _nvcc_wrapper.COMPILES for w in words)]
    if not compiles:
        return ""
    splits = sorted({w.split("=", 1)[1] for words in compiles for w in words
                     if w.startswith("--split-compile=")}, key=lambda v: (len(v), v))
    return f"{len(compiles)} nvcc compiles" + (
        f", split-compile {'/'.join(splits)}" if splits else "")


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


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{seconds:.1f}s"


def execute(ctx: Context, p: Prepared) -> tuple[int, str]:
    """Run the installer (output streams through) under the key's lock; the exit code
    and the summary line. Concurrent installs of one key build once: the second waits,
    then finds the wheel in the key's installer cache. The record and the kept wheels
    are written before the lock is let go; a failed build leaves no entry."""
    r = p.resolved
    with wheels.building(r.layout, p.key) as build, \
            tempfile.NamedTemporaryFile("r", prefix="wheelcuda-nvcc-") as log:
        # another install of this key may have built it while we waited
        if not p.kept and p.given.cacheable:
            chosen = _sources(r, p.key, p.specs, p.names)
            if chosen != list(p.specs):
                note(f"another install built this key ({p.key}) meanwhile: installing its "
                     "wheel")
                p = replace(p, argv=installer.install_argv(p.tool, r.target.python, chosen,
                                                           p.extra), kept=True)
        env = proc.child_environ(ctx.environ, {**p.variables, "WHEELCUDA_NVCC_LOG": log.name})
        start = time.monotonic()
        with pipeline.in_use(r):  # cache clear and prune leave the tree and toolkit be
            code = proc.call(p.argv, env=env)
        seconds = time.monotonic() - start
        calls = log.read().splitlines()
        compiles = compile_summary(calls)
        unpruned = unpruned_calls(calls)
        took = _duration(seconds)
        if code != 0:
            return code, (f"{p.tool.name} exited with {code} after {took}; nothing was "
                          f"installed{_upstream(r, p.specs)}")
        done = _installed(p)
        # a wheel with unpruned (LTO) code is recorded as what it is, not as pruned
        fields = {**p.fields, "prune": False, "unpruned_calls": unpruned} if unpruned \
            else p.fields
        # -e and -r keep no wheel: the wheel cache never serves them (Given.cacheable)
        build.done(fields, done, seconds, p.tool.name,
                   [n for n in p.names if n] if p.given.cacheable else [])
        if p.tool.name == "uv":  # keeps the wheels uv built; drops downloads and sources
            with contextlib.suppress(WheelcudaError):
                proc.capture([*p.tool.command, "cache", "prune", "--ci"],
                             env=proc.child_environ(ctx.environ, p.variables), timeout=120)
    archs = ", ".join(f"sm_{a.number}" for a in r.archs)
    built = archs if not r.request.all_archs else "the package's own arch list (--all-archs)"
    if compiles and unpruned:
        built = (f"{built} and, in {unpruned} link-time-optimized compiles wheelcuda "
                 "left unpruned, every arch those asked for")
    how = (f"built {built} ({compiles})" if compiles
           else "from wheelcuda's wheel cache (nothing compiled)" if p.kept
           else "nothing compiled (already installed, or the key's installer cache had it)")
    return 0, (f"installed {', '.join(done)} with {p.tool.name} in {took}: {how}; "
               f"cache key {p.key}")


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
    given = read_given(ctx, args.packages, args.editable, args.requirement)  # before any probe
    fetch = not args.no_fetch and not args.explain  # --explain downloads nothing
    req = request(args, need_torch=True, build_needs=True, jobs=True, fetch=fetch)
    resolved = pipeline.resolve(ctx, req) if args.explain else None
    if resolved is not None:
        refused = explain_refused(resolved, given)
        if refused is not None:
            print(refused, end="")
            return 1
    prepared = prepare(ctx, given, req, args.rest, explain=args.explain, resolved=resolved)
    if args.explain:
        print(explain(prepared), end="")
        for line in warn_problems(prepared.resolved):
            note(line)
        return 0
    r = prepared.resolved
    for line in warn_problems(r):
        note(line)
    if prepared.kept:  # issue 9 item 8: say what really happens
        note(f"installing the wheel built before for this key ({prepared.key}) from "
             f"wheelcuda's wheel cache with {prepared.tool.name}: {shlex.join(prepared.argv)}")
    else:
        note(f"building with {prepared.tool.name} for {arch.to_torch(r.archs)} "
             f"(from {r.arch_source}): {shlex.join(prepared.argv)}")
    code, summary = execute(ctx, prepared)
    note(summary)
    return code
