"""One answer to "which target, torch, toolkit, tree, archs and host compiler", per run.

Every command (env, home, doctor, install, run) and the Python API ask :func:`resolve`
once and read the :class:`Resolved` it returns; nothing below is computed twice
(issue 8). The steps run cheap to expensive, and the expensive ones (fetching a
compiler set, building a tree) only when nothing cheaper already stops the build:

1. the cache layout and the target interpreter (these raise: nothing works without);
2. torch, MAX_JOBS, the arch list, the build needs (cheap reads);
3. the toolkit from the sources (:mod:`wheelcuda.sources`), fetched into the store when
   asked and when it is the only thing missing;
4. the host compiler, the tree (built or reused), then the checks that need the tree's
   nvcc: can it build these archs, does it take this host compiler.

Problems are gathered, not raised: ``doctor`` shows them all, the others raise the
first error (:meth:`Resolved.raise_first`), so doctor and the commands agree.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import shlex
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from . import sources
from .context import Context
from .data import catalog
from .data import redist as archives_data
from .errors import CacheError, ComponentError, HostCompilerError, WheelcudaError
from .probe import gpus, interpreter, locate
from .probe import hostcc as hostcc_probe
from .probe import torch as torch_probe
from .probe.hostcc import HostCompiler
from .probe.interpreter import Target
from .probe.locate import Found, Inventory
from .probe.torch import Torch
from .rules import arch as archmod
from .rules import checks, environ, hostcc, jobs, pins
from .rules import installer as installer_rules
from .rules import tree as plan
from .rules.checks import Kind, Problem, Severity
from .store import archives, fs, memo, paths, toolkits, trees
from .store.layout import Layout
from .store.trees import Home

__all__ = ["Request", "Resolved", "Start", "Toolkit", "finish", "looking", "resolve", "start"]

#: What --no-build-isolation builds need from the environment.
BUILD_NEEDS = ("setuptools", "wheel", "ninja", "packaging")


@dataclass(frozen=True)
class Request:
    """What a command asks for; the flags switch on the checks only some commands need."""

    python: str | None = None
    arch: str | None = None
    all_archs: bool = False
    #: torch must be there and built with CUDA (install, run, doctor; not env or home).
    need_torch: bool = False
    #: the arch list must be known (everything but home).
    need_archs: bool = True
    #: setuptools, wheel, ninja, packaging in the target (install, doctor).
    build_needs: bool = False
    #: MAX_JOBS and WHEELCUDA_SPLIT_COMPILE must be counts (install, run, doctor).
    jobs: bool = False
    #: fetch a missing compiler set into the store (install without --no-fetch/--explain).
    fetch: bool = False
    #: the tree must outlive the target environment (``uv-config``: build environments
    #: wheelcuda cannot see use it): the target's own wheels are no source, neither for
    #: the compiler nor for the headers of torch's libraries (those are fetched).
    portable: bool = False
    #: torch as given (read from uv.lock, or only its CUDA from ``--cuda``) instead of
    #: the target's: for settings written before the environment exists.
    torch: Torch | None = None
    #: ``--toolkit``: auto, wheels, local, redist, or a toolkit folder (None:
    #: WHEELCUDA_TOOLKIT, else auto).
    toolkit: str | None = None
    #: ``--redist-manifest``: NVIDIA's release manifest to use as given (a URL or a file;
    #: None: WHEELCUDA_REDIST_MANIFEST, else the pinned one of torch's release).
    redist_manifest: str | None = None
    #: ``fetch --from DIR``: take NVIDIA's archives from this folder, not the network.
    redist_from: str | None = None
    #: with ``fetch``: the headers of torch's libraries (cuBLAS, cuSPARSE, cuSOLVER) into
    #: the store too, when the sources lack them. A tree for build environments
    #: wheelcuda cannot see (``uv-config``) must not lean on any one environment.
    headers: bool = False


@dataclass(frozen=True)
class Toolkit:
    """The compiler set found for the target, and where each part came from."""

    major: int
    inventory: Inventory
    found_via: Mapping[str, str]  # component name -> source name ("venv", "store")
    fetched: Path | None = None  # the store folder fetched during this run
    #: where the compiler set comes from ("wheels", "local", "redist"), and what it is
    source: str = "wheels"
    description: str = ""
    #: what the other sources would have offered, or why they did not ("local: none fits")
    others: tuple[str, ...] = ()
    #: why the one source allowed has nothing (``--toolkit local`` and none fits)
    unavailable: str | None = None

    def compiler_parts(self) -> list[Found]:
        return [f for c in catalog.COMPILER if (f := self.inventory.get(c.name, self.major))]


@dataclass(frozen=True)
class Start:
    """Step 1: what everything else needs, resolved first (the warm path stamps it)."""

    ctx: Context
    request: Request
    layout: Layout
    target: Target


@dataclass(frozen=True)
class Choice:
    """Where the compiler set may come from: the sources in ``only`` (None: all, in order
    of preference), ``given`` a toolkit folder (``--toolkit PATH``). torch's own libraries
    (their headers: cuBLAS, cuSPARSE) come from the target's wheels whatever the compiler's
    source, unless ``target_libraries`` is off (uv-config: its tree outlives the venv)."""

    only: tuple[str, ...] | None = None
    given: str | None = None
    target_libraries: bool = True

    def allows(self, source: str) -> bool:
        return (self.only is None or source in self.only) and \
            (source != "venv" or self.target_libraries)


@dataclass(frozen=True)
class Resolved:
    """Everything a command needs, computed once."""

    ctx: Context
    request: Request
    layout: Layout
    target: Target
    torch: Torch | None
    toolkit: Toolkit
    archs: tuple[archmod.Arch, ...]
    arch_source: str | None
    host: HostCompiler
    tree: plan.TreePlan | None
    home: Home | None
    problems: tuple[Problem, ...] = field(default=())
    #: ``CUDA_HOME=/opt/cuda`` when the user set a toolkit other than our tree.
    foreign: str | None = None
    #: The installer, chosen once (install and fetch; None when not asked or unusable).
    installer: installer_rules.Tool | None = None
    #: Where the compiler set may come from (``--toolkit``).
    choice: Choice = Choice()

    @property
    def home_cached(self) -> bool:
        """The tree is the cache's (not one a run that only looks made in its scratch)."""
        scratch = self.layout.scratch
        return self.home is not None and (scratch is None
                                          or not self.home.path.is_relative_to(scratch))

    @property
    def redist_fetchable(self) -> bool:
        """NVIDIA's archives would bring the compiler (a CUDA 12 torch, or --toolkit
        redist), and they are all that is wrong."""
        return _redist_fetch_fixes([], list(self.problems), self.torch, self.choice)

    @property
    def fetchable(self) -> bool:
        """The compiler set is missing and a fetch of torch's pin would bring it."""
        return (self.torch is not None and self.torch.cuda_major == self.toolkit.major
                and any(p.is_error and p.kind is Kind.MISSING for p in self.problems))

    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.is_error]

    def raise_first(self, *, ignore: tuple[Kind, ...] = ()) -> None:
        """Raise the first error (less the ``ignore`` kinds) as its
        :class:`WheelcudaError`, if there is one."""
        for p in self.problems:
            if p.is_error and p.kind not in ignore:
                raise p.error()

    def variables(self) -> dict[str, str]:
        """What ``wheelcuda env`` exports (after :meth:`raise_first`)."""
        assert self.home is not None, "raise_first() first"
        return environ.build_environ(str(self.home.path), self.archs, self.ctx.environ,
                                     str(self.layout.homes), all_archs=self.request.all_archs)

    def run_variables(self) -> dict[str, str]:
        """:meth:`variables` with the target's bin after the tree's (its ninja and
        console scripts, as if it were activated): for install and run."""
        variables = self.variables()
        target_bin = os.path.dirname(self.target.python)
        parts = variables["PATH"].split(os.pathsep)
        if target_bin not in parts:
            parts.insert(1, target_bin)
        variables["PATH"] = os.pathsep.join(parts)
        return variables


