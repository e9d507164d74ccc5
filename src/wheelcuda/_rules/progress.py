"""A build's compiles kept and read back: the profile kept with the key (and carried in
a shared wheel), ``cache show``'s text, the memory and order the next build takes from
it; and the errors that say why a build failed (pure). The events themselves, and the
line that says how far along a build is, are _standalone/_events.py's (the tree's
programs say it too)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# standalone (the standard library alone), so any layer may read it: the tree's
# programs, install and `builds` say a compile and a duration the same way
from .._standalone._events import Compile, duration, number, printable, same_file, whole

#: The least memory a compile job is taken to need, whatever a profile says: each compile
#: of a torch extension reads torch's headers (the example's one kernel file peaked at
#: 1.0 GiB, its host file at 0.6, on the 2-core machine).
LEAST_JOB_GB = 1.0
#: The most compiles a profile carried to a team's index holds (flash-attn has 72; the
#: key file a wheel carries is read up to 1 MiB)
CARRIED_AT_MOST = 2000


def carried(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """A profile as it travels in a wheel: file names without this machine's folders
    (a home folder names its user), at most :data:`CARRIED_AT_MOST` rows (pure)."""
    return [{**row, "file": os.path.basename(str(row.get("file") or ""))}
            for row in rows[:CARRIED_AT_MOST] if isinstance(row, Mapping)]  # rel: no folder


def profile(compiles: Sequence[Compile]) -> list[dict[str, Any]]:
    """The profile kept with the key (and read back by :func:`from_profile`): each
    compile, in the order they started."""
    return [{"file": c.file, "archs": list(c.archs), "wall": c.wall, "cpu": c.cpu,
             "peak_kb": c.peak_kb, "code": c.code, "start": c.start, "split": c.split,
             "threads": c.threads, **({"rel": c.rel} if c.rel else {})}
            for c in sorted(compiles, key=lambda c: c.start)]


def from_profile(rows: object) -> list[Compile]:
    """A kept profile read back (it may have come from a teammate's wheel: a row that is
    not one, or a number that is not finite, is skipped)."""
    if not isinstance(rows, list):
        return []
    out = []
    for row in rows:
        if not isinstance(row, dict):
            continue
        numbers = [number(row.get(k), -1.0) for k in ("wall", "cpu", "start")]
        archs = row.get("archs")
        archs = archs if isinstance(archs, list) else []
        peak, code = whole(row.get("peak_kb")) or 0, whole(row.get("code")) or 0
        if min(numbers) < 0:  # missing, not a number, not finite, or below zero
            continue
        # names reach the terminal (cache show, --explain): a teammate's could hold
        # escape sequences
        rel = printable(str(row.get("rel") or ""))
        out.append(Compile(printable(str(row.get("file") or "")),
                           tuple(printable(str(a)) for a in archs),
                           numbers[0], numbers[1], peak, code, numbers[2],
                           whole(row.get("split")), whole(row.get("threads")),
                           rel if not os.path.isabs(rel) and ".." not in rel.split("/") else ""))
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


def measured_job_gb(compiles: Sequence[Compile], archs: int, *,
                    floor: float = LEAST_JOB_GB) -> float | None:
    """The memory one compile job needs, in GiB, from a kept profile: its largest peak,
    a split call's halved (a split call counts as two jobs' memory: _rules/jobs.py),
    scaled up when this build asks for more archs than the profiled one (each arch is
    another pass through cicc and ptxas in the same call), with a margin, and no less
    than ``floor``; None when the profile measured no compile (pure)."""
    units = [c.peak_kb / (2 if (c.split or 1) > 1 else 1) * max(1.0, archs / len(c.archs))
             for c in compiles if c.peak_kb > 0 and c.archs]
    if not units:
        return None
    return round(max(max(units) * MEASURED_MARGIN / 1024**2, floor), 2)


def job_floor(compiles: Sequence[Compile], recipe_files: Mapping[str, float],
              recipe_gb: float) -> float:
    """The least a profile may say of a compile job's memory (pure): the recipe's figure
    while the profile lacks some of the files the recipe knows (an editable rebuild that
    compiled only the small ones would size a flash-attn build as if its compiles took
    8 MB: MAX_JOBS 16 in 32 GiB), else :data:`LEAST_JOB_GB`."""
    partial = any(not any(same_file(c.key, name) for c in compiles) for name in recipe_files)
    return recipe_gb if partial else LEAST_JOB_GB


def longest_first(compiles: Sequence[Compile], guess: Mapping[str, float] | None = None
                  ) -> dict[str, float]:
    """Each source's wall time in a kept profile, by its path in the package (the longest run when a
    file was compiled twice): the order the compile pool starts a build's compiles in
    (_standalone/_pool.py); the recipe's ``guess`` when no build measured them (pure).

    A profile that lacks some of the guess's files (an editable rebuild compiles only
    what changed) keeps them, at the guess scaled to this machine by the median ratio of
    the files both know (as it is when they share none): the guess was timed on another
    machine, and a file left out would start after every measured one, however long it
    is."""
    seconds: dict[str, float] = {}
    for c in compiles:  # by its path in the package: cpu/ops.cu and cuda/ops.cu are two
        seconds[c.key] = max(seconds.get(c.key, 0.0), c.wall)
    guess = guess or {}

    def guessed(key: str) -> float:
        return next((s for n, s in guess.items() if same_file(n, key)), 0.0)

    ratios = sorted(seconds[k] / guessed(k) for k in seconds if guessed(k) > 0.0)
    scale = ratios[len(ratios) // 2] if ratios else 1.0
    seconds.update({n: s * scale for n, s in guess.items()
                    if not any(same_file(n, k) for k in seconds)})
    return seconds
