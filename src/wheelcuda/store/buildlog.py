"""Each install's build log and compile events, in ``<cache>/logs``.

A build's whole output (the installer's, setuptools', the compilers') goes to
``<key>-<time>.log``; the tree's nvcc appends one JSON line per compile start and end
to ``<key>-<time>.jsonl`` (``WHEELCUDA_PROGRESS``, _progress.py). They live outside the
key's folder, which a failed build does not keep: the log of a failure is what its
user reads next. ``prune`` removes the old ones (:func:`old`).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import CacheError
from . import fs
from .layout import Layout

__all__ = ["KEEP", "MAX_AGE_S", "BuildLog", "Running", "old", "running", "start"]

#: What prune leaves: the newest logs, up to this many builds, none older than this.
KEEP = 20
MAX_AGE_S = 30 * 86400


@dataclass(frozen=True)
class BuildLog:
    """Where one build writes its output and its compile events."""

    output: Path
    events: Path

    def events_text(self) -> list[str]:
        """The complete event lines written so far ([] when there are none)."""
        return self.events_from(0)[0]

    def events_from(self, offset: int) -> tuple[list[str], int]:
        """The complete event lines written after byte ``offset``, and the offset after
        them: a line still being appended (a reader can see half of it) waits for the
        next read."""
        try:
            with self.events.open("rb") as f:
                f.seek(offset)
                data = f.read()
        except OSError:
            return [], offset
        end = data.rfind(b"\n") + 1
        return data[:end].decode(errors="replace").splitlines(), offset + end

    def discard_events(self) -> None:
        """The events are kept with the key as its profile once the build is done."""
        fs.discard(self.events)


def start(layout: Layout, key: str) -> BuildLog:
    """The files of a new build of ``key``, created empty (0600 in a private folder).
    Raises CacheError when the folder cannot be written: the build goes on without."""
    folder = layout.private(layout.logs)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    base = folder / f"{key}-{stamp}-{os.getpid()}"
    log = BuildLog(base.with_name(base.name + ".log"), base.with_name(base.name + ".jsonl"))
    try:
        for path in (log.output, log.events):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
    except OSError as exc:
        raise CacheError(f"cannot write a build log in {folder}: {exc.strerror or exc}",
                         f"make {folder} writable, or point WHEELCUDA_CACHE_DIR elsewhere"
                         ) from exc
    return log


#: ``<key>-<date>-<time>-<pid>``: the name :func:`start` gives a build's files
_NAME = re.compile(r"^(?P<key>.+)-(?P<day>\d{8})-(?P<time>\d{6})-(?P<pid>\d+)$")


@dataclass(frozen=True)
class Running:
    """A build whose wheelcuda is still running."""

    key: str
    pid: int
    started: float  # when the build began (its files' name says it, to the second)
    log: BuildLog


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    return True


def running(layout: Layout) -> list[Running]:
    """The builds running on this machine under this cache: an events file whose
    wheelcuda is alive (a finished build's events become its profile and go; a failed
    one's stay, but its process is gone)."""
    try:
        files = sorted(layout.logs.glob("*.jsonl"))
    except OSError:
        return []
    found = []
    for events in files:
        m = _NAME.match(events.stem)
        if m and _alive(int(m["pid"])):
            started = time.mktime(time.strptime(m["day"] + m["time"], "%Y%m%d%H%M%S"))
            found.append(Running(m["key"], int(m["pid"]), started,
                                 BuildLog(events.with_suffix(".log"), events)))
    return found


def old(layout: Layout, *, keep: int = KEEP, max_age_s: float = MAX_AGE_S,
        now: float | None = None) -> list[Path]:
    """The logs prune removes: beyond the newest ``keep`` builds, or older than
    ``max_age_s`` (a build's .log and .jsonl go together)."""
    try:
        files = [p for p in layout.logs.iterdir() if p.suffix in (".log", ".jsonl")]
    except OSError:
        return []
    builds: dict[str, list[Path]] = {}
    for path in files:
        builds.setdefault(path.with_suffix("").name, []).append(path)
    written = sorted(((max(fs.mtime(p) for p in paths), paths) for paths in builds.values()),
                     key=lambda pair: -pair[0])
    now = time.time() if now is None else now
    gone = []
    for rank, (last, paths) in enumerate(written):
        if rank >= keep or now - last > max_age_s:
            gone += sorted(paths)
    return gone
