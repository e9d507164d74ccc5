"""Which environment a wheel being built is for, as far as the backend can tell.

A PEP 517 frontend does not say where the wheel will be installed, and an isolated
build environment installs the newest torch the index has unless told otherwise: an
extension built against it does not load beside the target's own torch (a cu128
target gets a binary linked to ``libcudart.so.13``; see docs/facts.md, "Isolated builds
and torch"). The backend compares the two; this module finds the target's torch:

- pip runs the backend on the target interpreter itself (its sitecustomize takes the
  target's site folders off ``sys.path``): ``sys.prefix`` is the target, unless pip's
  own command line says ``--target``/``--prefix``.
- uv runs it in a venv of its own, as a child of the ``uv`` process: uv's command line
  (``--python``/``-p``), its ``VIRTUAL_ENV``, ``UV_PROJECT_ENVIRONMENT``, and, for a
  project command (``uv sync``, ``uv add``, ``uv lock``), the project's uv.lock.

Read from ``/proc`` (Linux, where these builds run): nothing else is touched. Anything
unreadable is "unknown", never an error.
"""

from __future__ import annotations

import itertools
import os
import re
import sysconfig
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from .._context import Context
from ..errors import WheelcudaError
from . import interpreter, locate, uvlock
from . import torch as torch_probe

#: uv commands that work on a project (its uv.lock pins torch).
_PROJECT = ("sync", "add", "lock", "run", "remove")


@dataclass(frozen=True)
class Target:
    """Where the wheel goes: an interpreter (whose own ``sys.path`` is asked: a venv may
    see torch through a .pth file), site folders, or a uv.lock."""

    frontend: str  # "pip", "uv", or "" (unknown)
    site_dirs: tuple[str, ...] = ()
    lock: str | None = None
    why: str = ""
    python: str | None = None


def _proc(pid: int, name: str) -> bytes | None:
    try:
        with open(f"/proc/{pid}/{name}", "rb") as f:
            return f.read()
    except OSError:
        return None


#: The frontend's variables this module reads (from /proc, not from our own environment:
#: the one exception to "only _context.py reads the environment", and only these).
_PARENT_VARS = ("VIRTUAL_ENV", "UV_PROJECT_ENVIRONMENT")


def _parent() -> tuple[list[str], dict[str, str], str] | None:
    """The parent process's argv, the variables of :data:`_PARENT_VARS`, its folder."""
    pid = os.getppid()
    argv, environ = _proc(pid, "cmdline"), _proc(pid, "environ")
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return None
    if argv is None:
        return None
    env = {k: v for k, _, v in (e.partition("=") for e in
                                (environ or b"").decode(errors="replace").split("\0"))
           if k in _PARENT_VARS}
    return [a for a in argv.decode(errors="replace").split("\0") if a], env, cwd


def _option(argv: Sequence[str], *names: str) -> str | None:
    for i, word in enumerate(argv):
        for name in names:
            if word == name and i + 1 < len(argv):
                return argv[i + 1]
            if word.startswith(name + "=") and name.startswith("--"):
                return word.split("=", 1)[1]
    return None