def start(ctx: Context, request: Request, *, scratch: Path | None = None) -> Start:
    """The cache layout and the target; raises when either is unusable. With
    ``scratch``, the run only looks (:func:`looking`)."""
    layout = dataclasses.replace(Layout.for_environ(ctx.environ), scratch=scratch)
    toolkit_choice(ctx, request)  # a bad --toolkit stops here, before anything is read
    if request.redist_from and not os.path.isdir(os.path.join(ctx.cwd, request.redist_from)):
        raise ComponentError(f"--from {request.redist_from}: no such folder",
                             "name the folder holding the manifest and the archives that "
                             "`wheelcuda install --no-fetch PKG` lists")
    if request.redist_manifest:  # the redist source reads it, as it reads the variable
        ctx = ctx.with_env(**{archives_data.MANIFEST_VAR: request.redist_manifest})
    return Start(ctx, request, layout, resolve_target(ctx, layout, request.python))


#: ``--toolkit`` words and the sources each allows (None: all, in order of preference).
TOOLKITS: Mapping[str, tuple[str, ...] | None] = {
    "auto": None, "wheels": sources.WHEELS, "local": ("local",), "redist": ("redist",)}
TOOLKIT_VAR = "WHEELCUDA_TOOLKIT"


def toolkit_choice(ctx: Context, request: Request) -> Choice:
    """What ``--toolkit`` (or WHEELCUDA_TOOLKIT, or the command's own sources) allows."""
    own = not request.portable
    word = (request.toolkit or ctx.get(TOOLKIT_VAR) or "").strip() or "auto"
    if word in TOOLKITS:
        return Choice(TOOLKITS[word], target_libraries=own)
    folder = os.path.normpath(os.path.join(ctx.cwd, os.path.expanduser(word)))
    if os.path.isdir(folder):
        return Choice(("local",), folder, target_libraries=own)
    origin = "--toolkit" if request.toolkit else TOOLKIT_VAR
    raise ComponentError(f"{origin} {word!r} is neither {', '.join(TOOLKITS)} nor a folder",
                         f"{origin} auto (the default), wheels, local, redist, or the folder "
                         "of a CUDA toolkit (the one holding bin/nvcc)")


