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
  ``--threads`` compiles at once. A compile starts while the shares fit the budget: what
  the kernel says is available (MemAvailable, within the cgroup's limit) when no compile of
  the pool runs, lowered when what is available now plus the running compiles' shares says
  less (memory taken by something else, or compiles that use more than their share). One
  compile always runs, however large.
- **Cores.** At most one compile per core runs; the others wait here (MAX_JOBS is a
  ceiling: ninja may start up to twice the cores, which lets the next point choose).
- **Order.** The waiting compile expected to take longest starts first (the seconds each
  source took in the package's last build, else the recipe table's guess), then in the
  order they came, so a long kernel that setup.py lists last does not run alone at the end.
- **Threads.** A compile that may split (a pruned nvcc call, which builds one target and
  so ignores ``--threads``) gets ``--split-compile`` with a part of two threads per core,
  the calls that start together dividing them (3 files on 16 cores: 10, 10 and 11), while
  memory lets it hold a second share.

The pool is a folder of small files, one per waiting (``wait-<pid>``) and running
(``run-<pid>``) compile, each held with an flock by its compile: a compile killed however
it ends (an OOM kill included) frees its share, and a file whose lock nobody holds is a
dead one's, removed by the next reader. One folder per user and pid namespace
(``$TMPDIR/wheelcuda-pool-<uid>-<pid namespace>``, or ``WHEELCUDA_POOL``) serves every
build of that user on the machine: two installs at once share one budget.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

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
#: How long a compile waits for the ones ninja started with it to show up: they start
#: within milliseconds of each other; a compile takes seconds at least.
SETTLE_S = 0.3
#: How often a waiting compile looks again; a compile takes minutes, so a slot idle for
#: half a second costs little.
POLL_S = 0.5
#: A waiting compile's record not touched for this long is a stopped one's (Ctrl-Z): the
#: others plan without it until it looks again.
STALE_S = 10.0
_GIB = 1024**3


@dataclass(frozen=True)
class Ask:
    """A compile that waits to run."""

    pid: int
    build: int  # the build it belongs to (its root process): the order is per build
    arrived: float
    seconds: float  # how long it is expected to take (-1: unknown), for the order
    unit: int  # bytes of one share: the build's memory per compile job
    threads: int  # threads it uses by itself (its --threads)
    split: bool  # it may take more threads (--split-compile)
    name: str = ""


@dataclass(frozen=True)
class Held:
    """A compile that runs: the memory it holds, and the threads it took from the split
    tokens (none for a call that does not split: it is bounded by the cores alone)."""

    pid: int
    memory: int
    tokens: int
    name: str = ""


@dataclass(frozen=True)
class Grant:
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


def decide(me: Ask, waiting: Sequence[Ask], running: Sequence[Held], *, cores: int,
           budget: int | None) -> Grant | None:
    """What ``me`` may use now, or None while it must wait (pure). Every waiting compile
    computes the same plan from the same files: the queue (:func:`_queue`) is admitted
    while a core and the memory are free, stopping at the first that does not fit (a
    large one is never passed over for ever); then the admitted ones that may split, in
    queue order, take a second share of memory while it holds and divide the split
    tokens (two threads per core, at most a core's worth each) as make's jobserver
    divides job slots. ``budget`` None: memory unknown, the cores alone decide."""
    queue = _queue(list({a.pid: a for a in [*waiting, me]}.values()))
    slots = cores - len(running)
    memory = math.inf if budget is None else budget - sum(h.memory for h in running)
    admitted: list[Ask] = []
    for a in queue:
        alone = not running and not admitted  # one compile always runs
        if slots < 1 or (not alone and _share(a) > memory):
            break
        admitted.append(a)
        slots, memory = slots - 1, memory - _share(a)
    if me not in admitted:
        return None
    ahead = any(a.build == me.build and a.arrived < me.arrived
                for a in queue[len(admitted):])
    splitters = []
    for a in admitted:
        if a.split and a.threads > 0 and a.unit <= memory:
            splitters.append(a)
            memory -= a.unit
    tokens = 2 * cores - sum(h.tokens for h in running)
    for i, a in enumerate(splitters):
        got = used(take(tokens, len(splitters) - i, cores), a.threads)
        if a == me:  # what the plan reserved: its share and a second job's
            return Grant(got, _share(a) + a.unit, ahead) if got else \
                Grant(a.threads, _share(a), ahead)
        tokens -= got
    return Grant(me.threads, _share(me), ahead)


def _number(record: Mapping[str, object], key: str) -> float:
    value = record[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(key)
    return value


def _ask(record: Mapping[str, object]) -> Ask | None:
    """A ``wait-`` record read back; None for one of another shape (another wheelcuda's
    tree may share the pool)."""
    try:
        n = {k: _number(record, k) for k in ("pid", "build", "arrived", "seconds", "unit",
                                             "threads")}
        return Ask(int(n["pid"]), int(n["build"]), n["arrived"], n["seconds"], int(n["unit"]),
                   int(n["threads"]), record["split"] is True, str(record.get("name", "")))
    except (KeyError, TypeError):
        return None


def _held(record: Mapping[str, object]) -> Held | None:
    """A ``run-`` record read back; None for one of another shape."""
    try:
        n = {k: int(_number(record, k)) for k in ("pid", "memory", "tokens")}
        return Held(n["pid"], n["memory"], n["tokens"], str(record.get("name", "")))
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


def _records(folder: str, prefix: str, *, fresh: float | None = None
             ) -> list[dict[str, object]]:
    """The live records of ``prefix`` (``wait-``, ``run-``); a file nobody holds is a
    dead compile's and goes (and so does a ``new-`` file a compile died with). With
    ``fresh``, a record not touched since then is left out: a waiting compile touches
    its own at every look, so one that is stopped (Ctrl-Z) holds no one back."""
    out = []
    for name in os.listdir(folder):
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
    file that nobody holds is a dead compile's); its open file."""
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


def _budget(folder: str, running: Sequence[Held], environ: Mapping[str, str]) -> int | None:
    """The bytes the running and the next compiles may hold: what was available when the
    pool was last empty, lowered when what is available now plus the running compiles'
    shares says less; at most the user's WHEELCUDA_MEMORY."""
    now = _machine.available_memory()
    path = os.path.join(folder, "budget")
    if now is not None and not running:
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(str(now))
        os.replace(tmp, path)
    try:
        with open(path, encoding="utf-8") as f:
            baseline = f.read().strip()
    except OSError:
        baseline = ""
    budgets = [b for b in (
        int(baseline) if baseline and baseline.isdecimal() else now,
        None if now is None else now + sum(h.memory for h in running),
        _machine.parse_size(environ.get(MEMORY_VAR, ""))) if b is not None]
    return min(budgets) if budgets else None


def _checked(folder: str) -> str:
    """The pool's folder, made; one another user could write is refused (it is often in
    /tmp, where a planted file could hold every build back)."""
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PermissionError(f"{folder} is not a folder only this user can write")
    return folder


@dataclass
class Slot:
    """A running compile's place in the pool: its ``run-`` record, held open."""

    path: str
    fd: int

    def close(self) -> None:
        """Give the place back (the compile ended)."""
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.close(self.fd)


def admit(ask: Ask, environ: Mapping[str, str], *, fallback: str | None = None,
          settle: float = SETTLE_S, poll: float = POLL_S) -> tuple[Grant, Slot | None]:
    """Wait in the pool until ``ask`` may run; what it may use, and its place (its open
    file is inheritable: the compile's processes hold it until they end, however they
    end; None without a pool). A pool folder that cannot be used (another user's, one
    whose file system takes no locks) gives way to ``fallback`` (the tree cache's);
    with neither, the compile runs at once, unsplit, with a warning."""
    if fcntl is None:
        return Grant(ask.threads, _share(ask)), None
    folders = [environ.get(FOLDER_VAR) or default_folder(), *([fallback] if fallback else [])]
    said = []
    for folder in folders:
        try:
            return _admit(_checked(folder), ask, environ, settle, poll)
        except OSError as exc:
            said.append(f"{folder} ({exc.strerror or exc})")
    sys.stderr.write(f"wheelcuda: no compile pool could be used: {'; '.join(said)}; "
                     "compiling without the machine's memory budget and without "
                     f"--split-compile\n  fix: export {FOLDER_VAR}=a folder of yours on a "
                     "local disk\n")
    return Grant(ask.threads, _share(ask)), None


def _admit(folder: str, ask: Ask, environ: Mapping[str, str], settle: float,
           poll: float) -> tuple[Grant, Slot]:
    waiting_path = os.path.join(folder, f"wait-{ask.pid}")
    me = _publish(folder, f"wait-{ask.pid}", asdict(ask))
    try:
        time.sleep(settle)
        while True:
            os.utime(me)  # still waiting: see _records
            lock = _open(os.path.join(folder, "lock"))
            try:
                fcntl.flock(lock, fcntl.LOCK_EX)  # one compile decides at a time
                running = [h for r in _records(folder, "run-") if (h := _held(r))]
                fresh = time.time() - STALE_S
                waiting = [a for r in _records(folder, "wait-", fresh=fresh) if (a := _ask(r))]
                grant = decide(ask, waiting, running, cores=_machine.cores(),
                               budget=_budget(folder, running, environ))
                if grant is not None:
                    tokens = grant.threads if grant.threads > ask.threads else 0
                    name = f"run-{ask.pid}"
                    held = _publish(folder, name, asdict(Held(ask.pid, grant.memory, tokens,
                                                              ask.name)))
                    os.set_inheritable(held, True)
                    # gone from the waiting before the next one decides (it would count
                    # this compile twice, and halve its own split)
                    with contextlib.suppress(OSError):
                        os.unlink(waiting_path)
                    return grant, Slot(os.path.join(folder, name), held)
            finally:
                os.close(lock)
            time.sleep(poll)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(waiting_path)
        os.close(me)
