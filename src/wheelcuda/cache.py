"""wheelcuda's per-user cache folder, and small memos kept in it.

The cache holds synthesized trees whose binaries every build executes, so it must be
private: a folder that another user can write to could be used to plant a tree that
our builds then run. We create it 0700 and refuse one that is not ours or that
others can write to.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import cachedir
from .errors import CacheError

ENV_VAR = cachedir.ENV_VAR
unsafe_reason = cachedir.unsafe_reason
fingerprint = cachedir.fingerprint


def cache_root(environ: Mapping[str, str] | None = None) -> Path:
    """``$WHEELCUDA_CACHE_DIR``, else ``$XDG_CACHE_HOME/wheelcuda``, else ``~/.cache/wheelcuda``."""
    try:
        return Path(cachedir.root(os.environ if environ is None else environ))
    except ValueError as exc:
        raise CacheError(str(exc), f"export HOME=... or export {ENV_VAR}=/a/private/folder"
                         ) from exc


def private_dir(path: Path) -> Path:
    """Create ``path`` (0700) if needed and check that only we can write to it."""
    fix = f"export {ENV_VAR}=$HOME/.cache/wheelcuda  (a folder only you can write to)"
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError as exc:
        raise CacheError(f"cannot create the cache folder {path}: {exc.strerror}", fix) from exc
    reason = unsafe_reason(st, os.getuid())
    if reason:
        raise CacheError(f"refusing to use the cache folder {path}: {reason}", fix)
    if not os.access(path, os.W_OK | os.X_OK):
        raise CacheError(f"cannot write to the cache folder {path}", fix)
    return path


def private_root(environ: Mapping[str, str] | None = None) -> Path:
    """The cache root, created and checked: what it holds is run and trusted."""
    return private_dir(cache_root(environ))


def subdir(name: str, environ: Mapping[str, str] | None = None) -> Path:
    """A private folder under the private cache root (``homes``, ``memo``...)."""
    return private_dir(private_root(environ) / name)


def _memo_path(root: Path, kind: str, key: str) -> Path:
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return root / "memo" / kind / f"{digest}.json"


def memo_get(root: Path, kind: str, key: str) -> dict[str, Any] | None:
    """A value stored by :func:`memo_put`, if its fingerprint still matches the files."""
    try:
        private_dir(root)  # never trust a memo in a folder others could write
        data = json.loads(_memo_path(root, kind, key).read_text())
    except (OSError, ValueError, CacheError):
        return None
    if not isinstance(data, dict) or data.get("key") != key:
        return None
    if data.get("fingerprint") != fingerprint(data.get("watch", [])):
        return None
    value = data.get("value")
    return value if isinstance(value, dict) else None


def memo_put(root: Path, kind: str, key: str, watch: Sequence[str], value: dict[str, Any]) -> None:
    """Remember ``value`` until one of the ``watch`` files changes. Best effort: a memo
    that cannot be written costs time, not correctness."""
    path = _memo_path(root, kind, key)
    record = {"key": key, "watch": list(watch), "fingerprint": fingerprint(watch), "value": value}
    with contextlib.suppress(OSError, CacheError):
        private_dir(private_dir(private_dir(root) / "memo") / kind)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        with os.fdopen(fd, "w") as f:
            json.dump(record, f)
        os.replace(tmp, path)