def resolve(ctx: Context, request: Request) -> Resolved:
    """Every step, once (see the module's docstring)."""
    return finish(start(ctx, request))


@contextlib.contextmanager
def looking(ctx: Context, request: Request) -> Iterator[Resolved]:
    """:func:`resolve` for a command that only looks (doctor): nothing is written into
    the cache. What a check must run and the cache lacks (a local toolkit's links, a
    tree) is made in a scratch folder that goes when the block ends (issue 17,
    reliability 6); :attr:`Resolved.scratch` then says the tree is not the cache's."""
    with tempfile.TemporaryDirectory(prefix="wheelcuda-look-",
                                     dir=ctx.get("TMPDIR") or None) as tmp:
        yield finish(start(ctx, dataclasses.replace(request, fetch=False), scratch=Path(tmp)))


def finish(s: Start) -> Resolved:
    ctx, request, layout, target = s.ctx, s.request, s.layout, s.target
    torch = request.torch or torch_probe.find_torch(target.site_dirs)
    problems: list[Problem] = []
    if torch is not None or request.need_torch:
        problems += checks.torch_problems(torch, None, target.python)
    if request.jobs:
        problems += jobs.problems(ctx.environ)
    archs, arch_source = _archs(ctx, request, problems)
    if request.build_needs:
        problems += _build_needs(ctx, target)
    choice = toolkit_choice(ctx, request)
    # a source that cannot be read or linked offers nothing and says why (sources._offer)
    toolkit = locate_toolkit(target, torch, layout, ctx, choice=choice)
    found = _component_problems(toolkit, torch, target)
    if toolkit.unavailable:
        found = [_unavailable(toolkit, torch, target.python),
                 *(p for p in found if not p.is_error)]
    host = hostcc_probe.probe_host_compiler(ctx)
    # What can be known before the compiler is there: a fetch (270 MB) must not come
    # before an error it cannot fix (issue 9 review: doctor said OK, install fetched, then
    # refused sm_70 or a missing host compiler).
    tool = _installer(ctx, request, problems)
    problems += _before_fetch(toolkit, archs, host)
    if (tool and request.fetch and choice.allows("store")
            and _only_fetch_missing(found, problems, torch)):
        toolkit = _fetch(ctx, layout, target, torch, toolkit, tool=tool, choice=choice)
        found = _component_problems(toolkit, torch, target)
    if request.fetch and _redist_fetch_fixes(found, problems, torch, choice):
        toolkit = _fetch_redist(ctx, layout, target, torch, request, choice=choice)
        found = _component_problems(toolkit, torch, target)
    if (tool and request.fetch and request.headers
            and not any(p.is_error for p in [*found, *problems]) and missing_headers(toolkit)):
        toolkit = _fetch(ctx, layout, target, torch, toolkit, tool=tool, choice=choice,
                         headers=True)
    problems += found
    release = checks.compiler_release(toolkit.inventory, toolkit.major)
    if torch is not None and torch.cuda is not None:
        problems += checks.torch_problems(torch, release, target.python)
    tree = home = foreign = None
    if not any(p.is_error and p.kind in (Kind.MISSING, Kind.COMPONENTS) for p in found):
        problems += _host_problems(toolkit, host)
        tree = tree_for(ctx, layout, toolkit)
        if layout.scratch is not None and trees.read_valid(layout.home(tree.key), tree) is None:
            tree = tree_for(ctx, layout.writable(), toolkit)  # looking: made in the scratch
            home = _home(ctx, layout.writable(), tree, host, problems=problems)
        else:
            home = _home(ctx, layout, tree, host, problems=problems)
    if home is not None and not any(p.kind is Kind.ARCH for p in problems):
        problems += _arch_problems(home, archs)  # the floor was checked before the fetch
        foreign = environ.foreign_home(ctx.environ, str(home.path), str(layout.homes))
        problems += _foreign(foreign)
    return Resolved(ctx, request, layout, target, torch, toolkit, archs, arch_source, host,
                    tree, home, tuple(problems), foreign, tool, choice)


