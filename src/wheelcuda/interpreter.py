"""The target environment: which Python gets the packages, and where its imports look.

Default: the active virtual environment (``VIRTUAL_ENV``), else the interpreter running
wheelcuda; ``--python`` picks another, as ``uv pip --python`` does (a Python executable
or an environment folder). wheelcuda itself may live elsewhere (a uv tool), so another
interpreter is asked once, in a child process, and the answer is kept in the cache
until that interpreter or its site-packages change: the warm path spawns nothing.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from . import _interp_probe, cache, proc
from .errors import InterpreterError, ToolError


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


def requested_python(python: str | None, environ: Mapping[str, str]) -> str:
    """The interpreter path meant by ``--python``, ``VIRTUAL_ENV`` or ourselves (pure)."""
    if python:
        return python
    if environ.get("VIRTUAL_ENV"):
        return os.path.join(environ["VIRTUAL_ENV"], "bin", "python")
    return sys.executable


def _executable(python: str) -> str:
    """An environment folder becomes its ``bin/python``; anything else must run."""
    path = os.path.abspath(os.path.expanduser(python))
    if os.path.isdir(path):
        for name in ("bin/python", "bin/python3"):
            if os.path.exists(os.path.join(path, name)):
                return os.path.join(path, name)
        raise InterpreterError(
            f"{python} is a folder but holds no bin/python: not a Python environment",
            f"uv venv {python}   (or pass --python /path/to/bin/python)",
        )
    if not os.path.exists(path):
        raise InterpreterError(
            f"no Python at {python}",
            "pass --python with an existing interpreter or environment, "
            "or activate one: source .venv/bin/activate",
        )
    if not os.access(path, os.X_OK):
        raise InterpreterError(f"{python} is not executable, so it is not a Python",
                               "pass --python /path/to/bin/python")
    return path


def _watch(python: str, info: Mapping[str, object]) -> list[str]:
    """Files whose change invalidates what we know of an interpreter."""
    prefix = str(info.get("prefix", ""))
    dirs = [str(d) for d in info.get("site_dirs", []) or []]  # type: ignore[attr-defined]
    return [python, os.path.join(prefix, "pyvenv.cfg"), *dirs]


def _ask(python: str) -> dict[str, object]:
    source = resources.files(_interp_probe.__package__ or "wheelcuda")
    code = source.joinpath("_interp_probe.py").read_text()
    try:
        out = proc.capture([python, "-E", "-c", code], timeout=60)
        info = json.loads(out.strip().splitlines()[-1])
    except (ToolError, ValueError, IndexError) as exc:
        raise InterpreterError(f"{python} did not answer as a Python interpreter: {exc}",
                               "pass --python with a Python 3.8+ executable") from exc
    if not isinstance(info, dict):
        raise InterpreterError(f"{python} did not answer as a Python interpreter")
    return info


def _describe(python: str) -> dict[str, object]:
    if python == sys.executable:
        # Ourselves: no child process. Drop PYTHONPATH entries, as ``-E`` does for others.
        info = dict(_interp_probe.describe())  # type: ignore[no-untyped-call]
        # Leave out what -E and safe_path leave out for others: PYTHONPATH, and
        # sys.path[0] (the script's folder, or the working folder under -m).
        extra = set(os.environ.get("PYTHONPATH", "").split(os.pathsep)) - {""}
        if sys.path and not getattr(sys.flags, "safe_path", False):
            extra.add(sys.path[0])
        info["site_dirs"] = [d for d in info["site_dirs"] if d not in extra]
        return info
    root = cache.cache_root()
    found = cache.memo_get(root, "interpreter", python)
    if found is not None:
        return found
    info = _ask(python)
    cache.memo_put(root, "interpreter", python, _watch(python, info), info)
    return info


@functools.cache
def resolve(python: str | None = None) -> Target:
    """The target environment for ``--python`` (None: active venv, else ourselves)."""
    path = _executable(requested_python(python, os.environ))
    info = _describe(path)
    version = tuple(int(v) for v in info["version"])  # type: ignore[attr-defined]
    return Target(
        python=path,
        prefix=str(info["prefix"]),
        version=(version[0], version[1], version[2]),
        site_dirs=tuple(str(d) for d in info["site_dirs"]),  # type: ignore[attr-defined]
    )


def site_dir_of(target: Target) -> Path:
    """The first site folder (where an installer writes), for messages."""
    return Path(target.site_dirs[0]) if target.site_dirs else Path(target.prefix)
