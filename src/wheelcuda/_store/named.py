"""Who may still name a tree from outside the cache: the uv settings ``uv-config`` wrote
or printed (they hold its path as CUDA_HOME), and the shell sessions that evaluated
``wheelcuda env`` (their CUDA_HOME and PATH lead into it).

A tree whose environment was deleted cannot be used until that environment is made
again, often at the same path (``rm -rf .venv; uv sync``), and then it can: prune once
removed the tree a project's uv settings named, with the compiler it used, and the next
``uv sync`` failed (``cannot run …/clang++: No such file or directory``). A tree named
here is kept; a name is dead when its file no longer holds the tree's path, or its
session has ended. Records are small files in ``<cache>/homes/.named/``.

The warm path of ``env`` records its session too, so this module imports only ``os``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

    from .layout import Layout

FOLDER = ".named"
_SESSION = ".session-"  # <tree>.session-<sid>-<start ticks>: empty
_FILE = ".file-"  # <tree>.file-<digest of the path>: the path


def _write(folder: str, name: str, text: str) -> None:
    """Best effort, once (the name holds the content): a cache that takes no write keeps
    no record, and prune then keeps only what it can use."""
    path = os.path.join(folder, name)
    if os.path.exists(path):
        return
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError:
        pass


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/<pid>/stat after the name (which may hold ")")."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    return text[text.rfind(")") + 2:].split()


def _session_start(sid: int) -> int | None:
    """The start time (clock ticks after boot) of process ``sid``, from /proc."""
    fields = _stat(sid) if sid > 0 else None
    try:
        return int(fields[19]) if fields else None
    except (IndexError, ValueError):
        return None


def session() -> tuple[int, int] | None:
    """The process that stands for this shell session, with its start: the session's
    leader, or, where the leader lives outside this PID namespace (a container or CI
    job started inside one: ``getsid`` then gives 0), the topmost ancestor this process
    can see, which outlives every shell started under it. None without /proc."""
    pid = os.getsid(0)
    if pid <= 0 or _stat(pid) is None:
        pid = os.getpid()
        for _ in range(256):  # a cycle cannot happen; a bound costs nothing
            fields = _stat(pid)
            parent = int(fields[1]) if fields and fields[1].isdigit() else 0
            if parent <= 0 or _stat(parent) is None:
                break
            pid = parent
    start = _session_start(pid)
    return None if start is None else (pid, start)


def by_session(homes: str, tree: str) -> None:
    """The shell session of this process names ``homes/tree``: ``eval "$(wheelcuda
    env)"`` runs it in a subshell of the shell that keeps the variables, in its session."""
    if (found := session()) is not None:
        sid, start = found
        _write(os.path.join(homes, FOLDER), f"{tree}{_SESSION}{sid}-{start}", "")


def by_files(layout: Layout, home: Path, files: list[str]) -> None:
    """uv settings in ``files`` name ``home`` (or will, once pasted there)."""
    import hashlib  # noqa: PLC0415 (not on the warm path)

    for path in dict.fromkeys(os.path.abspath(f) for f in files):
        digest = hashlib.sha256(path.encode()).hexdigest()[:16]
        _write(str(layout.homes / FOLDER), f"{home.name}{_FILE}{digest}", path)


def _records(layout: Layout) -> Iterator[tuple[Path, str, str]]:
    """(record, its tree's name, what names it: ``session-<sid>-<start>`` or a path)."""
    folder = layout.homes / FOLDER
    try:
        paths = sorted(folder.iterdir())
    except OSError:
        return
    for path in paths:
        for mark in (_SESSION, _FILE):
            tree, found, rest = path.name.partition(mark)
            if found and not rest.endswith(".tmp"):
                try:
                    who = rest if mark == _SESSION else path.read_text(encoding="utf-8")
                except OSError:
                    who = ""
                yield path, tree, f"session-{who}" if mark == _SESSION else who
                break


def _live(who: str, home: Path) -> str | None:
    """What still names ``home`` by this record, said for people; None when dead."""
    if who.startswith("session-"):
        sid, _, start = who.removeprefix("session-").partition("-")
        alive = sid.isdigit() and start.isdigit() and _session_start(int(sid)) == int(start)
        return (f"a shell that evaluated `wheelcuda env` (session {sid}) may still use it"
                if alive else None)
    try:
        with open(who, encoding="utf-8", errors="replace") as f:
            named = str(home) in f.read()
    except OSError:
        return None
    return f"the uv settings in {who} name it" if named else None


def naming(layout: Layout, home: Path) -> str | None:
    """The first live name of ``home``; None when nothing outside the cache names it."""
    return next((said for _, tree, who in _records(layout) if tree == home.name
                 and (said := _live(who, home))), None)


def dead(layout: Layout) -> Iterator[Path]:
    """Records that name nothing any more: their tree gone, or their file or session."""
    for path, tree, who in _records(layout):
        home = layout.homes / tree
        if not home.is_dir() or _live(who, home) is None:
            yield path