def resolve_target(ctx: Context, layout: Layout, python: str | None) -> Target:
    """The target interpreter, asked once and remembered until it changes (its answer is
    kept in the memo, so the warm path spawns no child). ``Target.why`` says what chose
    it (issue 9: never wheelcuda's own tool environment unless asked)."""
    choice = interpreter.choose_python(python, ctx)
    path = interpreter.chosen_executable(choice, ctx)
    if path == ctx.executable:
        return interpreter.target(path, interpreter.ask(path, ctx), choice)
    root = str(layout.root)
    info = memo.load(root, "interpreter", path)
    if not isinstance(info, dict):
        info = interpreter.ask(path, ctx)
        if layout.scratch is not None:  # a run that only looks keeps no memo
            return interpreter.target(path, info, choice)
        with contextlib.suppress(OSError, WheelcudaError):  # costs time, not correctness
            layout.private()
            memo.save(root, "interpreter", path, info, paths.stamps(interpreter.watch(path, info)))
    return interpreter.target(path, info, choice)


def _archs(ctx: Context, request: Request, problems: list[Problem]
           ) -> tuple[tuple[archmod.Arch, ...], str | None]:
    if not request.need_archs:
        return (), None
    given = [v for v in (request.arch, ctx.get("TORCH_CUDA_ARCH_LIST")) if v and v.strip()]
    try:
        if given and given[0].strip().lower() != "native":  # native: the visible GPUs
            return archmod.choose(request.arch, ctx.get("TORCH_CUDA_ARCH_LIST"), (), None)
        probe = gpus.probe_gpus(ctx)
        return archmod.choose(None, None, [g.compute_capability for g in probe.gpus],
                              probe.reason)
    except WheelcudaError as exc:
        problems.append(Problem.of(Kind.ARCH, exc))
        return (), None


