"""A compile through the tree: admitted by the machine's budget, timed, and told.

Standalone on purpose, like _nvcc_wrapper: copied into each tree beside it
(``bin/_progress.py``) and run on the standard library alone (with the modules copied
beside it). Both of the tree's compilers run their compile calls through :func:`run`:
the nvcc wrapper, and the host compiler shim (``c++ -c``: a package of seven CPU
extensions compiled for 8 minutes and said nothing).

1. The compile waits in the machine's pool (``_pool.py``) until the memory and a core
   are free for it, and learns how many threads it may use (nvcc's ``--split-compile``).
2. It runs as the wrapper's child (``posix_spawn``, then ``wait4`` for its CPU time and
   peak memory), holding its place in the pool until it ends, however it ends.
3. Its start and end go to the build's events (``_build.py``: install's file, else the
   tree cache's, where ``wheelcuda builds`` finds every build), and to the terminal of a
   build whose output the installer hides; one line at its end goes to stderr
   (``wheelcuda: compiled flash_fwd.cu (sm_90) in 3m10s, cpu 5m02s, peak 4.1 GiB``),
   which a build log or ``uv -v`` shows.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TypeVar

try:
    from . import _build, _events, _machine, _overlap, _pool, _tree
    from . import _nvcc_table as _table
except ImportError:  # run from a tree's bin/, beside them
    import _build  # type: ignore[import-not-found,no-redef]
    import _events  # type: ignore[import-not-found,no-redef]
    import _machine  # type: ignore[import-not-found,no-redef]
    import _nvcc_table as _table  # type: ignore[import-not-found,no-redef]
    import _overlap  # type: ignore[import-not-found,no-redef]
    import _pool  # type: ignore[import-not-found,no-redef]
    import _tree  # type: ignore[import-not-found,no-redef]

_T = TypeVar("_T")

VAR = _build.PROGRESS_VAR
#: Set for a compile's own processes once the pool admitted it: a host compile nvcc runs
#: through this tree's shim (CUDAHOSTCXX or -ccbin naming it, CMake's host compiler set
#: to CXX) is a step of that compile, whose place it would otherwise wait for behind.
ADMITTED_VAR = "WHEELCUDA_ADMITTED"
#: What a compile that started before one that came earlier writes to WHEELCUDA_NVCC_LOG
#: (install's summary says the order was at work).
AHEAD_MARK = "# wheelcuda: started ahead"
#: What a compile call's inputs end with (nvcc 13.0 reads these; objects are linked).
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c", ".ptx")
#: Options whose next argument is a value, never an input (``-o k.o``, ``-MF k.d``).
_VALUED = frozenset(_table.VALUED)
#: Options whose next argument may say the GPU code (``-gencode arch=...,code=sm_90``).
_TARGETED = _table.spellings("gencode", "arch")


def sources(args: Sequence[str]) -> list[str]:
    """The source files a call compiles, in order (pure)."""
    found: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg in _VALUED:
            skip = True
        elif not arg.startswith("-") and arg.endswith(SOURCE_SUFFIXES):
            found.append(arg)
    return found


def targets(args: Sequence[str]) -> list[str]:
    """The GPU code a call makes, ``sm_90`` or ``compute_90``, from its ``code=`` values
    (pure; a call with ``-arch`` alone says ``sm_XX`` there)."""
    out: list[str] = []
    for i, arg in enumerate(args):
        value = arg.split("=", 1)[1] if "=" in arg and arg.startswith("-") else \
            (args[i + 1] if arg in _TARGETED and i + 1 < len(args) else "")
        if "code=" in value:
            value = value.split("code=", 1)[1]
        for word in value.strip("[]").split(","):
            if word.startswith(("sm_", "compute_")) and word not in out:
                out.append(word)
    return out


def describe(name: str, archs: Sequence[str], code: int, *, wall: float, cpu: float,
             peak_kb: int, cached: bool = False) -> str:
    """The stderr line for a finished compile (pure); one through the compile cache says
    so, its cpu and memory being the cache server's."""
    shown = f" ({','.join(archs)})" if archs else ""
    how = "compiled" if code == 0 else f"failed (exit {code})"
    head = f"wheelcuda: {how} {os.path.basename(name) or '?'}{shown} in {_events.duration(wall)}"
    if cached:
        return f"{head}, through sccache"
    return f"{head}, cpu {_events.duration(cpu)}, peak {peak_kb / 1024 / 1024:.1f} GiB"


