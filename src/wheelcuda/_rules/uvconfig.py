"""uv's per-package build settings, as wheelcuda writes them into a TOML document.

uv reads two tables (uv 0.10+, reported from its sources): ``extra-build-dependencies``
puts torch into a package's isolated build environment (``match-runtime``: the torch the
environment or uv.lock resolves), and ``extra-build-variables`` sets variables for that package's
build backend and is part of uv's cache key. Both sit at the top level of a uv.toml
(``uv pip`` falls back to it) or under ``[tool.uv]`` of a pyproject.toml.

What wheelcuda wrote is listed in the package's own ``WHEELCUDA_SET`` variable, each
name with a short digest of the value it wrote (``MAX_JOBS:9f8e7d6c``), so a second run
changes only its own entries (nothing when nothing changed), ``--remove`` takes out
exactly those, and a value the user set themselves, or changed after wheelcuda wrote it
(a user's ``MAX_JOBS = "4"  # 16 OOMs`` must not go back to 16), is kept and reported,
never overwritten or removed. The functions edit a tomlkit document in place; reading
and writing the file is the command's. Which torch entry and which index: ``uvtorch.py``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import tomlkit
from packaging.utils import canonicalize_name
from tomlkit.container import Container, OutOfOrderTableProxy
from tomlkit.items import AoT, Array, InlineTable, Null, Table

from .._data import settings as registry
from ..errors import ConfigError
from .uvtorch import INDEX_NAME, match_runtime, names_torch

DEPENDENCIES = "extra-build-dependencies"
VARIABLES = "extra-build-variables"
#: Everything the built binary depends on (torch, its CUDA, compiler, archs, host
#: compiler): variables are in uv's cache key, so a changed torch is a new key and uv
#: rebuilds instead of handing back a wheel built for another torch (uv issue 16850).
KEY = registry.BUILD_KEY.name
#: The names wheelcuda wrote into a package's tables, space-separated.
OWNED = registry.SET.name
#: In OWNED: wheelcuda added the torch entry to extra-build-dependencies, followed by
#: ``:<digest>`` of the entry it wrote, so that an entry the user edited since is theirs
#: (kept, and not removed), as an edited variable is.
_DEP_MARK = f"{DEPENDENCIES}:torch"

Table_ = Table | InlineTable | Container | OutOfOrderTableProxy
#: What a table may come back as: tomlkit gives a proxy for a table split in two
#: (``[[tool.uv.index]]`` written by ``uv add`` between ``[tool.uv]`` parts).
_TABLES = (Table, InlineTable, OutOfOrderTableProxy)


@dataclass(frozen=True)
class Settings:
    """One package's settings: its torch build dependency and its variables."""

    package: str  # canonical name
    dependency: str | Mapping[str, Any]  # "torch==2.14.1" or the match-runtime table
    variables: Mapping[str, str]


def _root(doc: Container, pyproject: bool, made: set[int] | None) -> Table_ | None:
    """The table uv reads its settings from: the document, or ``[tool.uv]``; created
    when missing unless ``made`` is None (:func:`_add`)."""
    if not pyproject:
        return doc
    node: Table_ = doc
    for name in ("tool", "uv"):
        child = node.get(name)
        if child is None:
            if made is None:
                return None
            child = _add(node, name, tomlkit.table(is_super_table=True), made)
        if not isinstance(child, _TABLES):
            return None
        node = child
    return node


def _add(parent: Table_, name: str, item: Any, made: set[int]) -> Any:
    """``parent[name] = item``, with no blank line before it where it follows the
    user's own content. tomlkit puts one before a table it appends, and a blank line
    before a table header is read back as the end of what stands above it: ``--remove``
    left it in the user's table, and a file written and taken out again did not come
    back as it was (a file ending in a newline and one ending in a blank line were
    written alike, so no removal could tell them apart). After an item wheelcuda made
    (``made``: their ids) the blank line is kept: it goes out with that item."""
    last = _last(parent)
    parent[name] = item
    return _placed(item, last, made)


def _append(entries: AoT | Array, item: Any, made: set[int]) -> None:
    """``entries.append(item)``, placed as :func:`_add` places it."""
    last = _last(entries) if isinstance(entries, AoT) else None
    entries.append(item)
    _placed(item, last, made)


