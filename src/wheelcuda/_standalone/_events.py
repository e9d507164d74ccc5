"""A build's compiles as the tree's compilers tell them: one JSON line when a compile
starts and one when it ends, folded into what runs and what is done, and the line that
says how far along the build is.

Standalone, so that one piece of code says it everywhere: the tree's compilers write the
line to the terminal of a build that uv or pip runs (``_progress.py``), ``wheelcuda
install`` draws it while its own build runs, and ``wheelcuda builds`` prints it for every
build running on the machine. The standard library only.

An event: ``event`` (start, end), ``pid``, ``file``, ``archs``, ``t`` (wall clock), the
build's ``build`` (its name) and ``root`` (its process), and at the end ``code``, ``wall``
and ``cpu`` (seconds), ``peak_kb`` (the compile's peak resident memory, its compilers
included: ``wait4``), ``split`` and ``threads`` (what it ran with).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def duration(seconds: float) -> str:
    """``3m10s``, ``1h02m``, ``12.3s`` (pure)."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


@dataclass(frozen=True)
class Compile:
    """One finished compile."""

    file: str
    archs: tuple[str, ...]
    wall: float
    cpu: float
    peak_kb: int
    code: int
    start: float
    split: int | None = None
    threads: int | None = None
    #: the file relative to the package's own folder (``csrc/cuda/ops.cu``): builds of one
    #: package unpack it elsewhere each time; "" when not known (the recipes' guesses,
    #: profiles kept before)
    rel: str = ""

    @property
    def name(self) -> str:
        return os.path.basename(self.file) or "?"

    @property
    def key(self) -> str:
        """What tells this compile's file from the package's others, build after build:
        ``cpu/ops.cu`` and ``cuda/ops.cu`` are two files, not one."""
        return self.rel or self.name


def same_file(key: str, other: str) -> bool:
    """Whether two keys name one file (pure): equal, or one a bare file name (a recipe's
    guess, an older profile) and the other a path ending in it."""
    if key == other:
        return True
    if "/" in key and "/" in other:
        return False
    return os.path.basename(key) == os.path.basename(other)


def relative(file: str, root: str) -> str:
    """``file`` relative to the package's folder ``root`` when inside it, else "" (pure)."""
    if not file or not root:
        return ""
    path = os.path.normpath(os.path.join(root, file))
    root = os.path.normpath(root)
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else ""


@dataclass
class State:
    """What the events said so far: compiles running (by pid: their start events) and
    finished, and the build's name when an event gave it."""

    running: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    done: list[Compile] = field(default_factory=list)
    build: str = ""
    first: float | None = None  # when the first compile started (wall clock)


#: The largest number a profile may hold, whole or not: a float's exact range. An int of
#: 400 digits is valid JSON, and one teammate's wheel carrying it failed every later
#: install of the package (OverflowError) until the cache was cleared; a float near 1e308
#: is finite but overflows as soon as two are added.
_AT_MOST = 2**53


def number(value: object, default: float = 0.0) -> float:
    """A finite number read from JSON (another version may have written it), else
    ``default``: not a bool, not NaN, nothing beyond a float's exact range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    try:
        return float(value) if math.isfinite(value) and abs(value) <= _AT_MOST else default
    except OverflowError:  # an int of 400 digits is valid JSON
        return default


def whole(value: object) -> int | None:
    """An int read from JSON, else None (not a bool, nothing beyond a float's exact
    range)."""
    if isinstance(value, int) and not isinstance(value, bool) and \
            abs(value) <= _AT_MOST:
        return value
    return None


def printable(text: str) -> str:
    """``text`` with what a terminal would act on (escape sequences, control characters,
    unpaired surrogates of a name that is not UTF-8) shown as ``?`` (pure): file and
    package names come from a build, or a teammate's profile, not from wheelcuda."""
    return "".join(c if c.isprintable() and not 0xD800 <= ord(c) <= 0xDFFF else "?"
                   for c in text)