class Call:
    """One compile call: what runs, and what it asks of the pool."""

    def __init__(self, real: str, argv: Sequence[str], *, threads: int = 1,
                 split: Callable[[int], list[str]] | None = None,
                 fixed_split: int | None = None, log: str | None = None,
                 cached: bool = False, lead: int | None = None) -> None:
        #: the program, and its argv (argv[0] as it should see its name)
        self.real, self.argv = real, list(argv)
        #: the threads it uses by itself (--threads), and how to give it more (None: it
        #: cannot take more: a host compile, the clang toolkit, a call nvcc would not split)
        self.threads, self.split = threads, split
        #: the user's fixed --split-compile (WHEELCUDA_SPLIT_COMPILE), already in argv
        self.fixed_split = fixed_split
        #: the call goes to WHEELCUDA_NVCC_LOG, after this prefix, as it runs (None: not)
        self.log = log
        #: it runs through a compile cache (sccache), whose server runs the compiler: its
        #: time and memory are not this child's, and the server outlives the compile
        self.cached = cached
        #: the words of argv before the compiler's arguments: the program, and the compiler
        #: sccache is given (the clang toolkit's nvcc runs sccache itself: one)
        self.lead = lead if lead is not None else 2 if cached else 1

    def args(self, argv: Sequence[str] | None = None) -> list[str]:
        """The compiler's arguments in ``argv`` (this call's when None): past the program,
        and past the compiler sccache is given."""
        return list(argv if argv is not None else self.argv)[self.lead:]


def _status_code(status: int) -> int:
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1


def _expected(environ: Mapping[str, str], facts: Mapping[str, object], package: str,
           build: _build.Build | None) -> tuple[dict[str, float], str]:
    """Each of the build's files' expected seconds, and where they come from (for the
    time left): install's profile of the package's last build (WHEELCUDA_ORDER), else
    the newest build of it through this tree by another route, filled with the recipe
    table's guess for what it lacks, else the guess alone."""
    if environ.get(_tree.ORDER_VAR):
        return _tree.order(environ, facts, package), ""
    guess = _tree.order({}, facts, package)
    last = _build.last_profile(facts, package, build)
    if not last:
        return guess, "the recipe's guess" if guess else ""
    more = {k: s for k, s in guess.items() if not any(_events.same_file(k, o) for o in last)}
    return {**last, **more}, ""


def _ask(call: Call, environ: Mapping[str, str], facts: Mapping[str, object],
         build: _build.Build | None, package: str, *, label: str,
         seconds: Mapping[str, float]) -> _pool.Ask:
    file = (sources(call.args()) or [""])[0]
    name = os.path.basename(file)
    key = (_events.relative(os.path.join(os.getcwd(), file), build.cwd) if build else "") \
        or name
    expected = next((s for k, s in seconds.items() if _events.same_file(k, key)), -1.0)
    unit = int(_tree.job_gb(environ, facts, package) * 1024**3)
    fixed = call.fixed_split or 1
    return _pool.Ask(os.getpid(), build.pid if build else os.getppid(), time.time(),
                     expected, unit * (2 if fixed > 1 else 1),
                     max(1, call.threads), call.split is not None and facts.get("split") is
                     not False, name, key, label)


def _holders(held: Sequence[_pool.Held]) -> str:
    """Who holds the machine's compiles, by build: ``2 compiles of causal-conv1d 1.7.0
    (pid 4242)`` (pure)."""
    builds: dict[tuple[int, str], int] = {}
    for h in held:
        builds[h.build, h.label] = builds.get((h.build, h.label), 0) + 1
    return ", ".join(f"{n} compile{'s' if n > 1 else ''} of {label or 'another build'}"
                     f" (pid {pid})" for (pid, label), n in builds.items())


