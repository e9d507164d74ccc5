"""What uv-config needs of uv's view of a project: each package's name (uv applies
per-package settings only to a name it knows before building), the indexes uv searches
in uv's order, a uv project's local folders and those its settings miss, and the trees
its settings name.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from .._context import Context
from .._data import settings as registry
from ..errors import ConfigError, WheelcudaError
from . import index, source, uvlock


@dataclass(frozen=True)
class Package:
    """One package ``uv-config`` covers."""

    spec: str  # as given
    name: str  # canonical


def _split(value: str | None, sep: str | None = None) -> list[str]:
    return [v for v in (value or "").split(sep) if v]


def _url(entry: str) -> str:
    """``name=https://...`` (UV_INDEX's form) -> the URL."""
    head, eq, tail = entry.partition("=")
    return tail if eq and "://" not in head else entry


@dataclass(frozen=True)
class Place:
    """Where uv looks for a package: a simple index, or a find-links folder or page."""

    url: str
    flat: bool = False


def _settings_files(ctx: Context) -> list[Mapping[str, Any]]:
    """uv's settings tables as uv reads them: UV_CONFIG_FILE, else the nearest uv.toml or
    pyproject.toml [tool.uv] from the working folder up."""
    candidates = [str(ctx.get("UV_CONFIG_FILE"))] if ctx.get("UV_CONFIG_FILE") else []
    folder = os.path.abspath(ctx.cwd)
    while not candidates:
        candidates = [p for name in ("uv.toml", "pyproject.toml")
                      if os.path.isfile(p := os.path.join(folder, name))]
        if candidates or os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    tables: list[Mapping[str, Any]] = []
    for path in candidates:
        doc = source.toml_file(path) or {}
        if os.path.basename(path) == "pyproject.toml":
            doc = (doc.get("tool") or {}).get("uv") or {}
        if isinstance(doc, dict):
            tables.append(doc)
    return tables