def _build_needs(ctx: Context, target: Target) -> list[Problem]:
    """Build needs absent from the environment (ninja may also come from PATH)."""
    import shutil  # noqa: PLC0415 (only install and doctor need it)

    search = os.pathsep.join([os.path.dirname(target.python), ctx.get("PATH") or ""])
    missing = [n for n in BUILD_NEEDS
               if not locate.installed_version(target.site_dirs, n)
               and not (n == "ninja" and shutil.which("ninja", path=search))]
    if not missing:
        return []
    return [Problem(Kind.BUILD_NEEDS,
                    f"{', '.join(missing)} missing in {target.python}: "
                    "--no-build-isolation builds use the environment's own",
                    f"uv pip install --python {shlex.quote(target.python)} {' '.join(missing)}")]


def locate_toolkit(target: Target, torch: Torch | None, layout: Layout, ctx: Context,
                   fetched: Path | None = None, *, choice: Choice = Choice()) -> Toolkit:
    """The compiler set from ONE source, the first whose set is complete for torch's
    CUDA major (the CUDA wheels count as one: the target's and the store's, component by
    component, as before), else the wheels (what a fetch would complete); the headers of
    torch's libraries from the target first (see :class:`Choice`)."""
    offers = sources.offers(target, torch, layout, ctx, only=choice.only, given=choice.given,
                            skip=() if choice.target_libraries else ("venv",))
    groups: list[tuple[str, list[sources.Offer]]] = []
    for o in offers:
        name = "wheels" if o.source in sources.WHEELS else o.source
        if groups and groups[-1][0] == name:
            groups[-1][1].append(o)
        else:
            groups.append((name, [o]))
    major = torch.cuda_major if torch is not None and torch.cuda_major in catalog.MAJORS \
        else None
    chosen = next((g for g in groups if major is not None
                   and _complete(locate.locate(_roots(g[1]), catalog.COMPILER), major)), None)
    if chosen is None:  # the wheels, which a fetch completes, when allowed
        none: list[sources.Offer] = []
        wheels = ("wheels", none) if choice.allows("store") else None
        chosen = next((g for g in groups if g[0] == "wheels"), None) or wheels or \
            ("wheels" if not groups else groups[0][0], offers)
    name, picked = chosen
    others = tuple(f"{n}: {', '.join(o.description for o in g)}" for n, g in groups
                   if n != name)
    compiler_roots = _roots(picked)
    own = [o for o in offers if o.source == "venv"]
    if not own and choice.target_libraries:
        own = sources.offers(target, torch, layout, ctx, only=("venv",))
    headers = headers_folder(layout, torch)
    library_roots = tuple(dict.fromkeys([*_roots(own), *compiler_roots,
                                         *([str(headers)] if headers else [])]))
    compiler = locate.locate(compiler_roots, catalog.COMPILER)
    inventory = locate.Inventory(
        compiler.found + locate.locate(library_roots, catalog.LIBRARIES).found,
        tuple(dict.fromkeys(compiler_roots + library_roots)), compiler.shadowed)
    via: dict[str, str] = {}
    for f in inventory.found:
        pool = picked if f.component.compiler else [*own, *offers]
        # the headers folder is the store's, whatever source the compiler came from
        via.setdefault(f.component.name,
                       next((o.source for o in pool if f.root in o.roots), "store"))
    description = "; ".join(o.description for o in picked)
    unavailable = description if name != "wheels" and not compiler_roots else None
    return Toolkit(checks.choose_major(inventory, torch), inventory, via, fetched, name,
                   description, others, unavailable)