def run(call: Call, here: str, environ: Mapping[str, str]) -> int:
    """Run one compile through the pool, timed and told; return its exit code. What tells
    it (the events, the terminal, stderr) never fails the compile: a compile that ran is
    always waited for and its place given back. A stopping signal (Ctrl-C) while it
    waits ends it quietly, by that signal, as one while it runs does."""
    if environ.get(ADMITTED_VAR):  # a step of a compile admitted already (nvcc's host
        os.execv(call.real, call.argv)  # noqa: S606 - compiler is this shim: counted
    caught = _Caught()
    try:
        return _run(call, here, environ, caught)
    except _Stopped as stopped:
        _die_by(stopped.signum)
        return 128 + stopped.signum


class _Teller:
    """Where one compile is told: its build's events, and the terminal of a build whose
    output the installer hides (nothing here fails the compile)."""

    def __init__(self, environ: Mapping[str, str], facts: Mapping[str, object],
                 build: _build.Build | None, *, shown: str, seconds: Mapping[str, float],
                 source: str) -> None:
        self.environ, self.build, self.shown, self.source = environ, build, shown, source
        self.events = _build.events_file(environ, facts, build)
        self.before = _events.guess(seconds) if not environ.get(VAR) else []

    def event(self, event: Mapping[str, object]) -> bool | None:
        """``event`` appended to the build's events; whether it was the first."""
        return _quietly(_build.append, self.events, event)

    def say(self, what: Sequence[str], *, first: bool) -> None:
        """The terminal's line, ``what`` (its forms, the longest first) in it."""
        _quietly(self._say, what, first)

    def _say(self, what: Sequence[str], first: bool) -> None:
        # the events are read only once a terminal is there to tell (most builds have none)
        _build.tell(lambda width: _build.line(_build.read(self.events), self.shown, what,
                                              before=self.before, source=self.source,
                                              width=width, jobs=_machine.cores()),
                    self.build, self.environ, first=first)

    def waiting(self, ask: _pool.Ask, held: Sequence[_pool.Held]) -> None:
        """``ask`` held back by other builds' compiles: said once, and kept in the events
        (``wheelcuda builds`` lists the build as waiting, and for whom)."""
        holders, name = _holders(held), os.path.basename(ask.name) or "?"
        first = self.event({"event": "wait", "pid": ask.pid, "file": ask.key or ask.name,
                            "t": time.time(), "for": holders,
                            **({"build": self.shown, "root": self.build.pid}
                               if self.build else {})})
        self.say([f"{name} waits for a core: {holders} run", f"{name} waits", "waiting"],
                 first=first is not False)


def _run(call: Call, here: str, environ: Mapping[str, str], caught: _Caught) -> int:
    build = _quietly(_build.find, _overlap.caller())  # a detached compile: its caller's
    package, version = (_quietly(_build.package_name, build.cwd) or ("", "")) if build \
        else ("", "")
    facts = _tree.config(here)
    shown = f"{package} {version}".strip() or "the build"
    seconds, source = _quietly(_expected, environ, facts, package, build) or ({}, "")
    ask = _ask(call, environ, facts, build, package, label=shown, seconds=seconds)
    teller = _Teller(environ, facts, build, shown=shown, seconds=seconds, source=source)
    pool = facts.get("pool")
    with caught.waiting():
        grant, slot = _pool.admit(ask, environ, fallback=pool if isinstance(pool, str) else None,
                                  expected=seconds, build_start=build.start if build else 0,
                                  on_wait=lambda held: teller.waiting(ask, held))
    argv = call.split(grant.threads) if call.split is not None and \
        grant.threads > ask.threads else call.argv
    args = call.args(argv)
    name, archs = (sources(args) or [""])[0], targets(args)
    _log_call(call, args, name, environ, ahead=grant.ahead)
    return _compile(call, argv, environ, caught=caught, slot=slot, teller=teller,
                    event=_event(args, name, archs, build, shown))