def _site_of(prefix: str) -> tuple[str, ...]:
    paths = sysconfig.get_paths(vars={"base": prefix, "platbase": prefix})
    return tuple(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def _venv_of(python_or_dir: str, cwd: str) -> str | None:
    """The environment folder of ``--python X`` (an interpreter or a folder)."""
    path = os.path.join(cwd, python_or_dir)
    if os.path.isdir(path):
        return path
    folder = os.path.dirname(os.path.dirname(os.path.abspath(path)))
    return folder if os.path.isfile(os.path.join(folder, "pyvenv.cfg")) else None


def _uv(argv: list[str], env: dict[str, str], cwd: str) -> Target:
    words = [a for a in argv[1:] if not a.startswith("-")]
    given = _option(argv, "--python", "-p")
    if words[:1] == ["pip"]:
        target = _option(argv, "--target", "-t")
        if target:
            return Target("uv", (os.path.join(cwd, target),), None, f"uv pip --target {target}")
        venv = (_venv_of(given, cwd) if given else None) or env.get("VIRTUAL_ENV") or \
            interpreter.dot_venv(cwd)
        if venv:
            return Target("uv", _site_of(venv), None, f"uv pip's environment {venv}",
                          _python_of(venv))
        return Target("uv", why="uv pip's environment could not be told")
    if words[:1] and words[0] in _PROJECT:
        lock = uvlock.find_lock(_option(argv, "--directory", "--project") or cwd)
        venv = env.get("UV_PROJECT_ENVIRONMENT") or \
            (os.path.join(os.path.dirname(lock), ".venv") if lock else None)
        site = _site_of(venv) if venv and os.path.isdir(venv) else ()
        return Target("uv", site, lock, f"the uv project of {lock}" if lock else "",
                      _python_of(venv) if venv else None)
    return Target("uv", why=f"`uv {' '.join(words[:2])}` installs into no environment")


def _python_of(venv: str) -> str | None:
    python = os.path.join(venv, "bin", "python")
    return python if os.path.exists(python) else None


def _pip(argv: list[str], cwd: str, ctx: Context) -> Target:
    for flag in ("--target", "-t"):
        target = _option(argv, flag)
        if target:
            return Target("pip", (os.path.join(cwd, target),), None, f"pip --target {target}")
    prefix = _option(argv, "--prefix")
    if prefix:
        return Target("pip", _site_of(os.path.join(cwd, prefix)), None, f"pip --prefix {prefix}")
    if "wheel" in argv or "download" in argv:
        return Target("pip", why="pip wheel builds for no environment")
    base = os.path.dirname(os.path.dirname(ctx.executable))
    return Target("pip", _site_of(base), None, f"pip's environment {base}", ctx.executable)


_PIP = re.compile(r"pip[\d.]*")


def _is_pip(argv: Sequence[str]) -> bool:
    """pip's own process: ``pip ...`` (the kernel shows a console script as ``python
    /venv/bin/pip ...``), ``python -m pip ...``, or the runner that ``pip --python X``
    starts under X (pip 22.3+)."""
    names = [os.path.basename(a) for a in argv[:3]]
    if not names:
        return False
    script = names[1] if len(names) > 1 and names[0].startswith("python") else names[0]
    return (_PIP.fullmatch(script) is not None or "__pip-runner__.py" in names
            or any(p == ("-m", "pip") for p in itertools.pairwise(argv)))


def target_of_build(ctx: Context) -> Target:
    """The environment the wheel this process builds is for (see the module's doc)."""
    parent = _parent()
    if parent is None:
        return Target("", why="the frontend could not be read")
    argv, env, cwd = parent
    program = os.path.basename(argv[0]) if argv else ""
    if program == "uv" or program.startswith("uv-"):
        return _uv(argv, env, cwd)
    if _is_pip(argv):
        return _pip(argv, cwd, ctx)
    return Target("", why=f"built by {program or 'an unknown frontend'}")


@dataclass(frozen=True)
class TargetTorch:
    """torch where the wheel goes: its version, its CUDA, and where that was read."""

    version: str
    cuda: str | None
    where: str


def target_torch(target: Target, ctx: Context) -> TargetTorch | None:
    """torch in the target, if it has one. A project command's uv.lock first: the
    environment may be stale (``uv add torch==NEW`` builds before it syncs)."""
    if target.lock:
        locked = uvlock.torch_from_lock(target.lock)
        if locked is not None:
            return TargetTorch(locked.version, locked.cuda, target.lock)
    site_dirs = target.site_dirs
    if target.python:
        try:  # its own sys.path: .pth files, a user site
            info = interpreter.ask(target.python, ctx.with_env(PYTHONPATH=None), child=True)
            site_dirs = tuple(info["site_dirs"]) or site_dirs
        except WheelcudaError:
            pass
    found = torch_probe.find_torch(site_dirs) if site_dirs else None
    if found is None:
        return None
    return TargetTorch(locate.installed_version(site_dirs, "torch") or found.version,
                       found.cuda, target.why)


def same_torch(a_version: str, a_cuda: str | None, b_version: str, b_cuda: str | None
               ) -> bool:
    """One torch build for an extension's sake: the same public version (``2.14.1`` from
    PyPI is ``2.14.1+cu130`` from PyTorch's index) and the same CUDA, when both say."""
    try:
        public = Version(a_version).public == Version(b_version).public
    except InvalidVersion:
        public = a_version == b_version
    return public and (a_cuda is None or b_cuda is None or a_cuda == b_cuda)
