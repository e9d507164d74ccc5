"""Which build a compile belongs to, where its events go, and how it is told on the
terminal of a person who runs uv or pip, at compile time.

Standalone: copied into each tree's bin/ beside the nvcc wrapper; the standard library
only.

- **The build.** A compile's build is its nearest Python ancestor: the process that runs
  the PEP 517 hook (uv runs ``python -c "...backend.build_wheel(...)"``, pip its
  ``_in_process.py``; seen with uv 0.13.9 and pip 26.3), setup.py, or the program that
  loads torch's JIT. Its pid and start time name the build; its working folder (the
  unpacked sdist, whose PKG-INFO says the package, or the project folder) names the
  package.
- **Its events** go to the file ``wheelcuda install`` names (``WHEELCUDA_PROGRESS``), else
  to ``tree-<pid>-<start>.jsonl`` in the events folder of the tree's cache (the tree's
  facts name it): ``wheelcuda builds`` finds every build there, whoever started it, with
  nothing set in uv's settings.
- **The terminal.** uv and pip show nothing of a build's output without ``-v`` (uv printed
  one line, ``Building causal-conv1d==1.7.0``, for 17 minutes). A program can still
  speak to the person who started it through ``/dev/tty``, as ssh and git do for a
  password: neither installer starts its builds in a session of their own, and the
  build keeps their controlling terminal. So each compile's start and end is written
  there, placed where the installer's own drawing does not erase it: uv redraws its
  progress area (one line per build running, and one more) every 200 ms by moving the
  cursor up over it, so the line goes above that area and the area is drawn below it
  again; pip's spinner moves only when the build prints, so the line goes below pip's.
  Not when ``wheelcuda install`` draws its own line (it sets ``WHEELCUDA_PROGRESS``),
  when the build's stderr is the terminal already, with ``WHEELCUDA_NO_PROGRESS=1``, or
  when there is no terminal (CI).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import stat as stat_module
import sys
import time
from collections.abc import Callable, Mapping, Sequence

# NamedTuples and plain classes, not dataclasses: importing dataclasses (with inspect
# and ast) cost each compile's start about 20 ms (2-core machine, 2026-12-06)
from typing import Any, NamedTuple

try:
    from . import _events, _tree
except ImportError:  # run from a tree's bin/, beside it
    import _events  # type: ignore[import-not-found,no-redef]
    import _tree  # type: ignore[import-not-found,no-redef]

PROGRESS_VAR = "WHEELCUDA_PROGRESS"
QUIET_VAR = "WHEELCUDA_NO_PROGRESS"
#: What a tree build's events file is called: ``tree-<pid>-<start>.jsonl``.
#: (compiled when used: re.match caches it, and a compile's start pays for no other)
TREE_EVENTS = r"^tree-(?P<pid>\d+)-(?P<start>\d+)\.jsonl$"
#: The width of a terminal that says none.
_DEFAULT_COLUMNS = 80


class Stat(NamedTuple):
    """What /proc says of a process."""

    pid: int
    ppid: int
    start: int  # clock ticks after boot: with the pid, a name no other process has
    exe: str


def stat(pid: int) -> Stat | None:
    """``/proc/<pid>``'s parent, start time and program; None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the name may hold spaces and ")"
    try:
        exe = os.readlink(f"/proc/{pid}/exe")
    except OSError:
        exe = ""
    try:
        return Stat(pid, int(fields[1]), int(fields[19]), exe)
    except (IndexError, ValueError):
        return None


def alive(pid: int, start: int) -> bool:
    """Whether the process ``pid`` that started at ``start`` still runs."""
    found = stat(pid)
    return found is not None and found.start == start


def _python(s: Stat) -> bool:
    return os.path.basename(s.exe).startswith(("python", "pypy"))


class Build(NamedTuple):
    """The build a compile belongs to."""

    pid: int
    start: int
    cwd: str
    #: the process above it: uv, pip, or something else
    parent: Stat | None


def find(pid: int | None = None) -> Build | None:
    """The build of this process (or of ``pid``): its nearest Python ancestor, else its
    parent; None without /proc."""
    here = stat(os.getppid() if pid is None else pid)
    first = here
    for _ in range(64):  # a loop in /proc cannot happen; a bound costs nothing
        if here is None or here.pid <= 1:
            break
        if _python(here):
            break
        here = stat(here.ppid)
    chosen = here if here is not None and here.pid > 1 and _python(here) else first
    if chosen is None:
        return None
    try:
        cwd = os.readlink(f"/proc/{chosen.pid}/cwd")
    except OSError:
        cwd = ""
    return Build(chosen.pid, chosen.start, cwd, stat(chosen.ppid))


#: A pyproject's ``[project]`` name by its line (compiled when used: re.search caches it).
_PROJECT_NAME = r"(?ms)^\[project\][^\[]*?^name\s*=\s*[\"']([^\"']+)[\"']"


