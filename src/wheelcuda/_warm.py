"""The warm path of ``wheelcuda env``: replay the last answer while nothing behind it changed.

``eval "$(wheelcuda env)"`` sits in shell start-up files and build scripts, so it
should cost about what starting Python costs (docs/benchmarks.md, B3: at most twice
``python -c pass``). The full answer imports packaging, importlib.metadata and filelock,
reads dist metadata, checks every link of the tree and asks the host compiler its
version in two child processes. Once it has succeeded, what it printed is kept in
``<cache>/memo/env/<digest>.memo`` (:mod:`store.memo`), under

- a key (only its digest is written: it holds the environment's values, tokens
  included): the arguments (with ``--python`` made absolute), the whole environment less
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

This module imports only ``os``, ``sys`` and ``marshal`` (and :mod:`store.memo`, and
:mod:`store.named`, which records the shell session a replay names its tree to): that
is the point of it. ``WHEELCUDA_NO_WARM=1`` (or ``true``, ``yes``, ``on``) turns it off.
The entry point
(:mod:`wheelcuda._entry`) replays; :mod:`wheelcuda._commands.env` records.
"""

from __future__ import annotations

import os
import sys

from ._store import memo, named, paths

TYPE_CHECKING = False  # typing and collections cost milliseconds this path does not have
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import IO, Any

#: Variables a shell changes on its own; no answer depends on them.
VOLATILE = frozenset({"PWD", "OLDPWD", "SHLVL", "_"})

_VALUED = ("--python", "--arch", "--shell")
_FLAGS = ("--all-archs", "--no-fetch")
_KIND = "env"


def key_for(argv: Sequence[str], environ: Mapping[str, str]) -> tuple[Any, ...] | None:
    """The memo key of ``wheelcuda env`` with ``argv``, or None when it is not kept.

    Only the exact spellings below are recognised; anything else (an abbreviation,
    ``--help``, another command) goes to argparse and is never replayed.
    """
    if not argv or argv[0] != "env" or _no_warm(environ):
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
    here = (os.path.normpath(os.path.abspath(sys.executable)),
            os.path.dirname(os.path.abspath(__file__)), tuple(sys.path[1:]))
    # Without --python or VIRTUAL_ENV the target is searched for from the working folder
    # (a .venv here or in a parent, as uv does): the answer depends on where it runs.
    searched = "--python" not in options and not environ.get("VIRTUAL_ENV")
    cwd = os.getcwd() if searched or _reads_cwd(environ) else ""
    return ("env", tuple(sorted(options.items())), env, here, cwd, _machine_state())


#: Spelled here: the registry (_data/settings.py) imports dataclasses, which the replay
#: has no time for (a test checks the name against it).
NO_WARM_VAR = "WHEELCUDA_NO_WARM"


def _no_warm(environ: Mapping[str, str]) -> bool:
    """``WHEELCUDA_NO_WARM`` read as every flag is (:func:`wheelcuda._context.is_on`).
    _context.py is imported only when the variable is set: importing it (dataclasses,
    inspect) took 15 to 20 ms here, more than the whole replay; and a set one mostly
    means the full path runs, which imports it anyway."""
    value = environ.get(NO_WARM_VAR)
    if not value:
        return False
    from ._context import is_on  # noqa: PLC0415 (see above)

    return is_on(value)


#: Variables the full path reads as one path, and as a list of paths.
_PATH_VARS = ("VIRTUAL_ENV", paths.ENV_VAR, "XDG_CACHE_HOME", "HOME", "CC",
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
    found = []
    for folder, dirs, files in os.walk(here):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [os.path.join(folder, n) for n in sorted(files) if n.endswith(".py")]
    return found


def _root(environ: Mapping[str, str]) -> str | None:
    try:
        return paths.root(environ)
    except ValueError:
        return None


def replay(argv: Sequence[str], environ: Mapping[str, str], out: IO[str],
           err: IO[str]) -> bool:
    """Print the kept answer for ``argv`` and return True, if it is still right."""
    key = key_for(argv, environ)
    root = _root(environ) if key is not None else None
    if key is None or root is None:
        return False
    kept = memo.load(root, _KIND, key)
    if not (isinstance(kept, tuple) and len(kept) == 3):
        return False
    text, notes, home = kept
    err.write(notes)
    out.write(text)
    named.by_session(os.path.dirname(home), os.path.basename(home))  # prune keeps it
    return True


def record(argv: Sequence[str], environ: Mapping[str, str], text: str, notes: str,
           stamps: list[list[object]], *, home: str) -> None:
    """Keep an answer for :func:`replay` (best effort); ``home``: the tree it names."""
    key = key_for(argv, environ)
    root = _root(environ) if key is not None else None
    if key is not None and root is not None:
        memo.save(root, _KIND, key, (text, notes, home), stamps)
