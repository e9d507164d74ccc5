"""The wheel cache: built wheels kept under a key that holds everything the binary
depends on (:mod:`wheelcuda._rules.buildkey`), so a second install with the same key, in
any environment, takes seconds, and a different torch, arch or compiler builds anew.

How: each key gets its own installer cache folder (``UV_CACHE_DIR`` for uv,
``PIP_CACHE_DIR`` for pip) under ``<cache>/builds/<key>/``, and after a build the wheel
is kept in ``<key>/wheels``; an exact source (a folder or file, by content hash, or
``name==version``) with a kept wheel installs that wheel and builds nothing. Local
folders need this: setuptools writes into them while building, and uv then treats the
folder as changed and rebuilds (seen here).

Locking: a build holds ``builds/.<key>.lock`` from before the installer starts until
its record and wheels are written (:func:`building`), so concurrent installs of one key
build once (the second waits, says so, and installs the first one's wheel), and
``cache clear`` skips a key whose lock is held and names it (a build under way
keeps its UV_CACHE_DIR). What the build compiles with, the tree and the store's toolkits
it leads into, is guarded
separately: install, run and the backend hold their locks shared for the whole build
(:func:`wheelcuda._pipeline.in_use`), and ``cache clear --trees --toolkits`` and
``prune`` skip what is held (a tree removed under a running build leaves it with
``nvcc: not found``). A failed build leaves no entry.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

from ..errors import CacheError
from . import fs
from .layout import Layout

RECORD = "build.json"
SETUPTOOLS_CFG = "setuptools.cfg"
#: the compile pool reads the order a build's compiles start in from it (WHEELCUDA_ORDER)
ORDER_FILE = "compile-order.json"
#: how an adopted wheel's run names its origin in the record
DOWNLOADED = "downloaded from "


def _normal(name: str) -> str:
    return str(canonicalize_name(name))


def _wheel_name(wheel: Path) -> str:
    try:
        return str(parse_wheel_filename(wheel.name)[0])
    except InvalidWheelFilename:
        return ""


def installer_cache(layout: Layout, tool: str, key: str) -> dict[str, str]:
    """The variable that points the installer's own cache at this key's folder."""
    var = "UV_CACHE_DIR" if tool == "uv" else "PIP_CACHE_DIR"
    return {var: str(layout.build(key) / tool)}


def cached_wheels(layout: Layout, key: str, names: Sequence[str]) -> list[str] | None:
    """The kept wheel for each name, or None unless every one is there."""
    dest = layout.build(key) / "wheels"
    if not dest.is_dir():
        return None
    layout.private(dest)  # never install a wheel from a folder others could write
    wheels = []
    for name in names:
        match = sorted(w for w in dest.glob("*.whl") if _wheel_name(w) == _normal(name))
        if not match:
            return None
        wheels.append(str(match[-1]))
    return wheels


def setuptools_config(layout: Layout, key: str) -> Path:
    """Where :func:`building` writes the setuptools configuration that moves a build's
    ``build/`` folder into the key's own (read through ``DIST_EXTRA_CONFIG``)."""
    return layout.build(key) / SETUPTOOLS_CFG


def _written(path: Path, text: str) -> None:
    """``text`` into ``path``; a full or read-only disk is the user's to fix, said as such
    (not an internal error)."""
    try:
        fs.write_text(path, text)
    except OSError as exc:
        raise CacheError(f"cannot write {path}: {exc.strerror or exc}",
                         f"free space on {path.parent}'s disk, or make it writable; or point "
                         "WHEELCUDA_CACHE_DIR at another folder") from exc


def write_build_base(folder: Path) -> Path:
    """Write the setuptools configuration that moves a build's ``build/`` folder into
    ``folder`` (for ``DIST_EXTRA_CONFIG``); its path."""
    cfg = folder / SETUPTOOLS_CFG
    _written(cfg, f"[build]\nbuild_base = {folder / 'setuptools-build'}\n")
    return cfg