def _head(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(16384)
    except OSError:
        return ""


def _project(text: str) -> tuple[str, str]:
    """A pyproject.toml's static ``[project]`` name and version ("" where not static)."""
    project: object = None
    if not text.strip():
        return "", ""
    if sys.version_info >= (3, 11):
        # imported here: most builds name themselves in PKG-INFO, and tomllib costs ~8 ms
        import tomllib  # noqa: PLC0415
        with contextlib.suppress(ValueError):  # cut at 16 KiB, or not TOML
            project = tomllib.loads(text).get("project", {})
    if project is None:  # Python 3.10, or no TOML: the name alone, by its line
        found = re.search(_PROJECT_NAME, text)
        return (found[1] if found else ""), ""
    if not isinstance(project, dict):
        return "", ""
    name, version = project.get("name"), project.get("version")
    return (name if isinstance(name, str) else "",
            version if isinstance(version, str) else "")


def package_name(cwd: str) -> tuple[str, str]:
    """(name, version) of the package built in ``cwd``: an unpacked sdist's PKG-INFO, else
    a project's static ``[project]`` name and version, else the folder's name (version
    "")."""
    info = dict(line.split(":", 1) for line in _head(os.path.join(cwd, "PKG-INFO"))
                .split("\n\n", 1)[0].splitlines() if ":" in line and line[:1] not in " \t")
    if info.get("Name", "").strip():
        return info["Name"].strip(), info.get("Version", "").strip()
    project = _project(_head(os.path.join(cwd, "pyproject.toml")))
    if project[0]:
        return project
    return os.path.basename(cwd.rstrip("/")) or "?", ""


def events_file(environ: Mapping[str, str], facts: Mapping[str, Any],
                build: Build | None) -> str | None:
    """Where this compile's events go: install's file, else the tree cache's events folder
    (None without one)."""
    if environ.get(PROGRESS_VAR):
        return environ[PROGRESS_VAR]
    folder = facts.get("events")
    if not isinstance(folder, str) or not folder or build is None:
        return None
    return os.path.join(folder, f"tree-{build.pid}-{build.start}.jsonl")


# --- the terminal ---------------------------------------------------------------------

def _cmdline(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def installer(build: Build) -> str:
    """Who runs the build: ``uv`` (the process above it), ``pip`` or ``build`` (pypa/build)
    by the frontend above the hook they run (both vendor pyproject_hooks'
    ``_in_process.py``), else ``""`` (setup.py, a JIT build, another frontend)."""
    if build.parent is not None and os.path.basename(build.parent.exe) == "uv":
        return "uv"
    if not any(w.endswith(b"_in_process.py") for w in _cmdline(build.pid)):
        return ""
    above = _cmdline(build.parent.pid) if build.parent is not None else []
    words = {os.path.basename(w) for w in above[:3]}
    if words & {b"pip", b"pip3"} or b"pip" in above[1:3] or \
            any(w.endswith(b"/pip/__main__.py") for w in above[:2]):
        return "pip"
    if b"build" in above[1:3] or any(w.endswith(b"/build/__main__.py") for w in above[:2]):
        return "build"
    return "pip" if any(b"/pip/" in w for w in above[:2]) else ""


def _uv_lines(uv: int) -> int:
    """The height of uv's progress area while it builds: a line per build running (a
    Python child of uv: the hook) and its ``Preparing packages...`` line (2 lines for
    one build, 3 for two: seen with uv 0.13.9)."""
    builds = 0
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdecimal():
                child = stat(int(name))
                if child is not None and child.ppid == uv and _python(child):
                    builds += 1
    return 1 + max(1, builds)


def placed(text: str, installer: str, *, first: bool, height: int = 2) -> str:
    """``text`` as the bytes that put it on its own line of a terminal that ``installer``
    draws on too (pure): above uv's progress area, which uv then draws again below it;
    below pip's line, so the first one moves down a line and the next ones take the line
    pip's spinner moved onto."""
    if installer == "uv":
        return "\r\x1b[2K" + "\x1b[1A\x1b[2K" * (height - 1) + text + "\n" * height
    if installer == "pip":
        return ("\n" if first else "\r\x1b[2K") + text + "\n"
    return text + "\n"


def tell(text: Callable[[int], str], build: Build | None, environ: Mapping[str, str], *,
         first: bool) -> None:
    """``text`` (the line for a width) on the terminal of the person who started the
    build, when the build's output does not reach it (see the module's docstring); a
    terminal that cannot be written costs only the line."""
    if environ.get(PROGRESS_VAR) or _tree.flag(environ.get(QUIET_VAR)) or build is None:
        return
    try:
        fd = os.open("/dev/tty", os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:  # no terminal (CI, a service): the output's own line is what is left
        return
    with contextlib.suppress(OSError):
        try:
            if not _ours_to_tell(fd, build):
                return
            plain = environ.get("TERM", "") in ("", "dumb")
            drawer = "" if plain else installer(build)
            height = _uv_lines(build.parent.pid) if drawer == "uv" and build.parent else 2
            # a line that wrapped would be two: uv would draw over one of them
            shown = text(width(fd, environ) - 1)
            data = placed(shown, drawer, first=first, height=height).encode(
                errors="replace")
            # ninja runs each compile in a process group of its own, which is never the
            # terminal's foreground one: with `stty tostop` a write would stop it (SIGTTOU)
            previous = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
            try:
                os.write(fd, data)
            finally:
                signal.signal(signal.SIGTTOU, previous)
        finally:
            os.close(fd)


def _ours_to_tell(fd: int, build: Build) -> bool:
    """Whether the terminal is the build's to write on now: its installer's job is in the
    foreground (a `uv sync &` does not draw into the editor in front of it), and the
    build's own output does not reach it already (`python setup.py` at a prompt: its
    stderr is this terminal, and each compile's stderr line shows there)."""
    try:
        if os.tcgetpgrp(fd) != os.getpgid(build.pid):
            return False
    except OSError:  # the build is gone, or this is no terminal of a session
        return False
    try:
        here, there = os.fstat(fd), os.stat(f"/proc/{build.pid}/fd/2")
    except OSError:
        return True
    return not (stat_module.S_ISCHR(there.st_mode) and there.st_rdev == here.st_rdev)


def width(fd: int, environ: Mapping[str, str]) -> int:
    """The columns of the terminal ``fd``: ``COLUMNS`` when set (as
    shutil.get_terminal_size reads it), else what the terminal says, else 80 (a pty
    nobody sized, `script` or `docker exec -t`, says 0)."""
    given = environ.get("COLUMNS", "").strip()
    if given.isdecimal() and int(given) > 0:
        return int(given)
    try:
        return os.get_terminal_size(fd).columns or _DEFAULT_COLUMNS
    except OSError:
        return _DEFAULT_COLUMNS


def line(state: _events.State, build_name: str, what: Sequence[str], *,
         before: Sequence[_events.Compile], source: str, now: float | None = None,
         width: int = _DEFAULT_COLUMNS, jobs: int = 0) -> str:
    """The terminal's line for one compile's start, end or wait (pure but for the
    clock), fitted to ``width`` by whole parts, what matters first: how many are done
    and the time so far, then the file (``what``: its forms, the longest first), the
    time left, the build, what else runs (``wheelcuda [1/4] 52.0s · compiled
    causal_conv1d_update.cu (sm_120) in 8.3s · about 4 min left · causal-conv1d
    1.7.0``). The time left is spread over ``jobs`` compiles at once (the cores: at a
    build's start only the first have come, and flash-attn's first line said 130 min
    where 18 were left), else over those running."""
    now = time.time() if now is None else now
    elapsed = now - state.first if state.first is not None else 0.0
    left = _events.time_left(state, now, before, max(1, jobs or len(state.running)))
    others = len(state.running)
    return _events.fit([[f"wheelcuda {_events.count_of(state, before)} "
                         f"{_events.duration(elapsed)}"],
                        [_events.printable(w) for w in what],
                        [f"{left} ({source})" if source else left, left],
                        [_events.printable(build_name)],
                        [f"{others} running" if others > 1 else ""]], width)


def read(path: str | None) -> _events.State:
    """The events a build wrote so far."""
    if not path:
        return _events.State()
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return _events.read_events(f.read().splitlines())
    except OSError:
        return _events.State()


def append(path: str | None, event: Mapping[str, object]) -> bool | None:
    """One line appended (``O_APPEND``: the compiles ninja runs at once do not interleave
    lines this short); whether it was the file's first, None when there is no file or it
    cannot be written (the progress is what that costs)."""
    if not path:
        return None
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            first = os.fstat(fd).st_size == 0
            os.write(fd, (json.dumps(event, sort_keys=True) + "\n").encode())
            return first
        finally:
            os.close(fd)
    return None


#: How many of the newest tree builds :func:`last_profile` looks through.
_PROFILES_READ = 32


def last_profile(facts: Mapping[str, Any], package: str, build: Build | None
                 ) -> dict[str, float]:
    """The seconds each file took in the newest finished build of ``package`` that went
    through this tree's cache by a route other than install (uv, pip, the backend),
    by the file's path in the package; empty when there is none. install hands its own
    builds' profile over (WHEELCUDA_ORDER); the other routes learn from each other here,
    so a second ``uv add`` of a package knows its files' order and its time left."""
    folder = facts.get("events")
    if not isinstance(folder, str) or not folder or not package:
        return {}
    mine = f"tree-{build.pid}-{build.start}.jsonl" if build else ""
    try:
        names = [n for n in os.listdir(folder) if re.match(TREE_EVENTS, n) and n != mine]
        newest = sorted(names, key=lambda n: os.stat(os.path.join(folder, n)).st_mtime,
                        reverse=True)[:_PROFILES_READ]
    except OSError:
        return {}
    want = _tree.canonical(package)
    for name in newest:
        path = os.path.join(folder, name)
        if _tree.canonical(_events.read_events(_lines(path, 4096)[:1]).build.split(" ")[0]) \
                != want:  # another package's: its first line says (every event names it)
            continue
        state = _events.read_events(_lines(path))
        if state.running or state.waiting:  # still running, or stopped in the middle
            continue
        ok = {c.key: c.wall for c in state.done if c.code == 0}
        if ok:
            return ok
    return {}


def _lines(path: str, most: int = 4 * 1024 * 1024) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(most).splitlines()
    except OSError:
        return []
