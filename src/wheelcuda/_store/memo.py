"""Answers kept until a file they came from changes: the one memo format.

An entry is ``(digest, value, stamps)`` in ``<cache>/memo/<kind>/<digest>.memo``: the key
itself is never written, only its BLAKE2b digest (the env memo's key holds the whole
environment, tokens included, and caches get uploaded). It is replayed only when its
digest equals the asked key's and every stamp (:func:`.paths.stamps`) is unchanged.
Files of the old format (``*.marshal``, which held the key's values) are removed when a
kind is next written. Used by the warm path of ``wheelcuda env``
(kind ``env``) and by the interpreter probe (kind ``interpreter``).

Entries are read only from folders that are ours alone, and only from plain files of
ours that nobody else can write (opened without following a link): the env memo's text
is evaluated by a shell. Writes are best effort: a memo that cannot be written costs
time, not correctness. ``os``, ``stat`` and ``marshal`` only, for the warm path.
"""

from __future__ import annotations

import marshal
import os
import stat

try:  # the builtin module: 0.2 ms, where hashlib's OpenSSL import costs 4 ms
    from _blake2 import blake2b
except ImportError:  # pragma: no cover (a Python built without it)
    from hashlib import blake2b

from . import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Entries kept per kind (the oldest go first).
KEEP = 32


#: What entries are named with; ``.marshal`` files are the old format, which kept keys.
_SUFFIX = ".memo"
_OLD_SUFFIX = ".marshal"


def digest(key: Any) -> str:
    """The key's digest: all an entry keeps of it (no value of the key reaches disk)."""
    return blake2b(marshal.dumps(key, 2), digest_size=20).hexdigest()


def file_for(root: str, kind: str, key: Any) -> str:
    """One file per key, named by its digest."""
    return os.path.join(root, paths.MEMO, kind, f"{digest(key)}{_SUFFIX}")


def _read(path: str) -> tuple[Any, ...]:
    uid = os.getuid()
    folder = os.path.dirname(path)
    for d in (os.path.dirname(os.path.dirname(folder)), os.path.dirname(folder), folder):
        if paths.unsafe_reason(os.stat(d), uid):
            raise ValueError(f"{d} is not private")
    with open(os.open(path, os.O_RDONLY | os.O_NOFOLLOW), "rb") as f:
        st = os.fstat(f.fileno())
        if st.st_uid != uid or st.st_mode & 0o022 or not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a private file")
        entry = marshal.load(f)  # noqa: S302 (written by us, in folders only we can write)
    if not isinstance(entry, tuple) or len(entry) != 3:
        raise TypeError("not a memo entry")
    return entry


def load(root: str, kind: str, key: Any) -> Any:
    """The value kept for ``key`` if every file it came from is unchanged, else None."""
    try:
        kept, value, stamps = _read(file_for(root, kind, key))
        if kept != digest(key) or paths.stamps([s[0] for s in stamps]) != stamps:
            return None
    except (OSError, ValueError, TypeError, EOFError, IndexError):
        return None
    return value


def save(root: str, kind: str, key: Any, value: Any, stamps: list[list[object]]) -> None:
    """Keep ``value`` for ``key`` until one of the stamped files changes."""
    path = file_for(root, kind, key)
    folder = os.path.dirname(path)
    try:
        for d in (root, os.path.dirname(folder), folder):
            os.makedirs(d, mode=0o700, exist_ok=True)
            if paths.unsafe_reason(os.stat(d), os.getuid()):
                return
        tmp = f"{path}.{os.getpid()}.tmp"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        with open(os.open(tmp, flags, 0o600), "wb") as f:
            marshal.dump((digest(key), value, stamps), f)
        os.replace(tmp, path)
        names = os.listdir(folder)
        for name in names:  # the old format kept keys (the environment's values): gone
            if name.endswith(_OLD_SUFFIX):
                os.unlink(os.path.join(folder, name))
        kept = [os.path.join(folder, n) for n in names if n.endswith(_SUFFIX)]
        # fs (filelock, tempfile, shutil: 45 ms and more) only here: the warm path of
        # `wheelcuda env` loads memos and must start about as fast as Python does
        from . import fs  # noqa: PLC0415
        for old in sorted(kept, key=fs.mtime)[:-KEEP]:
            os.unlink(old)
    except (OSError, ValueError):
        return
