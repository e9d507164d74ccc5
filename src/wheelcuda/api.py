"""The Python API: the same answers the command line gives, as functions.

    >>> import wheelcuda
    >>> wheelcuda.cuda_home()                    # Path of the synthesized CUDA_HOME
    >>> wheelcuda.build_env(arch="12.0")         # {"CUDA_HOME": ..., "PATH": ..., ...}

Every function takes ``python`` (an interpreter or environment folder; None means the
active virtual environment, else this interpreter) and raises a
:class:`~wheelcuda.errors.WheelcudaError` subclass whose text says what to do.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from . import arch as archmod
from . import (
    cache,
    catalog,
    checks,
    environ,
    gpus,
    hostcc,
    interpreter,
    locate,
    plan,
    store,
    torchinfo,
    warm,
)
from .errors import ArchError, ComponentError, HostCompilerError, TorchError, WheelcudaError
from .materialize import Home, ensure


@dataclass(frozen=True)
class Setup:
    """What an environment holds, and which CUDA major the tree would use."""

    target: interpreter.Target
    inventory: locate.Inventory
    torch: torchinfo.Torch | None
    major: int

    @property
    def roots(self) -> tuple[str, ...]:
        return self.inventory.roots

    def compiler_parts(self) -> list[locate.Found]:
        return [f for c in catalog.COMPILER if (f := self.inventory.get(c.name, self.major))]

    def problems(self) -> list[checks.Problem]:
        found = checks.component_problems(self.inventory, self.major, self.torch)
        release = checks.compiler_release(self.inventory, self.major)
        return found + checks.torch_problems(self.torch, release, self.target.python)


def roots_for(target: interpreter.Target, torch: torchinfo.Torch | None) -> tuple[str, ...]:
    """Where components are looked for: the environment's site folders, then the
    toolkit store's set matching torch (fetched by ``wheelcuda install``)."""
    if torch is None or torch.cuda_major is None:
        return target.site_dirs
    fetched = store.existing(checks.wanted_specifier(torch, torch.cuda_major))
    return (*target.site_dirs, fetched) if fetched else target.site_dirs


@functools.cache
def inspect(python: str | None = None) -> Setup:
    """Locate components and torch in the target environment (no tree is written)."""
    target = interpreter.resolve(python)
    torch = torchinfo.find_torch(target.site_dirs)
    inventory = locate.locate(roots_for(target, torch))
    return Setup(target, inventory, torch, checks.choose_major(inventory, torch))


def _raise_first(problems: list[checks.Problem], kinds: tuple[str, ...]) -> None:
    errors = {"missing": ComponentError, "components": ComponentError, "torch": TorchError}
    for p in problems:
        if p.severity == "error" and p.kind in kinds:
            raise errors.get(p.kind, WheelcudaError)(p.message, p.fix)


def tree_plan(setup: Setup) -> plan.TreePlan:
    """The tree for this setup's component set (pure once the folders are listed)."""
    found = [f for f in setup.inventory.found if f.major == setup.major]
    sources = list(dict.fromkeys(f.folder for f in found))
    metas = (locate.dist_version(r, catalog.METAPACKAGE) for r in setup.roots)
    release = checks.compiler_release(setup.inventory, setup.major)
    cuda = next((v for v in metas if v), None) or f"{release}.0"
    parts = [(f.component.name, f.version, f.folder) for f in found]
    # The wrapper runs on this Python: each wheelcuda installation gets its own tree.
    # version.json holds the metapackage's version: a change there is a new tree too.
    parts += [("wrapper", _wrapper_version(), sys.executable), (catalog.METAPACKAGE, cuda, "")]
    key = plan.tree_key(setup.major, parts, catalog.target_dir())
    versions = {f.component.name: f.version for f in setup.compiler_parts() if f.version}
    return plan.plan_tree(key, sources, plan.os_listdir, versions=versions,
                          cuda=".".join(cuda.split(".")[:3]),
                          target_dir=catalog.target_dir(),
                          wrapper=plan.wrapper_files(sys.executable, _wrapper_source()))


@functools.cache
def _wrapper_source() -> str:
    return resources.files("wheelcuda").joinpath("_nvcc_wrapper.py").read_text()


