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

This module holds the hooks and their frame; what they decide is in
:mod:`wheelcuda._backend` (``config``: the settings, the project, the wrapped backend;
``plan``: torch, the compiler set to ask for, a build's variables).
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from . import _report as report
from ._backend import team
from ._backend.config import Config, backend_name, load_backend, parse_config, read_project
from ._backend.plan import Plan, compiler_requirements, plan_build
from ._context import Context, patched_environ
from ._pipeline import buildplan
from ._store import fs, paths, wheels
from ._store.layout import Layout
from .errors import WheelcudaError

#: The PEP 517 hooks (the optional ones the wrapped backend has come through
#: ``__getattr__``); what they decide lives in :mod:`wheelcuda._backend`.
__all__ = ["build_sdist", "build_wheel", "get_requires_for_build_sdist",
           "get_requires_for_build_wheel"]

#: The empty CUDA_HOME set while setup.py runs before the compiler is installed.
PLACEHOLDER = "wheelcuda-compiler-not-installed-yet"
DEBUG_VAR = report.DEBUG_VAR


def _python(ctx: Context) -> str:
    """The interpreter whose environment builds: this one (a seam for the tests)."""
    return ctx.executable


# --- the hooks' frame ------------------------------------------------------------------

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
    """The command line's frame (:func:`wheelcuda._report.failure`), with its flags as
    config settings: the message and exit code 1, a bug of ours in one line."""
    try:
        yield
    except (Exception, KeyboardInterrupt) as exc:
        raise SystemExit(report.failure(exc, Context.current(), for_backend)) from None


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
            if buildplan.BUILD_BASE_VAR not in current.environ:
                variables.update(buildplan.build_base(current,
                                                      wheels.write_build_base(Path(tmp))))
            if announce:
                for line in (plan.note, *plan.warnings):
                    report.note(line)
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
        if kind == "wheel" and _on_team_index(ctx, config):
            wanted = [w for w in wanted if w == "ninja"]  # no compiler: nothing compiles
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


def _on_team_index(ctx: Context, config: Config) -> bool:
    """This build's wheel is on a team's index (looked at, not kept)."""
    with tempfile.TemporaryDirectory(prefix="wheelcuda-look-") as tmp:
        return team.lookup(ctx, config, _python(ctx), Path(tmp)) is not None


def build_wheel(wheel_directory: str, config_settings: Mapping[str, Any] | None = None,
                metadata_directory: str | None = None) -> str:
    config, backend = _start(config_settings)
    with _reported():  # the team's wheel of this key, when an index has it
        ctx = Context.current().with_env(PYTHONPATH=None)
        found = team.lookup(ctx, config, _python(ctx), Path(wheel_directory))
        key = None if found else team.publishing(ctx, config, _python(ctx))
    if found is not None:
        return found.name
    with _build(config, announce=True):
        name = str(backend.build_wheel(wheel_directory, config.inner, metadata_directory))
    with _reported():
        team.publish(ctx, Path(wheel_directory, name), key)
    return name


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