def _placed(item: Any, last: object | None, made: set[int]) -> Any:
    if last is not None and id(last) not in made:
        item.trivia.indent = ""
    made.add(id(item))
    return item


def _last(parent: Table_ | AoT) -> object | None:
    """What ``parent`` ends with (a value, a comment, a blank line), the last table of a
    list of tables; None when it is empty."""
    if isinstance(parent, AoT):
        items: list[object] = list(parent.body)
    elif isinstance(parent, (Container, Table, InlineTable)):
        body = parent.body if isinstance(parent, Container) else parent.value.body
        items = [item for _, item in body if not isinstance(item, Null)]
    else:  # a table split in two: its values only
        items = list(parent.values())
    last = items[-1] if items else None
    return last[-1] if isinstance(last, AoT) and len(last) else last


def _sub(parent: Table_, name: str, made: set[int] | None) -> Table_ | None:
    child = parent.get(name)
    if child is None and made is not None:
        child = _add(parent, name, tomlkit.table(is_super_table=True), made)
    return child if isinstance(child, _TABLES) else None


def _owned_values(variables: Table_ | None) -> dict[str, str | None]:
    """Name -> the digest of the value wheelcuda wrote (None: written by a wheelcuda
    that kept names only)."""
    value = variables.get(OWNED) if variables is not None else None
    out: dict[str, str | None] = {}
    for word in str(value).split() if value else []:
        if word == _DEP_MARK or word.startswith(f"{_DEP_MARK}:"):
            out[_DEP_MARK] = word[len(_DEP_MARK) + 1:] or None
            continue
        name, colon, digest = word.partition(":")
        out[name] = digest if colon else None
    return out


def _fingerprint(value: object) -> str:
    return hashlib.sha256(str(value).encode()).hexdigest()[:8]


def _entry_fingerprint(entry: object) -> str:
    """A torch entry's digest, its keys in any order (an inline table round-trips)."""
    return _fingerprint(json.dumps(_plain(entry), sort_keys=True, default=str))


def _edited(table: Table_, name: str, digest: str | None) -> bool:
    """Whether the user changed a value wheelcuda wrote (so it is theirs now)."""
    return digest is not None and name in table and _fingerprint(_plain(table[name])) != digest


def _plain(value: object) -> object:
    return value.unwrap() if hasattr(value, "unwrap") else value


def merge(doc: Container, settings: Sequence[Settings], *, pyproject: bool,
          index: str | None = None) -> list[str]:
    """Write ``settings`` (and, when torch comes from an index other than PyPI, that
    ``index``) into ``doc``; the conflicts (the user's own values, kept)."""
    made: set[int] = set()
    root = _root(doc, pyproject, made)
    if root is None:
        raise ConfigError("[tool] or [tool.uv] of this pyproject.toml is not a table; it was "
                          "not changed", "make them tables, or write a uv.toml instead")
    conflicts = _merge_index(root, index, pyproject, made) if index else []
    deps_root = _sub(root, DEPENDENCIES, made)
    vars_root = _sub(root, VARIABLES, made)
    if deps_root is None or vars_root is None:
        raise ConfigError(f"{DEPENDENCIES} or {VARIABLES} in this file is not a table (uv "
                          "would refuse it too); it was not changed",
                          f"make them tables: [{DEPENDENCIES}] and [{VARIABLES}]")
    for s in settings:
        key = _key_for(vars_root, s.package)
        table = vars_root.get(key)
        if table is None:
            table = _add(vars_root, key, tomlkit.table(), made)
        if not isinstance(table, _TABLES):
            conflicts.append(f"{VARIABLES}.{s.package} is not a table: left as it is")
            continue
        recorded = _owned_values(table)
        owned = {n for n, digest in recorded.items()
                 if n == _DEP_MARK or not _edited(table, n, digest)}
        written = []
        for name in [n for n in owned if n not in s.variables and n in table
                     and n != _DEP_MARK]:
            del table[name]
        for name, value in s.variables.items():
            if name in table and name not in owned:
                if str(_plain(table[name])) != value:
                    how = "changed by you" if name in recorded else "yours"
                    conflicts.append(f"{VARIABLES}.{s.package}.{name} is {how} "
                                     f"({_plain(table[name])!r}; wheelcuda's: {value!r}): kept")
                continue
            if name not in table or str(_plain(table[name])) != value:
                table[name] = value
            written.append(f"{name}:{_fingerprint(value)}" if name != OWNED else name)
        if _merge_dependency(deps_root, s, _DEP_MARK in owned, recorded.get(_DEP_MARK),
                             conflicts):
            written.append(f"{_DEP_MARK}:{_entry_fingerprint(s.dependency)}")
        mark = " ".join(written)
        if OWNED not in table or str(_plain(table[OWNED])) != mark:
            table[OWNED] = mark
        _reformat(vars_root, key)
    return conflicts


