"""The target environment: which Python gets the packages, and where its imports look.

Default: the active virtual environment (``VIRTUAL_ENV``), else the interpreter running
wheelcuda; ``--python`` picks another, as ``uv pip --python`` does (a Python executable
or an environment folder). wheelcuda itself may live elsewhere (a uv tool), so another
interpreter is asked once, in a child process, and the answer is kept in the cache
until that interpreter or its site-packages change: the warm path spawns nothing.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .. import proc
from ..context import Context
from ..errors import InterpreterError, ToolError
from . import _interp_probe

__all__ = ["Target", "ask", "executable", "requested_python", "target", "watch"]

#: The oldest target Python: what the probe (_interp_probe) and the fixes promise.
MIN_VERSION = (3, 8)


@dataclass(frozen=True)
class Target:
    """A Python environment wheelcuda reads from and installs into."""

    python: str
    prefix: str
    version: tuple[int, int, int]
    site_dirs: tuple[str, ...]

    @property
    def tag(self) -> str:
        """``cp311`` style interpreter tag."""
        return f"cp{self.version[0]}{self.version[1]}"


def requested_python(python: str | None, ctx: Context) -> str:
    """The interpreter path meant by ``--python``, ``VIRTUAL_ENV`` or ourselves (pure)."""
    if python:
        return python
    venv = ctx.get("VIRTUAL_ENV")
    if venv:
        return os.path.join(venv, "bin", "python")
    return ctx.executable


def executable(python: str, ctx: Context) -> str:
    """An environment folder becomes its ``bin/python``; anything else must run. The
    path is made absolute against ``ctx``'s working folder."""
    path = os.path.normpath(os.path.join(ctx.cwd, os.path.expanduser(python)))
    if os.path.isdir(path):
        found = [os.path.join(path, name) for name in ("bin/python", "bin/python3")
                 if os.path.lexists(os.path.join(path, name))]
        if not found:
            raise InterpreterError(
                f"{python} is a folder but holds no bin/python: not a Python environment",
                f"uv venv {python}   (or pass --python /path/to/bin/python)",
            )
        path = found[0]
    if not os.path.exists(path):
        if os.path.islink(path):
            raise _dangling(path)
        raise InterpreterError(
            f"no Python at {python}",
            "pass --python with an existing interpreter or environment, "
            "or activate one: source .venv/bin/activate",
        )
    if not os.access(path, os.X_OK):
        raise InterpreterError(f"{python} is not executable, so it is not a Python",
                               "pass --python /path/to/bin/python")
    return path


def _dangling(path: str) -> InterpreterError:
    """A link to nothing: most often an environment whose base Python was removed or
    upgraded away, which is neither "no Python here" nor "not an environment"."""
    env = os.path.dirname(os.path.dirname(path))
    if os.path.isfile(os.path.join(env, "pyvenv.cfg")):
        return InterpreterError(
            f"{path} links to {os.readlink(path)}, which no longer exists: the Python "
            f"the environment {env} was made with is gone",
            f"make it again with an installed Python: uv venv --clear {env}",
        )
    return InterpreterError(f"{path} links to {os.readlink(path)}, which does not exist",
                            "pass --python with an existing interpreter or environment")


def watch(python: str, info: Mapping[str, Any]) -> list[str]:
    """Files whose change invalidates what we know of an interpreter."""
    prefix = str(info.get("prefix", ""))
    return [python, os.path.join(prefix, "pyvenv.cfg"), *map(str, info.get("site_dirs", []))]


def ask(python: str, ctx: Context) -> dict[str, Any]:
    """What ``python`` says of itself (a child process, except for ourselves)."""
    if python == ctx.executable:
        return _ourselves(ctx)
    code = resources.files(__package__ or "wheelcuda.probe").joinpath(
        "_interp_probe.py").read_text()
    try:
        out = proc.capture([python, "-E", "-c", code], env=proc.child_environ(ctx.environ),
                           timeout=60)
        info = json.loads(out.strip().splitlines()[-1])
    except (ToolError, ValueError, IndexError) as exc:
        raise InterpreterError(f"{python} did not answer as a Python interpreter: {exc}",
                               "pass --python with a Python 3.8+ executable") from exc
    return _checked(python, info)


def _checked(python: str, info: object) -> dict[str, Any]:
    """The probe's answer, if it has every key of the right type (issue 8, defect 3:
    an answer missing ``version`` used to end in a KeyError traceback)."""
    ok = (isinstance(info, dict) and isinstance(info.get("prefix"), str)
          and isinstance(info.get("site_dirs"), list)
          and all(isinstance(d, str) for d in info["site_dirs"])
          and isinstance(info.get("version"), list) and len(info["version"]) >= 3
          and all(isinstance(v, int) for v in info["version"][:3]))
    if not ok:
        raise InterpreterError(f"{python} did not answer as a Python interpreter "
                               "(its answer lacks prefix, version or site_dirs)",
                               "pass --python with a Python 3.8+ executable")
    version = tuple(info["version"][:3])  # type: ignore[index]
    if version < MIN_VERSION:
        shown = ".".join(map(str, version))
        raise InterpreterError(f"{python} is Python {shown}: wheelcuda installs into "
                               f"Python {'.'.join(map(str, MIN_VERSION))} or later only",
                               "pass --python with a Python 3.8+ executable")
    return info  # type: ignore[return-value]


def _ourselves(ctx: Context) -> dict[str, Any]:
    """The running interpreter, without a child process. Leave out what ``-E`` and
    safe_path leave out for others: PYTHONPATH, and sys.path[0] (the script's folder,
    or the working folder under -m)."""
    info = dict(_interp_probe.describe())  # type: ignore[no-untyped-call]
    extra = set((ctx.get("PYTHONPATH") or "").split(os.pathsep)) - {""}
    if sys.path and not getattr(sys.flags, "safe_path", False):
        extra.add(sys.path[0])
    info["site_dirs"] = [d for d in info["site_dirs"] if d not in extra]
    return info


def target(python: str, info: Mapping[str, Any]) -> Target:
    """The :class:`Target` for an interpreter's (checked) answer."""
    info = _checked(python, dict(info))
    major, minor, micro = info["version"][:3]
    return Target(python=python, prefix=info["prefix"], version=(major, minor, micro),
                  site_dirs=tuple(info["site_dirs"]))
