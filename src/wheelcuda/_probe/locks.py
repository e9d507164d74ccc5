"""Who holds a file lock, read from ``/proc/locks`` (Linux), and a watch that says so
while a child waits for one it does not hold.

uv takes an flock on ``<venv>/.lock`` for the whole of an install into that environment,
and waits for it without a word: a second install into the same venv sat silent for 4
minutes while another built. wheelcuda names its own lock waits (_store/fs.py); the watch
names uv's.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path


def holder_pid(lock: Path) -> int | None:
    """The pid holding an flock on ``lock``; None when nobody does or it cannot be told."""
    try:
        st = os.stat(lock)
        with open("/proc/locks") as f:
            rows = f.read().splitlines()
    except OSError:
        return None
    wanted = (os.major(st.st_dev), os.minor(st.st_dev), st.st_ino)
    for row in rows:
        words = row.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 00:2a:5678 0 EOF": the device's major and minor
        # in hex, the inode in decimal (a "->" after the number marks a waiter)
        if len(words) < 6 or words[1] != "FLOCK":
            continue
        try:
            major, minor, inode = words[5].split(":")
            if (int(major, 16), int(minor, 16), int(inode)) == wanted:
                return int(words[4])
        except ValueError:
            continue
    return None


def describe(pid: int) -> str:
    """``pid 123: uv pip install x`` (its first words), or ``pid 123``."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return f"pid {pid}"
    shown = " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv[:8]))
    return f"pid {pid}: {shown}"[:200]


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def is_descendant(pid: int, ancestor: int) -> bool:
    """Whether ``pid`` is ``ancestor`` or one of its descendants."""
    seen = 0
    current: int | None = pid
    while current and seen < 64:
        if current == ancestor:
            return True
        current, seen = _parent(current), seen + 1
    return False


@contextlib.contextmanager
def watching(lock: Path, what: str, note: Callable[[str], None], *, after: float = 3.0,
             every: float = 60.0, poll: float = 1.0) -> Iterator[None]:
    """While the block runs: when a process other than this one and its children holds
    ``lock`` for ``after`` seconds, say so (``what``: whose lock it is), then every
    ``every`` seconds while it still does, and once when it lets go."""
    stop = threading.Event()
    me = os.getpid()
    state: dict[str, float] = {}  # "since": the wait began; "said": last said

    def freed() -> None:
        if "said" in state:
            note(f"{what} is free now ({time.monotonic() - state['since']:.0f} s waited)")
        state.clear()

    def watch() -> None:
        while not stop.wait(poll):
            pid = holder_pid(lock)
            if pid is None or is_descendant(pid, me):
                freed()
                continue
            now = time.monotonic()
            since = state.setdefault("since", now)
            if now - since >= after and now - state.get("said", -every) >= every:
                note(f"waiting for {what}: {describe(pid)} holds {lock} "
                     f"({now - since:.0f} s so far); the install goes on when it ends")
                state["said"] = now

    thread = threading.Thread(target=watch, name="wheelcuda-lock-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=5)
        freed()