def _wrapper_version() -> str:
    return hashlib.sha256(_wrapper_source().encode()).hexdigest()[:12]


def home_for(setup: Setup) -> Home:
    """Synthesize (or reuse) the tree for ``setup``; raise if its components cannot build."""
    _raise_first(setup.problems(), ("missing", "components"))
    return ensure(tree_plan(setup))


def cuda_home(python: str | None = None) -> Path:
    """Path of the synthesized CUDA_HOME for the target environment."""
    return home_for(inspect(python)).path


def choose_archs(cli: str | None, environ_: Mapping[str, str]) -> tuple[tuple[archmod.Arch, ...],
                                                                        str]:
    """The arch list and its source: ``--arch``, TORCH_CUDA_ARCH_LIST, then the GPUs."""
    if cli or environ_.get("TORCH_CUDA_ARCH_LIST", "").strip():
        return archmod.choose(cli, environ_.get("TORCH_CUDA_ARCH_LIST"), (), None)
    probe = gpus.probe_gpus()
    caps = [g.compute_capability for g in probe.gpus]
    return archmod.choose(None, None, caps, probe.reason)


def check_host(home: Home, environ_: Mapping[str, str]) -> hostcc.HostCompiler:
    """The host compiler nvcc will run; raise when this nvcc does not accept it."""
    command = hostcc.host_compiler_command(environ_)
    compiler = hostcc.probe_host_compiler(command)
    limits = hostcc.HostLimits(home.gcc_max_major, home.clang_max_major)
    message = hostcc.check_host_compiler(compiler, limits, home.nvcc_version)
    if message:
        raise HostCompilerError(message)
    return compiler


def build_env(python: str | None = None, arch: str | None = None,
              current: Mapping[str, str] | None = None, *, all_archs: bool = False
              ) -> dict[str, str]:
    """The variables a build needs (``wheelcuda env``), after every check passes."""
    current = os.environ if current is None else current
    return _checked_env(python, arch, current, all_archs)[0]


def _checked_env(python: str | None, arch: str | None, current: Mapping[str, str],
                 all_archs: bool
                 ) -> tuple[dict[str, str], Setup, plan.TreePlan, Home, hostcc.HostCompiler]:
    """The variables, and what they were made from: setup, tree, home, host compiler."""
    setup = inspect(python)
    # A plain CMake or Makefile build needs no torch: only a torch that cannot match
    # the compiler (CPU-only, other CUDA major) stops ``env``.
    kinds = ("missing", "components", "torch") if setup.torch else ("missing", "components")
    _raise_first(setup.problems(), kinds)  # includes home_for's checks
    tree = tree_plan(setup)
    home = ensure(tree)
    archs, _ = choose_archs(arch, current)
    archmod.check(archs, home.gpu_codes, home.nvcc_version)
    compiler = check_host(home, current)
    homes = str(cache.cache_root(current) / "homes")
    variables = environ.build_environ(str(home.path), archs, current, homes,
                                      all_archs=all_archs)
    return variables, setup, tree, home, compiler


def build_env_stamped(python: str | None = None, arch: str | None = None,
                      current: Mapping[str, str] | None = None, *, all_archs: bool = False
                      ) -> tuple[dict[str, str], list[list[object]] | None]:
    """:func:`build_env`'s answer, and stamps of every file it came from, for the warm
    path of ``wheelcuda env`` (:mod:`warm`). The stamps are None when the environment
    changed while it was read: such an answer is not kept."""
    current = os.environ if current is None else current
    target = interpreter.resolve(python)
    early = [*warm.own_sources(), target.python,
             os.path.join(target.prefix, "pyvenv.cfg"), *target.site_dirs,
             str(cache.cache_root(current) / "toolkits")]
    before = cache.fingerprint(early)
    variables, setup, tree, home, compiler = _checked_env(python, arch, current, all_archs)
    late = [*setup.roots[len(target.site_dirs):], str(home.path / plan.MANIFEST),
            *(str(home.path / link.path) for link in tree.links),
            *(str(home.path / rel) for rel, _ in tree.files), compiler.path or ""]
    stamps = cache.fingerprint(early + late)
    return variables, stamps if stamps[:len(early)] == before else None


__all__ = ["ArchError", "Setup", "build_env", "build_env_stamped", "cuda_home", "inspect"]
