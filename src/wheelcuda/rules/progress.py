"""A build's compiles, as the tree's nvcc tells them (``_progress.py``): what is running,
how far along, how long is left; the profile kept with the key; the errors that say
why a build failed (pure).

The events are JSON lines, one when a compile starts and one when it ends: ``event``
(start, end), ``pid``, ``file``, ``archs``, ``t`` (wall clock), and at the end ``code``,
``wall`` and ``cpu`` (seconds), ``peak_kb`` (the compile's peak resident memory, its
compilers included: ``wait4``), ``split`` and ``threads`` (what it ran with).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

# standalone (the standard library alone), so any layer may read it: the tree's nvcc and
# install say a duration the same way
from ..standalone._progress import duration

__all__ = ["CARRIED_AT_MOST", "MEASURED_MARGIN", "Compile", "State", "carried", "compiler_errors",
           "finished_line", "from_profile", "longest_first", "measured_job_gb", "profile",
           "profile_text", "read_events", "status_line"]


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

    @property
    def name(self) -> str:
        return os.path.basename(self.file) or "?"


@dataclass
class State:
    """What the events said so far: compiles running (by pid: their start events) and
    finished."""

    running: dict[int, Mapping[str, Any]] = field(default_factory=dict)
    done: list[Compile] = field(default_factory=list)


def _number(value: object, default: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return default
    return float(value) if math.isfinite(value) else default


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
        if event.get("event") == "start":
            state.running[pid] = event
        elif event.get("event") == "end":
            started = state.running.pop(pid, {})
            wall = _number(event.get("wall"))
            state.done.append(Compile(
                str(event.get("file") or ""), tuple(str(a) for a in event.get("archs") or ()),
                wall, _number(event.get("cpu")), int(_number(event.get("peak_kb"))),
                int(_number(event.get("code"), 1)),
                _number(started.get("t"), _number(event.get("t")) - wall),
                event.get("split") if isinstance(event.get("split"), int) else None,
                event.get("threads") if isinstance(event.get("threads"), int) else None))
    return state


def _about(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"about {minutes} min left" if minutes >= 1 else "under a minute left"


def _left(state: State, now: float, before: Sequence[Compile], jobs: int) -> str:
    """The time left, from the last build of the same key: the wall times of its compiles
    not done yet (less what the running ones have had), spread over the jobs; nothing
    without one (a count says too little of files of very different lengths)."""
    if not before:
        return ""
    # by file name: an sdist is unpacked into another temporary folder each build
    finished = {c.name for c in state.done}
    running = {os.path.basename(str(e.get("file"))): now - _number(e.get("t"), now)
               for e in state.running.values()}
    remaining = sum(max(0.0, c.wall - running.get(c.name, 0.0)) for c in before
                    if c.name not in finished)
    return _about(remaining / max(1, min(jobs, len(before)))) if remaining > 0 else ""


def status_line(state: State, now: float, elapsed: float, *, before: Sequence[Compile] = (),
                jobs: int = 1, width: int = 100) -> str:
    """The live line on a terminal: ``[37/72] flash_bwd_hdim128.cu 3m10s · 7m42s elapsed ·
    about 9 min left``, cut to ``width``."""
    total = len(before)
    count = len(state.done)
    where = f"[{count}/{total}]" if total >= count + len(state.running) else \
        f"[{count} done]"
    longest = max(state.running.values(), key=lambda e: now - _number(e.get("t"), now),
                  default=None)
    running = ""
    if longest is not None:
        name = os.path.basename(str(longest.get("file") or "?"))
        running = f" {name} {duration(max(0.0, now - _number(longest.get('t'), now)))}"
        if len(state.running) > 1:
            running += f" (+{len(state.running) - 1} running)"
    parts = [f"{where}{running}", f"{duration(elapsed)} elapsed"]
    left = _left(state, now, before, jobs)
    if left:
        parts.append(left)
    line = " · ".join(parts)
    return line if len(line) <= width else line[:max(1, width - 1)] + "…"


def finished_line(c: Compile, count: int, total: int) -> str:
    """The line for one finished compile, off a terminal (CI logs)."""
    where = f"[{count}/{total}]" if total >= count else f"[{count}]"
    archs = f" ({','.join(c.archs)})" if c.archs else ""
    how = "compiled" if c.code == 0 else f"failed (exit {c.code})"
    return (f"{where} {how} {c.name}{archs} in {duration(c.wall)}, cpu {duration(c.cpu)}, "
            f"peak {c.peak_kb / 1024 / 1024:.1f} GiB")


#: The most compiles a profile carried to a team's index holds (flash-attn has 72; the
#: key file a wheel carries is read up to 1 MiB)
CARRIED_AT_MOST = 2000


def carried(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A profile as it travels in a wheel: file names without this machine's folders
    (a home folder names its user), at most :data:`CARRIED_AT_MOST` rows (pure)."""
    return [{**row, "file": os.path.basename(str(row.get("file") or ""))}
            for row in rows[:CARRIED_AT_MOST] if isinstance(row, Mapping)]


