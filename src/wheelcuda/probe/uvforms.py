"""What uv will learn of each package ``uv-config`` writes settings for, before building:
its name, and its metadata form (:mod:`wheelcuda.rules.staticmeta`), read as uv reads it.

- a folder: its ``pyproject.toml`` (uv reads no PKG-INFO of a folder);
- an sdist file: its ``PKG-INFO`` and ``pyproject.toml``;
- a name: the sdist uv.lock records for it, else the newest on the indexes uv uses
  (:func:`indexes`), read from the stream (reading stops once both files are seen).

What cannot be read (offline, no sdist on the index) is unknown, and the caller then
takes the form uv accepts for any package.
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import tomlkit
from packaging.utils import InvalidName, canonicalize_name
from tomlkit.exceptions import TOMLKitError

from ..context import Context
from ..errors import ConfigError, WheelcudaError
from ..rules import staticmeta
from . import index, source

__all__ = ["Package", "indexes", "project_folders", "read", "uncovered"]


@dataclass(frozen=True)
class Package:
    """One package ``uv-config`` covers."""

    spec: str  # as given
    name: str  # canonical
    form: staticmeta.Form


def _split(value: str | None, sep: str | None = None) -> list[str]:
    return [v for v in (value or "").split(sep) if v]


def _url(entry: str) -> str:
    """``name=https://...`` (UV_INDEX's form) -> the URL."""
    head, eq, tail = entry.partition("=")
    return tail if eq and "://" not in head else entry


def _config_indexes(doc: Mapping[str, Any]) -> list[str]:
    """The non-explicit ``[[index]]`` URLs and extra/index URLs of a uv settings table."""
    out = [str(i["url"]) for i in doc.get("index", []) or []
           if isinstance(i, Mapping) and i.get("url") and not i.get("explicit")]
    for table in (doc, doc.get("pip") or {}):
        if isinstance(table, Mapping):
            out += [str(u) for u in table.get("extra-index-url", []) or []]
            out += [str(table["index-url"])] if table.get("index-url") else []
            out += [str(u) for u in table.get("find-links", []) or []]
    return out


def _settings_files(ctx: Context) -> list[Mapping[str, Any]]:
    """uv's settings tables as uv reads them: UV_CONFIG_FILE, else the nearest uv.toml or
    pyproject.toml [tool.uv] from the working folder up."""
    candidates = [ctx.get("UV_CONFIG_FILE")] if ctx.get("UV_CONFIG_FILE") else []
    folder = os.path.abspath(ctx.cwd)
    while not candidates:
        for name in ("uv.toml", "pyproject.toml"):
            if os.path.isfile(os.path.join(folder, name)):
                candidates.append(os.path.join(folder, name))
        parent = os.path.dirname(folder)
        if candidates or parent == folder:
            break
        folder = parent
    tables: list[Mapping[str, Any]] = []
    for path in candidates:
        try:
            with open(str(path), encoding="utf-8") as f:
                doc = tomlkit.parse(f.read()).unwrap()
        except (OSError, TOMLKitError):
            continue
        if os.path.basename(str(path)) == "pyproject.toml":
            doc = (doc.get("tool") or {}).get("uv") or {}
        if isinstance(doc, dict):
            tables.append(doc)
    return tables


def indexes(ctx: Context) -> list[str]:
    """The indexes and find-links uv would search, in uv's order of priority: UV_INDEX,
    the settings' ``[[index]]``, UV_EXTRA_INDEX_URL, then the default index
    (UV_DEFAULT_INDEX, UV_INDEX_URL, else PyPI), and find-links."""
    found = [_url(u) for u in _split(ctx.get("UV_INDEX"))]
    links = _split(ctx.get("UV_FIND_LINKS"), ",")
    for table in _settings_files(ctx):
        found += _config_indexes(table)
    found += _split(ctx.get("UV_EXTRA_INDEX_URL"))
    default = ctx.get("UV_DEFAULT_INDEX") or ctx.get("UV_INDEX_URL") or index.PYPI
    if not ctx.flag("UV_NO_INDEX"):
        found.append(default)
    return list(dict.fromkeys([*found, *links]))


def _locked_sdist(lock: Mapping[str, Any] | None, name: str) -> index.IndexFile | None:
    for p in (lock or {}).get("package", []) or []:
        if isinstance(p, Mapping) and canonicalize_name(str(p.get("name", ""))) == name:
            sdist = p.get("sdist")
            if isinstance(sdist, Mapping) and sdist.get("url"):
                url = str(sdist["url"])
                return index.IndexFile(url.rsplit("/", 1)[-1], url)
    return None


