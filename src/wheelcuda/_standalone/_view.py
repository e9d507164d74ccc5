"""Stable paths for the compile cache: what a cached compile sees of a build's folders.

Standalone, like the rest of the tree's programs: the standard library only.

Why: sccache keys a compile by what the compiler is given, and installers give it random
folders. uv and pip unpack each sdist into a new temporary folder and build it against
torch in a new temporary environment, so the same kernel compiled by ``wheelcuda
install``, then by ``uv add``, then by ``uv pip install`` was three misses:

- nvcc hands cicc and cudafe++ the source's real path (``--orig_src_path_name``, which
  nvcc resolves through links: seen with nvcc 13.0 ``-dryrun``), and sccache hashes it;
- every header's path is in the preprocessed text sccache hashes (``# 1 "/tmp/...h"``),
  for nvcc, clang and g++ alike. sccache's ``SCCACHE_BASEDIRS`` would strip a prefix
  from that text, but it is read once, when its server starts, and these folders are new
  for every build.

So a cached compile is given stable paths instead, in the tree cache's ``views`` folder:

- **the package** (an unpacked sdist: a build folder holding PKG-INFO) is seen at
  ``views/src-<name>-<version>/``: real folders mirroring the build folder, each entry a
  link into it through the one link ``.root``, and each compiled source a copy (a link
  would be resolved by nvcc). Another build of the same release repoints ``.root``; a
  build that finds it held by a build of the same release in another folder compiles at
  its own paths (a miss, never a wrong hit: a shared lock is held while a compile runs);
- **headers of an installed distribution** (``-I .../site-packages/torch/include``) are
  seen in a snapshot keyed by its RECORD (``views/site-torch-<version>-<digest>/``),
  hard links where the file system allows, so a build environment that uv deletes
  afterwards leaves the path whole.

What the compiler writes keeps the real paths: the object where it was asked, and the
dependency file, whose view paths (and the target sccache restores with a hit) are put
back (:func:`Prepared.finish`), so ninja's dependencies name the build's own files.
sccache hashes file contents too, so a stale path never gives a wrong object; the views
only decide whether two builds of the same sources can share.
"""

from __future__ import annotations

import contextlib
import fcntl
import filecmp
import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

try:
    from . import _build
except ImportError:  # run as a script from a tree's bin/, beside it
    import _build  # type: ignore[import-not-found,no-redef]

#: the link in a package's view that says which build folder it shows
ROOT = ".root"
#: a tree's file of facts (_tree.CONFIG): a folder holding it in bin/ is one of wheelcuda's
_TREE_FACTS = ".wheelcuda-tree.json"
#: options whose value (joined or the next argument) is a folder of headers
_INCLUDES = ("-I", "-isystem", "-iquote", "-idirafter", "--include-path", "--system-include")
#: options whose value is a file the compiler writes; never shown through a view
_WRITES = ("-o", "-MF", "--dependency-output", "--output-file")
#: options that name a dependency file's target themselves
_TARGETS = ("-MT", "-MQ", "--dependency-target-name")
#: options whose next argument is another program's (the host compiler's, ptxas's)
_PASSED_ON = ("-Xcompiler", "--compiler-options", "-Xptxas", "--ptxas-options", "-Xlinker",
              "--linker-options", "-Xarch_device", "-Xarch_host", "-Xclang", "-Xnvlink",
              "--nvlink-options", "-Xfatbin", "--fatbin-options")
_SOURCE_SUFFIXES = (".cu", ".c", ".cc", ".cpp", ".cxx", ".C", ".c++")
_SITE = re.compile(r"^(.*/(?:site|dist)-packages)/([^/]+)(/.*)?$")


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+_-]+", "_", text).strip("_") or "_"