def _unavailable(toolkit: Toolkit, torch: Torch | None, python: str) -> Problem:
    """The one source allowed has nothing: why, and the other ways."""
    cuda = torch.cuda if torch is not None and torch.cuda else f"{toolkit.major}.x"
    folder = f"--toolkit /path/to/cuda-{cuda} (the folder holding bin/nvcc)"
    if toolkit.source == "redist":  # install and env fetch by themselves; home, run do not
        fix = (f"wheelcuda fetch --toolkit redist --python {shlex.quote(python)} (install "
               f"and env fetch by themselves unless --no-fetch), or {folder}")
    else:
        fix = f"--toolkit auto (the wheels, NVIDIA's archives), or {folder}"
    return Problem(Kind.COMPONENTS, f"--toolkit {toolkit.source}: {toolkit.unavailable}", fix)


def _roots(offers: Sequence[sources.Offer]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(r for o in offers for r in o.roots))


def _complete(inventory: Inventory, major: int) -> bool:
    return all((f := inventory.get(c.name, major)) is not None and f.complete
               for c in catalog.COMPILER if major in c.wheels)


def _component_problems(toolkit: Toolkit, torch: Torch | None, target: Target
                        ) -> list[Problem]:
    return checks.component_problems(toolkit.inventory, toolkit.major, torch, target.python)


def _only_fetch_missing(found: list[Problem], problems: list[Problem],
                        torch: Torch | None) -> bool:
    """Fetch only what a fetch fixes, and only when nothing cheaper stops the build."""
    errors = [p for p in [*found, *problems] if p.is_error]
    return (torch is not None and torch.cuda_major is not None and bool(errors)
            and all(p.kind is Kind.MISSING for p in errors))


def _fetch(ctx: Context, layout: Layout, target: Target, torch: Torch | None,
           toolkit: Toolkit, *, tool: installer_rules.Tool,
           choice: Choice, headers: bool = False) -> Toolkit:
    """The compiler set (or, with ``headers``, the headers of torch's libraries) fetched
    into the store, and the toolkit located again."""
    assert torch is not None
    spec = checks.wanted_specifier(torch, toolkit.major)
    folder = toolkits.fetch(layout, ctx, tool, spec, python=target.python,
                            major=toolkit.major,
                            headers=pins.header_requirements(torch, toolkit.major)
                            if headers else None)
    return locate_toolkit(target, torch, layout, ctx,
                          toolkit.fetched or (None if headers else folder), choice=choice)


def headers_folder(layout: Layout, torch: Torch | None) -> Path | None:
    """The store's headers of torch's libraries for ``torch``, when fetched."""
    if torch is None or torch.cuda_major not in catalog.MAJORS:
        return None
    major = torch.cuda_major
    wanted = pins.header_requirements(torch, major)
    return toolkits.existing(layout, checks.wanted_specifier(torch, major),
                             toolkits.headers_kind(wanted))


def in_use_locks(r: Resolved) -> list[Path]:
    """The lock files of what a build through ``r`` uses from the cache: its tree, and
    the store's toolkits and local-toolkit links the tree leads into."""
    locks = [r.layout.lock(r.layout.homes, r.home.path.name)] if r.home else []
    for root in r.toolkit.inventory.roots:
        for parent in (r.layout.toolkits, r.layout.local):
            try:
                first = Path(root).relative_to(parent).parts[0]
            except (ValueError, IndexError):
                continue
            locks.append(r.layout.lock(parent, first))
    return sorted(set(locks))


