"""The machine's compile budget, shared by every compile that runs through one of this
user's trees, whatever started the build (``wheelcuda install``, uv or pip with isolation,
``wheelcuda env``, the build backend): how many compiles run at once for the memory free
now, which waiting compile starts next, and how many threads each one gets.

Standalone on purpose: copied into each tree's ``bin/`` beside the nvcc wrapper and the
host compiler shim, which ask it before each compile (:func:`admit`); the standard
library only. Deciding here, at compile time, is what reaches every route: uv's per-package
settings are part of its cache key and must stay the same from run to run, and an isolated
build environment is made anew for each build, so nothing decided before a build starts
can know the memory free when a compile starts, or the other builds running beside it.

- **Memory.** Each compile holds a share of the memory while it runs: the build's memory
  per compile job (``WHEELCUDA_JOB_GB``, else the recipe table's figure for the package,
  else a default), twice that for a call that splits (a split call peaked at 5.5 to 5.8
  GiB against 3.2 unsplit, whatever its N: _rules/jobs.py), and one per target that
  ``--threads`` compiles at once. A compile starts while its share fits what is free:
  what the kernel says is available now (MemAvailable, within the cgroup's limit, its
  page cache left out), less the part of each running compile's share it has not taken
  yet (its processes' resident memory, read at each decision), and never more than the
  user's ``WHEELCUDA_MEMORY``. One compile always runs, however large.
- **Cores.** At most one compile per core runs; the others wait here (MAX_JOBS is a
  ceiling that lets ninja start every file the build is known to have, so that the next
  point can choose among them).
- **Order.** The waiting compile expected to take longest starts first (the seconds each
  source took in the package's last build, else the recipe table's guess), then in the
  order they came, so a long kernel that setup.py lists last does not run alone at the
  end. ninja starts its compiles within milliseconds, but each is a Python program that
  takes its time to start (seconds on a loaded 2-core machine), so the first to arrive
  are not the longest: a known file of the build leaves the free cores to the longer
  files its build has not yet started, for at most :data:`GRACE_S` after it came.
- **Threads.** A compile that may split (a pruned nvcc call, which builds one target and
  so ignores ``--threads``) gets ``--split-compile`` with a part of two threads per core,
  the calls that start together dividing them (3 files on 16 cores: 10, 10 and 11), while
  memory lets it hold a second share.

The pool is a folder of small files, one per waiting (``wait-<pid>``) and running
(``run-<pid>``) compile, each held with an flock by its wrapper (never by what the
compile starts: an sccache server outlives the compile, and held a place for ever): a
compile that ends however it ends frees its share, and a file whose lock nobody holds is
a dead one's, removed by the next reader. Each build has one more (``build-<pid>``: when
its first compile came, its files' expected seconds, the files started so far). A waiting
compile sleeps on a pipe of its own (``wake-<pid>``), and whoever changes the pool (a
compile that ends, one that gives up waiting, one that decides) wakes the compiles its
plan admits: no compile polls while a slot is free. One folder per user and pid
namespace (``$TMPDIR/wheelcuda-pool-<uid>-<pid namespace>``, or ``WHEELCUDA_POOL``)
serves every build of that user on the machine: two installs at once share one budget.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import math
import os
import select
import stat
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence

# NamedTuples and plain classes, not dataclasses: importing dataclasses (with inspect
# and ast) cost each compile's start about 20 ms (2-core machine, 2026-12-06)
from typing import NamedTuple

try:
    import fcntl
except ImportError:  # not POSIX: no pool
    fcntl = None  # type: ignore[assignment]

try:
    from . import _machine
except ImportError:  # run from a tree's bin/, beside it
    import _machine  # type: ignore[import-not-found,no-redef]

FOLDER_VAR = "WHEELCUDA_POOL"
#: The memory one compile job of this build holds (GiB): the build's last profile or
#: the recipe table's figure (install and the backend set it).
JOB_GB_VAR = "WHEELCUDA_JOB_GB"
#: The most memory the pool's compiles may hold at once (``64G``): the user's cap on a
#: shared machine; the budget is never above what the kernel says is available.
MEMORY_VAR = "WHEELCUDA_MEMORY"
#: How long a known file of a build leaves the free cores to the longer files its build
#: has not started yet. ninja starts them together; each wrapper is a Python start
#: (under a second idle, more on a loaded 2-core machine). A longer file that does not
#: come (an editable rebuild of a few files, a MAX_JOBS below the file count) costs the
#: build this once.
GRACE_S = 2.0
#: How long a waiting compile sleeps when nothing wakes it: a compile killed with
#: SIGKILL cannot wake the others, and memory freed outside the pool tells nobody.
FALLBACK_S = 5.0
#: A waiting compile's record not touched for this long is a stopped one's (Ctrl-Z): the
#: others plan without it until it looks again (it touches it at every wake).
STALE_S = 2 * FALLBACK_S + 1
_GIB = 1024**3


class Ask(NamedTuple):
    """A compile that waits to run."""

    pid: int
    build: int  # the build it belongs to (its root process): the order is per build
    arrived: float
    seconds: float  # how long it is expected to take (-1: unknown), for the order
    unit: int  # bytes of one share: the build's memory per compile job
    threads: int  # threads it uses by itself (its --threads)
    split: bool  # it may take more threads (--split-compile)
    name: str = ""
    key: str = ""  # its file in the package (``csrc/x.cu``, else the name): the build's
    label: str = ""  # the build's name (``causal-conv1d 1.7.0``), for who waits for whom


class Held(NamedTuple):
    """A compile that runs: the memory it holds, and the threads it took from the split
    tokens (none for a call that does not split: it is bounded by the cores alone)."""

    pid: int
    memory: int
    tokens: int
    name: str = ""
    build: int = 0
    label: str = ""
    key: str = ""


class Expected(NamedTuple):
    """What a build's compiles know of it: its files' expected seconds (its last build's,
    else the recipe's guess) and the files it started so far."""

    seconds: Mapping[str, float]
    started: frozenset[str] = frozenset()


class Grant(NamedTuple):
    """What a compile may use: its threads (its own included) and memory; ``ahead`` when
    it starts before a compile that came earlier (the order at work)."""

    threads: int
    memory: int
    ahead: bool = False


def take(free: int, waiting: int, cap: int) -> int:
    """Thread tokens a split call takes when ``free`` are free and ``waiting`` split
    calls (itself included) divide them: an equal part, at most ``cap``, and two while two
    are free (one thread is no split) (pure)."""
    return min(cap, free, max(2, free // max(1, waiting)))


def used(tokens: int, threads: int) -> int:
    """How many of ``tokens`` a call with ``--threads threads`` turns into split threads
    (``--split-compile`` = tokens // threads); 0 when that is no split (pure)."""
    split = tokens // max(1, threads)
    return split * threads if split > 1 else 0


def _share(a: Ask) -> int:
    return a.unit * max(1, a.threads)


def _queue(asks: Sequence[Ask]) -> list[Ask]:
    """The waiting compiles in the order they may start (pure): within one build the
    longest expected first, then the order they came; the builds side by side take turns
    (each one's first, then each one's second...), so that a second build is not held
    back until the first one's every file has run."""
    builds: dict[int, list[Ask]] = {}
    for a in asks:
        builds.setdefault(a.build, []).append(a)
    rank = {}
    for group in builds.values():
        for i, a in enumerate(sorted(group, key=lambda a: (-a.seconds, a.arrived, a.pid))):
            rank[a.pid] = i
    return sorted(asks, key=lambda a: (rank[a.pid], a.arrived, a.pid))


def _bare(key: str) -> str:
    return key.rsplit("/", 1)[-1]


def _unseen(expected: Expected, keys: Sequence[str]) -> list[float]:
    """The expected seconds of the build's files that neither started nor wait, sorted
    (pure). A file is named by its path in the package (a profile) or its bare name (the
    recipe's guess): two names are one file when equal, or when one is bare and the
    names agree (_events.same_file's rule)."""
    seen = {*expected.started, *keys}
    names = {_bare(k) for k in seen}
    bare = {k for k in seen if "/" not in k}
    return sorted(s for k, s in expected.seconds.items()
                  if k not in seen and (k not in names if "/" not in k else _bare(k) not in bare))


def _holding(a: Ask, unseen: Mapping[int, list[float]],
             expected: Mapping[int, Expected], now: float) -> int:
    """How many free cores ``a`` leaves to longer files its build has not started yet
    (pure): only a file the build's table knows, for :data:`GRACE_S` after it came."""
    table = expected.get(a.build)
    if table is None or now >= a.arrived + GRACE_S or \
            not any(_same(k, a.key or a.name) for k in table.seconds):
        return 0
    later = unseen.get(a.build, [])
    return len(later) - bisect.bisect_right(later, max(a.seconds, 0.0))


def _same(key: str, other: str) -> bool:
    if key == other:
        return True
    return ("/" not in key or "/" not in other) and _bare(key) == _bare(other)


def plan(waiting: Sequence[Ask], running: Sequence[Held], *, cores: int,
         budget: int | None, expected: Mapping[int, Expected] | None = None,
         now: float | None = None) -> dict[int, Grant]:
    """Which waiting compiles start now, and what each may use (pure). Every compile
    computes the same plan from the same files: the queue (:func:`_queue`) is admitted
    while a core and the memory are free, stopping at the first that does not fit (a
    large one is never passed over for ever), a known file leaving the cores its build's
    longer files will want (:func:`_holding`); then the admitted ones that may split, in
    queue order, take a second share of memory while it holds and divide the split
    tokens (two threads per core, at most a core's worth each) as make's jobserver
    divides job slots. ``budget``: bytes the running and the new compiles may hold
    together (None: memory unknown, the cores alone decide)."""
    expected = expected or {}
    now = time.time() if now is None else now
    queue = _queue(list({a.pid: a for a in waiting}.values()))
    keys: dict[int, list[str]] = {}
    for x in queue:
        keys.setdefault(x.build, []).append(x.key or x.name)
    for h in running:
        keys.setdefault(h.build, []).append(h.key or h.name)
    unseen = {b: _unseen(e, keys.get(b, [])) for b, e in expected.items()}
    slots = cores - len(running)
    memory = math.inf if budget is None else budget - sum(h.memory for h in running)
    admitted: list[Ask] = []
    for a in queue:
        alone = not running and not admitted  # one compile always runs
        if slots < 1 or (not alone and _share(a) > memory):
            break
        if _holding(a, unseen, expected, now) >= slots:
            continue
        admitted.append(a)
        slots, memory = slots - 1, memory - _share(a)
    left = [a for a in queue if a not in admitted]
    splitters = []
    for a in admitted:
        if a.split and a.threads > 0 and a.unit <= memory:
            splitters.append(a)
            memory -= a.unit
    tokens = 2 * cores - sum(h.tokens for h in running)
    grants = {}
    for a in admitted:
        ahead = any(b.build == a.build and b.arrived < a.arrived for b in left)
        grants[a.pid] = Grant(a.threads, _share(a), ahead)
    for i, a in enumerate(splitters):
        got = used(take(tokens, len(splitters) - i, cores), a.threads)
        if got:  # what the plan reserved: its share and a second job's
            grants[a.pid] = Grant(got, _share(a) + a.unit, grants[a.pid].ahead)
        tokens -= got
    return grants


def decide(me: Ask, waiting: Sequence[Ask], running: Sequence[Held], *, cores: int,
           budget: int | None, expected: Mapping[int, Expected] | None = None,
           now: float | None = None) -> Grant | None:
    """What ``me`` may use now, or None while it must wait (pure): its part of
    :func:`plan`."""
    return plan([*waiting, me], running, cores=cores, budget=budget, expected=expected,
                now=now).get(me.pid)


def _number(record: Mapping[str, object], key: str) -> float:
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(key)
    return value


def _text(record: Mapping[str, object], key: str) -> str:
    value = record.get(key, "")
    return value if isinstance(value, str) else ""


def _ask(record: Mapping[str, object]) -> Ask | None:
    """A ``wait-`` record read back; None for one of another shape (another wheelcuda's
    tree may share the pool)."""
    try:
        n = {k: _number(record, k) for k in ("pid", "build", "arrived", "seconds", "unit",
                                             "threads")}
        return Ask(int(n["pid"]), int(n["build"]), n["arrived"], n["seconds"], int(n["unit"]),
                   int(n["threads"]), record["split"] is True, _text(record, "name"),
                   _text(record, "key"), _text(record, "label"))
    except (KeyError, TypeError):
        return None


def _held(record: Mapping[str, object]) -> Held | None:
    """A ``run-`` record read back; None for one of another shape."""
    try:
        n = {k: int(_number(record, k)) for k in ("pid", "memory", "tokens")}
        build = record.get("build", 0)
        return Held(n["pid"], n["memory"], n["tokens"], _text(record, "name"),
                    build if isinstance(build, int) else 0, _text(record, "label"),
                    _text(record, "key"))
    except (KeyError, TypeError):
        return None


def _pid_namespace() -> str:
    """This process's pid namespace: containers of one user that share /tmp count pids
    each from 1, and one pool for them would take one's compile for another's."""
    try:
        return str(os.stat("/proc/self/ns/pid").st_ino)
    except OSError:
        return "0"


def default_folder(environ: Mapping[str, str] | None = None) -> str:
    """One pool per user (and pid namespace) on the machine: every build of the user
    shares it (``environ``: whose TMPDIR; this process's by default)."""
    tmp = (os.environ if environ is None else environ).get("TMPDIR") or "/tmp"  # noqa: S108
    return os.path.join(tmp, f"wheelcuda-pool-{os.getuid()}-{_pid_namespace()}")


# --- the folder and its files ---------------------------------------------------------

def _open(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


def _locked(fd: int, how: int) -> bool:
    try:
        fcntl.flock(fd, how | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _records(folder: str, prefix: str, names: Sequence[str], *, fresh: float | None = None
             ) -> list[dict[str, object]]:
    """The live records of ``prefix`` (``wait-``, ``run-``) among ``names`` (the
    folder's); a file nobody holds is a dead compile's and goes (and so does a ``new-``
    file a compile died with). With ``fresh``, a record not touched since then is left
    out: a waiting compile touches its own at every look, so one that is stopped (Ctrl-Z)
    holds no one back."""
    out = []
    for name in names:
        if not name.startswith((prefix, "new-")):
            continue
        path = os.path.join(folder, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:  # gone meanwhile
            continue
        try:
            # a new- file is locked only after it is made: one just made is left alone
            young = name.startswith("new-") and \
                os.fstat(fd).st_mtime > time.time() - STALE_S
            if not young and _locked(fd, fcntl.LOCK_SH):  # its compile is gone
                with contextlib.suppress(OSError):
                    os.unlink(path)
                continue
            if not name.startswith(prefix) or (fresh is not None
                                                and os.fstat(fd).st_mtime < fresh):
                continue
            data = json.loads(os.read(fd, 65536) or b"{}")
        except ValueError:
            continue
        finally:
            os.close(fd)
        if isinstance(data, dict):
            out.append(data)
    return out


def _publish(folder: str, name: str, record: Mapping[str, object]) -> int:
    """``name`` in ``folder`` holding ``record``, locked before it gets its name (a
    file that nobody holds is a dead compile's); its open file, which no child inherits
    (O_CLOEXEC): the place ends with the wrapper that holds it."""
    tmp = os.path.join(folder, f"new-{os.getpid()}")
    fd = _open(tmp)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps(record).encode())
        os.rename(tmp, os.path.join(folder, name))
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return fd


def _budget(running: Sequence[Held], environ: Mapping[str, str]) -> int | None:
    """The bytes the running and the next compiles may hold together: what the kernel
    says is available now, plus what the running compiles' processes hold of their
    shares (a compile that just started holds little of its share yet, and will take
    the rest); at most the user's WHEELCUDA_MEMORY. Read at each decision: memory taken
    or freed by anything else (page cache the kernel drops, another program) counts at
    once."""
    now = _machine.available_memory()
    cap = _machine.parse_size(environ.get(MEMORY_VAR, ""))
    if now is not None:
        now += sum(min(h.memory, _machine.tree_memory(h.pid)) for h in running)
    budgets = [b for b in (now, cap) if b is not None]
    return min(budgets) if budgets else None


def _checked(folder: str) -> str:
    """The pool's folder, made; one another user could write is refused (it is often in
    /tmp, where a planted file could hold every build back)."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PermissionError(f"{folder} is not a folder only this user can write")
    return folder


# --- each build's file ----------------------------------------------------------------

def _alive(pid: int, start: int) -> bool:
    """Whether the process ``pid`` that started at ``start`` (clock ticks after boot; 0:
    not known) still runs."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return False
    fields = text[text.rfind(")") + 2:].split()
    return start == 0 or (len(fields) > 19 and fields[19] == str(start))


def _read_json(path: str) -> dict[str, object]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: str, data: Mapping[str, object]) -> None:
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f)
    os.replace(tmp, path)


def _expected(folder: str, names: Sequence[str], live: set[int]) -> dict[int, Expected]:
    """Each build's file read back; the file of a build that ended goes."""
    out = {}
    for name in names:
        if not name.startswith("build-") or not name[6:].isdecimal():
            continue
        pid, path = int(name[6:]), os.path.join(folder, name)
        data = _read_json(path)
        start = data.get("start", 0)
        if pid not in live and not _alive(pid, start if isinstance(start, int) else 0):
            with contextlib.suppress(OSError):
                os.unlink(path)
            continue
        seconds, started = data.get("seconds"), data.get("started")
        out[pid] = Expected(
            {str(k): float(v) for k, v in seconds.items() if isinstance(v, (int, float))}
            if isinstance(seconds, dict) else {},
            frozenset(str(k) for k in started) if isinstance(started, list) else frozenset())
    return out


def _note_build(folder: str, ask: Ask, start: int, seconds: Mapping[str, float]) -> None:
    """The build's file, made by its first compile (under the pool's lock)."""
    path = os.path.join(folder, f"build-{ask.build}")
    if not os.path.exists(path):
        _write_json(path, {"start": start, "seconds": dict(seconds), "started": []})


def _note_start(folder: str, ask: Ask) -> None:
    """``ask``'s file started, in its build's file (under the pool's lock)."""
    path = os.path.join(folder, f"build-{ask.build}")
    data = _read_json(path)
    if data:
        started = data.get("started")
        data["started"] = [*(started if isinstance(started, list) else []), ask.key or ask.name]
        _write_json(path, data)


# --- waking ---------------------------------------------------------------------------

def _pipe(folder: str) -> tuple[int, str]:
    """This compile's wake-up pipe (``wake-<pid>``), open for reading: made under another
    name and renamed once open, so that a waker never takes a pipe being made for a dead
    one's (a pipe nobody reads is removed by the next waker)."""
    name = os.path.join(folder, f"wake-{os.getpid()}")
    tmp = f"{name}.new"
    with contextlib.suppress(OSError):
        os.unlink(tmp)
    os.mkfifo(tmp, 0o600)
    # read-write: a pipe that no writer holds open would read as closed at once
    fd = os.open(tmp, os.O_RDWR | os.O_NONBLOCK | os.O_CLOEXEC)
    os.rename(tmp, name)
    return fd, name


def _wake(folder: str, pids: Sequence[int]) -> None:
    """A byte into each of ``pids``' pipes; a pipe whose reader is gone goes."""
    for pid in pids:
        if pid == os.getpid():
            continue
        path = os.path.join(folder, f"wake-{pid}")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            if exc.errno == 6:  # ENXIO: nobody reads it (its compile died)
                with contextlib.suppress(OSError):
                    os.unlink(path)
            continue
        with contextlib.suppress(OSError):  # full: it has a wake-up to read already
            os.write(fd, b"\0")
        os.close(fd)


def _sleep(fd: int, seconds: float) -> None:
    """Until a byte comes on ``fd`` or ``seconds`` pass; what came is read."""
    if seconds > 0:
        select.select([fd], [], [], seconds)
    with contextlib.suppress(OSError):
        while os.read(fd, 4096):
            pass


class _State:
    """The pool as one decision reads it (under its lock)."""

    def __init__(self, waiting: list[Ask], running: list[Held], expected: dict[int, Expected],
                 budget: int | None) -> None:
        self.waiting, self.running, self.expected, self.budget = \
            waiting, running, expected, budget

    def plan(self, now: float) -> dict[int, Grant]:
        return plan(self.waiting, self.running, cores=_machine.cores(), budget=self.budget,
                    expected=self.expected, now=now)


def _read_state(folder: str, environ: Mapping[str, str]) -> _State:
    names = os.listdir(folder)
    running = [h for r in _records(folder, "run-", names) if (h := _held(r))]
    fresh = time.time() - STALE_S
    waiting = [a for r in _records(folder, "wait-", names, fresh=fresh) if (a := _ask(r))]
    live = {a.build for a in waiting} | {h.build for h in running}
    return _State(waiting, running, _expected(folder, names, live), _budget(running, environ))


@contextlib.contextmanager
def _locked_pool(folder: str) -> Iterator[None]:
    """The pool's lock, held: one compile decides at a time."""
    lock = _open(os.path.join(folder, "lock"))
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
    finally:
        os.close(lock)


def _wake_admitted(folder: str, environ: Mapping[str, str]) -> None:
    """After a change: the waiting compiles the plan now admits are woken (they decide
    again themselves)."""
    with _locked_pool(folder):
        state = _read_state(folder, environ)
        _wake(folder, list(state.plan(time.time())))


class Slot:
    """A running compile's place in the pool: its ``run-`` record, held open by its
    wrapper (no child inherits it)."""

    def __init__(self, path: str, fd: int, environ: Mapping[str, str]) -> None:
        self.path, self.fd, self.environ = path, fd, environ

    def close(self) -> None:
        """Give the place back (the compile ended), and wake whoever may start now."""
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.close(self.fd)
        with contextlib.suppress(OSError):
            _wake_admitted(os.path.dirname(self.path), self.environ)


#: ``on_wait``'s argument: the compiles of other builds that hold the machine (a
#: compile waiting behind its own build's is the queue at work, and says nothing).
Waiting = Callable[[Sequence[Held]], None]


def admit(ask: Ask, environ: Mapping[str, str], *, fallback: str | None = None,
          expected: Mapping[str, float] | None = None, build_start: int = 0,
          on_wait: Waiting | None = None) -> tuple[Grant, Slot | None]:
    """Wait in the pool until ``ask`` may run; what it may use, and its place (None
    without a pool). ``expected``: the seconds of the build's files (its table, kept
    by its first compile); ``build_start``: its root process's start, to tell when it
    ended; ``on_wait``: told once when other builds' compiles hold it back. A pool folder
    that cannot be used (another user's, one whose file system takes no locks) gives way
    to ``fallback`` (the tree cache's); with neither, the compile runs at once, unsplit,
    with a warning."""
    if fcntl is None:
        return Grant(ask.threads, _share(ask)), None
    folders = [environ.get(FOLDER_VAR) or default_folder(), *([fallback] if fallback else [])]
    said = []
    for folder in folders:
        try:
            return _admit(_checked(folder), ask, environ, expected=expected or {},
                          build_start=build_start, on_wait=on_wait)
        except OSError as exc:
            said.append(f"{folder} ({exc.strerror or exc})")
    sys.stderr.write(f"wheelcuda: no compile pool could be used: {'; '.join(said)}; "
                     "compiling without the machine's memory budget and without "
                     f"--split-compile\n  fix: export {FOLDER_VAR}=a folder of yours on a "
                     "local disk\n")
    return Grant(ask.threads, _share(ask)), None


def _admit(folder: str, ask: Ask, environ: Mapping[str, str], *,
           expected: Mapping[str, float], build_start: int,
           on_wait: Waiting | None) -> tuple[Grant, Slot]:
    waiting_path = os.path.join(folder, f"wait-{ask.pid}")
    pipe, pipe_path = _pipe(folder)
    me = None
    admitted = False
    try:
        me = _publish(folder, f"wait-{ask.pid}", ask._asdict())
        told = False
        while True:
            os.utime(me)  # still waiting: see _records
            now = time.time()
            with _locked_pool(folder):
                state = _read_state(folder, environ)
                if expected and ask.build not in state.expected:
                    _note_build(folder, ask, build_start, expected)
                    state.expected[ask.build] = Expected(dict(expected))
                grants = state.plan(now)
                grant = grants.get(ask.pid)
                if grant is not None:
                    slot = _run(folder, ask, grant, environ)
                    admitted = True
                    # gone from the waiting before the next one decides (it would count
                    # this compile twice, and halve its own split)
                    with contextlib.suppress(OSError):
                        os.unlink(waiting_path)
                    _wake(folder, [p for p in grants if p != ask.pid])
                    return grant, slot
                _wake(folder, list(grants))
            others = [h for h in state.running if h.build != ask.build]
            if on_wait is not None and not told and others:
                told = True
                on_wait(others)
            _sleep(pipe, min(FALLBACK_S, _until_grace(ask, state, now)))
    finally:
        with contextlib.suppress(OSError):
            os.unlink(pipe_path)
        os.close(pipe)
        if me is not None:
            with contextlib.suppress(OSError):
                os.unlink(waiting_path)
            os.close(me)
            if not admitted:  # it held the head of the queue, maybe: the next may start
                with contextlib.suppress(OSError):
                    _wake_admitted(folder, environ)


def _until_grace(ask: Ask, state: _State, now: float) -> float:
    """Seconds until ``ask`` stops leaving cores to longer files of its build (the
    fallback's when it leaves none)."""
    if ask.build in state.expected and now < ask.arrived + GRACE_S:
        return max(0.0, ask.arrived + GRACE_S - now) + 0.01
    return FALLBACK_S


def _run(folder: str, ask: Ask, grant: Grant, environ: Mapping[str, str]) -> Slot:
    """``ask``'s place among the running, and its start in its build's file."""
    tokens = grant.threads if grant.threads > ask.threads else 0
    name = f"run-{ask.pid}"
    held = _publish(folder, name, Held(ask.pid, grant.memory, tokens, ask.name,
                                       ask.build, ask.label, ask.key)._asdict())
    _note_start(folder, ask)
    return Slot(os.path.join(folder, name), held, environ)
