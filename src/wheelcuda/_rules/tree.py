"""The tree to build: which links go where (pure).

The synthesized CUDA_HOME is the union of the component folders' ``bin``, ``include``,
``lib`` and ``nvvm``, laid out like /usr/local/cuda:

- ``bin/`` is a real folder of per-file links: nvcc reads ``nvcc.profile`` from the
  folder it was invoked through without resolving links, and the stock profile's
  ``TOP=$(_HERE_)/..`` then points at our tree (``nvcc -dryrun`` shows ``_HERE_``).
- ``lib64/`` is a real folder too: it adds the unversioned ``libX.so`` links builds
  link against and ``stubs/libcuda.so``, which no wheel ships.
- ``include`` and ``nvvm`` are one link each when a single folder provides them (the
  CUDA 13 layout), else a merged folder (the CUDA 12 layout: one folder per wheel).
- ``lib -> lib64`` and ``targets/<arch>-linux/{include,lib}``: nvcc switches to the
  targets folder when it exists, as in NVIDIA's installers.

Listing the folders is the caller's job (``listdir``), so this stays a pure function.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from .._data import catalog
from .._standalone import _tree
from .checks import release

#: Bump when the tree layout changes: old trees are then rebuilt, not reused.
FORMAT = 3  # 3: the compile pool and the tree's facts replace the ninja shim
#: Folders that are always real folders of links (see module docstring).
_REAL = frozenset({"bin", "lib64"})
_SONAME = re.compile(r"^(lib.+?\.so)\.\d[\d.]*$")
STUB = "lib64/stubs/libcuda.so"
MANIFEST = "wheelcuda.json"

#: ``listdir(path)`` -> [(name, is_dir), ...], or None when ``path`` is not a folder.
Listdir = Callable[[str], "Sequence[tuple[str, bool]] | None"]


@dataclass(frozen=True)
class Link:
    path: str  # relative to the tree
    target: str  # absolute, or relative to the link's folder when internal


@dataclass(frozen=True)
class TreePlan:
    key: str
    links: tuple[Link, ...]
    files: tuple[tuple[str, str], ...]  # (relative path, text)
    stub_header: str | None  # cuda.h to build lib64/stubs/libcuda.so from
    executables: frozenset[str] = frozenset()  # files to mark executable


def tree_key(major: int, parts: Sequence[tuple[str, str | None, str]], machine: str) -> str:
    """``cu13.0-<hash>``: one tree per exact component set (name, version, folder)."""
    blob = json.dumps([FORMAT, major, machine, sorted(parts, key=str)])
    digest = hashlib.sha256(blob.encode()).hexdigest()[:16]
    versions = [v for n, v, _ in parts if n == catalog.NVCC.name and v]
    rel = (release(versions[0]) if versions else None) or str(major)
    return f"cu{rel}-{digest}"


def _union(dst: str, sources: Sequence[str], listdir: Listdir,
           hidden: frozenset[str] = frozenset()) -> list[Link]:
    entries: dict[str, list[tuple[str, bool]]] = {}
    for src in sources:
        for name, is_dir in listdir(src) or ():
            full = os.path.join(src, name)
            if os.path.normpath(full) not in hidden:
                entries.setdefault(name, []).append((full, is_dir))
    links: list[Link] = []
    for name in sorted(entries):
        found = entries[name]
        path = f"{dst}/{name}"
        merge = len(found) > 1 and all(d for _, d in found)
        if (merge or _holds_hidden(found, hidden)) and \
                dst.split("/", maxsplit=1)[0] not in _REAL:
            links += _union(path, [p for p, _ in found], listdir, hidden)
        else:
            links.append(Link(path, found[0][0]))  # first source wins, as imports do
    return links


def _holds_hidden(found: Sequence[tuple[str, bool]], hidden: frozenset[str]) -> bool:
    """A folder to link whole holds hidden files: it is merged file by file instead."""
    return any(d and any(h.startswith(p + os.sep) for h in hidden) for p, d in found)


def _unversioned(lib_links: Sequence[Link]) -> list[Link]:
    """``libcudart.so -> libcudart.so.13`` for every library lacking its dev link."""
    names = {link.path.rsplit("/", 1)[1] for link in lib_links}
    extra: dict[str, str] = {}
    for name in sorted(names, key=len):
        m = _SONAME.match(name)
        if m and m.group(1) not in names and m.group(1) not in extra:
            extra[m.group(1)] = name
    return [Link(f"lib64/{dev}", real) for dev, real in sorted(extra.items())]


def _folders(sources: Sequence[str], listdir: Listdir,
             hidden: frozenset[str] = frozenset()) -> list[Link]:
    links: list[Link] = []
    for sub, dst in catalog.TREE_FOLDERS.items():
        provs = [os.path.join(s, sub) for s in sources if listdir(os.path.join(s, sub))]
        if len(provs) == 1 and dst not in _REAL and not _holds_hidden([(provs[0], True)],
                                                                      hidden):
            links.append(Link(dst, provs[0]))
        elif provs:
            links += _union(dst, provs, listdir, hidden)
    return links


def version_json(versions: Mapping[str, str], cuda: str) -> str:
    """``version.json`` as NVIDIA's installers write it (CMake and clang read it)."""
    titles = {c.name: c.title for c in catalog.COMPONENTS}
    data: dict[str, dict[str, str]] = {"cuda": {"name": "CUDA SDK", "version": cuda}}
    for name in sorted(versions):
        data[name] = {"name": titles.get(name, name), "version": versions[name]}
    return json.dumps(data, indent=3, separators=(",", " : ")) + "\n"


