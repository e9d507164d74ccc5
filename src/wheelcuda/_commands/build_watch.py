"""A build you can watch, and a failed build you can read (install's side).

While the installer runs, a thread reads the compile events the tree's nvcc appends
(_store/buildlog.py, _progress.py) and shows them: on a terminal, one live line (``[3/8]
scaled_add.cu 1m02s · 4m10s elapsed · about 3 min left``, the time left from the last
build of the same key, or a first build's recipe guess); off a terminal (CI logs), a
line per finished compile; with ``-q``, nothing. After a failed build,
:func:`failure_lines` says why from the log: the first compiler errors as
``file:line: error: message``, what the tree's compilers refused with its fix, and where
the whole log is.
"""

from __future__ import annotations

import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TextIO

from .. import _proc as proc
from .. import _report as report
from .._probe import locks
from .._rules import progress
from .._standalone import _events, _progress
from .._store import buildlog, fs
from .._store.buildlog import BuildLog
from .._store.layout import Layout
from .._team.rules import TEAM_VARS
from ..errors import CacheError

#: How often the events file is read; a compile takes seconds at least.
TICK_S = 0.5
#: How much of a log is read for its errors: a build that printed gigabytes is cut.
READ_AT_MOST = 64 * 1024 * 1024
#: The lines of the output shown when no compiler error says why.
TAIL = 15


class _Watch:
    def __init__(self, log: BuildLog, before: Sequence[_events.Compile], source: str,
                 stream: TextIO) -> None:
        self.log, self.before, self.source, self.stream = log, before, source, stream
        self.state = _events.State()
        self.read = 0  # bytes of the events file folded in
        self.shown = 0  # finished compiles told (off a terminal)
        self.start = time.monotonic()
        self.stop = threading.Event()
        self.live = stream.isatty()
        self.width = 0  # of the live line last drawn

    def fold(self) -> None:
        lines, self.read = self.log.events_from(self.read)
        _events.read_events(lines, self.state)

    def tick(self) -> None:
        self.fold()
        if self.live:
            self._draw()
            return
        total = len(self.before)
        while self.shown < len(self.state.done):
            self.shown += 1
            report.note(_events.finished_line(self.state.done[self.shown - 1], self.shown,
                                              total))

    def _draw(self) -> None:
        columns = shutil.get_terminal_size((100, 20)).columns
        line = _events.status_line(self.state, time.time(), time.monotonic() - self.start,
                                   before=self.before, jobs=max(1, len(self.state.running)),
                                   width=max(10, columns - 12), source=self.source)
        text = f"wheelcuda: {line}"
        # plain spaces over the last line, no escape sequence: any terminal, NO_COLOR too
        self.stream.write("\r" + text.ljust(self.width) + "\r")
        self.stream.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.live and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()

    def run(self) -> None:
        while not self.stop.wait(TICK_S):
            self.tick()


@contextmanager
def watching(log: BuildLog | None, *, before: Sequence[_events.Compile] = (),
             source: str = "") -> Iterator[_events.State]:
    """Show the build's compiles while the body runs; yields what was seen (complete
    once the body is done). ``before``: the last build's compiles, or the recipe's guess
    for a first build (``source`` says which, when it is not the last build)."""
    state = _events.State()
    if log is None:
        yield state
        return
    watch = _Watch(log, before, source, sys.stderr)
    # -q: nothing; -v: the installer's output is shown, the tree's nvcc's lines in it
    quiet = report.verbosity() != 0
    thread = None if quiet else threading.Thread(target=watch.run, daemon=True)
    if thread is not None:
        thread.start()
    try:
        yield watch.state
    finally:
        watch.stop.set()
        if thread is not None:
            thread.join(timeout=5.0)
        if quiet or watch.live:  # the last events, folded in without a line drawn
            watch.clear()
            watch.fold()
        else:
            watch.tick()  # the last compiles' lines


