"""A PEP 517 and PEP 660 build backend for projects that own a CUDA extension.

.. code-block:: toml

    [build-system]
    requires = ["wheelcuda", "setuptools>=77", "torch"]
    build-backend = "wheelcuda.build_meta"

Then ``pip install . -C wheelcuda.arch=9.0``, ``uv pip install . -C wheelcuda.arch=9.0``,
``uv build -C wheelcuda.arch=9.0`` or ``python -m build -C wheelcuda.arch=9.0`` build the
extension with NVIDIA's compiler wheels, in the build environment the frontend makes, on
a machine without a CUDA toolkit. As scikit-build-core's ``setuptools.build_meta`` does,
it wraps another backend: ``setuptools.build_meta`` unless ``[tool.wheelcuda]
build-backend = "..."`` in pyproject.toml or ``-C wheelcuda.build-backend=...`` names
another (``scikit_build_core.build``). Every hook that backend has is offered, with the
``wheelcuda.*`` config settings taken out of what it is handed.

- ``get_requires_for_build_wheel`` / ``_editable``: the wrapped backend's requirements,
  plus the compiler set that matches the torch of the build environment (torch is in
  ``requires``, so it is there by then): the one ``wheelcuda install`` would fetch,
  ``cuda-toolkit[nvcc,cccl]==13.0.3`` and its parts for torch 2.14.1; nothing when the
  environment already holds a matching set. And ``ninja`` when there is none, since
  torch's extension builder is serial without it. torch built for CUDA 12 has no
  compiler wheel: that is an error, unless ``CUDA_HOME`` names a toolkit, which is
  then used as it is.
- ``prepare_metadata_for_build_*``, ``build_wheel``, ``build_editable``: the pipeline
  every wheelcuda command uses, for this interpreter (the build environment's), builds
  a tree in a temporary cache (build environments are temporary, so trees made from
  them must not pile up in the user's cache), and for the length of the hook sets what
  ``wheelcuda install`` sets: ``CUDA_HOME``, ``PATH``, the arch variables, ``MAX_JOBS``,
  the variables the project's setup.py reads; the user's own values of the last two
  win. setuptools builds in a temporary ``build/`` folder (``DIST_EXTRA_CONFIG``,
  unless set), so objects made for other archs are never reused.
- ``get_requires_*`` and ``build_sdist`` run setup.py before the compiler is there, and
  torch's ``CUDAExtension(...)`` raises "CUDA_HOME environment variable is not set"
  when there is no toolkit. So while they run, an unset ``CUDA_HOME``/``CUDA_PATH``
  becomes an empty folder named ``wheelcuda-compiler-not-installed-yet``, removed
  afterwards. **A setup.py must therefore not run nvcc when it is imported** (to read
  its version, say): for an sdist or the requirements it finds no compiler there.

Archs: ``-C wheelcuda.arch=12.0`` (several: ``-C "wheelcuda.arch=8.0;9.0"``), else
``TORCH_CUDA_ARCH_LIST``, else the visible GPUs, else an error that says how to pass
them. ``-C wheelcuda.all-archs=true`` keeps the project's own arch list, as
``wheelcuda install --all-archs`` does.

Errors are wheelcuda's one-line messages with their fix, on stderr, and exit code 1;
never a traceback of ours (``WHEELCUDA_DEBUG=1`` shows one for an internal error).
What the wrapped backend raises (a failed compile) is left as it is.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import re
import shutil
import sys
import tempfile
import traceback
import zipfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement

from . import pipeline
from .context import Context, patched_environ
from .data import catalog
from .errors import ComponentError, TorchError, WheelcudaError
from .probe import frontend, gpus, interpreter, locate, machine, setup_vars
from .probe import torch as torch_probe
from .rules import arch as archmod
from .rules import checks, jobs, packages, uvconfig
from .rules.checks import Kind, Severity
from .store import fs, paths
from .store.layout import Layout
from .values import SourceName, Torch

__all__ = ["build_sdist", "build_wheel", "get_requires_for_build_sdist",
           "get_requires_for_build_wheel"]

#: The config settings of ours: ``-C wheelcuda.arch=9.0``.
PREFIX = "wheelcuda."
SETTINGS = ("arch", "all-archs", "build-backend", "toolkit")
DEFAULT_BACKEND = "setuptools.build_meta"
#: The empty CUDA_HOME set while setup.py runs before the compiler is installed.
PLACEHOLDER = "wheelcuda-compiler-not-installed-yet"
DEBUG_VAR = "WHEELCUDA_DEBUG"  # as cli.py, which this module may not import

_SETTINGS_FIX = ("wheelcuda takes -C wheelcuda.arch=9.0, -C wheelcuda.all-archs=true, "
                 "-C wheelcuda.toolkit=auto|wheels|local|redist|PATH and "
                 "-C wheelcuda.build-backend=MODULE")
_BACKEND_NAME = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*(:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*)?$")
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


# --- what the frontend asked for ------------------------------------------------------

@dataclass(frozen=True)
class Config:
    """The ``wheelcuda.*`` config settings, and the rest, handed to the inner backend."""

    arch: str | None = None
    all_archs: bool = False
    backend: str | None = None
    inner: dict[str, Any] | None = None
    #: where the compiler comes from, as ``--toolkit`` (None: WHEELCUDA_TOOLKIT, else auto)
    toolkit: str | None = None


def parse_config(settings: Mapping[str, Any] | None) -> Config:
    """Our settings out of the frontend's (pure). A setting given twice (pip's ``-C``
    repeated) arrives as a list: archs are joined, otherwise the last one wins."""
    if settings is None:
        return Config()
    ours: dict[str, Any] = {}
    inner: dict[str, Any] = {}
    for key, value in settings.items():
        if key.startswith(PREFIX):
            ours[key[len(PREFIX):]] = value
        else:
            inner[key] = value
    unknown = sorted(set(ours) - set(SETTINGS))
    if unknown:
        raise WheelcudaError(f"unknown config setting {PREFIX}{unknown[0]}", _SETTINGS_FIX)
    arch = ours.get("arch")
    if isinstance(arch, list):
        arch = ";".join(str(a) for a in arch)
    backend = _last(ours.get("build-backend"))
    return Config(arch=None if arch is None else str(arch),
                  all_archs=_switch(_last(ours.get("all-archs"))),
                  backend=backend or None, inner=inner,
                  toolkit=_last(ours.get("toolkit")) or None)


def _last(value: Any) -> str | None:
    if isinstance(value, list):
        value = value[-1] if value else None
    return None if value is None else str(value)


def _switch(value: str | None) -> bool:
    if value is None:
        return False
    if value.strip().lower() in _TRUE:
        return True
    if value.strip().lower() in _FALSE:
        return False
    raise WheelcudaError(f"-C wheelcuda.all-archs={value!r} is neither true nor false",
                         "-C wheelcuda.all-archs=true (keep the project's own archs) or leave "
                         "it out (build only the archs given)")


@dataclass(frozen=True)
class Project:
    """What this backend reads of the project's pyproject.toml."""

    name: str | None = None
    backend: str | None = None