WRAPPER = "bin/nvcc"
WRAPPER_SOURCE = "bin/.nvcc-wrapper.py"
REAL_NVCC = "bin/.nvcc-real"


#: The host compiler shim: the real one, its C++ standard raised, its compiles admitted
#: and told (_cxx_std.py, through its entry).
HOST_SHIM = "bin/wheelcuda-c++"
HOST_ENTRY = "bin/.wheelcuda-c++.py"
#: The tree's facts, read by its programs at compile time (_standalone/_tree.py).
FACTS = f"bin/{_tree.CONFIG}"
#: The standalone modules the wrapper and the host shim import, copied beside them into bin/.
WRAPPER_MODULES = ("_nvcc_wrapper.py", "_pool.py", "_machine.py", "_cxx_std.py",
                   "_progress.py", "_nvcc_table.py", "_build.py", "_events.py", "_tree.py",
                   "_view.py", "_overlap.py", "_archlist.py")


def entry(module: str) -> str:
    """A program's entry, the script its trampoline runs: it imports ``module`` from
    beside it and runs its ``main`` (pure). Python compiles a script it runs at every
    start, and a module it imports from the ``.pyc`` written with the tree (_store/fs.py
    ``precompile``): run as scripts, the wrapper and what it imports cost each compile
    about 100 ms of Python's compiler (2-core machine, 2026-12-06)."""
    return ("import os, sys\n"
            "sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))\n"
            f"import {module}  # noqa: E402\n"
            f"{module}.main()\n")


def tree_facts(events: str, *, pool: str, views: str,
               recipes: Mapping[str, Mapping[str, object]], split: bool) -> str:
    """The tree's facts as its programs read them (pure): the folder its builds' events
    go to, the compile pool's folder when the machine's cannot be used, the recipe table's
    memory and seconds per package, and whether its compiler takes ``--split-compile``
    (the clang toolkit's does not), and where a cached compile's stable paths are made."""
    return json.dumps({"events": events, "pool": pool, "recipes": recipes, "split": split,
                       "views": views},
                      sort_keys=True) + "\n"


def _trampoline(python: str, script: str, what: str) -> str:
    # A trampoline rather than a shebang: a shebang cannot hold a path with spaces and
    # passes at most one argument to the interpreter. -B: the modules beside it are
    # imported, and a tree is never written once made (doctor runs its nvcc and must
    # leave the cache as it found it).
    return "\n".join(["#!/bin/sh", f"{_tree.SHIM_MARK} {what}",
                      f"exec {shlex.quote(python)} -IBS {shlex.quote(script)} \"$@\"", ""])