class Prepared:
    """A compile's arguments through the views, the program to run it by, and what to put
    back after it: a context whose end is :meth:`finish`."""

    def __init__(self, args: list[str], back: list[tuple[str, str]], locks: list[int],
                 depfile: str | None, target: str | None, *,
                 tree: tuple[str, str] | None = None) -> None:
        self.args, self.back, self.locks = args, back, locks
        self.depfile, self.target = depfile, target
        #: the tree's view and the tree it shows (None: the tree is run from its own path)
        self.tree = tree

    def __enter__(self) -> Prepared:
        return self

    def __exit__(self, *_: object) -> None:
        self.finish()

    def program(self, path: str) -> str:
        """``path`` (in the tree) as the compile runs it: through the tree's view, so that
        nvcc's ``_HERE_`` and the clang toolkit's ``--cuda-path`` are the view's."""
        if self.tree is None or not path.startswith(self.tree[1] + "/"):
            return path
        return self.tree[0] + path[len(self.tree[1]):]

    def finish(self) -> None:
        """The dependency file with the build's own paths, and the views let go."""
        try:
            if self.depfile and (self.back or self.target):
                _fix_depfile(self.depfile, self.back, self.target)
        except OSError:
            pass  # a dependency file it cannot fix costs an incremental rebuild's accuracy
        finally:
            for fd in self.locks:
                os.close(fd)
            self.locks = []


def _option_value(args: Sequence[str], names: Sequence[str]) -> str | None:
    """The last value of any of ``names`` in ``args`` (``-o x``, ``-ox``, ``--opt=x``)."""
    found = None
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                found = args[i + 1]
            elif arg.startswith(name + "=") and name.startswith("--"):
                found = arg[len(name) + 1:]
            elif not name.startswith("--") and arg.startswith(name) and len(arg) > len(name):
                found = arg[len(name):]  # -ox, -MFx
    return found


#: What a cached compile's environment gets. sccache 0.16's preprocessor cache mode
#: ("direct mode", on by default for C and C++) keys a compile otherwise than its
#: preprocessor mode, and falls back to the latter when a header is newer than the
#: compile ("Include file ... is too new", sccache's log): a view or snapshot made a
#: moment before is. The same binding.cpp then got two keys on two routes, and the second
#: missed in about half the runs. Off, every compile is keyed one way.
ENVIRON = {"SCCACHE_DIRECT": "false"}


def through(args: Sequence[str], facts: Mapping[str, Any], here: str) -> Prepared:
    """:func:`prepare` for this compile: its build's folder (the folder its build runs
    in: an unpacked sdist's, for uv and pip), the tree ``here`` is the ``bin`` of, and the
    tree's views folder."""
    build = _build.find()
    root = build.cwd if build is not None and build.cwd else None
    views = facts.get("views")
    name = _build.package_name(root) if root else None
    return prepare(args, cwd=os.getcwd(), root=root, tree=os.path.dirname(here),
                   views=views if isinstance(views, str) else None, name=name)


def prepare(args: Sequence[str], *, cwd: str, root: str | None, views: str | None,
            name: tuple[str, str] | None, tree: str | None = None) -> Prepared:
    """``args`` with the build folder ``root`` (an unpacked sdist named ``name``), the
    ``tree`` and the installed distributions' headers seen at stable paths under
    ``views``. Anything it cannot show through a view stays as it was: the compile then
    runs at its real paths."""
    args = list(args)
    output = _option_value(args, ("-o", "--output-file"))
    depfile = _option_value(args, ("-MF", "--dependency-output"))
    if depfile is None and output and any(a in ("-MD", "-MMD") for a in args):
        depfile = os.path.splitext(output)[0] + ".d"  # gcc's own name for it
    target = None if _option_value(args, _TARGETS) else output
    if not views:
        return Prepared(args, [], [], depfile, None)
    back: list[tuple[str, str]] = []  # (view, what it shows), each held: locks
    locks: list[int] = []

    def mount(view: str, real: str) -> tuple[str, str] | None:
        if (lock := _hold(view, real)) is None:
            return None
        locks.append(lock)
        back.append((view, real))
        return view, real

    package = None
    if root and name and os.path.isfile(os.path.join(root, "PKG-INFO")):
        package = mount(os.path.join(views, _safe(f"src-{name[0]}-{name[1]}")),
                        os.path.realpath(root))
    shown_tree = None
    if tree and os.path.isfile(os.path.join(tree, "bin", _TREE_FACTS)):
        # the tree by what compiles, not by its folders: install's tree (over the
        # environment's wheels) and uv-config's (over the store's) are two folders of one
        # compiler
        shown_tree = mount(os.path.join(views, _safe(
            "tree-" + os.path.basename(tree).rsplit("-", 1)[0] + "-" + _compiler_digest(tree))),
            tree)
        if shown_tree is not None:
            args = [a.replace(tree + "/", shown_tree[0] + "/") for a in args]
    paths = _Paths(cwd, package, views)
    out = _rewritten(args, paths)
    back += [(snap, real) for real, snap in paths.sites.items()]
    return Prepared(out, back, locks, depfile, target, tree=shown_tree)


