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

# NamedTuples and plain classes, not dataclasses: importing dataclasses (with inspect
# and ast) cost each compile's start about 20 ms (2-core machine, 2026-12-06)
from typing import Any, NamedTuple


def duration(seconds: float) -> str:
    """``3m10s``, ``1h02m``, ``12.3s`` (pure)."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


class Compile(NamedTuple):
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


class State:
    """What the events said so far: compiles running (by pid: their start events) and
    finished, the build's name when an event gave it, when its first compile started
    (wall clock), and the compiles other builds' hold back (their ``wait`` events: what
    they wait for)."""

    def __init__(self) -> None:
        self.running: dict[int, Mapping[str, Any]] = {}
        self.done: list[Compile] = []
        self.build = ""
        self.first: float | None = None
        self.waiting: dict[int, str] = {}
        #: who runs the build (``uv``, ``pip``), when an event said
        self.by = ""


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
        if isinstance(event.get("by"), str) and event["by"]:
            state.by = event["by"]
        if event.get("event") == "wait":
            state.waiting[pid] = str(event.get("for") or "another build")
        elif event.get("event") == "start":
            state.waiting.pop(pid, None)
            state.running[pid] = event
            t = number(event.get("t"), -1.0)
            if t >= 0 and (state.first is None or t < state.first):
                state.first = t
        elif event.get("event") == "end":
            state.waiting.pop(pid, None)
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


def time_left(state: State, now: float, before: Sequence[Compile], jobs: int) -> str:
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


def fit(parts: Sequence[Sequence[str]], width: int, sep: str = " · ") -> str:
    """One line of at most ``width`` characters from ``parts``, most important first,
    each given as its forms from the longest to the shortest (pure): each part takes its
    longest form that still fits, and one with none is left out whole. A value is never
    cut in the middle (``in 8.`` for ``in 8.3s`` read as a time); only a first part
    wider than the whole line is, at its end, with ``…``."""
    line = ""
    for forms in parts:
        for form in forms:
            if not form:
                continue
            candidate = f"{line}{sep}{form}" if line else form
            if len(candidate) <= width:
                line = candidate
                break
        else:
            if not line and forms and forms[-1]:
                line = forms[-1][:max(1, width - 1)] + "…"
    return line


def count_of(state: State, before: Sequence[Compile]) -> str:
    """``[3/72]`` (done of the build's files, when a profile or guess knows them), else
    ``[3 done]`` (pure)."""
    total, count = len(before), len(state.done)
    return f"[{count}/{total}]" if total and total >= count + len(state.running) else \
        f"[{count} done]"


def status_line(state: State, now: float, elapsed: float, *, before: Sequence[Compile] = (),
                jobs: int = 1, width: int = 100, source: str = "") -> str:
    """How far along a build is: ``[37/72] flash_bwd_hdim128.cu 3m10s · 7m42s elapsed ·
    about 9 min left``, fitted to ``width`` by whole parts (:func:`fit`); ``source`` says
    where the time left comes from (``the recipe's guess``) when it is not the build's
    own last run."""
    where = count_of(state, before)
    longest = max(state.running.values(), key=lambda e: now - number(e.get("t"), now),
                  default=None)
    forms = [where]
    if longest is not None:
        name = os.path.basename(str(longest.get("file") or "?"))
        running = f"{where} {name} {duration(max(0.0, now - number(longest.get('t'), now)))}"
        more = f" (+{len(state.running) - 1} running)" if len(state.running) > 1 else ""
        forms = [running + more, running, where]
    elif state.waiting:
        forms = [f"{where} waiting for {next(iter(state.waiting.values()))}",
                 f"{where} waiting", where]
    left = time_left(state, now, before, jobs)
    return fit([forms, [f"{duration(elapsed)} elapsed"],
                [f"{left} ({source})" if source else left, left]], width)


def finished_line(c: Compile, count: int, total: int) -> str:
    """The line for one finished compile, off a terminal (CI logs)."""
    where = f"[{count}/{total}]" if total >= count else f"[{count}]"
    archs = f" ({','.join(c.archs)})" if c.archs else ""
    how = "compiled" if c.code == 0 else f"failed (exit {c.code})"
    return (f"{where} {how} {c.name}{archs} in {duration(c.wall)}, cpu {duration(c.cpu)}, "
            f"peak {c.peak_kb / 1024 / 1024:.1f} GiB")