def read_events(lines: Iterable[str], state: State | None = None) -> State:
    """Fold event lines into ``state`` (a new one when None); a line that is not an event
    (cut short, another format) is skipped."""
    state = state or State()
    for line in lines:
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict) or not isinstance(event.get("pid"), int):
            continue
        pid = event["pid"]
        if isinstance(event.get("build"), str) and event["build"]:
            state.build = event["build"]
        if event.get("event") == "start":
            state.running[pid] = event
            t = number(event.get("t"), -1.0)
            if t >= 0 and (state.first is None or t < state.first):
                state.first = t
        elif event.get("event") == "end":
            started = state.running.pop(pid, {})
            wall = number(event.get("wall"))
            state.done.append(Compile(
                str(event.get("file") or ""), tuple(str(a) for a in event.get("archs") or ()),
                wall, number(event.get("cpu")), int(number(event.get("peak_kb"))),
                int(number(event.get("code"), 1)),
                number(started.get("t"), number(event.get("t")) - wall),
                whole(event.get("split")), whole(event.get("threads")),
                str(event.get("rel") or "")))
    return state


def guess(seconds: Mapping[str, float]) -> list[Compile]:
    """A recipe's guess of each source's seconds, as the profile of a build that never
    ran: what a first build's count and time left are read against (pure)."""
    return [Compile(name, (), float(s), float(s), 0, 0, 0.0) for name, s in seconds.items()]


def _about(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"about {minutes} min left" if minutes >= 1 else "under a minute left"


def _left(state: State, now: float, before: Sequence[Compile], jobs: int) -> str:
    """The time left, from the last build of the same package (or the recipe's guess):
    the times of its compiles not done yet (less what the running ones have had),
    spread over the jobs; nothing without one (a count says too little of files of very
    different lengths)."""
    if not before:
        return ""
    # by the file's path in the package: an sdist is unpacked into another temporary
    # folder each build
    finished = [c.key for c in state.done]
    running = [(str(e.get("rel") or os.path.basename(str(e.get("file")))),
                now - number(e.get("t"), now)) for e in state.running.values()]
    remaining = sum(max(0.0, c.wall - next((s for k, s in running if same_file(k, c.key)), 0.0))
                    for c in before if not any(same_file(k, c.key) for k in finished))
    return _about(remaining / max(1, min(jobs, len(before)))) if remaining > 0 else ""


def status_line(state: State, now: float, elapsed: float, *, before: Sequence[Compile] = (),
                jobs: int = 1, width: int = 100, source: str = "") -> str:
    """How far along a build is: ``[37/72] flash_bwd_hdim128.cu 3m10s · 7m42s elapsed ·
    about 9 min left``, cut to ``width``; ``source`` says where the time left comes from
    (``the recipe's guess``) when it is not the build's own last run."""
    total = len(before)
    count = len(state.done)
    where = f"[{count}/{total}]" if total >= count + len(state.running) else \
        f"[{count} done]"
    longest = max(state.running.values(), key=lambda e: now - number(e.get("t"), now),
                  default=None)
    running = ""
    if longest is not None:
        name = os.path.basename(str(longest.get("file") or "?"))
        running = f" {name} {duration(max(0.0, now - number(longest.get('t'), now)))}"
        if len(state.running) > 1:
            running += f" (+{len(state.running) - 1} running)"
    parts = [f"{where}{running}", f"{duration(elapsed)} elapsed"]
    left = _left(state, now, before, jobs)
    if left:
        parts.append(f"{left} ({source})" if source else left)
    line = " · ".join(parts)
    return line if len(line) <= width else line[:max(1, width - 1)] + "…"


def finished_line(c: Compile, count: int, total: int) -> str:
    """The line for one finished compile, off a terminal (CI logs)."""
    where = f"[{count}/{total}]" if total >= count else f"[{count}]"
    archs = f" ({','.join(c.archs)})" if c.archs else ""
    how = "compiled" if c.code == 0 else f"failed (exit {c.code})"
    return (f"{where} {how} {c.name}{archs} in {duration(c.wall)}, cpu {duration(c.cpu)}, "
            f"peak {c.peak_kb / 1024 / 1024:.1f} GiB")