def _compiler_digest(tree: str) -> str:
    """What compiles through ``tree``, as 12 hex: its version.json (the compiler set's
    versions) and its real nvcc (the clang toolkit's is a script naming the clang, ptxas
    and its translator; NVIDIA's a program, by its size). sccache does not hash the
    ptxas and fatbinary clang runs from the tree, so two trees of one CUDA release with
    another ptxas must not share a view."""
    h = hashlib.sha256()
    with contextlib.suppress(OSError):
        with open(os.path.join(tree, "version.json"), "rb") as f:
            h.update(f.read())
        nvcc = os.path.realpath(os.path.join(tree, "bin", ".nvcc-real"))
        size = os.stat(nvcc).st_size
        if size < 1 << 16:
            with open(nvcc, "rb") as f:
                h.update(f.read())
        else:
            h.update(str(size).encode())
    return h.hexdigest()[:12]


def _rewritten(args: Sequence[str], paths: _Paths) -> list[str]:
    """Each path argument of ``args`` as :meth:`_Paths.shown` shows it. What follows
    nvcc's ``-Xcompiler`` and the like is the host's and stays as it is; an option that
    is not one of :data:`_INCLUDES` exactly (``-isystem-after``, ``-I-``, gcc's
    ``-isystem=DIR`` under the sysroot) stays too."""
    out: list[str] = []
    pending: str | None = None
    for i, arg in enumerate(args):
        if i and args[i - 1] in _PASSED_ON:
            out.append(arg)
        elif pending is not None:  # the value of an option written apart
            value = paths.shown(arg, pending)
            if value is None:
                out.pop()  # a folder that holds nothing: the option goes too
            else:
                out.append(value)
            pending = None
        elif arg in _INCLUDES:
            pending = "include"
            out.append(arg)
        elif arg in _WRITES or arg in _TARGETS:
            pending = "keep"
            out.append(arg)
        elif (head := _joined(arg)) is not None:
            value = arg[len(head):]
            sep = "=" if head.startswith("--") else ""
            shown = [s for v in value[len(sep):].split(",")
                     if (s := paths.shown(v, "include")) is not None] \
                if head.startswith("--") else [paths.shown(value, "include") or ""]
            if any(shown):  # nvcc's --include-path=a,b: each folder; none left, no option
                out.append(head + sep + ",".join(s for s in shown if s))
        elif not arg.startswith("-") and arg.endswith(_SOURCE_SUFFIXES):
            out.append(paths.shown(arg, "source") or arg)
        else:
            out.append(arg)
    return out


def _joined(arg: str) -> str | None:
    """The include option ``arg`` starts with, its folder joined to it (``-I/x``,
    ``--include-path=/x``); None for anything else (``-isystem-after``, ``-I-``,
    ``-isystem=/x``: a folder under the sysroot, kept as it is)."""
    for option in _INCLUDES:
        if option.startswith("--"):
            if arg.startswith(option + "="):
                return option
        elif arg.startswith(option) and len(arg) > len(option) \
                and arg[len(option)] not in "-=":
            return option
    return None


