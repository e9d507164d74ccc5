"""The checks of one run that are neither the toolkit's nor the tree's own: the arch
list, the build needs, the installer, what can be known before a fetch, whether this
nvcc takes the host compiler and builds the archs, someone else's CUDA_HOME. Each
returns problems (_rules/checks.py), gathered by the pipeline."""

from __future__ import annotations

import os
import shlex
import tempfile
from pathlib import Path

from .._context import Context
from .._data import catalog
from .._probe import gpus, locate
from .._rules import arch as archmod
from .._rules import hostcc
from .._rules import installer as installer_rules
from .._rules.checks import Kind, Problem, Severity
from .._store import paths
from .._store.layout import Layout
from .._store.trees import Home
from .._values import HostCompiler, Target
from ..errors import WheelcudaError
from .request import BUILD_NEEDS, Request
from .toolkit import Toolkit


def archs(ctx: Context, request: Request, problems: list[Problem]
           ) -> tuple[tuple[archmod.Arch, ...], str | None]:
    if not request.need_archs:
        return (), None
    origin, given_arch = request.arch_origin, request.arch
    if origin and given_arch is not None and given_arch.strip().lower() != "native":
        try:  # the backend's setting: given, even empty
            return archmod.parse(given_arch), origin
        except WheelcudaError as exc:
            problems.append(Problem(Kind.ARCH, f"{origin}={given_arch!r}: {exc.message}",
                                    exc.fix))
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


def cache_writable(layout: Layout) -> list[Problem]:
    """A build writes its key's folder, lock and log in the cache: one it cannot write
    stops it, and doctor says so too."""
    why = layout.write_problem()
    if why is None:
        return []
    return [Problem(Kind.CACHE, f"a build cannot write wheelcuda's cache: {why}",
                    f"make {layout.root} writable, or point {paths.ENV_VAR} at a folder of "
                    "yours on a writable disk")]


def writable_folder(ctx: Context, layout: Layout) -> Path | None:
    """A folder a cache could live in when ``layout``'s cannot be written (a cache
    mounted read-only, a read-only home): the default cache folder when
    WHEELCUDA_CACHE_DIR moved it, else one of this user's under TMPDIR; None when
    neither can be written. A folder that exists must be this user's alone, as the
    cache's must (:meth:`Layout.check`)."""
    default = paths.root({k: v for k, v in ctx.environ.items() if k != paths.ENV_VAR})
    temp = ctx.get("TMPDIR") or tempfile.gettempdir()
    candidates = [Path(default), Path(temp, f"wheelcuda-{os.getuid()}")]
    for folder in candidates:
        if folder == layout.root:
            continue
        try:
            unsafe = paths.unsafe_reason(folder.stat(), os.getuid())
        except FileNotFoundError:
            unsafe = None
        except OSError:
            continue
        if unsafe is None and Layout(folder).write_problem() is None:
            return folder
    return None


def missing_build_needs(ctx: Context, target: Target) -> list[str]:
    """The build needs absent from the target (ninja may also come from PATH): what
    ``install`` installs into it before it builds (one answer for doctor and install)."""
    import shutil  # noqa: PLC0415 (only install and doctor need it)

    search = os.pathsep.join([os.path.dirname(target.python), ctx.get("PATH") or ""])
    return [n for n in BUILD_NEEDS
            if not locate.installed_version(target.site_dirs, n)
            and not (n == "ninja" and shutil.which("ninja", path=search))]


def build_needs(ctx: Context, target: Target) -> list[Problem]:
    """Build needs absent from the environment: a warning, not an error. A venv made
    by ``uv venv`` has none of them (and torch 2.14.1 brings only setuptools), so
    ``install`` installs them there itself before it builds, and only then; builds
    without isolation outside install need them too."""
    missing = missing_build_needs(ctx, target)
    if not missing:
        return []
    return [Problem(Kind.BUILD_NEEDS,
                    f"{', '.join(missing)} missing in {target.python}: "
                    "--no-build-isolation builds use the environment's own (`wheelcuda "
                    "install` installs them there before it builds)",
                    f"uv pip install --python {shlex.quote(target.python)} {' '.join(missing)}",
                    Severity.WARNING)]


def installer(ctx: Context, request: Request, problems: list[Problem]
               ) -> installer_rules.Tool | None:
    """The installer, for the requests that install or fetch, or say what a fetch would
    do (the clang toolkit's wheels come through it, so whether clang can stand in for
    NVIDIA's archives depends on it); an unusable choice is a problem known before any
    fetch."""
    if not (request.build_needs or request.fetch or request.looks):
        return None
    from .._probe import installer  # noqa: PLC0415 (only install, doctor and fetch need it)

    try:
        return installer.choose(ctx)
    except WheelcudaError as exc:
        problems.append(Problem.of(Kind.BUILD_NEEDS, exc))
        return None


def before_fetch(toolkit: Toolkit, archs: tuple[archmod.Arch, ...], host: HostCompiler
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


def host_problems(toolkit: Toolkit, host: HostCompiler) -> list[Problem]:
    """Whether this nvcc takes the host compiler, from the compiler's own
    ``crt/host_config.h`` (read before the tree is built: the tree's driver stub is
    compiled with that host compiler)."""
    if host.path is None:  # said before the fetch (_before_fetch)
        return []
    if toolkit.by_clang:  # clang compiles the host half, not this one
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


def arch_problems(home: Home, archs: tuple[archmod.Arch, ...]) -> list[Problem]:
    try:
        archmod.check(archs, home.gpu_codes, home.nvcc_version, home.compiler)
    except WheelcudaError as exc:
        return [Problem.of(Kind.ARCH, exc)]
    return []


def other_cuda_home(other: str | None) -> list[Problem]:
    if not other:
        return []
    return [Problem(
        Kind.ENVIRONMENT, f"{other} is set: in this shell torch and CMake build with that "
        "toolkit, not with wheelcuda's tree (torch reads CUDA_HOME first)",
        'eval "$(wheelcuda env)" to use wheelcuda\'s tree, or unset it', Severity.WARNING)]