def read_project(folder: str) -> Project:
    """``[project] name`` and ``[tool.wheelcuda] build-backend`` (tomlkit)."""
    path = os.path.join(folder, "pyproject.toml")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return Project()
    except OSError as exc:
        raise WheelcudaError(f"cannot read {path}: {exc.strerror or exc}") from None
    import tomlkit  # noqa: PLC0415 (only the backend reads TOML)

    try:
        doc = tomlkit.parse(text).unwrap()
    except Exception as exc:  # tomlkit's ParseError and friends
        raise WheelcudaError(f"cannot read {path}: {exc}", "correct its TOML syntax") from None
    tool = doc.get("tool")
    ours = tool.get("wheelcuda") if isinstance(tool, dict) else None
    backend = ours.get("build-backend") if isinstance(ours, dict) else None
    if backend is not None and not isinstance(backend, str):
        raise WheelcudaError(f"[tool.wheelcuda] build-backend in {path} is not a string",
                             'build-backend = "setuptools.build_meta" (a module, or '
                             'module:object, as in [build-system])')
    project = doc.get("project")
    name = project.get("name") if isinstance(project, dict) else None
    return Project(name if isinstance(name, str) else None, backend)


def backend_name(config: Config, project: Project) -> str:
    return config.backend or project.backend or DEFAULT_BACKEND