class _Paths:
    """How one compile's path arguments are shown: its folder, its package's view (the
    view and the build folder, None without one), the snapshots made so far."""

    def __init__(self, cwd: str, package: tuple[str, str] | None, views: str) -> None:
        self.cwd, self.package, self.views = cwd, package, views
        self.sites: dict[str, str] = {}

    def shown(self, value: str, kind: str) -> str | None:
        """One path argument as the compiler should see it: ``kind`` is ``source``,
        ``include`` (a folder of headers) or ``keep`` (what the compiler writes). None: a
        folder of headers that is not there or holds nothing (a build environment's
        ``include``, named by every build and random in each: sccache keys the compile by
        it, and it can give the compile nothing)."""
        if kind == "keep" or not value:
            return value
        path = os.path.normpath(os.path.join(self.cwd, value))
        if kind == "include" and not _holds_anything(path):
            return None
        if self.package is not None:
            view, real = self.package
            if path == real or path.startswith(real + "/"):
                rel = os.path.relpath(path, real)
                try:
                    return _source(view, real, rel) if kind == "source" else \
                        _folder(view, real, rel, value)
                except OSError:
                    return value
        if kind == "include" and (m := _SITE.match(path)):
            site, top = m.group(1), m.group(2)
            with contextlib.suppress(OSError):
                snap = _snapshot(self.views, site, top, path)
                if snap is not None:
                    self.sites[os.path.join(site, top)] = snap
                    return os.path.join(snap, os.path.relpath(path, os.path.join(site, top)))
        return value


def _holds_anything(path: str) -> bool:
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


def _folder(view: str, real: str, rel: str, value: str) -> str:
    """A folder of the package through its view, with what it holds now (a build step
    may have written headers since the view was filled), when the view shows it (a
    folder made after the view was filled stays at its real path)."""
    shown = os.path.normpath(os.path.join(view, rel))
    if os.path.isdir(shown) and not os.path.islink(shown):
        _sync(view, real, os.path.normpath(rel))
    return shown if os.path.isdir(shown) else value


# -- the package's view ---------------------------------------------------------------

def _hold(view: str, real: str) -> int | None:
    """A shared lock on ``view`` showing ``real``, repointing it when no compile holds it;
    None when compiles of a build in another folder hold it, or when the views cannot be
    written (a cache mounted read-only): the compile then runs at its own paths.

    Compiles of one build arrive together and each finds the view showing the last
    build: they take turns on a second lock (``.NAME.fill``), the first repoints it while
    the others wait for that turn, not holding the view, and then find it done."""
    try:
        os.makedirs(os.path.dirname(view), exist_ok=True)
    except OSError:
        return None
    for _ in range(4):
        fd = _open(lock_path(view))
        if fd is None:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)
            if not _current(fd, view):
                os.close(fd)  # `cache prune` took the view and its lock file: anew
                continue
            if points(view) == real:
                return fd
            os.close(fd)
            if not _repoint(view, real):
                return None
        except OSError:
            with contextlib.suppress(OSError):
                os.close(fd)
            return None
    return None


def _open(path: str) -> int | None:
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return None


def _repoint(view: str, real: str) -> bool:
    """``view`` made to show ``real``, in the fill lock's turn, unless compiles still see
    through it (waited for half a second: those of this build let go at once); whether it
    shows ``real`` now."""
    turn = _open(os.path.join(os.path.dirname(view), f".{os.path.basename(view)}.fill"))
    if turn is None:
        return False
    try:
        fcntl.flock(turn, fcntl.LOCK_EX)
        for _ in range(20):
            fd = _open(lock_path(view))
            if fd is None:
                return False
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                time.sleep(0.025)
                continue
            try:
                if _current(fd, view) and points(view) != real:
                    _fill(view, real)
                return points(view) == real
            finally:
                os.close(fd)
        return points(view) == real
    finally:
        os.close(turn)


def _current(fd: int, view: str) -> bool:
    """Whether the lock ``fd`` holds is the file at the view's lock path still."""
    try:
        return os.fstat(fd).st_ino == os.stat(lock_path(view)).st_ino
    except OSError:
        return False