def _from_index(name: str, places: Sequence[str], lock: Mapping[str, Any] | None
                ) -> staticmeta.Form:
    found = _locked_sdist(lock, name)
    errors = []
    for place in [] if found else places:
        try:
            found = index.newest_sdist(index.files(place, name), name)
        except (WheelcudaError, ValueError) as exc:
            errors.append(str(exc))
            continue
        if found:
            break
    if found is None:
        why = f"no sdist of {name} found on {', '.join(places) or 'any index'}"
        return staticmeta.unknown(why + (f" ({errors[0]})" if errors else ""))
    try:
        meta = index.sdist_metadata(found)
    except WheelcudaError as exc:
        return staticmeta.unknown(exc.message)
    return staticmeta.read(meta.pyproject, meta.pkg_info, archive=True, where=meta.where)


def _from_file(path: str) -> staticmeta.Form:
    meta = index.sdist_metadata(index.IndexFile(os.path.basename(path), path))
    return staticmeta.read(meta.pyproject, meta.pkg_info, archive=True, where=meta.where)


def _from_folder(folder: str) -> staticmeta.Form:
    try:
        with open(os.path.join(folder, "pyproject.toml"), "rb") as f:
            raw: bytes | None = f.read()
    except OSError:
        raw = None
    return staticmeta.read(raw, None, archive=False,
                           where=os.path.join(folder, "pyproject.toml"))


def project_folders(ctx: Context) -> list[str]:
    """The local folders of the uv project here that uv builds: ``[tool.uv.sources]``
    entries with a ``path`` (``uv add ./ext`` writes one) that are folders, relative to
    the working folder."""
    try:
        with open(os.path.join(ctx.cwd, "pyproject.toml"), encoding="utf-8") as f:
            doc = tomlkit.parse(f.read()).unwrap()
    except (OSError, TOMLKitError):
        return []
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
            if isinstance(values, Mapping) and "WHEELCUDA_SET" in values:
                out.add(str(canonicalize_name(str(name))))
    return out


def uncovered(ctx: Context) -> list[tuple[str, str]]:
    """(name, folder) of each local folder the uv project here builds (uv.lock's
    ``directory``/``editable`` sources other than the project itself, and
    ``[tool.uv.sources]`` paths) that uv-config's settings do not cover: uv builds it
    without CUDA_HOME."""
    found: dict[str, str] = {}
    lock_path = None
    folder = os.path.abspath(ctx.cwd)
    while lock_path is None:
        if os.path.isfile(os.path.join(folder, "uv.lock")):
            lock_path = os.path.join(folder, "uv.lock")
        elif os.path.dirname(folder) == folder:
            break
        folder = os.path.dirname(folder)
    try:
        with open(lock_path or "", encoding="utf-8") as f:
            lock = tomlkit.parse(f.read()).unwrap()
    except (OSError, TOMLKitError):
        lock = {}
    for p in lock.get("package", []) or []:
        src = p.get("source") if isinstance(p, Mapping) else None
        where = next((src[k] for k in ("directory", "editable") if isinstance(src, Mapping)
                      and isinstance(src.get(k), str)), None)
        if where and where != ".":
            found[str(canonicalize_name(str(p.get("name", ""))))] = where
    for path in project_folders(ctx):
        name = source.static_project(os.path.join(ctx.cwd, path)).name
        if name:
            found.setdefault(name, path)
    covered = _covered(ctx)
    return sorted((n, f) for n, f in found.items() if n not in covered)


def _one(spec: str, ctx: Context, places: Sequence[str], lock: Mapping[str, Any] | None
         ) -> Package:
    path = os.path.join(ctx.cwd, spec)
    if os.path.isdir(path):
        name = source.static_project(path).name
        if name is None:
            raise ConfigError(
                f"{spec} has no static [project] name in its pyproject.toml: uv applies "
                "per-package settings only to packages whose name it knows before "
                "building, so it would ignore them (and with match-runtime, uv 0.8.12+ "
                "stops with an error saying the package must declare static metadata)",
                f"add [project] name and version to {spec}/pyproject.toml, or build it "
                f"with `wheelcuda install {spec}`")
        return Package(spec, name, _from_folder(path))
    if os.path.isfile(path) and (name := source.distribution_name(path)):
        try:
            return Package(spec, name, _from_file(path))
        except WheelcudaError as exc:
            return Package(spec, name, staticmeta.unknown(exc.message))
    try:
        name = str(canonicalize_name(spec, validate=True))
    except InvalidName:
        raise ConfigError(f"{spec!r} is neither a package name nor a project folder",
                          "give names as on PyPI (causal-conv1d) or a folder") from None
    if not places:
        return Package(spec, name, staticmeta.unknown("not read"))
    return Package(spec, name, _from_index(name, places, lock))


def read(specs: Sequence[str], ctx: Context, lock: Mapping[str, Any] | None = None, *,
         offline: bool = False) -> list[Package]:
    """Each spec's name and form, read side by side (a name costs one index page and
    the head of its sdist; ``offline``: names only, forms unknown). Raises for a spec
    that is no package at all."""
    places = [] if offline else indexes(ctx)
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        futures = [pool.submit(_one, s, ctx, places, lock) for s in specs]
        return [f.result() for f in futures]