def load_backend(name: str) -> Any:
    """The wrapped backend: a module, or ``module:object`` as ``build-backend`` takes."""
    if not _BACKEND_NAME.match(name):
        raise WheelcudaError(f"{name!r} is not a build backend name",
                             "name a module (or module:object), as [build-system] "
                             "build-backend does: setuptools.build_meta, scikit_build_core.build")
    module, _, attrs = name.partition(":")
    if module == __name__:
        raise WheelcudaError(f"{name} is wheelcuda's own backend: it cannot wrap itself",
                             "name the backend it wraps in [tool.wheelcuda] build-backend "
                             f"(default {DEFAULT_BACKEND})")
    where = ("set by -C wheelcuda.build-backend or [tool.wheelcuda] build-backend in "
             "pyproject.toml; the default is " + DEFAULT_BACKEND)
    try:
        backend: Any = importlib.import_module(module)
        for attr in filter(None, attrs.split(".")):
            backend = getattr(backend, attr)
    except (ImportError, AttributeError) as exc:
        top = module.split(".")[0]
        raise WheelcudaError(
            f"cannot import the build backend {name} ({type(exc).__name__}: {exc})",
            f"add the package that provides {top} to [build-system] requires in "
            f"pyproject.toml, or correct the name ({where})") from None
    return backend


# --- archs and torch -------------------------------------------------------------------

def check_torch(torch: Torch | None, python: str) -> Torch:
    """torch of the build environment, present and built with CUDA."""
    if torch is None:
        raise TorchError(
            f"torch is not installed in the build environment ({python}): the extension "
            "is built against the torch the build environment holds",
            'add "torch" to [build-system] requires in pyproject.toml (with '
            "--no-build-isolation, install torch into that environment first)")
    if torch.cuda is None:
        raise TorchError(
            f"torch {torch.version} in the build environment ({torch.path}) is a CPU-only "
            "build: a CUDA extension needs torch built with CUDA",
            "let the build environment get a CUDA build of torch: on Linux, torch from "
            "PyPI is one (pin it in [build-system] requires, e.g. torch==2.14.1); with "
            "another index, give the installer the CUDA one (PIP_EXTRA_INDEX_URL or "
            "UV_INDEX=https://download.pytorch.org/whl/cu130)")
    return torch


def check_target(ctx: Context, build: Torch, site_dirs: Sequence[str],
                 target: frontend.Target) -> None:
    """Stop when the environment the wheel is for holds another torch than the build
    environment: the extension would be built against the wrong one (an isolated build
    installs the newest torch the index has; issue 16 saw a cu128 target get a binary
    linked to libcudart.so.13, installed silently). Unknown targets pass."""
    found = frontend.target_torch(target, ctx)
    have = locate.installed_version(site_dirs, "torch") or build.version
    if found is None or frontend.same_torch(found.version, found.cuda, have, build.cuda):
        return
    index = uvconfig.torch_index(found.version, None)
    flag = "--index" if target.frontend == "uv" else "--extra-index-url"
    extra = f" {flag} {index}" if index else ""
    if target.frontend == "uv" and target.lock:
        fix = ("give this package's build environment the project's torch: in the project "
               f"({os.path.dirname(target.lock)}), wheelcuda uv-config --write pyproject.toml "
               f"{ctx.cwd} (it writes the torch entry uv accepts for this package)")
    else:
        tool = "uv pip" if target.frontend == "uv" else "pip"
        fix = (f"pin torch in the build environment: wheelcuda constraints -o "
               f"build-constraints.txt (it writes torch=={found.version}), then {tool} "
               f"install --build-constraint build-constraints.txt{extra} ...")
    raise TorchError(
        f"the build environment holds torch {have} (CUDA {build.cuda}), but the environment "
        f"this wheel is for ({found.where}) holds torch {found.version} (CUDA "
        f"{found.cuda or '?'}): an extension built against one does not load beside the "
        "other. (A command that also installs another torch there: pin that one instead.)",
        fix)