def _merge_index(root: Table_, url: str, pyproject: bool, made: set[int]) -> list[str]:
    """An ``[[index]]`` for torch's index, named :data:`INDEX_NAME`, unless the file has
    one with that URL. In a project an explicit one serves (uv resolves extra build
    dependencies with the project's sources); ``uv pip`` does not use explicit indexes
    for build environments (uv issue 18059), so there it is said."""
    entries = root.get("index")
    if entries is not None and not isinstance(entries, (AoT, Array)):
        return [f"index in this file is not a list of tables: add {url} to it yourself"]
    for entry in list(entries or []):
        if not isinstance(entry, _TABLES):
            continue
        same = str(entry.get("url", "")).rstrip("/") == url
        if entry.get("name") == INDEX_NAME:
            if not same:
                entry["url"] = url
            return []
        if same:
            if entry.get("explicit") and not pyproject:
                return [f"your index {url} is explicit: uv pip does not use explicit indexes "
                        "inside build environments (uv issue 18059), so torch will not be "
                        "found there; make it non-explicit"]
            return []
    table = tomlkit.table()
    table["name"] = INDEX_NAME
    table["url"] = url
    if entries is None:
        entries = _add(root, "index", tomlkit.aot(), made)
    _append(entries, table, made)
    return []


def _key_for(table: Table_, package: str) -> str:
    """The key under which ``table`` holds ``package`` (uv normalizes names:
    ``causal_conv1d`` is ``causal-conv1d``), else the canonical name."""
    return next((k for k in table if canonicalize_name(str(k)) == package), package)


def _reformat(parent: Table_, name: str) -> None:
    """An inline table edited in place loses tomlkit's spacing: write it out afresh
    (inline tables hold no comments to lose)."""
    table = parent.get(name)
    if isinstance(table, InlineTable):
        fresh = tomlkit.inline_table()
        fresh.update(table.unwrap())
        parent[name] = fresh


def _merge_dependency(deps_root: Table_, s: Settings, owned: bool, digest: str | None,
                      conflicts: list[str]) -> bool:
    """Add the torch entry unless the user has their own; whether wheelcuda's is there.
    ``owned``: an earlier run wrote one, whose digest was ``digest`` (None: a wheelcuda
    that kept no digest); an entry that no longer matches it is the user's edit."""
    key = _key_for(deps_root, s.package)
    entries = deps_root.get(key)
    if entries is None:
        entries = tomlkit.array()
        deps_root[key] = entries
    if not isinstance(entries, Array):  # not a list, or [[...]] tables: theirs to edit
        conflicts.append(f"{DEPENDENCIES}.{key} is not a plain list: left as it is; add "
                         f"{_plain(s.dependency)!r} to it yourself")
        return False
    ours = _plain(s.dependency)
    for i, entry in enumerate(list(entries)):
        if not names_torch(_plain(entry)):
            continue
        if _plain(entry) == ours:
            return owned
        edited = owned and digest is not None and _entry_fingerprint(entry) != digest
        if owned and not edited:  # ours from an earlier run (another torch): replaced
            entries[i] = _item(s.dependency)
            return True
        whose = "the torch entry you changed" if edited else "your torch entry"
        conflicts.append(f"{DEPENDENCIES}.{key} has {whose} "
                         f"({_plain(entry)!r}; wheelcuda's: {ours!r}): kept")
        return False
    entries.append(_item(s.dependency))
    return True


def _item(dependency: str | Mapping[str, Any]) -> object:
    if isinstance(dependency, str):
        return dependency
    table = tomlkit.inline_table()
    table.update(dependency)
    return table


