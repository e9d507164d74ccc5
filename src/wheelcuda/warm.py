"""The warm path of ``wheelcuda env``: replay the last answer while nothing behind it changed.

``eval "$(wheelcuda env)"`` sits in shell start-up files and build scripts, so it
should cost about what starting Python costs (issue 4, B3: at most twice
``python -c pass``). The full answer imports packaging, importlib.metadata and filelock,
reads dist metadata, checks every link of the tree and asks the host compiler its
version in two child processes. Once it has succeeded, what it printed is kept in
``<cache>/memo/env-<hash>.marshal``, under

- a key: the arguments (with ``--python`` made absolute), the whole environment less
  what a shell changes by itself (:data:`VOLATILE`), the interpreter and the copy of
  wheelcuda that run, the visible GPUs and the boot;
- stamps (mtime, size, inode) of every file the answer came from: the interpreter,
  ``pyvenv.cfg``, the site folders (whose mtime moves when a distribution is installed,
  upgraded or removed), the toolkit store, every link and generated file of the tree,
  the host compiler, and wheelcuda's own sources.

A replay happens only when the key matches and every stamp is unchanged; anything
else runs the full path, which records afresh. Errors are never kept. The memo is read
only from a cache folder that is ours and that nobody else can write to, since its
text is evaluated by a shell.

This module imports only ``os``, ``sys`` and ``marshal`` (and :mod:`cachedir`): that
is the point of it. ``WHEELCUDA_NO_WARM=1`` turns it off.
"""

from __future__ import annotations

import marshal
import os
import stat
import sys

from . import cachedir

TYPE_CHECKING = False  # typing and collections cost milliseconds this path does not have
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import IO, Any

#: Variables a shell changes on its own; no answer depends on them.
VOLATILE = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})

#: Answers kept (one file each, per argument list and environment).
KEEP = 32

_VALUED = ("--python", "--arch", "--shell")
_FLAGS = ("--all-archs",)
_MEMO = "memo"


def key_for(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[Any, ...] | None:
    """The memo key of ``wheelcuda env`` with ``argv``, or None when it is not kept.

    Only the exact spellings below are recognised; anything else (an abbreviation,
    ``--help``, another command) goes to argparse and is never replayed.
    """
    if not argv or argv[0] != "env" or environ.get("WHEELCUDA_NO_WARM") == "1":
        return None
    options: dict[str, str] = {}
    words = list(argv[1:])
    while words:
        word = words.pop(0)
        name, equals, value = word.partition("=")
        if name in _VALUED and (equals or words):
            options[name] = value if equals else words.pop(0)
            if not options[name]:
                return None  # argparse's "" falls back to other defaults: not ours to guess
        elif word in _FLAGS:
            options[word] = ""
        else:
            return None
    if "--python" in options:
        options["--python"] = os.path.abspath(os.path.expanduser(options["--python"]))
    env = tuple(sorted((k, v) for k, v in environ.items() if k not in VOLATILE))
    # Which wheelcuda answers matters too: without --python or VIRTUAL_ENV the target is
    # the interpreter running it (its sys.path: -s, -I, a user site folder), and two
    # installations must not share an answer.
    here = (sys.executable, os.path.dirname(os.path.abspath(__file__)), tuple(sys.path[1:]))
    cwd = os.getcwd() if _reads_cwd(environ) else ""
    return ("env", tuple(sorted(options.items())), env, here, cwd, _machine_state())


#: Variables the full path reads as one path, and as a list of paths.
_PATH_VARS = ("VIRTUAL_ENV", "WHEELCUDA_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "CC",
              "NVCC_CCBIN")
_PATH_LISTS = ("PATH", "PYTHONPATH")
_COMMANDS = ("CC", "NVCC_CCBIN")


def _reads_cwd(environ: Mapping[str, str]) -> bool:
    """Whether a relative path in the environment makes the answer depend on the working
    folder (``VIRTUAL_ENV=.venv``, ``PATH=bin:...``); a bare ``CC=gcc`` does not."""
    for var in _PATH_VARS:
        value = environ.get(var) or "/"
        # CC=gcc is looked up on PATH; CC=bin/gcc and VIRTUAL_ENV=.venv are relative
        if not value.startswith("/") and (var not in _COMMANDS or "/" in value):
            return True
    return any(not part.startswith("/") for var in _PATH_LISTS if var in environ
               for part in environ[var].split(os.pathsep))


def _machine_state() -> tuple[Any, ...]:
    """The GPUs the driver shows and this boot: a GPU-derived arch list depends on them."""
    try:
        gpus = tuple(sorted(os.listdir("/proc/driver/nvidia/gpus")))
    except OSError:
        gpus = ()
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = ""
    return gpus, boot


def own_sources() -> list[str]:
    """wheelcuda's own files: a new or edited wheelcuda never replays an old answer."""
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.join(here, n) for n in sorted(os.listdir(here)) if n.endswith(".py")]


