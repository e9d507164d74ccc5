"""The tree's nvcc: the token pool that shares threads among the nvcc calls that run
at once, as make's jobserver shares job slots (read by :mod:`_nvcc_wrapper`, which adds
``--split-compile`` with the threads a call gets).

Standalone on purpose, like _nvcc_wrapper: copied into each tree beside it
(``bin/_nvcc_pool.py``) and run on the standard library alone.

``WHEELCUDA_JOBSERVER=FOLDER:THREADS:SPLITS:CAP`` (set by ``wheelcuda install``, see
rules/jobs.py) names the pool: THREADS thread tokens, SPLITS split tokens (the calls that
may split at once: memory), CAP the most threads one call takes. A token is a file in
FOLDER held with an flock: it goes back when the process ends, however it ends.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import time
from collections.abc import Callable, Mapping

try:
    import fcntl
except ImportError:  # not POSIX: no pool, so no split
    fcntl = None  # type: ignore[assignment]

__all__ = ["POOL", "SETTLE_S", "acquire", "default_pool", "parse_pool", "share", "take",
           "used"]

POOL = "WHEELCUDA_JOBSERVER"
#: How long a call waits for the calls ninja started with it to show up in the pool:
#: they start within milliseconds of each other; a compile takes seconds at least.
SETTLE_S = 0.3


def parse_pool(value: str) -> tuple[str, int, int, int] | None:
    """``FOLDER:THREADS:SPLITS:CAP`` -> (folder, thread tokens, split tokens: the calls
    that may split at once (memory), the most threads one call takes) (pure); None when
    it is not that. FOLDER may hold colons; empty means :func:`default_pool`."""
    parts = value.rsplit(":", 3)
    if len(parts) != 4 or not all(p.isdecimal() for p in parts[1:]):
        return None
    return parts[0], int(parts[1]), int(parts[2]), int(parts[3])


def take(free: int, waiting: int, cap: int) -> int:
    """Thread tokens a call takes when ``free`` are free and ``waiting`` calls (itself
    included) divide them: an equal part, at most ``cap``, and two while two are free
    (one thread is no split) (pure)."""
    return min(cap, free, max(2, free // max(1, waiting)))


def used(tokens: int, threads: int) -> int:
    """How many of ``tokens`` a call with ``--threads threads`` turns into split threads
    (``--split-compile`` = tokens // threads); it gives back the rest (pure)."""
    split = tokens // max(1, threads)
    return split * threads if split > 1 else 0


def default_pool() -> str:
    """One pool per user when the build names none: concurrent builds share it."""
    return os.path.join(os.environ.get("TMPDIR") or "/tmp",  # noqa: S108 - checked below
                        f"wheelcuda-jobs-{os.getuid()}")


def _open(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


def _locked(fd: int) -> bool:
    """Take the lock on ``fd`` if nobody holds it; False when another holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _waiting(folder: str, mine: str) -> int:
    """Calls that registered and have not taken their tokens yet (this one included).
    A ``wait-*`` file whose lock nobody holds was left by a call that died: removed."""
    count = 1
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if not name.startswith("wait-") or path == mine:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:  # gone meanwhile: it took its tokens
            continue
        try:
            if _locked(fd):
                os.unlink(path)
            else:
                count += 1
        finally:
            os.close(fd)
    return count


def _free(folder: str, kind: str, count: int) -> list[int]:
    """The free tokens of ``kind``, locked: their open files. A token is a lock (flock)
    on a file of the pool (``thread-0``, ``split-0``...), held through the open file."""
    held: list[int] = []
    try:
        for i in range(count):
            fd = _open(os.path.join(folder, f"{kind}-{i}"))
            if _locked(fd):
                held.append(fd)
            else:
                os.close(fd)
    except BaseException:
        for fd in held:
            os.close(fd)
        raise
    return held


def acquire(folder: str, threads: int, splits: int, want: Callable[[int, int], int],
            settle: float = SETTLE_S) -> list[int]:
    """Register in the pool, wait ``settle`` s for the calls started at once, then hold
    ``want(free, waiting)`` thread tokens and one split token (none when either is
    short): their open files, made inheritable so that the locks go with the process
    through exec and end with it, however it ends."""
    # refuse a folder another user could write (it is often in /tmp)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PermissionError(f"{folder} is not a folder only this user can write")
    tmp, mine = (os.path.join(folder, f"{p}-{os.getpid()}") for p in ("new", "wait"))
    me = _open(tmp)
    try:
        # Locked before it gets its name: a wait-* file nobody holds is a dead call's.
        fcntl.flock(me, fcntl.LOCK_EX)
        os.rename(tmp, mine)
        time.sleep(settle)
        lock = _open(os.path.join(folder, "lock"))
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one call divides at a time
            waiting = _waiting(folder, mine)
            os.unlink(mine)
            splits_free = _free(folder, "split", splits)
            free = _free(folder, "thread", threads) if splits_free else []
            # the threads go to the calls that can split: no more of them than split tokens
            keep = want(len(free), min(waiting, len(splits_free))) if splits_free else 0
            held = free[:keep] + splits_free[:1] if keep else []
            for fd in free + splits_free:
                if fd not in held:
                    os.close(fd)  # the lock's only open file: closing it frees the token
            for fd in held:
                os.set_inheritable(fd, True)
            return held[:-1]  # the thread tokens; the split token goes along
        finally:
            os.close(lock)
    finally:
        for path in (tmp, mine):  # after an error on the way: leave no name behind
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        os.close(me)


def share(environ: Mapping[str, str], threads: int,
          acquire_: Callable[..., list[int]] = acquire) -> int:
    """Threads this compile call may use: the user's WHEELCUDA_SPLIT_COMPILE, else the
    thread tokens it could take from the pool WHEELCUDA_JOBSERVER names (set by
    ``wheelcuda install``, see jobs.py; held until the process ends), else 1. The pool
    costs the extra threads, never the compile: short or unusable, no split."""
    fixed = environ.get("WHEELCUDA_SPLIT_COMPILE", "")
    if fixed:
        return int(fixed) if fixed.isdecimal() else 1
    pool = parse_pool(environ.get(POOL, ""))
    if pool is None or fcntl is None or threads == 0:
        return 1
    folder, tokens, splits, cap = pool
    if splits <= 0 or min(tokens, cap) < 2 * threads:
        return 1  # nothing to share: no wait either
    folder = folder or default_pool()
    # every call that may split can have CAP threads: no wait (2 cores: 4 threads, 2 splits)
    settle = 0.0 if splits * cap <= tokens else SETTLE_S
    try:
        return len(acquire_(folder, tokens, splits,
                            lambda free, waiting: used(take(free, waiting, cap), threads),
                            settle))
    except OSError as exc:  # the pool is a speed-up: without it, no split
        sys.stderr.write(f"wheelcuda: nvcc thread pool {folder} unusable "
                         f"({exc.strerror or exc}); compiling without --split-compile\n")
        return 1