def _python(ctx: Context) -> str:
    """The interpreter whose environment builds: this one (a seam for the tests)."""
    return ctx.executable


def _site_dirs(ctx: Context, python: str) -> tuple[str, ...]:
    """Where the build environment's imports look: for this interpreter, its own
    ``sys.path`` (pip's isolated environment is an overlay that sitecustomize adds)."""
    return interpreter.target(python, interpreter.ask(python, ctx)).site_dirs


def compiler_requirements(ctx: Context, python: str, config: Config) -> list[str]:
    """What the build environment lacks for a CUDA build: the compiler set torch's CUDA
    asks for (as ``wheelcuda install`` chooses it) when no other source has one, and
    ninja. Raises what no requirement can fix: no torch, a CPU-only one, another torch
    than the target's, archs below the CUDA major's floor. One read-only run of the
    pipeline answers (no tree: that comes with the build)."""
    r = pipeline.resolve(ctx, _request(python, config, tree=False))
    torch = check_torch(r.torch, python)
    site_dirs = r.target.site_dirs
    target = frontend.target_of_build(ctx)
    check_target(ctx, torch, site_dirs, target)
    # archs (the floor included), MAX_JOBS, the host compiler: before a 270 MB download;
    # the compiler set is what this hook asks for
    r.raise_first(ignore=pipeline.REDIST_FIXES)
    wanted: list[str] = []
    if _wants_wheels(r):
        major = r.toolkit.major
        wanted += _installable(compiler_set(checks.wanted_specifier(torch, major), major),
                               site_dirs, target.frontend)
    if not (locate.installed_version(site_dirs, "ninja")
            or shutil.which("ninja", path=ctx.get("PATH") or os.defpath)):
        wanted.append("ninja")
    return wanted


def _request(python: str, config: Config, *, tree: bool = True) -> pipeline.Request:
    """The pipeline's request for a build by ``python`` with ``config``."""
    return pipeline.Request(python=python, arch=config.arch, all_archs=config.all_archs,
                            arch_origin="-C wheelcuda.arch" if config.arch is not None
                            else None, need_torch=True, jobs=True, toolkit=config.toolkit,
                            tree=tree)


def _installable(wanted: list[str], site_dirs: Sequence[str], tool: str) -> list[str]:
    """``wanted`` less what pip would refuse: a requirement that the build environment
    already holds at a version outside it ("Some build dependencies ... conflict with the
    backend dependencies"; pip's two prefixes cannot hold two copies). The build then
    fetches that part of torch's release into the store (plan_build). uv resolves the
    whole build environment again and takes the pins."""
    if tool != "pip":
        return wanted
    out = []
    for line in wanted:
        req = Requirement(line)
        have = locate.installed_version(site_dirs, req.name)
        if have is None or req.specifier.contains(have, prereleases=True):
            out.append(line)
        else:
            _note(f"not asking pip for {line}: the build environment holds {req.name} "
                  f"{have}, which pip will not replace; the build fetches one of torch's "
                  "release into wheelcuda's store instead")
    return out