def _compile(call: Call, argv: Sequence[str], environ: Mapping[str, str], *, caught: _Caught,
             slot: _pool.Slot | None, teller: _Teller, event: Mapping[str, object]) -> int:
    """The compiler run, waited for and told; its place given back however it ends."""
    # SIGCHLD ignored (inherited) would make wait4 fail; SIGPIPE goes back to its default
    # for the compiler, as a shell would start it (Python ignores it).
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    start = time.monotonic()
    # not through a cache: its server, started by the first compile, outlives this one
    tmp = None if call.cached else _quietly(_private_tmp, environ)
    name, archs = str(event["file"]), [str(a) for a in event["archs"]]  # type: ignore[attr-defined]
    base, shown_archs = os.path.basename(name) or "?", f" ({','.join(archs)})" if archs else ""
    try:
        if caught.signum is not None:  # stopped between its turn and its start
            raise _Stopped(caught.signum)
        pid = os.posix_spawn(call.real, list(argv), {**environ, ADMITTED_VAR: "1",
                                                     **({"TMPDIR": tmp} if tmp else {})},
                             setsigdef=(signal.SIGPIPE,))
        caught.started(pid)
        first = teller.event({**event, "event": "start", "t": time.time()})
        teller.say([f"started {base}{shown_archs}", f"started {base}", base],
                   first=first is not False)
        _, status, usage = os.wait4(pid, 0)
    finally:
        if slot is not None:
            slot.close()
        if tmp:
            _remove(tmp)
    if caught.signum is not None:  # stopped: no end to tell, its temporary files gone
        signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else caught.signum
        _die_by(signum)
        return 128 + signum
    code = _status_code(status)
    wall, cpu = time.monotonic() - start, usage.ru_utime + usage.ru_stime
    # ru_maxrss of a reaped child is the largest of it and the children it reaped (cicc,
    # ptxas, the host compiler), in KiB on Linux: the peak of the compile's largest process
    # (with --split-compile, several cicc run at once: more in all); a cache's server
    # compiled a cached call: the child's usage is not the compile's
    cpu, peak = (0.0, 0) if call.cached else (cpu, usage.ru_maxrss)
    teller.event({**event, "event": "end", "t": time.time(), "code": code,
                  "wall": round(wall, 3), "cpu": round(cpu, 3), "peak_kb": peak,
                  **({"cache": True} if call.cached else {})})
    how, took = "compiled" if code == 0 else f"failed (exit {code})", \
        f" in {_events.duration(wall)}"
    teller.say([f"{how} {base}{shown_archs}{took}", f"{how} {base}{took}", f"{how} {base}"],
               first=False)
    if sys.stderr is not None:  # stderr closed by whoever started the build
        _quietly(sys.stderr.write, describe(name, archs, code, wall=wall, cpu=cpu,
                                            peak_kb=peak, cached=call.cached) + "\n")
    if os.WIFSIGNALED(status):  # die as the compiler did: ninja and make tell a signal
        _die_by(os.WTERMSIG(status))  # (an interrupted build) from an exit code
    return code