def _uv_table(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    tool = doc.get("tool")
    uv = tool.get("uv") if isinstance(tool, Mapping) else None
    return uv if isinstance(uv, Mapping) else {}


def isolated_project(ctx: Context) -> str | None:
    """The folder of the environment of the uv project here, when the project's builds
    are isolated (uv's default: ``uv add`` and ``uv sync`` install each build's needs
    into a build environment of their own, unless ``[tool.uv] no-build-isolation =
    true``); None otherwise. The project is the nearest pyproject.toml with a
    ``[project]`` table; its environment is ``UV_PROJECT_ENVIRONMENT`` (relative to the
    workspace root), else the workspace root's ``.venv`` (the nearest folder above whose
    pyproject.toml has ``[tool.uv.workspace]``, else the project's own)."""
    folder = os.path.abspath(ctx.cwd)
    project: Mapping[str, Any] | None = None
    root: str | None = None
    while True:
        doc = source.toml_file(os.path.join(folder, "pyproject.toml"))
        if doc and project is None and isinstance(doc.get("project"), dict):
            project, root = doc, folder
        if doc and project is not None and "workspace" in _uv_table(doc):
            root = folder
            break
        if os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    if project is None or root is None or _uv_table(project).get("no-build-isolation") is True:
        return None
    return os.path.join(root, ctx.get("UV_PROJECT_ENVIRONMENT") or ".venv")


def indexes(ctx: Context) -> list[Place]:
    """The indexes and find-links uv would search, in uv's order of priority: UV_INDEX,
    UV_EXTRA_INDEX_URL, the settings' non-explicit ``[[index]]``, then their extra index
    URLs, then the default index (UV_DEFAULT_INDEX, UV_INDEX_URL, an ``[[index]]`` with
    ``default = true`` or ``index-url``, else PyPI), and the find-links. UV_OFFLINE leaves
    only what is on this machine. There is no UV_NO_INDEX: uv 0.13.9 reads no such
    variable (``uv pip install -v`` with it set fetched pypi.org/simple). (Seen with uv 0.13.9 and
    four local indexes, each with its own release of one package: the variables come
    before the files, and every ``[[index]]`` before every extra index URL.)"""
    found = [_url(u) for u in _split(ctx.get("UV_INDEX"))]
    found += _split(ctx.get("UV_EXTRA_INDEX_URL"))
    links = _split(ctx.get("UV_FIND_LINKS"), ",")
    default = ctx.get("UV_DEFAULT_INDEX") or ctx.get("UV_INDEX_URL")
    extra: list[str] = []
    for table in _settings_files(ctx):
        for entry in table.get("index", []) or []:
            if isinstance(entry, Mapping) and entry.get("url") and not entry.get("explicit"):
                if entry.get("default"):
                    default = default or str(entry["url"])
                else:
                    found.append(str(entry["url"]))
        for t in (table, table.get("pip") or {}):
            if isinstance(t, Mapping):
                extra += [str(u) for u in t.get("extra-index-url", []) or []]
                default = default or (str(t["index-url"]) if t.get("index-url") else None)
                links += [str(u) for u in t.get("find-links", []) or []]
    found += [*extra, default or index.PYPI]
    places = [*(Place(u) for u in found), *(Place(u, flat=True) for u in links)]
    if ctx.flag("UV_OFFLINE"):
        places = [p for p in places if "://" not in p.url or p.url.startswith("file:")]
    return list(dict.fromkeys(places))


def project_folders(ctx: Context) -> list[str]:
    """The local folders of the uv project here that uv builds: ``[tool.uv.sources]``
    entries with a ``path`` (``uv add ./ext`` writes one) that are folders, relative to
    the working folder."""
    doc = source.toml_file(os.path.join(ctx.cwd, "pyproject.toml")) or {}
    sources = ((doc.get("tool") or {}).get("uv") or {}).get("sources") or {}
    out = []
    for entry in sources.values() if isinstance(sources, dict) else ():
        for item in entry if isinstance(entry, list) else [entry]:
            path = item.get("path") if isinstance(item, dict) else None
            if isinstance(path, str) and os.path.isdir(os.path.join(ctx.cwd, path)):
                out.append(path)
    return out


def _covered(ctx: Context) -> set[str]:
    """The packages uv's settings here give wheelcuda's variables (WHEELCUDA_SET)."""
    out = set()
    for table in _settings_files(ctx):
        variables = table.get("extra-build-variables") or {}
        for name, values in variables.items() if isinstance(variables, Mapping) else ():
            if isinstance(values, Mapping) and registry.SET.name in values:
                out.add(str(canonicalize_name(str(name))))
    return out


def settings_homes(ctx: Context) -> dict[str, str]:
    """The CUDA_HOME uv's settings here give each package wheelcuda covers."""
    out: dict[str, str] = {}
    for table in _settings_files(ctx):
        variables = table.get("extra-build-variables") or {}
        for name, values in variables.items() if isinstance(variables, Mapping) else ():
            if isinstance(values, Mapping) and isinstance(values.get("CUDA_HOME"), str):
                out.setdefault(str(canonicalize_name(str(name))), values["CUDA_HOME"])
    return out


def builds_cuda(folder: str) -> bool:
    """Whether a project folder builds CUDA code with a toolkit it expects to find: a
    ``.cu`` file or a setup.py using torch's extension builder, and not one whose own
    build backend is wheelcuda's (it brings its compiler itself)."""
    backend = ((source.toml_file(os.path.join(folder, "pyproject.toml")) or {})
               .get("build-system") or {}).get("build-backend")
    if backend == "wheelcuda.build_meta":
        return False
    try:
        with open(os.path.join(folder, "setup.py"), encoding="utf-8", errors="replace") as f:
            if "CUDAExtension" in f.read():
                return True
    except OSError:
        pass
    for root, dirs, files in os.walk(folder):
        if any(f.endswith((".cu", ".cuh")) for f in files):
            return True
        depth = os.path.relpath(root, folder).count(os.sep)
        dirs[:] = [] if depth >= 3 else [d for d in dirs if not d.startswith(".")
                                         and d not in ("build", "dist", ".venv")]
    return False


def uncovered(ctx: Context) -> list[tuple[str, str]]:
    """(name, folder relative to the working folder) of each local folder the uv project
    here builds (uv.lock's ``directory``/``editable`` sources other than the project
    itself, and ``[tool.uv.sources]`` paths) that builds CUDA code and that uv-config's
    settings do not cover: uv builds it without CUDA_HOME."""
    found: dict[str, str] = {}
    lock_path = uvlock.find_lock(ctx.cwd)
    lock = source.toml_file(lock_path) if lock_path else None
    for p in (lock or {}).get("package", []) or []:
        src = p.get("source") if isinstance(p, Mapping) else None
        where = next((src[k] for k in ("directory", "editable") if isinstance(src, Mapping)
                      and isinstance(src.get(k), str)), None)
        if where and where != "." and lock_path:
            folder = os.path.join(os.path.dirname(lock_path), where)
            found[str(canonicalize_name(str(p.get("name", ""))))] = os.path.relpath(
                folder, ctx.cwd)
    for path in project_folders(ctx):
        name = source.static_name(os.path.join(ctx.cwd, path))
        if name:
            found.setdefault(name, path)
    covered = _covered(ctx)
    return sorted((n, f) for n, f in found.items()
                  if n not in covered and builds_cuda(os.path.join(ctx.cwd, f)))


def _one(spec: str, ctx: Context) -> Package:
    path = os.path.join(ctx.cwd, spec)
    if os.path.isdir(path):
        name = source.static_name(path)
        if name is None:
            raise ConfigError(
                f"{spec} has no static [project] name in its pyproject.toml: uv applies "
                "per-package settings only to packages whose name it knows before "
                "building, so it would ignore them",
                f"add [project] name and version to {spec}/pyproject.toml, or build it "
                f"with `wheelcuda install {spec}`")
        return Package(spec, name)
    if os.path.isfile(path) and (name := source.distribution_name(path)):
        return Package(spec, name)
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        raise ConfigError(f"{spec!r} is neither a package name (or name==version) nor a "
                          "project folder or sdist",
                          "give names as on PyPI (causal-conv1d, causal-conv1d==1.7.0), a "
                          "folder or an sdist file") from None
    return Package(spec, str(canonicalize_name(req.name)))


def pinned_source(spec: str, ctx: Context, places: Sequence[Place] | None = None,
                  pages: index.Pages | None = None) -> str | None:
    """What identifies the sdist a ``name==version`` requirement builds from, for the
    wheel cache's key (the same name and version from another index must not be
    served from the cache): ``sha256:<hex>`` of that sdist on the first of ``places`` (those uv
    would search, unless given) that has it, else the places searched, without
    credentials. None for anything but ``name==version``."""
    try:
        req = Requirement(spec)
    except InvalidRequirement:
        return None
    pinned = [s.version for s in req.specifier if s.operator in ("==", "===")]
    if len(pinned) != 1 or req.url:
        return None
    places = indexes(ctx) if places is None else places
    name = str(canonicalize_name(req.name))
    for place in places:
        try:
            found = index.newest_sdist(
                (pages or index.Pages()).files(place.url, name, flat=place.flat), name,
                pinned[0])
        except (WheelcudaError, ValueError):
            continue
        digest = found.sha256 if found is not None else None
        if found is not None and digest is None and os.path.isfile(found.url):
            with contextlib.suppress(OSError):
                digest = source.file_sha256(Path(found.url))
        if digest:
            return f"sha256:{digest}"
    return "indexes:" + ",".join(index.shown(p.url) for p in places)


def read(specs: Sequence[str], ctx: Context) -> list[Package]:
    """Each spec's name. Raises for a spec that is no package at all."""
    return [_one(s, ctx) for s in specs]