def compiler_set(spec: str, major: int) -> list[str]:
    """``wheelcuda install``'s requirements for the set (the metapackage at torch's pin,
    the parts nvcc leaves unbounded held to its release), and every part by name too:
    pip counts a requirement as met by its name and version alone, extras left out, so
    ``cuda-toolkit[nvcc,cccl]==13.0.3`` is "met" by the ``cuda-toolkit`` that torch
    brought with other extras, and nvcc never came (pip 23.2 to 26.3: its build
    environment's ``check_requirements`` looks at the name and version only)."""
    wanted = catalog.toolkit_requirements(spec)
    release = catalog.release_of(spec)
    named = {w.split("=")[0] for w in wanted}
    wanted += [f"{c.wheels[major]}=={release}.*" if release else f"{c.wheels[major]}{spec}"
               for c in catalog.COMPILER if major in c.wheels and c.wheels[major] not in named]
    return wanted


def _wants_wheels(r: pipeline.Resolved) -> bool:
    """Whether the frontend must install the compiler wheels: the wheels would bring the
    compiler (the pipeline says: not for a CUDA 12 torch, nor when the choice leaves
    them out), the choice allows the build environment's own, and no allowed source has
    a whole set already (the build environment's wheels, the store, a local toolkit)."""
    return (r.compiler_wheels and r.choice.allows(SourceName.VENV)
            and any(p.is_error and p.kind in pipeline.REDIST_FIXES for p in r.problems))


# --- the build's environment -----------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """What a build hook sets for its length, and what it says first."""

    variables: dict[str, str]
    note: str
    warnings: tuple[str, ...] = ()
    #: lock files of the user's store that the build uses (held shared while it runs)
    in_use: tuple[Path, ...] = ()


def plan_build(ctx: Context, config: Config, project: Project, python: str, *,
               fetch: bool = True) -> Plan | None:
    """The variables of ``wheelcuda install`` for a build by ``python``, checked first;
    ``ctx`` names the (temporary) cache the tree is built in."""
    request = _request(python, config)
    start = pipeline.start(ctx, request)
    torch = check_torch(torch_probe.find_torch(start.target.site_dirs), python)
    check_target(ctx, torch, start.target.site_dirs, frontend.target_of_build(ctx))
    mode = " (the project's own arch list kept)" if config.all_archs else ""
    warnings: list[str] = []
    r = pipeline.finish(start)
    if (r.redist_fetchable or r.fetchable) and not fetch:
        return None  # the metadata hooks: no download for metadata (the placeholder serves)
    if r.redist_fetchable or r.fetchable:
        # CUDA 12, or --toolkit redist: NVIDIA's archives; or a CUDA 13 set the frontend
        # could not install whole (pip refuses a part of another release beside one the
        # build environment already holds: torch 2.15 brings CCCL 13.3 beside its 13.2):
        # fetched into the user's store (paths.STORE_VAR), as `wheelcuda install` does.
        r = pipeline.finish(dataclasses.replace(start, request=dataclasses.replace(
            request, fetch=True)))
    _raise_first(r, torch, python)
    archs, arch_list = r.archs, archmod.to_torch(r.archs)
    assert r.home is not None  # no error left
    variables = r.run_variables()
    nvcc = r.toolkit.inventory.get(catalog.NVCC.name, r.toolkit.major)
    where = f" in {nvcc.root}" if nvcc else ""
    note = (f"building for {arch_list} (from {r.arch_source}){mode} with nvcc "
            f"{r.home.nvcc_version}{where} ({r.toolkit.source}), through the tree "
            f"{r.home.path}")
    warnings += [f"warning: {p.message}" + (f" ({p.fix})" if p.fix else "")
                 for p in r.problems
                 if p.severity is Severity.WARNING and p.kind is not Kind.ENVIRONMENT]
    if r.foreign:
        warnings.append(f"note: your {r.foreign} is not used: this build uses "
                        "wheelcuda's tree (it matches torch's CUDA)")
    names = [project.name]
    wanted = _package_variables(ctx, names, () if config.all_archs else archs)
    variables.update(packages.user_wins(wanted, ctx.environ))
    # for_build keeps the user's own MAX_JOBS (and replaces an empty one).
    variables.update(jobs.for_build(packages.job_gb(names), ctx.environ, machine.cores(),
                                    machine.available_memory()))
    max_jobs = variables.get("MAX_JOBS") or ctx.get("MAX_JOBS")
    return Plan(variables, f"{note}; MAX_JOBS={max_jobs}", tuple(warnings),
                tuple(pipeline.in_use_locks(r)))


