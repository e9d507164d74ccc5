"""What no run can use any more, found and removed (``wheelcuda cache prune``).

- partial folders: what killed writers left beside their final place
  (``.build-*``, ``.fetch-*``, ``.stale-*``, ``.removing-*``, ``.tmp-*``), unless a
  live writer holds the lock of that name;
- trees no environment can use: a link leads nowhere (its wheels were uninstalled or
  moved), or the manifest is missing or of an older layout; unless uv settings or a
  live shell still name them (_store/named.py), and the records of names now dead;
- toolkits nothing references: no tree links into them, nor names them through the
  local root it links into (the clang toolkit's clang), (and fetched over an hour ago,
  so that an install between its fetch and its tree keeps it), or never completed;
  NVIDIA's archives unpacked (``cuda-redist-*``) count as toolkits, and the downloads a
  stopped fetch left for the next to resume as partial folders;
- links to local toolkits (``local/``) whose toolkit is gone; those still usable stay
  (links only: they cost nothing, and trees lead through them);
- wheel-cache folders without a record (failed builds of older versions);
- build logs beyond the newest builds' or older than a month (_store/buildlog.py);
- the compile cache's views of build folders and trees that are gone
  (_standalone/_view.py); the snapshots of installed headers stay (hard links, mostly).

Every removal takes the lock of the thing removed first, without waiting: what a live
run holds is left alone and reported as busy.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .._sources.local import store as shims
from .._standalone import _view
from . import buildlog, fs, named, toolkits, trees, wheels
from .layout import Layout

#: A toolkit fetched this recently is kept even when no tree uses it yet: an install
#: fetches it, then builds its tree from it (seconds later, or after a long wait for a
#: lock), and must not find it gone.
FRESH = 3600.0


@dataclass(frozen=True)
class Removal:
    path: Path
    why: str
    size: int


def _entries(folder: Path) -> list[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:
        return []


def _partial_name(path: Path) -> str | None:
    """``.build-cu13.0-abc-x1y2`` -> ``cu13.0-abc``: the name whose lock guards it."""
    for prefix in fs.PARTIAL_PREFIXES:
        if path.name.startswith(prefix) and "-" in path.name[len(prefix):]:
            return path.name[len(prefix):].rsplit("-", 1)[0]
    return None


def _links_into(homes: list[Path]) -> set[str]:
    """Where every link of the trees leads, resolved: a tree built while the cache was
    spelled another way (through a linked folder: ``WHEELCUDA_CACHE_DIR``, ``HOME``)
    names the toolkit by that spelling, and still uses it."""
    targets = set()
    for home in homes:
        for folder, dirs, files in os.walk(home):
            for name in [*dirs, *files]:
                path = os.path.join(folder, name)
                if os.path.islink(path):
                    with contextlib.suppress(OSError):
                        targets.add(os.path.realpath(path))
    return targets


def _named_by_roots(layout: Layout, targets: set[str]) -> set[str]:
    """What the local roots the kept trees lead into name in their manifests, resolved:
    the clang toolkit's nvcc runs its clang by path, with no link to it, and a prune that
    saw only links removed the package index's clang under every clang tree ("toolkit:
    no tree uses it"; the next build: cannot run .../clang++)."""
    named = set()
    for root in _entries(layout.local):
        real = os.path.realpath(root)
        if not any(t == real or t.startswith(f"{real}/") for t in targets):
            continue
        try:
            manifest = json.loads((root / shims.MARK).read_text())
        except (OSError, ValueError):
            continue
        for key in ("clang", "toolkit"):
            value = manifest.get(key) if isinstance(manifest, dict) else None
            if isinstance(value, str) and value:
                named.add(os.path.realpath(value))
    return named


def candidates(layout: Layout) -> Iterator[tuple[Path, Path, str]]:
    """(what, its lock, why) for everything prune would remove."""
    for parent in (layout.homes, layout.toolkits, layout.builds, layout.local):
        for path in _entries(parent):
            name = _partial_name(path)  # folders only: never a lock file (.build-x.lock)
            if name is not None and path.is_dir() and not path.is_symlink():
                yield path, layout.lock(parent, name), "left by a run that was stopped"
    kept_homes: list[Path] = []
    yield from _trees(layout, kept_homes)
    used = _links_into(kept_homes)
    yield from _toolkits(layout, used | _named_by_roots(layout, used))
    yield from _shims(layout)
    yield from _builds(layout)
    yield from _memo_scraps(layout)
    yield from _views(layout)
    for log in buildlog.old(layout):  # one lock for them all: no lock file per log
        yield log, layout.lock(layout.logs, "prune"), "an old build log"