class Build:
    """A build in progress under its key's lock: :meth:`done` keeps what it made."""

    def __init__(self, layout: Layout, key: str, *, lock_fd: int | None = None) -> None:
        self.layout, self.key, self.folder = layout, key, layout.build(key)
        self.succeeded = False
        #: the key's lock, for the installer to hold too: a wheelcuda killed with SIGKILL
        #: let it go while its build ran on, and a second install built into the same
        #: folder
        self.lock_fd = lock_fd

    def write_order(self, seconds: Mapping[str, float]) -> Path:
        """The order for the compile pool (_standalone/_pool.py): each source's seconds in
        the last build, as JSON in this build's folder; its path."""
        path = self.folder / ORDER_FILE
        _written(path, json.dumps(dict(seconds), sort_keys=True))
        return path

    def done(self, fields: Mapping[str, Any], installed: Sequence[str], seconds: float,
             tool: str, names: Sequence[str], *, built: bool = True,
             profile: Sequence[Mapping[str, Any]] | None = None,
             compile_cache: Mapping[str, int] | None = None) -> None:
        """Record the build and keep its wheels (still under the lock), then drop what
        no later run uses (:func:`_slim`). A run that built nothing (``built`` False:
        the package was installed already) and kept no wheel leaves no entry. A disk
        that takes nothing more raises :class:`CacheError` and keeps no half entry (the
        install itself is done)."""
        try:
            kept = _keep_wheels(self.folder, names)
            if not kept and not built and not (self.folder / RECORD).is_file():
                return
            _record(self.folder, self.key, fields, installed, seconds=seconds, tool=tool,
                    profile=profile, compile_cache=compile_cache)
        except OSError as exc:
            for tmp in (self.folder / "wheels").glob(".tmp-*"):
                fs.discard(tmp)
            raise CacheError(f"the wheel could not be kept in wheelcuda's cache: "
                             f"{exc.strerror or exc} ({exc.filename or self.folder})",
                             f"free space on {self.folder.parent}'s disk (wheelcuda cache "
                             "prune), or point WHEELCUDA_CACHE_DIR at another folder; the "
                             "next install of it builds again") from exc
        self.succeeded = True
        _slim(self.folder)

    def refused(self) -> str | None:
        """The installer refused this key's kept wheels: when every one came from an
        index (:func:`adopt`), the entry goes (on leaving :func:`building`), so that the
        next install does not pick the same wheel and fail again; where they came from,
        or None (a wheel built here stays)."""
        tools = _run_tools(_read_record(self.folder) or {})
        if not tools or not all(t.startswith(DOWNLOADED) for t in tools):
            return None
        (self.folder / RECORD).unlink()
        return tools[-1].removeprefix(DOWNLOADED)


def _run_tools(record: Mapping[str, Any]) -> list[str]:
    """What made each run of a record: an installer's name, or DOWNLOADED + an index."""
    runs = record.get("runs")
    return [str(run.get("installer", "")) for run in runs if isinstance(run, dict)] \
        if isinstance(runs, list) else []


#: What a finished build leaves that no later run of its key uses: setuptools' objects
#: (a key's source never changes: a changed folder is another key) and pip's download
#: cache. uv's cache is pruned by the installer itself (``uv cache prune --ci`` keeps
#: the wheels it built, which a name without a version installs from).
_DROPPED = ("setuptools-build", "pip/http", "pip/http-v2")
#: What an interrupted uv build leaves in its cache: its build folders (uv removes
#: them itself when it ends normally).
_UV_SCRAPS = "uv/builds-v0/.tmp*"


def leftovers(base: Path) -> list[Path]:
    """What a finished or stopped build left in its key's folder that no later run uses
    (the demo's entry was 64 MB for a 3.2 MB wheel; a Ctrl-C left setuptools' objects and
    uv's build folders)."""
    return [*(base / rel for rel in _DROPPED if (base / rel).is_dir()),
            *(p for p in base.glob(_UV_SCRAPS) if p.is_dir())]


def _slim(base: Path) -> None:
    for path in leftovers(base):
        fs.discard(path)


@contextlib.contextmanager
def building(layout: Layout, key: str) -> Iterator[Build]:
    """Hold the key's lock for a build; a build that did not call ``done`` (failed,
    interrupted) leaves no entry behind, unless an earlier build recorded one."""
    layout.private(layout.builds)
    lock = layout.lock(layout.builds, key)
    with fs.locked(lock, f"a build of {key}") as fd:
        build = Build(layout, key, lock_fd=fd)
        layout.private(build.folder)
        write_build_base(build.folder)
        try:
            yield build
        finally:
            if build.succeeded:
                pass
            elif (build.folder / RECORD).is_file():
                _slim(build.folder)  # an earlier build's entry stays, less this one's scraps
            else:
                fs.discard(build.folder)
                fs.unlink_held(lock)  # nothing of this key is left: nor its lock file


def adopt(layout: Layout, key: str, fields: Mapping[str, Any], files: Sequence[Path],
          origin: str, *, profile: object = None) -> list[str]:
    """Keep wheels that came from elsewhere (a team's index) under ``key``, as a build
    would have kept them: under the key's lock, recorded with where they came from and
    the ``profile`` of the build that made them, when it came with them. The kept
    paths."""
    with building(layout, key) as build:
        dest = build.folder / "wheels"
        dest.mkdir(mode=0o700, parents=True, exist_ok=True)
        kept = []
        for wheel in files:
            tmp = dest / f".tmp-{wheel.name}.{os.getpid()}"
            shutil.copyfile(wheel, tmp)
            os.replace(tmp, dest / wheel.name)
            kept.append(str(dest / wheel.name))
        rows = [r for r in profile if isinstance(r, dict)] if isinstance(profile, list) \
            else None
        _record(build.folder, key, fields, [Path(k).name for k in kept], seconds=0.0,
                tool=f"{DOWNLOADED}{origin}", profile=rows)
        build.succeeded = True
    return kept