def profile(compiles: Sequence[Compile]) -> list[dict[str, Any]]:
    """The profile kept with the key (and read back by :func:`from_profile`): each
    compile, in the order they started."""
    return [{"file": c.file, "archs": list(c.archs), "wall": c.wall, "cpu": c.cpu,
             "peak_kb": c.peak_kb, "code": c.code, "start": c.start, "split": c.split,
             "threads": c.threads} for c in sorted(compiles, key=lambda c: c.start)]


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def from_profile(rows: object) -> list[Compile]:
    """A kept profile read back (it may have come from a teammate's wheel: a row that is
    not one, or a number that is not finite, is skipped)."""
    if not isinstance(rows, list):
        return []
    out = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        numbers = [_number(row.get(k), -1.0) for k in ("wall", "cpu", "start")]
        archs = row.get("archs")
        archs = archs if isinstance(archs, list) else []
        peak, code = _int(row.get("peak_kb")) or 0, _int(row.get("code")) or 0
        if min(numbers) < 0:  # missing, not a number, not finite, or below zero
            continue
        out.append(Compile(str(row.get("file") or ""), tuple(str(a) for a in archs),
                           numbers[0], numbers[1], peak, code, numbers[2],
                           _int(row.get("split")), _int(row.get("threads"))))
    return out


def profile_text(compiles: Sequence[Compile], cores: int | None = None) -> list[str]:
    """``cache show``'s lines: each compile, longest first, then the totals, the longest
    file and the floor it sets (the build cannot end before its longest compile, nor
    before its CPU time spread over the cores)."""
    if not compiles:
        return ["no compile profile (a build before profiles were kept, or nothing compiled)"]
    first = min(c.start for c in compiles)
    span = max(c.start + c.wall for c in compiles) - first
    cpu = sum(c.cpu for c in compiles)
    lines = [f"{'wall':>8} {'cpu':>8} {'peak':>8}  split  file"]
    for c in sorted(compiles, key=lambda c: -c.wall):
        lines.append(f"{duration(c.wall):>8} {duration(c.cpu):>8} "
                     f"{c.peak_kb / 1024 / 1024:>5.1f}GiB  {c.split or '-'!s:>5}  "
                     f"{c.file}{' (' + ','.join(c.archs) + ')' if c.archs else ''}")
    longest = max(compiles, key=lambda c: c.wall)
    lines.append(f"{len(compiles)} compiles in {duration(span)} (first start to last end), "
                 f"cpu {duration(cpu)}, peak {max(c.peak_kb for c in compiles) / 1024 / 1024:.1f} "
                 "GiB in one compile's largest process")
    lines.append(f"longest: {longest.name} {duration(longest.wall)} (the critical path: "
                 "compiles do not wait on each other, so none can end the build sooner)")
    if cores:
        floor = max(longest.wall, cpu / cores)
        lines.append(f"floor on {cores} cores: {duration(floor)} (cpu / cores, or the "
                     "longest file, whichever is larger)")
    return lines


#: gcc and clang (``file:12:5: error: ...``, ``cc1plus: fatal error: ...``)
_GCC = re.compile(r"^(?P<file>[^\s:][^:]*?)(?::(?P<line>\d+))?(?::\d+)?: (?:fatal )?error: "
                  r"(?P<msg>.+)$")
#: nvcc's C++ front end: ``file(12): error: ...``, ``file(12): error #20014-D: ...``
_EDG = re.compile(r"^(?P<file>[^\s(][^(]*)\((?P<line>\d+)\): (?:catastrophic )?error"
                  r"(?: #\d+(?:-D)?)?: (?P<msg>.+)$")