def lock_path(view: str) -> str:
    """The lock of a view: held shared by each compile that sees through it, and
    exclusively to repoint it (or, by ``cache prune``, to remove it): ``.NAME.lock`` beside
    it, as every lock in wheelcuda's cache is named (Layout.lock)."""
    return os.path.join(os.path.dirname(view), f".{os.path.basename(view)}.lock")


def points(view: str) -> str | None:
    """The folder a view shows (None: none, or not a view)."""
    try:
        return os.readlink(os.path.join(view, ROOT))
    except OSError:
        return None


def _fill(view: str, real: str) -> None:
    """The view made anew for ``real`` (under the exclusive lock): every folder a real
    folder, every other entry a link through ``.root``, and ``.root`` last, so that a fill
    cut short (a full disk) is never taken for a view of ``real``."""
    if os.path.lexists(view):
        shutil.rmtree(view)
    os.makedirs(view)
    for folder, dirs, files in os.walk(real):
        rel = os.path.relpath(folder, real)
        here = os.path.normpath(os.path.join(view, rel))
        for d in dirs:
            entry = os.path.join(folder, d)
            if os.path.islink(entry):  # a link in the sdist: shown as one, not walked
                _link(here, rel, d)
            else:
                os.makedirs(os.path.join(here, d), exist_ok=True)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(folder, d))]
        for f in files:
            _link(here, rel, f)
    os.symlink(real, os.path.join(view, ROOT))


def _link(here: str, rel: str, entry: str) -> None:
    depth = 0 if rel == "." else rel.count("/") + 1
    inside = entry if rel == "." else os.path.join(rel, entry)
    with contextlib.suppress(FileExistsError):
        os.symlink(os.path.join(*([".."] * depth), ROOT, inside) if depth else
                   os.path.join(ROOT, inside), os.path.join(here, entry))


def _sync(view: str, real: str, rel: str) -> None:
    """The folder ``rel`` of the view and its parents, with what the build folder holds
    now (files a build step wrote after the view was filled), and their copies fresh."""
    parts = [] if rel == "." else rel.split("/")
    for depth in range(len(parts) + 1):
        sub = "/".join(parts[:depth]) or "."
        here, there = os.path.join(view, sub), os.path.join(real, sub)
        if os.path.islink(here):  # shown by a link (a folder the fill did not see): live
            return
        os.makedirs(here, exist_ok=True)
        for entry in os.listdir(there):
            shown = os.path.join(here, entry)
            if os.path.islink(shown):
                continue
            if os.path.isfile(shown):
                _copy(os.path.join(there, entry), shown)
            elif not os.path.exists(shown):
                _link(here, sub, entry)


def _copy(src: str, dst: str) -> None:
    """``dst`` a copy of ``src`` (replacing a link there at once) unless it is one already:
    the same bytes, not the same size and time (sdists made with one fixed time for every
    file, then unpacked again into a reused folder)."""
    with contextlib.suppress(OSError):
        if stat.S_ISREG(os.lstat(dst).st_mode) and filecmp.cmp(src, dst, shallow=False):
            return
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(dst), prefix=".copy-")
    os.close(fd)
    try:
        shutil.copy2(src, tmp)
        os.replace(tmp, dst)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def _source(view: str, real: str, rel: str) -> str:
    """The compiled file at its place in the view: a copy, in real folders (nvcc resolves
    links, and would hand cicc the build folder's path)."""
    folder = os.path.dirname(rel) or "."
    _sync(view, real, folder)
    shown = os.path.join(view, rel)
    _copy(os.path.join(real, rel), shown)
    return shown


# -- installed distributions' headers ---------------------------------------------------