class _Stopped(Exception):
    """A stopping signal came while the compile waited for its turn (or before its
    compiler started): it ends by that signal, with nothing to stop."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


#: The signals that stop a build (Ctrl-C, ninja or a parent ending it, a closed terminal).
_STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Caught:
    """From before a compile waits for its turn until its compiler ends, a stopping
    signal is remembered and passed on to the compiler, so that the wrapper outlives it
    to give its place back and remove the compile's temporary folder, then ends by the
    same signal (ninja and make tell an interrupted build by it). One that comes while
    the compile waits ends the wait at once (:class:`_Stopped`), without a traceback:
    a Ctrl-C printed one for each compile still waiting. A signal ignored when the
    wrapper started (under ``nohup``, ``&``) stays ignored."""

    def __init__(self) -> None:
        self.child: int | None = None
        self.signum: int | None = None
        self._waiting = False
        for signum in _STOPPING:
            if signal.getsignal(signum) is not signal.SIG_IGN:
                signal.signal(signum, self._catch)

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """While the compile waits: a stopping signal ends the wait."""
        if self.signum is not None:
            raise _Stopped(self.signum)
        self._waiting = True
        try:
            yield
        finally:
            self._waiting = False

    def started(self, pid: int) -> None:
        """The compiler runs as ``pid``: a signal caught before it started reaches it."""
        self.child = pid
        if self.signum is not None:
            self._catch(self.signum, None)

    def _catch(self, signum: int, _frame: object) -> None:
        self.signum = signum
        if self._waiting:
            self._waiting = False
            raise _Stopped(signum)
        if self.child is not None:
            with contextlib.suppress(OSError):
                os.kill(self.child, signum)


def _private_tmp(environ: Mapping[str, str]) -> str:
    """A folder of this compile's own in the user's TMPDIR, for the compiler's temporary
    files (nvcc's, clang's): removed when the compile ends, however it ends but SIGKILL.
    A Ctrl-C during a clang compile left zero-byte .fatbin, .o and .s files in /tmp,
    whatever route started the build."""
    base = next((environ[v] for v in ("TMPDIR", "TEMP", "TMP") if environ.get(v)),
                "/tmp")  # noqa: S108 - the user's, as tempfile.gettempdir takes it
    for n in range(100):  # tempfile.mkdtemp's way, without importing it at each start
        path = os.path.join(base, f"wheelcuda-cc-{os.getpid()}-{time.monotonic_ns() + n:x}")
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(base)


def _remove(path: str) -> None:
    """``path`` and what is in it, whatever cannot be removed left (shutil.rmtree with
    ignore_errors, without importing shutil at each start)."""
    for root, folders, files in os.walk(path, topdown=False):
        for name in files:
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(root, name))
        for name in folders:
            full = os.path.join(root, name)
            with contextlib.suppress(OSError):
                (os.unlink if os.path.islink(full) else os.rmdir)(full)
    with contextlib.suppress(OSError):
        os.rmdir(path)


def _event(args: Sequence[str], name: str, archs: Sequence[str],
           build: _build.Build | None, shown: str) -> dict[str, object]:
    """What both of a compile's events say of it (pure but for the working folder)."""
    event: dict[str, object] = {"file": name, "archs": list(archs), "pid": os.getpid(),
                                "split": _table_number(args, "split"),
                                "threads": _table_number(args, "threads")}
    if build is not None:
        rel = _events.relative(os.path.join(os.getcwd(), name), build.cwd)
        by = _quietly(_build.installer, build)
        event.update(build=shown, root=build.pid, **({"rel": rel} if rel else {}),
                     **({"by": by} if by else {}))
    return event


def _log_call(call: Call, args: Sequence[str], name: str, environ: Mapping[str, str], *,
              ahead: bool) -> None:
    """The call, and whether the pool started it ahead of one that came earlier, for
    install's summary (WHEELCUDA_NVCC_LOG: install counts the calls there)."""
    logged = ([f"{AHEAD_MARK} {os.path.basename(name)}"] if ahead else []) + \
        ([call.log + " ".join(args)] if call.log is not None else [])
    if logged and environ.get("WHEELCUDA_NVCC_LOG"):
        with contextlib.suppress(OSError), open(environ["WHEELCUDA_NVCC_LOG"], "a") as log:
            log.write("".join(f"{line}\n" for line in logged))


def _quietly(fn: Callable[..., _T], *args: object, **kwargs: object) -> _T | None:
    """``fn``'s answer, or None when it fails: telling a compile (its events, the
    terminal, a line on stderr) must never fail the compile it tells of, nor leave it
    unwaited for (a file name that is not UTF-8 could)."""
    try:
        return fn(*args, **kwargs)
    except Exception:  # anything: see above
        return None


def _table_number(args: Sequence[str], option: str) -> int | None:
    """The value of the last spelling of ``option`` (``split``, ``threads``) in ``args``;
    None when not given (pure)."""
    names = _table.spellings(option)
    found = None
    for i, arg in enumerate(args):
        for spelling in names:
            value = None
            if arg == spelling and i + 1 < len(args):
                value = args[i + 1]
            elif arg.startswith(spelling + "="):
                value = arg[len(spelling) + 1:]
            if value is not None and value.isdecimal():
                found = int(value)
    return found


def _die_by(signum: int) -> None:
    with contextlib.suppress(OSError, ValueError):
        signal.signal(signum, signal.SIG_DFL)
        sys.stderr.flush()
        os.kill(os.getpid(), signum)