def _raise_first(r: pipeline.Resolved, torch: Torch, python: str) -> None:
    for p in r.errors():
        if p.kind is Kind.MISSING:
            spec = checks.wanted_specifier(torch, r.toolkit.major)
            raise ComponentError(
                f"{p.message}: the build environment holds no compiler set",
                "wheelcuda's get_requires_for_build_wheel asks the frontend for it; a build "
                "that skips that (pip --no-build-isolation) needs it installed first: "
                + catalog.install_command(spec, python))
        raise p.error()


def _package_variables(ctx: Context, names: Sequence[str | None],
                       archs: Sequence[archmod.Arch]) -> dict[str, str]:
    """What the project's setup.py reads to build from source (as ``install`` reads
    it), then the recipe table for known names, which wins."""
    chosen = {w.name: w.value for w in setup_vars.wanted(ctx.cwd, archs)}
    chosen.update(packages.recipe_env(names, archs, bool(gpus.probe_gpus(ctx).gpus)))
    return chosen


# --- the hooks' frame ------------------------------------------------------------------

def _note(text: str) -> None:
    sys.stderr.write(f"wheelcuda: {text}\n")


def for_backend(text: str) -> str:
    """A message written for the command line, with its flags as config settings."""
    text = text.replace("pass --arch with your GPU's compute capability",
                        "pass the GPU archs to the build (pip, uv pip, uv build and python -m "
                        "build all take -C): --arch with your GPU's compute capability")
    text = re.sub(r"--arch '([^']*)'", r"-C 'wheelcuda.arch=\1'", text)
    text = re.sub(r"--arch ([0-9][^\s,;)]*)", r"-C wheelcuda.arch=\1", text)
    text = text.replace("--all-archs", "-C wheelcuda.all-archs=true")
    text = re.sub(r"--toolkit ([^\s,;:)]+)", r"-C wheelcuda.toolkit=\1", text)
    return text.replace("--arch", "-C wheelcuda.arch")


@contextlib.contextmanager
def _reported() -> Iterator[None]:
    """wheelcuda's errors as the command line shows them, and exit code 1; a bug of
    ours in one line (its traceback with WHEELCUDA_DEBUG=1), as cli.py does."""
    try:
        yield
    except WheelcudaError as exc:
        sys.stderr.write(f"wheelcuda: error: {for_backend(str(exc))}\n")
        raise SystemExit(1) from None
    except Exception as exc:
        if Context.current().flag(DEBUG_VAR):
            traceback.print_exc()
        sys.stderr.write(
            f"wheelcuda: internal error: {type(exc).__name__}: {exc}\n"
            f"  this is a bug in wheelcuda; rerun with {DEBUG_VAR}=1 to see where, "
            "and report it with that output\n")
        raise SystemExit(1) from None


def _start(settings: Mapping[str, Any] | None) -> tuple[Config, Any]:
    with _reported():
        config = parse_config(settings)
        ctx = Context.current()
        return config, load_backend(backend_name(config, read_project(ctx.cwd)))