def _keep_wheels(base: Path, names: Sequence[str]) -> list[Path]:
    """Copy the wheels the installer built under this key into ``<key>/wheels``."""
    dest = base / "wheels"
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    kept = []
    for name in names:
        found = sorted((w for w in base.glob("*/**/*.whl")
                        if w.parent != dest and _wheel_name(w) == _normal(name)),
                       key=fs.mtime)
        if found:
            tmp = dest / f".tmp-{found[-1].name}.{os.getpid()}"
            shutil.copyfile(found[-1], tmp)
            os.replace(tmp, dest / found[-1].name)
            kept.append(dest / found[-1].name)
    return kept


def _record(base: Path, key: str, fields: Mapping[str, Any], installed: Sequence[str], *,
            seconds: float, tool: str,
            profile: Sequence[Mapping[str, Any]] | None = None,
            compile_cache: Mapping[str, int] | None = None) -> None:
    """Write what was built under ``key`` (atomically: readers never see half a file);
    ``profile``: each compile of the build (_rules/progress.py), kept from the last build
    that compiled; ``compile_cache``: the run's nvcc steps that hit, missed and ran on a
    build server (sccache's counts)."""
    old = _read_record(base) or {}
    run: dict[str, Any] = {"at": time.strftime("%Y-%m-%dT%H:%M:%S"),
                           "seconds": round(seconds, 1), "installer": tool}
    if compile_cache is not None:
        run["compile_cache"] = dict(compile_cache)
    runs = [*old.get("runs", []), run]
    data: dict[str, Any] = {"key": key, "fields": dict(fields), "installed": list(installed),
                            "runs": runs}
    kept = list(profile) if profile else old.get("profile")
    if kept:
        data["profile"] = kept
    fs.write_text(base / RECORD, json.dumps(data, indent=1, sort_keys=True))


def profile_of(layout: Layout, key: str, names: Sequence[str] = ()) -> list[Any]:
    """The compile profile the last build of ``key`` kept, else that of the newest build
    of one of ``names`` under another key (another arch or torch: the same files); []
    when none."""
    for record in [_read_record(layout.build(key)) or {},
                   *(e.record for e in entries(layout)
                     if any(matches(e, n) for n in names if n))]:
        rows = record.get("profile")
        if isinstance(rows, list) and rows:
            return rows
    return []


def _read_record(base: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((base / RECORD).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class Entry:
    """One key's folder and what it recorded."""

    path: Path
    record: dict[str, Any]

    @property
    def downloaded(self) -> bool:
        """Whether a run of this entry took its wheels from an index (:func:`adopt`)."""
        return any(t.startswith(DOWNLOADED) for t in _run_tools(self.record))

    @property
    def size(self) -> int:
        return folder_size(self.path)


def folder_size(path: Path) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(folder, name)).st_size
    return total


def entries(layout: Layout) -> list[Entry]:
    """Every recorded build in the cache, newest first."""
    try:
        folders = [p for p in layout.builds.iterdir() if not p.name.startswith(".")]
    except OSError:
        return []
    found = [Entry(p, record) for p in folders if (record := _read_record(p)) is not None]
    return sorted(found, key=lambda e: fs.mtime(e.path), reverse=True)


def matches(entry: Entry, name: str | None) -> bool:
    """Whether ``wheelcuda cache clear NAME`` removes this entry (pure on the record)."""
    if name is None:
        return True
    wanted = _normal(name)
    installed = [_normal(i.split("==")[0]) for i in entry.record.get("installed", [])]
    names = [_normal(n) for n in entry.record.get("fields", {}).get("names", []) if n]
    return wanted in installed or wanted in names


def clear(layout: Layout, name: str | None) -> tuple[list[Path], list[Path]]:
    """Remove the entries for ``name`` (all when None): (removed, busy). An entry whose
    key a running build holds is left alone and listed as busy."""
    removed, busy = [], []
    for entry in entries(layout):
        if not matches(entry, name):
            continue
        with fs.try_locked(layout.lock(layout.builds, entry.path.name)) as mine:
            if not mine:
                busy.append(entry.path)
                continue
            fs.discard(entry.path)
            removed.append(entry.path)
    return removed, busy + _building(layout, name, busy)


def _building(layout: Layout, name: str | None, seen: list[Path]) -> list[Path]:
    """Key folders a live build holds that have no record yet (a first build): named
    too, so that ``cache clear PKG`` says what it left (keys begin with the package's
    name: :func:`wheelcuda._rules.buildkey.key_id`)."""
    wanted = None if name is None else _normal(name)
    found = []
    try:
        folders = sorted(p for p in layout.builds.iterdir() if not p.name.startswith("."))
    except OSError:
        return []
    for path in folders:
        if path in seen or (path / RECORD).is_file() or not path.is_dir():
            continue
        if wanted is not None and _normal(path.name.rsplit("-", 1)[0]) != wanted:
            continue
        with fs.try_locked(layout.lock(layout.builds, path.name)) as mine:
            if not mine:
                found.append(path)
    return found