def in_use(r: Resolved) -> contextlib.AbstractContextManager[None]:
    """Shared locks on :func:`in_use_locks` for the length of a build or ``run``:
    ``cache clear`` and ``prune`` skip what they guard (issue 17, reliability 1)."""
    return fs.shared(in_use_locks(r), "in use by a build")


def redist_want(ctx: Context, request: Request, torch: Torch) -> archives.Want:
    """What to take from NVIDIA's archives for ``torch``: its CUDA's release, from the
    mirror WHEELCUDA_REDIST_URL names, the manifest given, or a folder."""
    assert torch.cuda is not None
    manifest = request.redist_manifest or ctx.get(archives_data.MANIFEST_VAR) or None
    source = Path(ctx.cwd, request.redist_from) if request.redist_from else None
    return archives.Want(torch.cuda, manifest=manifest,
                         base_url=ctx.get(archives_data.MIRROR_VAR) or None, source=source,
                         allow_http=ctx.get(archives.ALLOW_HTTP_VAR) == "1")


#: The errors a fetch of NVIDIA's archives fixes: no compiler, parts missing, torch's
#: CUDA without its compiler.
REDIST_FIXES = (Kind.MISSING, Kind.COMPONENTS, Kind.TORCH)


def _redist_fetch_fixes(found: list[Problem], problems: list[Problem], torch: Torch | None,
                        choice: Choice) -> bool:
    """NVIDIA's archives are fetched when nothing else serves: a CUDA 12 torch (no
    compiler wheel), or ``--toolkit redist``; when the choice allows them, and only what
    a fetch fixes is wrong."""
    if torch is None or torch.cuda is None or not choice.allows("redist"):
        return False
    errors = [p for p in [*found, *problems] if p.is_error]
    wanted = choice.only == ("redist",) or torch.cuda_major not in catalog.WHEEL_COMPILER_MAJORS
    return wanted and bool(errors) and all(p.kind in REDIST_FIXES for p in errors)


def _fetch_redist(ctx: Context, layout: Layout, target: Target, torch: Torch | None,
                  request: Request, *, choice: Choice) -> Toolkit:
    assert torch is not None
    root = archives.fetch(layout, redist_want(ctx, request, torch))
    return locate_toolkit(target, torch, layout, ctx, root, choice=choice)


def missing_headers(toolkit: Toolkit) -> bool:
    """torch's library headers are not found."""
    return any(toolkit.inventory.get(name, toolkit.major) is None
               for name in catalog.HEADER_LIBRARIES)


def tree_for(ctx: Context, layout: Layout, toolkit: Toolkit) -> plan.TreePlan:
    """The tree for this component set (pure once the folders are listed)."""
    found = [f for f in toolkit.inventory.found if f.major == toolkit.major]
    folders = list(dict.fromkeys(f.folder for f in found))
    metas = (locate.dist_version(r, catalog.METAPACKAGE) for r in toolkit.inventory.roots)
    release = checks.compiler_release(toolkit.inventory, toolkit.major)
    cuda = next((v for v in metas if v), None) or f"{release}.0"
    parts = [(f.component.name, f.version, f.folder) for f in found]
    # The wrapper runs on this Python: each wheelcuda installation gets its own tree.
    # version.json holds the metapackage's version: a change there is a new tree too.
    parts += [("wrapper", _wrapper_version(), ctx.executable), (catalog.METAPACKAGE, cuda, "")]
    # a copy passed over for one of nvcc's release (locate) keeps its files out
    hidden = frozenset(path for f in toolkit.inventory.shadowed if f.major == toolkit.major
                       for path in locate.dist_files(f.root, f.wheel))
    parts += [("shadowed", f.version, f.folder) for f in toolkit.inventory.shadowed]
    key = plan.tree_key(toolkit.major, parts, catalog.target_dir())
    versions = {f.component.name: f.version for f in toolkit.compiler_parts() if f.version}
    return plan.plan_tree(key, folders, plan.os_listdir, versions=versions,
                          cuda=".".join(cuda.split(".")[:3]), target_dir=catalog.target_dir(),
                          wrapper=plan.wrapper_files(ctx.executable, _wrapper_source(),
                                                     str(layout.home(key))), hidden=hidden)