@contextlib.contextmanager
def _placeholder() -> Iterator[None]:
    """An empty CUDA_HOME while setup.py runs before the compiler is there (see the
    module's docstring), unless CUDA_HOME or CUDA_PATH is set."""
    ctx = Context.current()
    if ctx.get("CUDA_HOME") or ctx.get("CUDA_PATH"):
        yield
        return
    with tempfile.TemporaryDirectory(prefix="wheelcuda-") as tmp:
        home = os.path.join(tmp, PLACEHOLDER)
        os.mkdir(home)
        with patched_environ({"CUDA_HOME": home}):
            yield


@contextlib.contextmanager
def _build(config: Config, *, announce: bool, fetch: bool = True) -> Iterator[None]:
    """The tree in a temporary cache, and the build's variables set, for one hook;
    without ``fetch`` (metadata), the placeholder when a compiler would have to be
    fetched first (`uv lock`, `pip install --dry-run` download nothing for metadata)."""
    with tempfile.TemporaryDirectory(prefix="wheelcuda-build-") as tmp:
        with _reported():
            current = Context.current()
            # PYTHONPATH is part of the build environment here (this process imports
            # from it), not something to leave out of the target's site folders.
            ctx = current.with_env(PYTHONPATH=None,
                                   **{paths.ENV_VAR: os.path.join(tmp, "cache"),
                                      paths.STORE_VAR: _store(current)})
            plan = plan_build(ctx, config, read_project(ctx.cwd), _python(ctx), fetch=fetch)
            if plan is None:
                placeholder = os.path.join(tmp, PLACEHOLDER)
                os.mkdir(placeholder)
                plan = Plan({"CUDA_HOME": placeholder} if not current.get("CUDA_HOME") else {},
                            "")
            variables = dict(plan.variables)
            if not current.get("DIST_EXTRA_CONFIG"):
                cfg = os.path.join(tmp, "setuptools.cfg")
                with open(cfg, "w", encoding="utf-8") as f:
                    f.write(f"[build]\nbuild_base = {os.path.join(tmp, 'setuptools-build')}\n")
                variables["DIST_EXTRA_CONFIG"] = cfg
            if announce:
                for line in (plan.note, *plan.warnings):
                    _note(line)
        # the store's toolkits this build uses stay while it runs (cache clear skips them)
        with fs.shared(list(plan.in_use), "in use by a build"), patched_environ(variables):
            yield


def _store(ctx: Context) -> str:
    """The user's store (fetched toolkits, links to local ones), shared by every build."""
    if ctx.get(paths.STORE_VAR):
        return str(ctx.get(paths.STORE_VAR))
    return str(Layout.for_environ(ctx.environ).root)


def _call(backend: Any, name: str, *args: Any) -> Any:
    hook: Callable[..., Any] | None = getattr(backend, name, None)
    return hook(*args) if hook is not None else None


# --- the hooks -------------------------------------------------------------------------

def _requires(kind: str, config_settings: Mapping[str, Any] | None) -> list[str]:
    config, backend = _start(config_settings)
    with _reported():  # ours first: their errors come before a 270 MB download
        ctx = Context.current().with_env(PYTHONPATH=None)
        wanted = compiler_requirements(ctx, _python(ctx), config)
    with _placeholder():
        inner = list(_call(backend, f"get_requires_for_build_{kind}", config.inner) or [])
    return [*inner, *(w for w in wanted if w not in inner)]


def get_requires_for_build_wheel(config_settings: Mapping[str, Any] | None = None
                                 ) -> list[str]:
    return _requires("wheel", config_settings)


def get_requires_for_build_sdist(config_settings: Mapping[str, Any] | None = None
                                 ) -> list[str]:
    config, backend = _start(config_settings)
    with _placeholder():
        return list(_call(backend, "get_requires_for_build_sdist", config.inner) or [])


def build_sdist(sdist_directory: str, config_settings: Mapping[str, Any] | None = None
                ) -> str:
    config, backend = _start(config_settings)
    with _placeholder():
        return str(backend.build_sdist(sdist_directory, config.inner))


