"""Each build's compile events, and each install's whole output, in ``<cache>/logs``.

An install's whole output (the installer's, setuptools', the compilers') goes to
``<key>-<time>-<pid>.log``; the tree's compilers append one JSON line per compile start
and end to ``<key>-<time>-<pid>.jsonl`` (``WHEELCUDA_PROGRESS``, _progress.py). They live
outside the key's folder, which a failed build does not keep: the log of a failure is
what its user reads next. A build install does not run (uv's, pip's, the backend's, one
after ``env``) has its events written by the tree's compilers themselves, to
``tree-<pid>-<start>.jsonl`` in :attr:`Layout.events` (_standalone/_build.py): its root
process names it. ``prune`` removes the old ones (:func:`old`).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from .._standalone import _build, _events
from ..errors import CacheError
from . import fs
from .layout import Layout

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

    def discard(self) -> None:
        """Both files: a run that built nothing (a wheel from the cache) and went well
        leaves no log to pile up until the next prune."""
        fs.discard(self.events)
        fs.discard(self.output)


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
    """A build running now, and its events so far."""

    name: str  # install's key, or the package a tree's build builds
    pid: int  # install's wheelcuda, or the build's root process
    started: float  # when the build began (wall clock)
    events: Path
    #: install's whole output and key (its profile: the time left); None for a build the
    #: tree's compilers watched
    output: Path | None = None
    key: str | None = None
    state: _events.State | None = None


def _alive(pid: int, since: float) -> bool:
    """Whether the wheelcuda that named its files by ``pid`` at ``since`` still runs: a
    process of that pid that started later is another one (a SIGKILLed install's events
    stay, and once its pid was reused, `builds` listed it for ever and `cache clear
    --all` kept it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: its start time says whose
        pass
    started = _started(pid)
    return started is None or started <= since + 2  # the stamp has whole seconds


def _started(pid: int) -> float | None:
    """When ``pid`` started (wall clock), from /proc; None when that cannot be read."""
    found = _build.stat(pid)
    try:
        with open("/proc/stat", encoding="utf-8") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError):
        return None
    return None if found is None else boot + found.start / ticks


def _folders(layout: Layout) -> list[Path]:
    return list(dict.fromkeys([layout.logs, layout.events]))


def _state(events: Path) -> _events.State:
    try:
        with events.open("rb") as f:
            text = f.read().decode(errors="replace")
    except OSError:
        return _events.State()
    return _events.read_events(text.splitlines())


def running(layout: Layout) -> list[Running]:
    """The builds running on this machine under this cache: an install's events file
    whose wheelcuda is alive (a finished build's events become its profile and go; a
    failed one's stay, but its process is gone), and a tree build's whose root process is
    the one that started it (its pid and start time name the file)."""
    found = []
    for folder in _folders(layout):
        try:
            files = sorted(folder.glob("*.jsonl"))
        except OSError:
            continue
        for events in files:
            tree = re.match(_build.TREE_EVENTS, events.name)
            m = _NAME.match(events.stem)
            if tree and _build.alive(int(tree["pid"]), int(tree["start"])):
                state = _state(events)
                started = state.first if state.first is not None else fs.mtime(events)
                found.append(Running(state.build or "a build", int(tree["pid"]), started,
                                     events, state=state))
            elif not tree and m and _alive(int(m["pid"]), started := time.mktime(
                    time.strptime(m["day"] + m["time"], "%Y%m%d%H%M%S"))):
                found.append(Running(m["key"], int(m["pid"]), started, events,
                                     events.with_suffix(".log"), m["key"], _state(events)))
    return found


def old(layout: Layout, *, keep: int = KEEP, max_age_s: float = MAX_AGE_S,
        now: float | None = None) -> list[Path]:
    """The logs prune removes: beyond the newest ``keep`` builds, or older than
    ``max_age_s`` (a build's .log and .jsonl go together)."""
    files = []
    for folder in _folders(layout):
        try:
            files += [p for p in folder.iterdir() if p.suffix in (".log", ".jsonl")]
        except OSError:
            continue
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