def _builds(layout: Layout) -> Iterator[tuple[Path, Path, str]]:
    """Wheel-cache folders without a record, what stopped builds left in those with one,
    and the lock files of keys nothing is left of."""
    for build in _entries(layout.builds):
        lock = layout.lock(layout.builds, build.name)
        if build.name.startswith(".") or not build.is_dir():
            continue
        if not (build / wheels.RECORD).is_file():
            yield build, lock, "build: nothing recorded"
            continue
        for scrap in wheels.leftovers(build):
            yield scrap, lock, "left by a build that was stopped"
    for lock in _entries(layout.builds):
        name = lock.name[1:].removesuffix(".lock")
        if lock.name.startswith(".") and lock.name.endswith(".lock") and lock.is_file() \
                and not (layout.builds / name).exists():
            yield lock, lock, "the lock file of a key nothing is left of"


def _views(layout: Layout) -> Iterator[tuple[Path, Path, str]]:
    """The compile cache's views whose build folder or tree is gone (a compile that sees
    through one holds its lock: a busy view stays)."""
    for view in _entries(layout.views):
        shown = _view.points(str(view))
        if shown is not None and not os.path.isdir(shown):
            yield view, Path(_view.lock_path(str(view))), "a view of a build folder now gone"


def _trees(layout: Layout, kept: list[Path]) -> Iterator[tuple[Path, Path, str]]:
    """Trees no environment can use, unless uv settings or a shell still name them
    (_store/named.py): their environment may come back at the same path."""
    for home in _entries(layout.homes):
        if home.name.startswith(".") or not home.is_dir():
            continue
        why = trees.problem(home)
        if why and not named.naming(layout, home):
            yield home, layout.lock(layout.homes, home.name), f"tree: {why}"
        else:
            kept.append(home)
    for record in named.dead(layout):
        yield record, layout.lock(layout.homes, named.FOLDER), "a name of a tree, dead"


def kept(layout: Layout) -> list[tuple[Path, str]]:
    """Trees prune keeps though no environment can use them now: (tree, who names it)."""
    return [(home, who) for home in _entries(layout.homes)
            if not home.name.startswith(".") and home.is_dir() and trees.problem(home)
            and (who := named.naming(layout, home))]


def _toolkits(layout: Layout, targets: set[str]) -> Iterator[tuple[Path, Path, str]]:
    """``targets``: where the kept trees' links lead, resolved (:func:`_links_into`)."""
    for kit in _entries(layout.toolkits):
        if kit.name.startswith(".") or not kit.is_dir():
            continue
        real = os.path.realpath(kit)
        if not (kit / toolkits.MARK).is_file():
            yield kit, layout.lock(layout.toolkits, kit.name), "toolkit: never completed"
        elif not any(t == real or t.startswith(f"{real}/") for t in targets) \
                and _age(kit / toolkits.MARK) > FRESH:
            yield kit, layout.lock(layout.toolkits, kit.name), "toolkit: no tree uses it"


def _shims(layout: Layout) -> Iterator[tuple[Path, Path, str]]:
    parent = layout.local
    for shim in _entries(parent):
        if shim.name.startswith(".") or not shim.is_dir() or shim.is_symlink():
            continue
        why = shims.problem(shim)
        if why:
            yield shim, layout.lock(parent, shim.name), f"local toolkit link: {why}"


def _size(path: Path) -> int:
    try:
        return path.lstat().st_size
    except OSError:
        return 0


def _age(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return float("inf")


def _memo_scraps(layout: Layout) -> Iterator[tuple[Path, Path, str]]:
    """Half-written memo entries of killed runs (a write in progress that loses its file
    only loses a memo: writes there are best effort)."""
    for kind in _entries(layout.memo):
        for path in _entries(kind):
            if path.name.endswith(".tmp") and _age(path) > 60:
                yield path, layout.lock(kind, path.name), "left by a run that was stopped"


def _still(layout: Layout, path: Path, lock: Path) -> bool:
    """Whether a wheel-cache candidate is still one, asked again under its lock: a build
    may have recorded its entry, or made its key, since it was looked at."""
    if path == lock:
        return not (layout.builds / lock.name[1:].removesuffix(".lock")).exists()
    if path.parent == layout.builds and not path.name.startswith("."):
        return not (path / wheels.RECORD).is_file()
    return True


def prune(layout: Layout, *, dry_run: bool = False) -> tuple[list[Removal], list[Path]]:
    """Remove every candidate nobody holds: (removed, busy)."""
    removed, busy = [], []
    for path, lock, why in candidates(layout):
        size = wheels.folder_size(path) if path.is_dir() else _size(path)
        with fs.try_locked(lock) as mine:  # --dry-run too: it says what prune would do
            if not mine:
                busy.append(path)
                continue
            if not _still(layout, path, lock):
                continue  # a run finished it between the look and the lock
            if not dry_run:
                if path != lock:
                    fs.discard(path)
                # what is gone keeps no lock file (a key's, a tree's, a toolkit's)
                if path == lock or lock == layout.lock(path.parent, path.name):
                    fs.unlink_held(lock)
            removed.append(Removal(path, why, size))
    return removed, busy
