"""The cache layout: one object with a property per folder (after pipx's ``paths.py``).

The cache holds trees whose binaries every build executes, so it must be private: a
folder that another user can write to could be used to plant a tree that our builds
then run. Folders are created 0700, and one that is not ours, or that others can
write to, is refused. A root whose path nvcc's own shell steps cannot quote is
refused too, naming the variable that moves it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import CacheError
from . import paths

_FIX = f"export {paths.ENV_VAR}=$HOME/.cache/wheelcuda  (a folder only you can write to)"


@dataclass(frozen=True)
class Layout:
    """Where everything of one cache lives. Properties name folders; :meth:`private`
    creates and checks one before anything is written into it or run from it."""

    root: Path
    #: where toolkits and local links live (:data:`paths.STORE_VAR`; the root when None)
    store: Path | None = None
    #: a run that only looks (doctor) reads this cache and writes under this folder
    #: instead: the links to a local toolkit and a tree it must run (looking never writes the cache)
    scratch: Path | None = None

    @classmethod
    def for_environ(cls, environ: Mapping[str, str]) -> Layout:
        try:
            root = paths.root(environ)
        except ValueError as exc:
            raise CacheError(str(exc), f"export HOME=... or {_FIX}") from exc
        store = environ.get(paths.STORE_VAR) or None
        for folder, var in ((root, paths.ENV_VAR), (store or "", paths.STORE_VAR)):
            bad = sorted(set(folder) & paths.SHELL_UNSAFE)
            if bad:
                # named, not escaped: a repr showed one backslash as two
                names = {"$": "a dollar sign ($)", "`": "a backtick (`)",
                         '"': 'a double quote (")', "\\": "a backslash (\\)",
                         "\n": "a newline"}
                said = [names.get(c, f"the character U+{ord(c):04X}") for c in bad]
                shown = " and ".join([", ".join(said[:-1]), said[-1]] if len(said) > 1
                                     else said)
                raise CacheError(
                    f"the cache folder {shlex.quote(folder)} (from {var}) holds {shown}: "
                    "nvcc runs its steps through sh, which cannot quote that, so no tree "
                    "there could compile",
                    f"export {var}=/a/path/without/those/characters")
        return cls(Path(root), Path(os.path.abspath(store)) if store else None)

    @property
    def _store(self) -> Path:
        return self.store or self.root

    @property
    def homes(self) -> Path:
        """Synthesized CUDA_HOME trees, one folder per tree key."""
        return self.root / paths.HOMES

    @property
    def toolkits(self) -> Path:
        """Compiler sets fetched into the store, one folder per requirement and machine."""
        return self._store / paths.TOOLKITS

    @property
    def local(self) -> Path:
        """Links to local toolkits (_sources/local/store.py), one folder per toolkit and version."""
        return self._store / paths.LOCAL

    @property
    def builds(self) -> Path:
        """The wheel cache: one folder per build key (installer cache, kept wheels)."""
        return self.root / paths.BUILDS

    @property
    def logs(self) -> Path:
        """Each install's build log and compile events (_store/buildlog.py)."""
        return self.root / paths.LOGS

    @property
    def events(self) -> Path:
        """Where the tree's compilers write the events of a build that install does not
        watch (uv's, pip's, the backend's: ``tree-<pid>-<start>.jsonl``): the store's
        ``logs``, which is this cache's own unless the store lives elsewhere. The build
        backend keeps its trees in a temporary cache and names the user's store, so its
        builds' events land where ``wheelcuda builds`` looks."""
        return self._store / paths.LOGS

    @property
    def pool(self) -> Path:
        """The compile pool's folder when the machine's cannot be used (another user made
        it first, or its file system takes no locks): the store's, so that the backend's
        temporary trees share it with the user's own."""
        return self._store / paths.POOL

    @property
    def views(self) -> Path:
        """Where a cached compile sees its build folder and its headers at paths that do
        not change from build to build (_standalone/_view.py): the store's, so every
        route's tree shares them, the backend's temporary ones too."""
        return self._store / paths.VIEWS

    @property
    def constraints(self) -> Path:
        """The build constraints ``wheelcuda env`` exports (_store/constraints.py)."""
        return self.root / paths.CONSTRAINTS

    @property
    def memo(self) -> Path:
        return self.root / paths.MEMO

    def writable(self) -> Layout:
        """Where this run may write: this cache, or, for a run that only looks, a
        throwaway cache of the same shape in :attr:`scratch`."""
        return Layout(self.scratch) if self.scratch else self

    def home(self, key: str) -> Path:
        return self.homes / key

    def build(self, key: str) -> Path:
        return self.builds / key

    def lock(self, folder: Path, name: str) -> Path:
        """The lock file guarding ``folder/name``: ``folder/.name.lock``."""
        return folder / f".{name}.lock"

    def check(self) -> None:
        """Raise when the cache (and the store) is there but cannot be trusted or read:
        a file, a folder others may write to or another user's. Creates nothing and needs
        no write access (a complete cache mounted read-only serves; a cache that
        cannot serve is named first, not taken for missing wheels)."""
        for folder, var in ((self.root, paths.ENV_VAR), (self.store, paths.STORE_VAR)):
            if folder is None:
                continue
            try:
                st = folder.stat()
            except FileNotFoundError:
                continue  # made when something is first written
            except NotADirectoryError as exc:  # a file on its way: it can never be made
                raise CacheError(f"cannot create the cache folder {folder}: "
                                 f"{exc.strerror or exc}", _fix(var)) from exc
            except OSError as exc:
                raise CacheError(f"cannot read the cache folder {folder}: "
                                 f"{exc.strerror or exc}", _fix(var)) from exc
            reason = paths.unsafe_reason(st, os.getuid())
            if reason:
                raise CacheError(f"refusing to use the cache folder {folder} ({var}): "
                                 f"{reason}", _fix(var))
            if not os.access(folder, os.R_OK | os.X_OK):
                raise CacheError(f"cannot read the cache folder {folder}", _fix(var))

    def write_problem(self) -> str | None:
        """Why a build could not write in this cache (None when it can): a file made and
        removed at once where the build's would go (the cache, else the folder it would
        be made in), so that doctor and install agree: doctor said "a build would work"
        over a read-only cache that install then failed in. A real write, not
        ``os.access``: root is let through a read-only mode bit, not a read-only mount."""
        folder = self.root
        while not folder.exists() and folder.parent != folder:
            folder = folder.parent
        try:
            fd, name = tempfile.mkstemp(dir=folder, prefix=".wheelcuda-write-")
        except OSError as exc:
            return f"cannot write in {folder}: {exc.strerror or exc}"
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(name)
        return None

    def private(self, folder: Path | None = None) -> Path:
        """Create ``folder`` (the root when None) and every folder between it and the
        root, 0700, and check that only we can write to each."""
        folder = folder or self.root
        chain = [folder, *folder.parents]
        base = self.store if self.store and (folder == self.store or self.store in
                                             folder.parents) else self.root
        wanted = [p for p in chain if p == base or base in p.parents]
        for path in reversed(wanted):
            _private_dir(path)
        return folder


def _fix(var: str) -> str:
    return (f"export {var}=$HOME/.cache/wheelcuda  (a folder only you can write to), or "
            "fix that folder's owner and mode (chmod 700)")


def _private_dir(path: Path) -> None:
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = path.stat()
    except OSError as exc:
        raise CacheError(f"cannot create the cache folder {path}: {exc.strerror or exc}",
                         _FIX) from exc
    reason = paths.unsafe_reason(st, os.getuid())
    if reason:
        raise CacheError(f"refusing to use the cache folder {path}: {reason}", _FIX)
    if not os.access(path, os.W_OK | os.X_OK):
        raise CacheError(f"cannot write to the cache folder {path}", _FIX)