def _memo_file(environ: Mapping[str, str], key: tuple[Any, ...]) -> str:
    """One file per key, named by a hash that is the same in every process: hashes of
    ints and tuples do not depend on PYTHONHASHSEED (and hashlib would cost 2 ms)."""
    digest = hash(tuple(marshal.dumps(key, 2))) & 0xFFFFFFFFFFFFFFFF
    return os.path.join(cachedir.root(environ), _MEMO, f"env-{digest:016x}.marshal")


def _load(path: str) -> tuple[Any, ...]:
    """A memo entry, read only from folders that are ours alone, and only from a plain
    file of ours that nobody else can write (opened without following a link)."""
    uid = os.getuid()
    folder = os.path.dirname(path)
    for d in (os.path.dirname(folder), folder):
        if cachedir.unsafe_reason(os.stat(d), uid):
            raise ValueError(f"{d} is not private")
    with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
        st = os.fstat(f.fileno())
        if st.st_uid != uid or st.st_mode & 0o022 or not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a private file")
        entry = marshal.load(f)  # noqa: S302 (written by us, in folders only we can write)
    if not isinstance(entry, tuple):
        raise TypeError("not a memo entry")
    return entry


def replay(argv: Sequence[str], environ: Mapping[str, str], out: IO[str],
           err: IO[str]) -> bool:
    """Print the kept answer for ``argv`` and return True, if it is still right."""
    key = key_for(argv, environ)
    if key is None:
        return False
    try:
        kept, text, notes, stamps = _load(_memo_file(environ, key))
        if kept != key or cachedir.fingerprint([s[0] for s in stamps]) != stamps:
            return False
    except (OSError, ValueError, TypeError, EOFError, IndexError):
        return False
    err.write(notes)
    out.write(text)
    return True


def record(argv: Sequence[str], environ: Mapping[str, str], text: str, notes: str,
           stamps: list[list[object]]) -> None:
    """Keep an answer for :func:`replay`, and at most :data:`KEEP` of them. Best effort:
    a memo that cannot be written costs time, not correctness."""
    key = key_for(argv, environ)
    if key is None:
        return
    path = _memo_file(environ, key)
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        with open(os.open(tmp, flags, 0o600), "wb") as f:
            marshal.dump((key, text, notes, stamps), f)
        os.replace(tmp, path)
        kept = [os.path.join(folder, n) for n in os.listdir(folder) if n.startswith("env-")]
        for old in sorted(kept, key=os.path.getmtime)[:-KEEP]:
            os.unlink(old)
    except (OSError, ValueError):
        return


def main(argv: Sequence[str] | None = None) -> int:
    """The ``wheelcuda`` command: the warm replay first, the full CLI otherwise."""
    args = sys.argv[1:] if argv is None else list(argv)
    if replay(args, os.environ, sys.stdout, sys.stderr):
        return 0
    from .cli import main as full  # noqa: PLC0415 (the full CLI's imports are what we skip)

    return full(args)