@functools.cache
def _wrapper_source() -> str:
    return resources.files("wheelcuda").joinpath("_nvcc_wrapper.py").read_text()


def _wrapper_version() -> str:
    return hashlib.sha256(_wrapper_source().encode()).hexdigest()[:12]


def _home(ctx: Context, layout: Layout, tree: plan.TreePlan, host: HostCompiler, *,
          problems: list[Problem]) -> Home | None:
    """The tree, built if needed (a second or so: ``install --explain`` builds it too,
    as ``env`` does, so that what it prints is what install would set)."""
    try:
        return trees.ensure(layout, tree, ctx, host.path or host.command)
    except WheelcudaError as exc:
        kind = (Kind.CACHE if isinstance(exc, CacheError) else
                Kind.HOST if isinstance(exc, HostCompilerError) else Kind.COMPONENTS)
        problems.append(Problem.of(kind, exc))
        return None


def _installer(ctx: Context, request: Request, problems: list[Problem]
               ) -> installer_rules.Tool | None:
    """The installer, for the requests that install or fetch; an unusable choice is a
    problem known before any fetch."""
    if not (request.build_needs or request.fetch):
        return None
    from .probe import installer  # noqa: PLC0415 (only install, doctor and fetch need it)

    try:
        return installer.choose(ctx)
    except WheelcudaError as exc:
        problems.append(Problem.of(Kind.BUILD_NEEDS, exc))
        return None


def _before_fetch(toolkit: Toolkit, archs: tuple[archmod.Arch, ...], host: HostCompiler
                  ) -> list[Problem]:
    """The checks that need no compiler: archs below the CUDA major's floor, a host
    compiler that is not there."""
    out = []
    try:
        archmod.check_floor(archs, toolkit.major)
    except WheelcudaError as exc:
        out.append(Problem.of(Kind.ARCH, exc))
    if host.path is None:
        missing = hostcc.check_host_compiler(host, hostcc.HostLimits(None, None),
                                             str(toolkit.major))
        out += [missing] if missing else []
    return out


def _host_problems(toolkit: Toolkit, host: HostCompiler) -> list[Problem]:
    """Whether this nvcc takes the host compiler, from the compiler's own
    ``crt/host_config.h`` (read before the tree is built: the tree's driver stub is
    compiled with that host compiler)."""
    if host.path is None:  # said before the fetch (_before_fetch)
        return []
    crt = toolkit.inventory.get(catalog.CRT.name, toolkit.major)
    nvcc = toolkit.inventory.get(catalog.NVCC.name, toolkit.major)
    try:
        text = Path(crt.folder if crt else "", "include/crt/host_config.h").read_text(
            errors="replace")
    except OSError:
        return []
    problem = hostcc.check_host_compiler(host, hostcc.parse_host_config(text),
                                         (nvcc.version if nvcc else None) or "?")
    return [problem] if problem else []


def _arch_problems(home: Home, archs: tuple[archmod.Arch, ...]) -> list[Problem]:
    try:
        archmod.check(archs, home.gpu_codes, home.nvcc_version)
    except WheelcudaError as exc:
        return [Problem.of(Kind.ARCH, exc)]
    return []


def _foreign(other: str | None) -> list[Problem]:
    if not other:
        return []
    return [Problem(
        Kind.ENVIRONMENT, f"{other} is set: in this shell torch and CMake build with that "
        "toolkit, not with wheelcuda's tree (torch reads CUDA_HOME first)",
        'eval "$(wheelcuda env)" to use wheelcuda\'s tree, or unset it', Severity.WARNING)]