#: NVIDIA's drivers: ``nvcc fatal   : Unsupported gpu architecture``, ``ptxas error   : ...``
_TOOL = re.compile(r"^(?P<file>nvcc|ptxas|nvlink|fatbinary|cicc)\s+(?:fatal|error)\s*: "
                   r"(?P<msg>.+)$")
#: the linker: ``undefined reference to `f'``, ``cannot find -lcudart``
_LINK = re.compile(r"^(?:/\S+/)?(?P<file>ld|collect2)(?:\.\w+)?: (?:error: )?(?P<msg>.*(?:"
                   r"undefined reference to|cannot find -l|returned 1 exit status).*)$")
#: what the tree's own compilers refuse (the clang toolkit's nvcc, fatbinary and the
#: tools it lacks), with its ``fix:`` on the next line; and a compiler that cannot run
_OURS = re.compile(r"^(?:\S+ \(wheelcuda, clang toolkit\): error: |wheelcuda: cannot run )")


def _error(line: str) -> str | None:
    """``file:line: error: message`` for a compiler's error line, else None (pure)."""
    for pattern in (_EDG, _GCC, _TOOL, _LINK):
        m = pattern.match(line)
        if m:
            where = m["file"] + (f":{m['line']}" if m.groupdict().get("line") else "")
            return f"{where}: error: {m['msg'].strip()}"
    return None


def compiler_errors(lines: Iterable[str], *, most: int = 5,
                    width: int = 300) -> tuple[list[str], list[str]]:
    """The first compiler errors in a build's output, as ``file:line: error: message``
    (each once, ``#error`` directives first, at most ``most``, lines cut to ``width``), and
    the lines where wheelcuda's tree refused something, each with its ``fix:`` line (pure)."""
    errors: list[str] = []
    directives: list[str] = []
    ours: list[str] = []
    want_fix = False
    for raw in lines:
        line = raw.rstrip("\n")[:width * 4].strip()
        if want_fix:
            want_fix = False
            if line.startswith("fix:"):
                ours.append("  " + line[:width])
                continue
        if _OURS.match(line):
            if len(ours) < 2 * most and line[:width] not in ours:
                ours.append(line[:width])
                want_fix = True
            continue
        said = _error(line)
        # an #error directive is its author's own explanation (torch's "C++20 or later
        # compatible compiler is required"): it comes first, whatever failed before it
        kept = directives if said and "#error" in said else errors
        if said and len(kept) < most and said[:width] not in kept:
            kept.append(said[:width])
    return [*directives, *errors][:most], ours


#: Room above the largest compile a profile measured: the same file peaks a little
#: differently from run to run, and the kernel needs some memory of its own.
MEASURED_MARGIN = 1.25


def measured_job_gb(compiles: Sequence[Compile], archs: int) -> float | None:
    """The memory one compile job needs, in GiB, from a kept profile: its largest peak,
    a split call's halved (a split call counts as two jobs' memory: rules/jobs.py),
    scaled up when this build asks for more archs than the profiled one (each arch is
    another pass through cicc and ptxas in the same call), with a margin; None when the
    profile measured no compile (pure)."""
    units = [c.peak_kb / (2 if (c.split or 1) > 1 else 1) * max(1.0, archs / len(c.archs))
             for c in compiles if c.peak_kb > 0 and c.archs]
    if not units:
        return None
    return round(max(units) * MEASURED_MARGIN / 1024**2, 2)


def longest_first(compiles: Sequence[Compile], guess: Mapping[str, float] | None = None
                  ) -> dict[str, float]:
    """Each source's wall time in a kept profile, by base name (the longest run when a
    file was compiled twice): the order the tree's ninja starts torch's compiles in
    (standalone/_ninja.py); the recipe's ``guess`` when no build measured them (pure).

    A profile that lacks some of the guess's files (an editable rebuild compiles only
    what changed) keeps them, at the guess scaled to this machine by the median ratio of
    the files both know (as it is when they share none): the guess was timed on another
    machine, and a file left out would start after every measured one, however long it
    is."""
    seconds: dict[str, float] = {}
    for c in compiles:
        seconds[c.name] = max(seconds.get(c.name, 0.0), c.wall)
    guess = guess or {}
    ratios = sorted(seconds[n] / guess[n] for n in seconds if guess.get(n, 0.0) > 0.0)
    scale = ratios[len(ratios) // 2] if ratios else 1.0
    seconds.update({n: s * scale for n, s in guess.items() if n not in seconds})
    return seconds