def wrapper_files(python: str, home: str, modules: tuple[tuple[str, str], ...] = (),
                  facts: str = "") -> tuple[tuple[str, str], ...]:
    """``bin/nvcc``: a sh trampoline into the arch-pruning wrapper (see _nvcc_wrapper),
    the modules it imports (the wrapper's among them), the host compiler shim, and the
    tree's ``facts`` (JSON).

    The trampolines name the programs by the tree's final path ``home``, not by ``$0``:
    through a link to ``bin/nvcc`` (``~/bin/nvcc``, a CMake toolchain link) ``$0`` is the
    link, and a ``.nvcc-wrapper.py`` beside the link would run. Their second line marks
    them as shims (``_tree.is_shim``): no shim ever runs one.
    """
    wrapper = os.path.join(home, WRAPPER_SOURCE)
    trampoline = _trampoline(python, wrapper, "prunes GPU targets to WHEELCUDA_ARCHS and "
                             "waits for the machine's compile budget, then runs .nvcc-real")
    shim = _trampoline(python, os.path.join(home, HOST_ENTRY),
                       "the host compiler (WHEELCUDA_REAL_CXX), its C++ standard raised to "
                       "WHEELCUDA_CXX_STD, its compiles in the machine's compile budget")
    names = {n for n, _ in modules}
    return ((WRAPPER, trampoline), (WRAPPER_SOURCE, entry("_nvcc_wrapper")),
            *((f"bin/{name}", text) for name, text in modules),
            *(((HOST_SHIM, shim), (HOST_ENTRY, entry("_cxx_std"))) if "_cxx_std.py" in names
              else ()),
            *(((FACTS, facts),) if facts else ()))


def wrapper_python(trampoline: str) -> str | None:
    """The Python a tree's ``bin/nvcc`` trampoline runs the wrapper with (pure)."""
    for line in trampoline.splitlines():
        if line.startswith("exec "):
            try:
                words = shlex.split(line)
            except ValueError:
                return None
            return words[1] if len(words) > 1 else None
    return None


def _wrap_nvcc(links: list[Link]) -> list[Link]:
    """The real nvcc stays in bin/ (nvcc.profile is read from there) under another name."""
    return [Link(REAL_NVCC, lk.target) if lk.path == WRAPPER else lk for lk in links]


def plan_tree(key: str, sources: Sequence[str], listdir: Listdir, *,
              versions: Mapping[str, str], cuda: str, target_dir: str,
              wrapper: tuple[tuple[str, str], ...] = (),
              hidden: frozenset[str] = frozenset()) -> TreePlan:
    """The whole tree for component folders ``sources`` (first wins on a clash), less
    the files in ``hidden`` (absolute paths: a copy of another CUDA release)."""
    links = _folders(sources, listdir, hidden)
    if wrapper:
        links = _wrap_nvcc(links)
    links += _unversioned([lk for lk in links if lk.path.startswith("lib64/")])
    links += [
        Link("lib", "lib64"),
        Link(f"targets/{target_dir}/include", "../../include"),
        Link(f"targets/{target_dir}/lib", "../../lib64"),
    ]
    headers = [h for s in sources
               if os.path.normpath(h := os.path.join(s, "include", "cuda.h")) not in hidden]
    stub_header = next((h for h in headers if any(n == "cuda.h" for n, _ in
                                                  listdir(os.path.dirname(h)) or ())), None)
    files = (("version.json", version_json(versions, cuda)), *wrapper)
    return TreePlan(key, tuple(links), files, stub_header,
                    frozenset(path for path, _ in wrapper if path in (WRAPPER, HOST_SHIM)))


def os_listdir(path: str) -> list[tuple[str, bool]] | None:
    """The real ``listdir`` for :func:`plan_tree` (follows links, like a build would)."""
    try:
        with os.scandir(path) as it:
            return [(e.name, e.is_dir()) for e in it]
    except (NotADirectoryError, FileNotFoundError):
        return None
