"""Where the cache is and whether it may be trusted: ``os`` and ``stat`` only.

The warm path of ``wheelcuda env`` (:mod:`wheelcuda._entry`) needs these before anything
heavier is imported; :mod:`.layout` builds the full layout object on them. Every
folder name of the cache is spelled here, once.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing costs milliseconds the warm path does not have
if TYPE_CHECKING:
    from collections.abc import Mapping

ENV_VAR = "WHEELCUDA_CACHE_DIR"
#: Where fetched toolkits and the links to local ones live, when not in the cache
#: itself: the build backend keeps its trees in a temporary cache (build environments
#: are temporary) and its toolkits in the user's store (NVIDIA's archives are fetched
#: once, not per build).
STORE_VAR = "WHEELCUDA_STORE_DIR"

#: The cache's folders: trees, fetched toolkits, the wheel cache, memos.
HOMES, TOOLKITS, BUILDS, MEMO, LOCAL = "homes", "toolkits", "builds", "memo", "local"
#: Each install's build output and compile events: outside the key's folder, which a
#: failed build does not keep, so that the log of a failure outlives it.
LOGS = "logs"
#: The build constraints ``env`` exports (UV_BUILD_CONSTRAINT, PIP_BUILD_CONSTRAINT), one
#: file per content: a shell that evaluated env names its file for as long as it lives.
CONSTRAINTS = "constraints"
#: The compile pool's folder when the machine's ($TMPDIR) cannot be used
#: (_standalone/_pool.py): in the store, private to its user.
POOL = "pool"
#: stable paths for the compile cache: each cached compile sees its build folder and its
#: headers there (_standalone/_view.py)
VIEWS = "views"

#: nvcc runs its own steps through ``sh -c`` with the tree's paths in double quotes:
#: a tree under a path holding one of these cannot compile.
SHELL_UNSAFE = frozenset('$`"\\\n')


def root(environ: Mapping[str, str]) -> str:
    """``$WHEELCUDA_CACHE_DIR``, else ``$XDG_CACHE_HOME/wheelcuda``, else ``~/.cache/wheelcuda``.

    Raises ValueError when there is no home folder to put it in.
    """
    if environ.get(ENV_VAR):
        return os.path.normpath(os.path.abspath(os.path.expanduser(environ[ENV_VAR])))
    if environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.path.abspath(environ["XDG_CACHE_HOME"]), "wheelcuda")
    home = environ.get("HOME") or os.path.expanduser("~")
    if not os.path.isabs(home):  # no HOME and no passwd entry: never a folder under cwd
        raise ValueError("there is no home folder to keep the cache in")
    return os.path.join(home, ".cache", "wheelcuda")


def unsafe_reason(st: os.stat_result, uid: int) -> str | None:
    """Why a folder with this stat may not hold our trees, or None when it may (pure)."""
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    if st.st_uid != uid:
        return f"it belongs to uid {st.st_uid}, not to you (uid {uid})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"others can write to it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def stamps(paths: list[str] | tuple[str, ...]) -> list[list[object]]:
    """What changes when any of ``paths`` is replaced, rewritten or removed: for each,
    ``[path, mtime_ns, size, inode]``, or ``[path, None]`` when it is missing.

    A folder's mtime changes when an entry is added, removed or renamed in it: a site
    folder's stamp moves whenever a distribution is installed, upgraded or removed.
    """
    out: list[list[object]] = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append([p, st.st_mtime_ns, st.st_size, st.st_ino])
        except OSError:
            out.append([p, None])
    return out