def build_wheel(wheel_directory: str, config_settings: Mapping[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    config, backend = _start(config_settings)
    with _build(config, announce=True):
        return str(backend.build_wheel(wheel_directory, config.inner, metadata_directory))


def _prepare_metadata_for_build_wheel(metadata_directory: str,
                                      config_settings: Mapping[str, Any] | None = None) -> str:
    config, backend = _start(config_settings)
    with _build(config, announce=False, fetch=False):
        hook = getattr(backend, "prepare_metadata_for_build_wheel", None)
        if hook is None:  # -C wheelcuda.build-backend named one without it
            return _metadata_from_wheel(backend.build_wheel, metadata_directory, config.inner)
        return str(hook(metadata_directory, config.inner))


def _get_requires_for_build_editable(config_settings: Mapping[str, Any] | None = None
                                     ) -> list[str]:
    return _requires("editable", config_settings)


def _editable_backend(config_settings: Mapping[str, Any] | None) -> tuple[Config, Any]:
    config, backend = _start(config_settings)
    if not hasattr(backend, "build_editable"):
        with _reported():
            name = backend_name(config, read_project(Context.current().cwd))
            raise WheelcudaError(
                f"the build backend {name} has no build_editable "
                "hook (PEP 660): it cannot make an editable install",
                "install without -e, or wrap a backend that has one")
    return config, backend


def _prepare_metadata_for_build_editable(metadata_directory: str,
                                         config_settings: Mapping[str, Any] | None = None
                                         ) -> str:
    config, backend = _editable_backend(config_settings)
    with _build(config, announce=False, fetch=False):
        hook = getattr(backend, "prepare_metadata_for_build_editable", None)
        if hook is None:
            return _metadata_from_wheel(backend.build_editable, metadata_directory,
                                        config.inner)
        return str(hook(metadata_directory, config.inner))


def _build_editable(wheel_directory: str, config_settings: Mapping[str, Any] | None = None,
                    metadata_directory: str | None = None) -> str:
    config, backend = _editable_backend(config_settings)
    with _build(config, announce=True):
        return str(backend.build_editable(wheel_directory, config.inner, metadata_directory))


def _metadata_from_wheel(build: Callable[..., Any], metadata_directory: str,
                         settings: dict[str, Any] | None) -> str:
    """What frontends do for a backend without prepare_metadata: build the wheel and
    take its ``.dist-info``."""
    with tempfile.TemporaryDirectory(prefix="wheelcuda-metadata-") as tmp:
        name = str(build(tmp, settings))
        with zipfile.ZipFile(os.path.join(tmp, name)) as whl:
            members = [m for m in whl.namelist() if m.split("/")[0].endswith(".dist-info")]
            for member in members:
                whl.extract(member, metadata_directory)
    return members[0].split("/")[0]


#: The hooks a backend may lack; each is offered when the wrapped backend has the one
#: it stands on (PEP 517 frontends fall back when a hook is missing).
_OPTIONAL: dict[str, tuple[str, Callable[..., Any]]] = {
    "prepare_metadata_for_build_wheel": ("prepare_metadata_for_build_wheel",
                                         _prepare_metadata_for_build_wheel),
    "get_requires_for_build_editable": ("build_editable", _get_requires_for_build_editable),
    "prepare_metadata_for_build_editable": ("prepare_metadata_for_build_editable",
                                            _prepare_metadata_for_build_editable),
    "build_editable": ("build_editable", _build_editable),
}


def __getattr__(name: str) -> Any:
    """The optional hooks, when the backend pyproject.toml names has them (the config
    settings are not known when a frontend looks): a frontend then falls back as it
    would with that backend itself."""
    if name in _OPTIONAL:
        needs, hook = _OPTIONAL[name]
        try:
            backend = load_backend(backend_name(Config(), read_project(Context.current().cwd)))
        except WheelcudaError:
            return hook  # calling it reports the error
        if hasattr(backend, needs):
            return hook
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_OPTIONAL])