def remove(doc: Container, *, pyproject: bool, packages: Sequence[str] = (),
           kept: list[str] | None = None) -> list[str]:
    """Take out what wheelcuda wrote (for ``packages``, else every package); the
    packages it was taken from. A value the user changed since stays, and is named in
    ``kept``."""
    root = _root(doc, pyproject, None)
    if root is None:
        return []
    deps_root = _sub(root, DEPENDENCIES, None)
    vars_root = _sub(root, VARIABLES, None)
    if vars_root is None:
        return []
    done = []
    for name in list(vars_root.keys()):
        table = vars_root[name]
        if packages and canonicalize_name(str(name)) not in packages:
            continue
        if not isinstance(table, _TABLES) or OWNED not in table:
            continue
        recorded = _owned_values(table)
        _take_out(table, str(name), kept)
        if not table:
            del vars_root[name]
        else:
            _reformat(vars_root, name)
        if _DEP_MARK in recorded and deps_root is not None:
            _drop_torch(deps_root, name, recorded[_DEP_MARK], kept)
        done.append(name)
    _drop_empty_tables(root)
    if (not packages or not _owned_anywhere(vars_root)) and _drop_index(root):
        done = done or ["torch's index"]
    if pyproject:
        _drop_empty(doc)
    return done


def _take_out(table: Table_, name: str, kept: list[str] | None) -> None:
    """Delete the values wheelcuda wrote into one package's table, but those the user
    changed since (named in ``kept``), and the ownership mark."""
    recorded = _owned_values(table)
    for key in [k for k in recorded if k in table and k != _DEP_MARK]:
        if _edited(table, key, recorded[key]):
            if kept is not None:
                kept.append(f"{VARIABLES}.{name}.{key} = {_plain(table[key])!r} (changed by you)")
            continue
        del table[key]
    del table[OWNED]


def _drop_empty_tables(root: Table_) -> None:
    for key in (VARIABLES, DEPENDENCIES):
        child = root.get(key)
        if isinstance(child, _TABLES) and not child:
            del root[key]


def _owned_anywhere(vars_root: Table_ | None) -> bool:
    return vars_root is not None and any(
        isinstance(t, _TABLES) and OWNED in t for t in vars_root.values())


def _drop_index(root: Table_) -> bool:
    """Take out the ``[[index]]`` wheelcuda wrote; whether there was one."""
    entries = root.get("index")
    if not isinstance(entries, (AoT, Array)):
        return False
    for i in reversed(range(len(entries))):
        entry = entries[i]
        if isinstance(entry, _TABLES) and entry.get("name") == INDEX_NAME:
            del entries[i]
            if not len(entries):
                del root["index"]
            return True
    return False


def _drop_torch(deps_root: Table_, name: str, digest: str | None,
                kept: list[str] | None) -> None:
    """Take wheelcuda's torch entry out of the package's list, in place (the other
    entries keep their comments); one the user changed since stays (named in ``kept``).
    Without a digest (an older wheelcuda's mark), the entries it could have written."""
    key = _key_for(deps_root, str(canonicalize_name(name)))
    entries = deps_root.get(key)
    if not isinstance(entries, Array):
        return
    for i in reversed(range(len(entries))):
        entry = _plain(entries[i])
        if not names_torch(entry):
            continue
        if digest is not None and _entry_fingerprint(entry) != digest:
            if kept is not None:
                kept.append(f"{DEPENDENCIES}.{key} entry {entry!r} (changed by you)")
            continue
        if digest is not None or entry == match_runtime() or str(entry).startswith("torch=="):
            del entries[i]
    if not len(entries):
        del deps_root[key]


def _drop_empty(doc: Container) -> None:
    tool = doc.get("tool")
    if isinstance(tool, Table) and isinstance(tool.get("uv"), Table) and not tool["uv"]:
        del tool["uv"]
    if isinstance(tool, Table) and not tool:
        del doc["tool"]


def render(settings: Sequence[Settings], header: Sequence[str], index: str | None = None
           ) -> str:
    """The settings as a new uv.toml, with ``header`` as comments first."""
    doc = tomlkit.document()
    for line in header:
        doc.add(tomlkit.comment(line))
    if header:
        doc.add(tomlkit.nl())
    merge(doc, settings, pyproject=False, index=index)
    return tomlkit.dumps(doc)


def without_ours(text: str, *, pyproject: bool) -> object:
    """The data of ``text`` less what wheelcuda wrote: a write must leave it as it was."""
    doc = tomlkit.parse(text)
    remove(doc, pyproject=pyproject)
    return doc.unwrap()
