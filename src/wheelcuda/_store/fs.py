"""Writing without half-written results: atomic files, folders built beside and swapped
in, and locks. Every writer of the cache goes through these: one atomic write, one lock,
one timeout."""

from __future__ import annotations

import contextlib
import os
import py_compile
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import filelock

from .. import _report as report
from .._probe import locks
from ..errors import CacheError

#: How long a waiting run waits for a lock: a whole-package build holds one for as long
#: as the build takes (causal-conv1d: 25 min on 2 cores for all archs).
LOCK_TIMEOUT = 6 * 3600
#: A wait says what it waits for after this long, then every NOTE_EVERY_S.
NOTE_AFTER_S = 3.0
NOTE_EVERY_S = 60.0

#: Prefixes of the folders a writer builds beside their final place; what a killed run
#: leaves under them is removed by the next writer of that name and by `cache prune`.
PARTIAL_PREFIXES = (".build-", ".fetch-", ".stale-", ".removing-", ".tmp-")


def write_text(path: Path, text: str, mode: int = 0o600) -> None:
    """Replace ``path`` with ``text`` at once: readers see the old or the new file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".tmp-{path.name}-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@contextlib.contextmanager
def replacing(dest: Path, name: str) -> Iterator[Path]:
    """A temporary file beside ``dest/name`` for the block to fill: renamed into place
    when the block ends, removed when it raises (readers never see half a file)."""
    dest.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=dest, prefix=f".tmp-{name}-")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, dest / name)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def new_folder(parent: Path, name: str, kind: str) -> Path:
    """An empty folder beside ``parent/name`` to build it in (``.<kind>-<name>-XXXX``)."""
    return Path(tempfile.mkdtemp(dir=parent, prefix=f".{kind}-{name}-"))


def mtime(path: str | os.PathLike[str]) -> float:
    """When ``path`` was last written; 0.0 when it is gone (removed meanwhile)."""
    try:
        return os.path.getmtime(path)
    except OSError:
        return 0.0


def discard(path: Path) -> None:
    """Move ``path`` out of the way first (atomic), then delete it."""
    aside = path.with_name(f".removing-{path.name}-{os.getpid()}")
    try:
        os.rename(path, aside)
    except FileNotFoundError:
        return
    except OSError:
        aside = path
    if aside.is_dir() and not aside.is_symlink():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            aside.unlink()


def swap_in(tmp: Path, final: Path) -> None:
    """Put the finished folder ``tmp`` at ``final``, moving an old one out of the way.
    Readers that find no ``final`` for a moment take the lock and wait for the writer."""
    if os.path.lexists(final):
        discard(final)
    os.rename(tmp, final)


def leftovers(parent: Path, name: str) -> list[Path]:
    """What killed writers of ``parent/name`` left beside it."""
    try:
        entries = list(parent.iterdir())
    except OSError:
        return []
    return [p for p in entries if any(p.name.startswith(f"{pre}{name}-")
                                      for pre in PARTIAL_PREFIXES)]


T = TypeVar("T")


def build(parent: Path, name: str, write: Callable[[Path], T], what: str) -> T:
    """``parent/name`` made whole or not at all (the caller holds its lock): what killed
    writers left is removed, ``write`` fills a fresh folder beside it, which is then
    swapped in. A full disk or a folder that may not be written is a CacheError naming
    ``what``."""
    final = parent / name
    for old in leftovers(parent, name):
        discard(old)
    tmp = new_folder(parent, name, "build")
    try:
        result = write(tmp)
        swap_in(tmp, final)
    except OSError as exc:
        raise CacheError(f"cannot write {what} {final}: {exc.strerror or exc}",
                         f"check the space and permissions of {parent}") from exc
    finally:
        discard(tmp)
    return result


def dangling_link(folder: Path) -> str | None:
    """The first link under ``folder`` that leads nowhere, said for people; None if none."""
    for top, dirs, files in os.walk(folder):
        for name in [*dirs, *files]:
            path = os.path.join(top, name)
            if os.path.islink(path) and not os.path.exists(path):
                return (f"{os.path.relpath(path, folder)} leads to {os.readlink(path)}, "
                        "which is gone")
    return None


def holder(lock: Path) -> str | None:
    """Which process holds the flock on ``lock`` ("pid 123: wheelcuda install x"), read
    from /proc/locks; None when nobody does or it cannot be told."""
    pid = locks.holder_pid(lock)
    return locks.describe(pid) if pid is not None else None


def _who(lock: Path) -> str:
    return holder(lock) or "another wheelcuda"


def _say(text: str) -> None:
    report.note(text)


@contextlib.contextmanager
def locked(lock: Path, what: str, timeout: float = LOCK_TIMEOUT, *,
           note: Callable[[str], None] = _say) -> Iterator[int | None]:
    """Hold ``lock`` (waiting up to ``timeout``). A wait longer than NOTE_AFTER_S says
    what it waits for and which process holds the lock, then again every NOTE_EVERY_S
    (a wait lasts as long as the holder's build: hours for some packages). The lock is
    an flock: the kernel lets it go when its holder ends, so no advice ever says to
    remove the file (that would let two holders in at once). Yields the lock's file
    descriptor (None where filelock does not say it): a child handed it holds the lock
    with this process, for as long as it runs."""
    guard = filelock.FileLock(str(lock), timeout=timeout)
    start = time.monotonic()
    step = min(NOTE_AFTER_S, timeout)
    while True:
        try:
            guard.acquire(timeout=step)
            break
        except filelock.Timeout as exc:
            waited = time.monotonic() - start
            who = _who(lock)
            if waited >= timeout:
                raise CacheError(
                    f"{who} has held {lock} for {timeout:g} s ({what}); gave up waiting",
                    "wait for it to finish and run again, or stop that process: its lock "
                    "goes with it") from exc
            note(f"waiting for {what}: {who} holds {lock} ({waited:.0f} s so far)")
            step = min(NOTE_EVERY_S, timeout - waited)
    try:
        yield _lock_fd(guard)
    finally:
        guard.release()


def _lock_fd(guard: filelock.BaseFileLock) -> int | None:
    """The flock's file descriptor: filelock keeps it in its context (4.x), not in its
    public surface; None when it is not there (then a child does not hold the lock)."""
    fd = getattr(getattr(guard, "_context", None), "lock_file_fd", None)
    return fd if isinstance(fd, int) else None


@contextlib.contextmanager
def shared(locks: list[Path], what: str, timeout: float = 900.0, *,
           note: Callable[[str], None] = _say) -> Iterator[list[int]]:
    """Hold a shared flock on each of ``locks`` while a tree or toolkit is in use (a
    build, ``run``): any number of users at once, while ``cache clear`` and ``prune``
    (which take the same files exclusively, without waiting) skip what is in use. A
    writer building the thing holds it exclusively for seconds: this waits for it.
    Never take one of these exclusively in the same process while holding it shared.
    Yields the locks' file descriptors: a child handed them holds the locks too, for as
    long as it runs (a wheelcuda killed with SIGKILL let them go while its build ran on,
    and prune could take the tree from under it)."""
    import fcntl  # noqa: PLC0415 (POSIX only, like flock itself)

    with contextlib.ExitStack() as stack:
        fds = []
        for lock in locks:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
            stack.callback(os.close, fd)
            fds.append(fd)
            start, said = time.monotonic(), False
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    waited = time.monotonic() - start
                    if waited > timeout:
                        raise CacheError(f"{_who(lock)} has held "
                                         f"{lock} for {timeout:g} s ({what})",
                                         "wait for it to finish and run again") from None
                    if waited > NOTE_AFTER_S and not said:
                        note(f"waiting for {_who(lock)} to finish "
                             f"writing {lock.name[1:].rsplit('.', 1)[0]} ({what})")
                        said = True
                    time.sleep(0.2)
        yield fds


def unlink_held(lock: Path) -> None:
    """Remove the lock file ``lock`` while holding it (a key nothing is left of keeps no
    empty file). Safe only for locks taken through :func:`locked` and
    :func:`try_locked`: filelock (3.20.4 on) finds a waiter holding the unlinked file
    and opens the path again, so two runs never hold one name at once."""
    with contextlib.suppress(OSError):
        lock.unlink()


@contextlib.contextmanager
def try_locked(lock: Path) -> Iterator[bool]:
    """Hold ``lock`` if nobody does; yields False (holding nothing) when it is busy."""
    guard = filelock.FileLock(str(lock), timeout=0)
    try:
        guard.acquire()
    except filelock.Timeout:
        yield False
        return
    try:
        yield True
    finally:
        guard.release()


def precompile(folder: Path) -> None:
    """The Python modules in ``folder`` (a tree's ``bin/``, the clang toolkit's programs)
    compiled beside them, in ``__pycache__`` where ``python -I`` looks, for this Python:
    a compile through a tree imports them at every start, and compiling them each time
    cost it about 100 ms (2-core machine, 2026-12-06). Unchecked: the folder is never
    written again once made. A module that cannot be compiled is left to be compiled
    when it runs."""
    cache = folder / "__pycache__"
    for path in sorted(folder.glob("*.py")):
        with contextlib.suppress(py_compile.PyCompileError, OSError):
            py_compile.compile(
                str(path), cfile=str(cache / f"{path.stem}.{sys.implementation.cache_tag}.pyc"),
                doraise=True, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