def _lines(path: Path) -> Iterator[str]:
    """The log's lines, decoded whatever their encoding, at most READ_AT_MOST bytes."""
    try:
        with path.open("rb") as f:
            data = f.read(READ_AT_MOST)
    except OSError:
        return
    for raw in data.splitlines():
        yield raw.decode("utf-8", errors="replace")


def failure_lines(log: BuildLog | None, *, fixes: Sequence[str] = (),
                  route: str = "") -> list[str]:
    """Why a build failed, from its log: the first compiler errors (with ``route``, what
    the compiler that made them is and what else would build the code), what wheelcuda's
    tree refused (with its fix; ``fixes`` are said after it: what would make the fix
    possible on this machine), and the log's path."""
    if log is None:
        return []
    output = list(_lines(log.output))  # read once: its errors, else its last lines
    errors, ours = progress.compiler_errors(output)
    lines = []
    if errors:
        lines.append("the first compiler errors:")
        lines += [f"  {e}" for e in errors]
        if route:
            lines.append(route)
    if ours:
        lines.append("what wheelcuda's compilers refused:")
        lines += [f"  {o}" for o in ours]
        lines += [f"  {f}" for f in fixes]
    if not errors and not ours:  # not a compile that failed: the installer's own words
        tail = [line.rstrip()[:300] for line in output if line.strip()][-TAIL:]
        if tail:
            lines.append("the end of the build's output:")
            lines += [f"  {line}" for line in tail]
    lines.append(f"the whole build's output: {log.output}")
    return lines


def start_log(layout: Layout, key: str) -> BuildLog | None:
    """This build's log and events; None (with a warning) when they cannot be written:
    the build goes on, its output on the terminal as before."""
    try:
        return buildlog.start(layout, key)
    except CacheError as exc:
        report.warn(f"warning: {exc}; building without a log or progress")
        return None


def build_variables(log: BuildLog | None, echo: bool,
                    environ: Mapping[str, str]) -> dict[str, str]:
    """What the installer gets for a watched build: where the tree's nvcc tells its
    compiles; and, when its output goes only to the log, PIP_NO_INPUT=1, so that pip
    stops on a question (credentials for an index) instead of waiting for an answer
    to a prompt nobody sees (``-v`` shows it, and lets pip ask); the user's own wins."""
    if log is None:
        return {}
    ask = echo or "PIP_NO_INPUT" in environ
    return {_progress.VAR: str(log.events), **({} if ask else {"PIP_NO_INPUT": "1"})}


#: Never passed on to a build: a team's credentials (the build has no use for them), and
#: the progress events' file of a build around this one (:func:`build_environ` sets its own).
NOT_PASSED = [*TEAM_VARS, _progress.VAR]


def build_environ(environ: Mapping[str, str], variables: Mapping[str, str],
                  log: BuildLog | None, echo: bool) -> dict[str, str]:
    """The installer's environment for a watched build: ``environ`` with ``variables``
    and what the watch needs (:func:`build_variables`), less what is never passed."""
    return proc.child_environ(environ, {**variables, **build_variables(log, echo, environ)},
                              drop=NOT_PASSED)


def environment_lock(prefix: str, locks_environment: bool, say: Callable[[str], None]
                     ) -> AbstractContextManager[object]:
    """uv holds <venv>/.lock for a whole install and waits for it in silence (pip takes no
    such lock): while it waits, ``say`` says so."""
    if not locks_environment:
        return nullcontext()
    return locks.watching(Path(prefix) / ".lock", f"uv's lock on {prefix} (another install "
                          "into this environment)", say, after=fs.NOTE_AFTER_S,
                          every=fs.NOTE_EVERY_S)


def unreachable_fixes(unreachable: str | None) -> list[str]:
    """What the refusals' fix (``--toolkit redist``) needs that this machine lacks:
    NVIDIA's archives did not answer (``unreachable``: why)."""
    if not unreachable:
        return []
    return [f"note: --toolkit redist is not possible here: NVIDIA's archives did not answer "
            f"({unreachable}); a mirror of them (WHEELCUDA_REDIST_URL) or a CUDA toolkit on "
            "this machine (--toolkit local) would make it so"]
