"""The tree's ``bin/nvcc``: prune the GPU targets a build asks for to the ones you have.

Standalone on purpose: this file is copied into each synthesized tree and run by
``bin/nvcc`` (a sh trampoline) on the Python that wheelcuda runs on, with ``-I -S``, so
it imports nothing but the standard library and works whichever environment the build
runs in. It executes the real nvcc through ``bin/.nvcc-real``, a link in the same
folder: nvcc reads ``nvcc.profile`` from the folder it was invoked through (FACTS.md).

Why: packages such as causal-conv1d and mamba-ssm hard-code nine ``-gencode`` targets,
and torch ignores TORCH_CUDA_ARCH_LIST once a package's flags contain ``arch``. A build
for one card then compiles everything nine times (25 min against 4.5 min here).

``WHEELCUDA_ARCHS`` (set by ``wheelcuda env``, torch syntax: ``9.0;12.0+PTX``) turns it
on; unset or ``WHEELCUDA_ALL_ARCHS=1`` leaves every argument as it is. The rewrite keeps
every other flag in place and replaces every arch option (``-gencode``, ``-arch``,
``-code``, in each spelling) with one ``-gencode`` per target: SASS for each, PTX for
the highest when the list says +PTX, and a family variant the build asked for
(``sm_90a``: wgmma kernels need it) kept for that arch (:func:`rewrite`).

A pruned compile call usually builds one target, where nvcc ignores ``--threads``; it
then gets ``--split-compile`` so that a lone big file does not leave cores idle, with
threads shared by the calls that run at once, as make's jobserver shares job slots
(:func:`share`).
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
import time
from collections.abc import Callable, Iterator, Mapping

try:
    import fcntl
except ImportError:  # not POSIX: no pool, so no split
    fcntl = None  # type: ignore[assignment]

REAL = ".nvcc-real"
POOL = "WHEELCUDA_JOBSERVER"
#: How long a call waits for the calls ninja started with it to show up in the pool:
#: they start within milliseconds of each other; a compile takes seconds at least.
SETTLE_S = 0.3
_PAIR = re.compile(r"arch=([\w]+),code=\[?([\w,]+)\]?$")
#: Options whose value says which GPU code to make, in each spelling nvcc takes.
_GENCODE = ("-gencode", "--generate-code")
_ARCH = ("-arch", "--gpu-architecture")
_CODE = ("-code", "--gpu-code")
_ARCHES = (*_GENCODE, *_ARCH, *_CODE)
_THREADS = ("-t", "--threads")
_SPLIT = ("-split-compile", "--split-compile")
#: Calls that compile device code (object or relocatable); install counts them in the log.
COMPILES = ("-c", "--compile", "-dc", "--device-c")
_DEBUG = ("-G", "--device-debug")
#: Calls that make no GPU code: leave them alone.
_QUERIES = ("--version", "-V", "--list-gpu-arch", "--list-gpu-code", "-h", "--help",
            "-E", "--preprocess", "-M", "--generate-dependencies", "-MM")
_SINGLE = ("-ptx", "--ptx", "-cubin", "--cubin")
#: Device link-time optimization asked for by a flag rather than by a code= value.
_DLTO = ("-dlto", "--dlink-time-opt")
#: The line the wrapper writes to WHEELCUDA_NVCC_LOG for a call that compiles GPU code
#: it left unpruned (LTO): install then keys the wheel as built for every arch asked.
UNPRUNED = "# wheelcuda: unpruned"


def parse_targets(text: str) -> list[tuple[str, bool]]:
    """``9.0;12.0a+PTX`` -> ([("90", False), ("120a", True)]) as (number, ptx) (pure)."""
    out: list[tuple[str, bool]] = []
    for item in re.split(r"[;,\s]+", text.strip()):
        m = re.match(r"^(\d+)\.(\d)([af]?)(\+PTX)?$", item, re.IGNORECASE)
        if m:
            out.append((m.group(1) + m.group(2) + m.group(3).lower(), bool(m.group(4))))
    return out


def _options(args: list[str]) -> Iterator[tuple[str | None, str, list[str]]]:
    """(name, value, the arguments it spans) for each option of ``args`` we read, in the
    forms -x v, -x=v, --xx v, --xx=v; (None, "", [arg]) for any other argument."""
    i = 0
    while i < len(args):
        arg, name, value, span = args[i], None, "", 1
        for option in (*_ARCHES, *_THREADS, *_SPLIT):
            if arg == option:
                name, value, span = option, (args[i + 1] if i + 1 < len(args) else ""), 2
                break
            if arg.startswith(option + "="):
                name, value = option, arg[len(option) + 1:]
                break
        yield name, value, args[i:i + span]
        i += span


def _numbers(value: str) -> set[str]:
    """``sm_90a`` / ``compute_90`` / ``[sm_80,compute_80]`` -> {"90a"} / {"90"} / {"80"}."""
    return {v.split("_", 1)[1] for v in re.split(r"[,\[\]\s]+", value) if "_" in v}


def requested(args: list[str]) -> tuple[list[str], set[str], bool]:
    """(other args, the arch numbers the build asked for, had any arch option) (pure)."""
    others: list[str] = []
    asked: set[str] = set()
    seen = False
    for name, value, span in _options(args):
        if name in _ARCHES:
            m = _PAIR.match(value.replace(" ", "")) if name in _GENCODE else None
            asked |= _numbers(m.group(2)) if m else _numbers(value)
            seen = True
        else:
            others += span
    return others, asked, seen


def _base(number: str) -> str:
    return number.rstrip("af")


def lto(args: list[str]) -> bool:
    """Whether the call asks for link-time optimization: ``code=lto_XX`` (or ``-arch`` /
    ``-code`` naming ``lto_XX``) as the value of an arch option, or ``-dlto``; read from
    the options themselves, so that ``-I/opt/volto_lib/include`` is not (pure)."""
    return any(span[0] in _DLTO or (name in _ARCHES and "lto_" in value)
               for name, value, span in _options(args))


def _untouchable(args: list[str]) -> bool:
    """Calls to leave exactly as they are: queries, single-target outputs (-ptx, -cubin
    accept one arch only), and link-time optimization (:func:`lto`)."""
    return any(a in _QUERIES or a in _SINGLE for a in args) or lto(args)


def rewrite(args: list[str], targets: list[tuple[str, bool]]) -> tuple[list[str], str | None]:
    """The nvcc arguments for ``targets``, and a warning or None (pure): a call that
    asked for some of the targets builds just those (a file compiled only for sm_100a
    keeps sm_100a alone: its kernels may not build for sm_90); a call that asked for
    none of them builds all of them, with a warning."""
    if not targets or _untouchable(args):
        return list(args), None
    others, asked, seen = requested(args)
    if not seen and not any(a.endswith(".cu") for a in args):
        return list(args), None  # no GPU code asked for: not ours to add
    chosen = [t for t in targets if any(_base(v) == _base(t[0]) for v in asked)] or targets
    flags: list[str] = []
    missing: list[str] = []
    for number, _ in chosen:
        variants = sorted(v for v in asked if _base(v) == _base(number)) or [number]
        if seen and not any(_base(v) == _base(number) for v in asked):
            missing.append("sm_" + number)
        flags += [f"-gencode=arch=compute_{v},code=sm_{v}" for v in variants]
    ptx = [n for n, p in chosen if p]
    if ptx:
        top = max(ptx, key=lambda n: int(_base(n)))
        flags.append(f"-gencode=arch=compute_{top},code=compute_{top}")
    warning = None
    if missing and asked:
        asked_text = ",".join("sm_" + a for a in sorted(asked, key=lambda n: int(_base(n))))
        warning = (f"wheelcuda: this build asked for {asked_text}, not for "
                   f"{','.join(missing)}; building {','.join(missing)} anyway")
    return _cap_threads(others, len(flags)) + flags, warning


def _cap_threads(args: list[str], jobs: int) -> list[str]:
    """``--threads N`` compiles N targets at once: more than there are targets is waste
    (and nvcc ignores it for one target, says its --help). 0 (all CPUs) is kept."""
    out: list[str] = []
    for name, value, span in _options(args):
        if name in _THREADS and value.isdecimal() and value != "0":
            out += [name, str(max(1, min(int(value), jobs)))]
        else:
            out += span
    return out


def own_threads(args: list[str], inherited: list[str] | None = None) -> int | None:
    """The threads a compile call uses by itself (its ``--threads``), or None for a call
    that gets no ``--split-compile`` (pure): one that sets it itself (or through
    ``inherited``: NVCC_PREPEND_FLAGS and NVCC_APPEND_FLAGS, which nvcc reads too), a
    device-debug call (``-G`` overrides it), a call :func:`rewrite` leaves alone, or one
    that compiles nothing. ``--threads 0`` (all CPUs) is 0."""
    every = [*(inherited or []), *args]
    if (_untouchable(args) or not any(a in COMPILES for a in args)
            or any(a in _DEBUG for a in every)):
        return None
    threads = 1
    for name, value, _ in _options(every):
        if name in _SPLIT:
            return None
        if name in _THREADS and value.isdecimal():
            threads = int(value)
    return threads


def add_split(args: list[str], share: int, inherited: list[str] | None = None) -> list[str]:
    """``--split-compile`` for a compile call, so a lone big file uses more than one core
    (pure; see jobs.py for the measurements): ``share`` threads, its own ``--threads``
    taking its part first. Calls :func:`own_threads` rules out are left alone."""
    threads = own_threads(args, inherited)
    if threads is None or share <= 1:
        return args
    split = share // (threads or share)  # --threads 0: all CPUs already
    return [*args, f"--split-compile={split}"] if split > 1 else args


# --- the token pool: threads shared by the calls that run at once --------------------

def parse_pool(value: str) -> tuple[str, int, int, int] | None:
    """``FOLDER:THREADS:SPLITS:CAP`` -> (folder, thread tokens, split tokens: the calls
    that may split at once (memory), the most threads one call takes) (pure); None when
    it is not that. FOLDER may hold colons; empty means :func:`default_pool`."""
    parts = value.rsplit(":", 3)
    if len(parts) != 4 or not all(p.isdecimal() for p in parts[1:]):
        return None
    return parts[0], int(parts[1]), int(parts[2]), int(parts[3])


def take(free: int, waiting: int, cap: int) -> int:
    """Thread tokens a call takes when ``free`` are free and ``waiting`` calls (itself
    included) divide them: an equal part, at most ``cap``, and two while two are free
    (one thread is no split) (pure)."""
    return min(cap, free, max(2, free // max(1, waiting)))


def used(tokens: int, threads: int) -> int:
    """How many of ``tokens`` a call with ``--threads threads`` turns into split threads
    (``--split-compile`` = tokens // threads); it gives back the rest (pure)."""
    split = tokens // max(1, threads)
    return split * threads if split > 1 else 0


def default_pool() -> str:
    """One pool per user when the build names none: concurrent builds share it."""
    return os.path.join(os.environ.get("TMPDIR") or "/tmp",  # noqa: S108 - checked below
                        f"wheelcuda-jobs-{os.getuid()}")


def _open(path: str) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)