def _dist_info(site: str, top: str) -> str | None:
    """The .dist-info of the distribution that installed ``top`` (``torch``) in ``site``:
    the one whose name is the folder's, as pip and uv name them; None when there is none,
    or more than one (an old one left behind: which holds the headers is unknown)."""
    want = re.sub(r"[-_.]+", "_", top).lower()
    try:
        found = [e for e in os.listdir(site) if e.endswith(".dist-info")
                 and re.sub(r"[-_.]+", "_", e.split("-", 1)[0]).lower() == want]
    except OSError:
        return None
    return os.path.join(site, found[0]) if len(found) == 1 else None


def _snapshot(views: str, site: str, top: str, path: str) -> str | None:
    """The snapshot of ``site/top`` that holds the header folder ``path``, made (hard
    links, else copies) the first time; None when no RECORD says what it holds."""
    info = _dist_info(site, top)
    if info is None or not os.path.isdir(path):
        return None
    # the package's own lines: the installer adds its own (REQUESTED when asked for by
    # name, INSTALLER, direct_url.json; pip the .pyc it compiled), so a venv's torch and a
    # build environment's differ in their RECORD while their headers are the same files
    with open(os.path.join(info, "RECORD"), "rb") as f:
        own = sorted(line for line in f.read().splitlines()
                     if line.startswith(top.encode() + b"/") and b"/__pycache__/" not in line)
    if not own:
        return None
    digest = hashlib.sha256(b"\n".join(own)).hexdigest()[:16]
    version = os.path.basename(info)[:-len(".dist-info")].split("-", 1)[-1]
    snap = os.path.join(views, _safe(f"site-{top}-{version}-{digest}"))
    rel = os.path.relpath(path, os.path.join(site, top))
    made = os.path.join(snap, ".made-" + hashlib.sha256(rel.encode()).hexdigest()[:16])
    if not os.path.exists(made) and not _inside_made(snap, rel):
        _clone(path, os.path.join(snap, rel))
        with open(made, "w") as f:
            f.write(rel + "\n")
    return snap


def _inside_made(snap: str, rel: str) -> bool:
    """Whether a folder above ``rel`` was snapshot already (torch's include/ holds the
    api/include folder that the build names too)."""
    parts = rel.split("/")
    for n in range(1, len(parts)):
        above = "/".join(parts[:n])
        if os.path.exists(os.path.join(
                snap, ".made-" + hashlib.sha256(above.encode()).hexdigest()[:16])):
            return True
    return False


def _clone(src: str, dst: str) -> None:
    """``src``'s tree at ``dst``: built aside, then renamed into place whole, or file by
    file into what is there already (a folder inside it snapshot first, or another
    compile's: the same files, by the RECORD's digest). A file appears whole or not at
    all."""
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    tmp = tempfile.mkdtemp(dir=os.path.dirname(dst), prefix=".clone-")
    try:
        shutil.copytree(src, tmp, dirs_exist_ok=True, copy_function=_hard_or_copy,
                        symlinks=True)
        try:
            os.rename(tmp, dst)
        except OSError:
            for folder, _, files in os.walk(tmp):
                there = os.path.join(dst, os.path.relpath(folder, tmp))
                os.makedirs(there, exist_ok=True)
                for f in files:
                    if not os.path.lexists(os.path.join(there, f)):
                        os.rename(os.path.join(folder, f), os.path.join(there, f))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _hard_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)


# -- the dependency file -----------------------------------------------------------------

def _fix_depfile(path: str, back: Sequence[tuple[str, str]], target: str | None) -> None:
    """The dependency file with the view's paths put back, and its target the one this
    compile was asked for (a hit restores the first compile's)."""
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    fixed = text
    for shown, real in back:
        for a, b in ((shown, real), (shown.replace(" ", "\\ "), real.replace(" ", "\\ "))):
            fixed = fixed.replace(a + "/", b + "/")
    if target is not None:
        head, sep, rest = fixed.partition(": ")
        if sep and "\n" not in head.rstrip("\\\n"):
            fixed = target.replace(" ", "\\ ") + sep + rest
    if fixed != text:
        tmp = path + ".wheelcuda"
        with open(tmp, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(fixed)
        os.replace(tmp, path)

