"""The one module that runs child processes.

Argument lists only (never a shell), an explicit environment (always given: the
caller's context, through :func:`child_environ`), and failures turned into
:class:`ToolError` with the command line and its last output lines.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import ToolError

#: How :func:`capture` ends the message of a child that failed without a word.
SILENT = "and printed nothing"

#: Variables that would make a child Python import the wrong packages.
_DROPPED = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE")


def child_environ(base: Mapping[str, str], overrides: Mapping[str, str] | None = None,
                  *, drop: Sequence[str] = ()) -> dict[str, str]:
    """The environment for a child: ``base`` without PYTHON* leaks and ``drop``, plus
    ``overrides``."""
    env = {k: v for k, v in base.items() if k not in _DROPPED and k not in drop}
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
    given: str | None = None,
) -> str:
    """Run ``argv`` (``given`` on its stdin) and return its stdout; raise
    :class:`ToolError` when it fails."""
    try:
        done = subprocess.run(
            list(argv),
            input=given,
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
        if not tail:  # not a colon with nothing after it
            raise ToolError(f"{shlex.join(argv)} failed with exit code {done.returncode} "
                            f"{SILENT}")
        raise ToolError(f"{shlex.join(argv)} failed with exit code {done.returncode}:\n{tail}")
    return done.stdout


def stream(argv: Sequence[str], *, env: Mapping[str, str], timeout: float,
           note: Callable[[str], None], every: float = 15.0) -> tuple[int, str]:
    """Run ``argv`` with its output copied to our stderr as it comes (stdout stays ours:
    data only), a note every ``every`` seconds while it is silent, and its last lines
    kept for the diagnosis: (exit code, tail)."""
    try:
        child = subprocess.Popen(list(argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 text=True, errors="replace", env=dict(env))
    except OSError as exc:
        raise _start_error(argv, exc) from exc
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=_pump, args=(child, lines), daemon=True).start()
    tail: list[str] = []
    start = last = time.monotonic()
    while True:
        try:
            line = lines.get(timeout=1.0)
        except queue.Empty:
            line = ""
        now = time.monotonic()
        if now - start > timeout:  # even if the child keeps printing
            child.kill()
            child.wait()
            _drain(child, lines)
            raise ToolError(f"{shlex.join(argv)} did not finish within {timeout:g} s")
        if line == "":  # nothing came (None: the end)
            if now - last >= every:
                note(f"still working ({now - start:.0f} s)")
                last = now
            continue
        if line is None:
            assert child.stdout is not None
            child.stdout.close()
            break
        sys.stderr.write(line)
        tail = [*tail[-39:], line.rstrip("\n")]
        last = time.monotonic()
    return child.wait(), "\n".join(tail)


def _drain(child: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    """After a kill: let the reader reach the end (a grandchild may hold the pipe a
    moment longer), then close it."""
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline:
        try:
            if lines.get(timeout=0.5) is None:
                assert child.stdout is not None
                child.stdout.close()
                return
        except queue.Empty:
            continue


def _pump(child: subprocess.Popen[str], lines: queue.Queue[str | None]) -> None:
    assert child.stdout is not None
    for line in child.stdout:
        lines.put(line)
    lines.put(None)


#: Signals passed on to the child's process group, and how long a child may take to end
#: after one before the group is killed.
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
GRACE_S = 10.0


def call(argv: Sequence[str], *, env: Mapping[str, str], log: str | None = None,
         echo: bool = True, scrub: Callable[[str], str] | None = None,
         keep_fds: Sequence[int] = ()) -> int:
    """Run ``argv`` with inherited stdio (output streams to the user); return its exit
    code. ``env`` is the whole environment: build it with :func:`child_environ`. With
    ``log``, its stdout and stderr also go to that file (appended), each line through
    ``scrub`` first (the installer prints what it was given: pip's "Looking in indexes"
    line holds a query token), and only there unless ``echo`` (a log that cannot be
    written any more is given up, the output still shown).

    The child runs in a process group of its own, and SIGINT, SIGTERM and SIGHUP sent
    to wheelcuda are passed on to that whole group (a build's compilers included); once
    the child ends, whatever of its group is left is killed, so that nothing outlives
    wheelcuda and no lock it holds (the key's build lock) is let go while a build still
    writes; ``keep_fds`` (a lock's file descriptor) are the child's too, so that the lock
    lives as long as the child even when wheelcuda is killed with SIGKILL, which nothing
    can catch. After a signal the exit code is 128 + its number."""
    # a process group of its own (not a session: the child keeps the terminal, for a
    # prompt); process_group is Python 3.11's spelling of setpgid(0, 0)
    group: dict[str, Any] = ({"process_group": 0} if sys.version_info >= (3, 11)
                             else {"preexec_fn": os.setpgrp})
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(log, "ab")) if log else None
        try:
            child = subprocess.Popen(list(argv), env=dict(env), **group,
                                     pass_fds=tuple(keep_fds),
                                     stdout=subprocess.PIPE if out else None,
                                     stderr=subprocess.STDOUT if out else None)
        except OSError as exc:
            raise _start_error(argv, exc) from exc
        tee = None
        if out:
            tee = threading.Thread(target=_tee, args=(child, _Log(out, scrub), echo),
                                   daemon=True)
            tee.start()
        code = _watched(child)
        if tee is not None:
            # the pipe ends with the child's group (killed above); a daemon that left the
            # group may hold it longer: the copy is daemonic and given up, not waited on
            tee.join(timeout=10.0)
        with contextlib.suppress(OSError):
            if out:
                out.close()
    return code


class _Log:
    """A log file written a line at a time, each through ``scrub``: a line cut between
    two reads would keep half a token. A log that cannot be written any more (a full
    disk) is given up."""

    def __init__(self, out: Any, scrub: Callable[[str], str] | None) -> None:
        self.out, self.scrub, self.partial = out, scrub, b""

    def write(self, chunk: bytes) -> None:
        *lines, self.partial = (self.partial + chunk).split(b"\n")
        self._put(b"".join(line + b"\n" for line in lines))

    def close(self) -> None:
        self._put(self.partial)
        self.partial = b""

    def _put(self, data: bytes) -> None:
        if not data or self.out is None:
            return
        if self.scrub is not None:  # bytes in, bytes out: another encoding passes as is
            data = self.scrub(data.decode(errors="surrogateescape")).encode(
                errors="surrogateescape")
        try:
            self.out.write(data)
        except (OSError, ValueError):
            self.out = None


def _tee(child: subprocess.Popen[bytes], log: _Log, echo: bool) -> None:
    """Copy the child's output to ``log`` and, with ``echo``, to our stderr as it comes
    (bytes: a compiler's message in another encoding passes as it is). The pipe is read
    to its end whatever happens, or the child would block on it."""
    assert child.stdout is not None
    fd = child.stdout.fileno()
    err = getattr(sys.stderr, "buffer", None)
    for chunk in iter(lambda: os.read(fd, 65536), b""):
        log.write(chunk)
        if not echo:
            continue
        with contextlib.suppress(OSError, ValueError):
            if err is not None:
                err.write(chunk)
                err.flush()
            else:
                sys.stderr.write(chunk.decode(errors="replace"))
    log.close()
    child.stdout.close()


def _watched(child: subprocess.Popen[bytes]) -> int:
    """Wait for ``child`` (a process group of its own) with the signals passed on."""
    received: list[int] = []

    def forward(signum: int, _frame: object) -> None:
        received.append(signum)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signum)

    main = threading.current_thread() is threading.main_thread()  # where handlers may go
    previous = {s: signal.signal(s, forward) for s in FORWARDED} if main else {}
    try:
        code = _wait(child, received)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(child.pid, signal.SIGKILL)  # what is left of its group
    return 128 + received[0] if received else code


def _wait(child: subprocess.Popen[bytes], received: list[int]) -> int:
    """The child's exit code; once a signal was passed on, at most GRACE_S more, then
    its group is killed."""
    deadline: float | None = None
    while True:
        try:
            return child.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            if received and deadline is None:
                deadline = time.monotonic() + GRACE_S
            if deadline is not None and time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(child.pid, signal.SIGKILL)