def _locked(fd: int) -> bool:
    """Take the lock on ``fd`` if nobody holds it; False when another holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _waiting(folder: str, mine: str) -> int:
    """Calls that registered and have not taken their tokens yet (this one included).
    A ``wait-*`` file whose lock nobody holds was left by a call that died: removed."""
    count = 1
    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if not name.startswith("wait-") or path == mine:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError:  # gone meanwhile: it took its tokens
            continue
        try:
            if _locked(fd):
                os.unlink(path)
            else:
                count += 1
        finally:
            os.close(fd)
    return count


def _free(folder: str, kind: str, count: int) -> list[int]:
    """The free tokens of ``kind``, locked: their open files. A token is a lock (flock)
    on a file of the pool (``thread-0``, ``split-0``...), held through the open file."""
    held: list[int] = []
    try:
        for i in range(count):
            fd = _open(os.path.join(folder, f"{kind}-{i}"))
            if _locked(fd):
                held.append(fd)
            else:
                os.close(fd)
    except BaseException:
        for fd in held:
            os.close(fd)
        raise
    return held


def acquire(folder: str, threads: int, splits: int, want: Callable[[int, int], int],
            settle: float = SETTLE_S) -> list[int]:
    """Register in the pool, wait ``settle`` s for the calls started at once, then hold
    ``want(free, waiting)`` thread tokens and one split token (none when either is
    short): their open files, made inheritable so that the locks go with the process
    through exec and end with it, however it ends."""
    # refuse a folder another user could write (it is often in /tmp)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise PermissionError(f"{folder} is not a folder only this user can write")
    tmp, mine = (os.path.join(folder, f"{p}-{os.getpid()}") for p in ("new", "wait"))
    me = _open(tmp)
    try:
        # Locked before it gets its name: a wait-* file nobody holds is a dead call's.
        fcntl.flock(me, fcntl.LOCK_EX)
        os.rename(tmp, mine)
        time.sleep(settle)
        lock = _open(os.path.join(folder, "lock"))
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one call divides at a time
            waiting = _waiting(folder, mine)
            os.unlink(mine)
            splits_free = _free(folder, "split", splits)
            free = _free(folder, "thread", threads) if splits_free else []
            # the threads go to the calls that can split: no more of them than split tokens
            keep = want(len(free), min(waiting, len(splits_free))) if splits_free else 0
            held = free[:keep] + splits_free[:1] if keep else []
            for fd in free + splits_free:
                if fd not in held:
                    os.close(fd)  # the lock's only open file: closing it frees the token
            for fd in held:
                os.set_inheritable(fd, True)
            return held[:-1]  # the thread tokens; the split token goes along
        finally:
            os.close(lock)
    finally:
        for path in (tmp, mine):  # after an error on the way: leave no name behind
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        os.close(me)


def share(environ: Mapping[str, str], threads: int,
          acquire_: Callable[..., list[int]] = acquire) -> int:
    """Threads this compile call may use: the user's WHEELCUDA_SPLIT_COMPILE, else the
    thread tokens it could take from the pool WHEELCUDA_JOBSERVER names (set by
    ``wheelcuda install``, see jobs.py; held until the process ends), else 1. The pool
    costs the extra threads, never the compile: short or unusable, no split."""
    fixed = environ.get("WHEELCUDA_SPLIT_COMPILE", "")
    if fixed:
        return int(fixed) if fixed.isdecimal() else 1
    pool = parse_pool(environ.get(POOL, ""))
    if pool is None or fcntl is None or threads == 0:
        return 1
    folder, tokens, splits, cap = pool
    if splits <= 0 or min(tokens, cap) < 2 * threads:
        return 1  # nothing to share: no wait either
    folder = folder or default_pool()
    # every call that may split can have CAP threads: no wait (2 cores: 4 threads, 2 splits)
    settle = 0.0 if splits * cap <= tokens else SETTLE_S
    try:
        return len(acquire_(folder, tokens, splits,
                            lambda free, waiting: used(take(free, waiting, cap), threads),
                            settle))
    except OSError as exc:  # the pool is a speed-up: without it, no split
        sys.stderr.write(f"wheelcuda: nvcc thread pool {folder} unusable "
                         f"({exc.strerror or exc}); compiling without --split-compile\n")
        return 1


def main() -> None:
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    real = os.path.join(here, REAL)
    args = sys.argv[1:]
    archs = os.environ.get("WHEELCUDA_ARCHS", "")
    unpruned = False
    if archs and os.environ.get("WHEELCUDA_ALL_ARCHS", "") not in ("1", "true", "TRUE"):
        if lto(args) and any(a in COMPILES for a in args):
            unpruned = True  # said, and logged: the wheel is not keyed as pruned
            sys.stderr.write("wheelcuda: this call asks for link-time optimization "
                             "(lto_XX or -dlto): left unpruned, it builds every arch it "
                             "names, not only " + archs + "\n")
        args, warning = rewrite(args, parse_targets(archs))
        # a pruned call: let it use the cores its one target leaves idle
        inherited = " ".join(os.environ.get(v, "") for v in
                             ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")).split()
        threads = own_threads(args, inherited)
        if threads is not None:
            args = add_split(args, share(os.environ, threads), inherited)
        if warning:
            sys.stderr.write(warning + "\n")
    if os.environ.get("WHEELCUDA_NVCC_LOG"):  # a log it cannot write costs only the count
        with contextlib.suppress(OSError), open(os.environ["WHEELCUDA_NVCC_LOG"], "a") as log:
            log.write((UNPRUNED + " " if unpruned else "") + " ".join(args) + "\n")
    # argv[0] stays bin/nvcc: nvcc finds nvcc.profile from it (_HERE_) and names itself
    # by it ("nvcc: NVIDIA (R) Cuda compiler driver", which CMake's compiler check reads).
    try:
        os.execv(real, [os.path.join(here, "nvcc"), *args])  # noqa: S606 - argv list
    except OSError as exc:  # a compiler that cannot run: say which, not a traceback
        sys.stderr.write(f"wheelcuda: cannot run the CUDA compiler {os.path.realpath(real)}: "
                         f"{exc.strerror or exc}\n  fix: reinstall the compiler wheels, or "
                         "run `wheelcuda cache prune` and build again\n")
        sys.exit(127)


if __name__ == "__main__":
    main()
