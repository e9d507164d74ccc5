"""A torch extension's compiles side by side, where setuptools makes them one at a time.

Standalone on purpose, like _nvcc_wrapper: copied into each tree's bin/ beside the
compilers that use it.

Why: without ninja (``BuildExtension(use_ninja=False)``: torch-cluster, torch-sparse and
torch-spline-conv ask for it; and any isolated build whose sdist does not require ninja),
torch compiles an extension's files one after another, and setuptools its extensions one
after another: torch-cluster's 9 extensions took 2321 s on 2 cores, one compile at a
time. setuptools' ``build_ext --parallel`` (which ``DIST_EXTRA_CONFIG`` can reach) does
not fix it: torch swaps the shared compiler's ``compiler_so`` for each .cu file, so
threads race on it, and with ninja two extensions write one ``build.ninja``.

How: a compile call of a torch extension (``-DTORCH_EXTENSION_NAME=``, one source,
``-o OBJ``) made straight from a Python process returns at once, exit 0, and compiles
in a child (the same program, forked) that waits in the machine's compile pool like
any other compile. ``OBJ`` is emptied first, so that setuptools, which checks it is
newer than the extension, relinks. A ``OBJ.wheelcuda-pending`` file, locked by the child
until it ends, then holding its exit code, tells the link: the tree's host shim (the
linker torch's extensions are linked with: CXX) waits for every object it is handed
that is still compiling, and fails, naming the file, when one did not compile. ninja,
make and CMake (a shell between them and the compiler) are never answered early.

Setuptools calls an extension's files in its list's order, the main .cpp first, and a
compile that finds a core free starts at once, so the host files took both cores and the
.cu, the longest, started last: torch-spline-conv 1.2.2 by install on 2 cores, 335 s side
by side against 448 s one at a time (0.75), where the .cu beside the two .cpp files
would end with them. A detached host compile therefore asks for its turn
:data:`HOST_LAG_S` later than a CUDA one, so that the .cu files that come right after it
start first; the pool then orders what waits, longest first.

``WHEELCUDA_SERIAL_COMPILES=1`` turns it off.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import time
import traceback
from collections.abc import Callable, Mapping, Sequence

try:
    from . import _tree
except ImportError:  # run from a tree's bin/, beside it
    import _tree  # type: ignore[import-not-found,no-redef]

VAR = "WHEELCUDA_SERIAL_COMPILES"
#: Beside each object still compiling: locked by the compile, then its exit code.
PENDING = ".wheelcuda-pending"
#: torch's BuildExtension passes it to each compile of an extension it builds.
_TORCH_EXTENSION = "-DTORCH_EXTENSION_NAME="
#: The tree's host shim (_rules/tree.py HOST_SHIM), which every wheelcuda route makes
#: the build's CXX: the linker of torch's extensions, and so the one that waits.
HOST_SHIM = "wheelcuda-c++"
#: How much later than a CUDA compile a detached host compile asks for its turn: the
#: .cu files an extension lists after its .cpp files come within a few Python starts
#: (about 0.1 s each on an idle 2-core machine).
HOST_LAG_S = 1.0
CUDA_SUFFIXES = (".cu",)

#: In a detached compile, the process that made the call (its build's, for _build.find).
_detached: dict[str, int] = {}


def caller() -> int | None:
    """The pid of the process whose call this detached compile answered early (its
    build is that process's), else None: the parent is the caller."""
    return _detached.get("caller")


def output(args: Sequence[str]) -> str | None:
    """The object a call writes (``-o OBJ``), else None (pure)."""
    for i, arg in enumerate(args[:-1]):
        if arg == "-o":
            return args[i + 1]
    return None


def wanted(args: Sequence[str], sources: Sequence[str], environ: Mapping[str, str],
           parent_exe: str) -> bool:
    """Whether a compile call may return before it compiles (pure): a torch extension's
    one source to one object, called by Python itself (setuptools; not ninja or make,
    which run their own jobs, and run them through a shell), whose link will run the
    tree's host shim (CXX names it: ``export CXX=g++`` after ``env`` links with g++,
    which would not wait), not turned off."""
    if _tree.flag(environ.get(VAR)) or not any(
            os.path.basename(w) == HOST_SHIM
            for w in _tree.split_command(environ.get("CXX", ""))):
        return False
    return (len(sources) == 1 and output(args) is not None
            and any(a.startswith(_TORCH_EXTENSION) for a in args)
            and os.path.basename(parent_exe).startswith(("python", "pypy")))


def _parent_exe() -> str:
    try:
        return os.readlink(f"/proc/{os.getppid()}/exe")
    except OSError:
        return ""


def run(args: Sequence[str], sources: Sequence[str], environ: Mapping[str, str],
        compile_: Callable[[], int]) -> int:
    """``compile_()``'s exit code; or, for a call :func:`wanted` allows, 0 at once, with
    the compile left to a forked child that records its code for :func:`join`."""
    obj = output(args)
    if obj is None or not wanted(args, sources, environ, _parent_exe()):
        return compile_()
    try:
        fd = os.open(obj + PENDING, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    except OSError:
        return compile_()  # a folder it cannot write in: compiled here, as before
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with open(obj, "wb"):  # newer than the extension, and never a stale object
            pass
        sys.stdout.flush()
        sys.stderr.flush()
        calling = os.getppid()
        pid = os.fork()
    except OSError:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(obj + PENDING)
        return compile_()
    if pid:
        os.close(fd)  # the child holds the lock until it has written its code
        return 0
    _detached["caller"] = calling
    code = 1
    try:
        if not sources[0].endswith(CUDA_SUFFIXES):
            time.sleep(HOST_LAG_S)  # the .cu files that follow start first
        code = compile_()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except BaseException:  # told by the link, never lost
        traceback.print_exc()
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
        with contextlib.suppress(OSError):
            os.write(fd, f"{code}\n".encode())
        os._exit(code)
    return code  # not reached: the child ends above


def join(args: Sequence[str]) -> list[tuple[str, str]]:
    """Wait for each object among ``args`` still compiling; the ones that did not
    compile, each with what its compile recorded (its exit code; empty when it ended
    without one). A failed one's object is removed: it is not there to link."""
    failed = []
    for arg in args:
        marker = arg + PENDING
        try:
            fd = os.open(marker, os.O_RDONLY)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # until the compile ends
            said = os.read(fd, 64).decode(errors="replace").strip()
        finally:
            os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(marker)
        if said != "0":
            failed.append((arg, said))
            with contextlib.suppress(OSError):
                os.unlink(arg)
    return failed


def joined(args: Sequence[str], who: str) -> None:
    """:func:`join` for a link call: returns when every object is there, else says which
    did not compile and exits 1."""
    failed = join(args)
    if not failed:
        return
    for obj, said in failed:
        how = f"exit {said}" if said else "it ended without a result"
        sys.stderr.write(f"{who}: {os.path.basename(obj)} was not made: its compile failed "
                         f"({how}); its errors are above\n")
    sys.stderr.write(f"  fix: the first error above is the cause; {VAR}=1 compiles one "
                     "file at a time, each error right after its file\n")
    sys.exit(1)
