"""The tree's nvcc: each compile timed and told, so that a long build can be watched.

Standalone on purpose, like _nvcc_wrapper: copied into each tree beside it
(``bin/_progress.py``) and run on the standard library alone (and _nvcc_table, nvcc's
options, copied beside it too).

A compile call runs as a child of the wrapper (not ``exec``: the wrapper waits for it to
read its CPU time and peak memory with ``wait4``), and then:

- one line goes to stderr, ``wheelcuda: compiled flash_fwd.cu (sm_90) in 3m10s, cpu
  5m02s, peak 4.1 GiB``: installers show a build's output (uv with ``-v``), so the routes
  where wheelcuda is not the parent (``uv add`` after uv-config, pip after constraints,
  ``eval "$(wheelcuda env)"``) see each compile end;
- with ``WHEELCUDA_PROGRESS=FILE`` (set by ``wheelcuda install``), a JSON line for its
  start and one for its end are appended to FILE: install shows them as they come and
  keeps the ends as the build's profile. Appends of one short line each (``O_APPEND``)
  do not interleave between the calls ninja runs at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Mapping, Sequence

try:
    from . import _nvcc_table as _table
except ImportError:  # run from a tree's bin/, beside it
    import _nvcc_table as _table  # type: ignore[import-not-found,no-redef]

__all__ = ["SOURCE_SUFFIXES", "VAR", "describe", "duration", "run", "sources", "targets"]

VAR = "WHEELCUDA_PROGRESS"
#: What a compile call's inputs end with (nvcc 13.0 reads these; objects are linked).
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c", ".ptx")
#: Options whose next argument is a value, never an input (``-o k.o``, ``-MF k.d``).
_VALUED = frozenset(_table.VALUED)
#: Options whose next argument may say the GPU code (``-gencode arch=...,code=sm_90``).
_TARGETED = _table.spellings("gencode", "arch")


def sources(args: Sequence[str]) -> list[str]:
    """The source files a call compiles, in order (pure)."""
    found: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in _VALUED:
            skip = True
        elif not arg.startswith("-") and arg.endswith(SOURCE_SUFFIXES):
            found.append(arg)
    return found


def targets(args: Sequence[str]) -> list[str]:
    """The GPU code a call makes, ``sm_90`` or ``compute_90``, from its ``code=`` values
    (pure; a call with ``-arch`` alone says ``sm_XX`` there)."""
    out: list[str] = []
    for i, arg in enumerate(args):
        value = arg.split("=", 1)[1] if "=" in arg and arg.startswith("-") else \
            (args[i + 1] if arg in _TARGETED and i + 1 < len(args) else "")
        if "code=" in value:
            value = value.split("code=", 1)[1]
        for word in value.strip("[]").split(","):
            if word.startswith(("sm_", "compute_")) and word not in out:
                out.append(word)
    return out


def duration(seconds: float) -> str:
    """``3m10s``, ``1h02m``, ``12.3s`` (pure)."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def describe(name: str, archs: Sequence[str], code: int, *, wall: float, cpu: float,
             peak_kb: int) -> str:
    """The stderr line for a finished compile (pure)."""
    shown = f" ({','.join(archs)})" if archs else ""
    how = "compiled" if code == 0 else f"failed (exit {code})"
    return (f"wheelcuda: {how} {os.path.basename(name) or '?'}{shown} in {duration(wall)}, "
            f"cpu {duration(cpu)}, peak {peak_kb / 1024 / 1024:.1f} GiB")


def _append(path: str, event: Mapping[str, object]) -> None:
    """One line appended; a file that cannot be written costs only the progress."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (json.dumps(event, sort_keys=True) + "\n").encode())
        finally:
            os.close(fd)


def _status_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


def run(real: str, argv: Sequence[str], environ: Mapping[str, str], *,
        split: int | None = None, threads: int | None = None) -> int:
    """Run the compiler ``real`` (``argv[0]`` as it should see its name), timed; say its
    end on stderr and, with ``WHEELCUDA_PROGRESS``, in that file; return its exit code."""
    args = list(argv[1:])
    name, archs = (sources(args) or [""])[0], targets(args)
    event: dict[str, object] = {"file": name, "archs": archs, "pid": os.getpid(),
                                "split": split, "threads": threads}
    progress = environ.get(VAR)
    start = time.monotonic()
    # SIGINT reaches the compiler too (one process group): the wrapper ends as it would
    # have, without a traceback (one that was ignored, as under `&`, stays ignored).
    # SIGCHLD ignored (inherited) would make wait4 fail; SIGPIPE goes back to its default
    # for the compiler, as a shell would start it (Python ignores it).
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    pid = os.posix_spawn(real, list(argv), dict(environ), setsigdef=(signal.SIGPIPE,))
    if progress:
        _append(progress, {**event, "event": "start", "t": time.time()})
    _, status, usage = os.wait4(pid, 0)
    code = _status_code(status)
    wall, cpu = time.monotonic() - start, usage.ru_utime + usage.ru_stime
    # ru_maxrss of a reaped child is the largest of it and the children it reaped (cicc,
    # ptxas, the host compiler), in KiB on Linux: the peak of the compile's largest process
    # (with --split-compile, several cicc run at once: more in all)
    if progress:
        _append(progress, {**event, "event": "end", "t": time.time(), "code": code,
                           "wall": round(wall, 3), "cpu": round(cpu, 3),
                           "peak_kb": usage.ru_maxrss})
    with contextlib.suppress(OSError):
        sys.stderr.write(describe(name, archs, code, wall=wall, cpu=cpu,
                                  peak_kb=usage.ru_maxrss) + "\n")
    if os.WIFSIGNALED(status):  # die as the compiler did: ninja and make tell a signal
        _die_by(os.WTERMSIG(status))  # (an interrupted build) from an exit code
    return code


def _die_by(signum: int) -> None:
    with contextlib.suppress(OSError, ValueError):
        signal.signal(signum, signal.SIG_DFL)
        sys.stderr.flush()
        os.kill(os.getpid(), signum)
