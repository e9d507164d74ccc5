"""The one module that runs child processes.

Argument lists only (never a shell), an explicit environment (always given: the
caller's context, through :func:`child_environ`), and failures turned into
:class:`ToolError` with the command line and its last output lines.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Mapping, Sequence

from .errors import ToolError

#: Variables that would make a child Python import the wrong packages.
_DROPPED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE")


def child_environ(base: Mapping[str, str], overrides: Mapping[str, str] | None = None
                  ) -> dict[str, str]:
    """The environment for a child: ``base`` without PYTHON* leaks, plus ``overrides``."""
    env = {k: v for k, v in base.items() if k not in _DROPPED}
    if overrides:
        env.update(overrides)
    return env


def _start_error(argv: Sequence[str], exc: OSError) -> ToolError:
    """Why a child could not start: missing, not allowed, or not an executable at all
    (ENOEXEC: a script without a #! line, a binary for another CPU)."""
    if isinstance(exc, FileNotFoundError):
        return ToolError(f"cannot run {argv[0]}: not found")
    if isinstance(exc, PermissionError):
        return ToolError(f"cannot run {argv[0]}: permission denied")
    return ToolError(f"cannot run {argv[0]}: {exc.strerror or exc}")


def capture(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    timeout: float = 60,
    cwd: str | None = None,
) -> str:
    """Run ``argv`` and return its stdout; raise :class:`ToolError` when it fails."""
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            env=dict(env),
            timeout=timeout,
            cwd=cwd,
            check=False,
        )
    except OSError as exc:
        raise _start_error(argv, exc) from exc
    except subprocess.TimeoutExpired as exc:
        raise ToolError(f"{shlex.join(argv)} did not finish within {timeout:g} s") from exc
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-8:])
        raise ToolError(f"{shlex.join(argv)} failed with exit code {done.returncode}:\n{tail}")
    return done.stdout


def call(argv: Sequence[str], *, env: Mapping[str, str]) -> int:
    """Run ``argv`` with inherited stdio (output streams to the user); return its exit
    code. ``env`` is the whole environment: build it with :func:`child_environ`."""
    try:
        return subprocess.call(list(argv), env=dict(env))
    except OSError as exc:
        raise _start_error(argv, exc) from exc
