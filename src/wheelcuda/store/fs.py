"""Writing without half-written results: atomic files, folders built beside and swapped
in, and locks. Every writer of the cache goes through these (issue 8: there were seven
atomic-write variants and three locks with three timeouts)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import filelock

from ..errors import CacheError

__all__ = ["LOCK_TIMEOUT", "build", "dangling_link", "discard", "leftovers", "locked",
           "new_folder", "swap_in", "try_locked", "write_text"]

#: How long a waiting run waits for a lock: a whole-package build holds one for as long
#: as the build takes (causal-conv1d: 25 min on 2 cores for all archs).
LOCK_TIMEOUT = 6 * 3600

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


def new_folder(parent: Path, name: str, kind: str) -> Path:
    """An empty folder beside ``parent/name`` to build it in (``.<kind>-<name>-XXXX``)."""
    return Path(tempfile.mkdtemp(dir=parent, prefix=f".{kind}-{name}-"))


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


@contextlib.contextmanager
def locked(lock: Path, what: str, timeout: float = LOCK_TIMEOUT) -> Iterator[None]:
    """Hold ``lock`` (waiting up to ``timeout``); the error names what holds it."""
    try:
        with filelock.FileLock(str(lock), timeout=timeout):
            yield
    except filelock.Timeout as exc:
        raise CacheError(f"another wheelcuda has held {lock} for {timeout:g} s ({what})",
                         f"wait for it to finish, or, if none runs, remove {lock}") from exc


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
