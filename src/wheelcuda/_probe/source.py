"""What a package source is: its distribution name, and what identifies its content.

Reads the source (a folder, an sdist, a requirement string) and nothing else.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version
from tomlkit.exceptions import TOMLKitError

from ..errors import WheelcudaError


def distribution_name(spec: str) -> str | None:
    """The canonical name behind a requirement, an sdist file, or a project folder."""
    base = os.path.basename(spec.rstrip("/"))
    try:
        return str(parse_sdist_filename(base)[0])
    except InvalidSdistFilename:
        pass
    if os.path.isdir(spec):
        return _project_name(spec)
    try:
        return str(canonicalize_name(Requirement(spec).name))
    except InvalidRequirement:
        return None


def distribution_version(spec: str) -> Version | None:
    """The version a source builds, where it says so before a build: an sdist's or
    wheel's file name, ``name==version``, a folder's static ``[project] version`` or
    setup.py's literal ``version="..."``; None when only a build would tell (a dynamic
    version, ``name>=1``)."""
    base = os.path.basename(spec.rstrip("/"))
    with contextlib.suppress(InvalidSdistFilename, InvalidWheelFilename, InvalidVersion):
        return parse_wheel_filename(base)[1] if base.endswith(".whl") \
            else parse_sdist_filename(base)[1]
    if os.path.isdir(spec):
        return _project_version(spec)
    try:
        pins = [s for s in Requirement(spec).specifier if s.operator in ("==", "===")
                and "*" not in s.version]
    except InvalidRequirement:
        return None
    with contextlib.suppress(InvalidVersion):
        return Version(pins[0].version) if len(pins) == 1 else None
    return None


def _project_version(folder: str) -> Version | None:
    table = (toml_file(os.path.join(folder, "pyproject.toml")) or {}).get("project", {})
    declared = table.get("version") if isinstance(table, dict) else None
    dynamic = table.get("dynamic", []) if isinstance(table, dict) else []
    text = declared if isinstance(declared, str) else None
    if text is None and (not table or "version" in dynamic):
        try:
            with open(os.path.join(folder, "setup.py"), encoding="utf-8",
                      errors="replace") as f:
                m = re.search(r"""\bversion\s*=\s*["']([A-Za-z0-9.+!_-]+)["']""", f.read())
        except OSError:
            return None
        text = m.group(1) if m else None
    with contextlib.suppress(InvalidVersion, TypeError):
        return Version(text) if text else None
    return None


def _project_name(folder: str) -> str | None:
    """``[project] name`` of a folder's pyproject.toml, else setup.py's ``name=``."""
    name = static_name(folder)
    if name:
        return name
    try:
        with open(os.path.join(folder, "setup.py"), encoding="utf-8", errors="replace") as f:
            m = re.search(r"""\bname\s*=\s*["']([A-Za-z0-9._-]+)["']""", f.read())
    except OSError:
        return None
    return str(canonicalize_name(m.group(1))) if m else None


def _toml(raw: bytes) -> dict[str, Any]:
    try:
        return dict(tomlkit.parse(raw.decode("utf-8", errors="replace")).unwrap())
    except TOMLKitError as exc:
        raise ValueError(str(exc)) from None


def find_up(cwd: str, name: str) -> str | None:
    """``name`` in ``cwd`` or the nearest folder above that holds it (as uv finds its
    project and its lock)."""
    folder = os.path.abspath(cwd)
    while True:
        candidate = os.path.join(folder, name)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def toml_file(path: str) -> dict[str, Any] | None:
    """A TOML file as plain data; None when it cannot be read or parsed."""
    try:
        with open(path, "rb") as f:
            return _toml(f.read())
    except (OSError, ValueError):
        return None


def static_name(folder: str) -> str | None:
    """The canonical name in ``folder``'s pyproject.toml ``[project]`` table: the name
    installers know before any build (uv applies per-package settings only to such a
    name); None when only setup.py knows it."""
    table = (toml_file(os.path.join(folder, "pyproject.toml")) or {}).get("project", {})
    name = table.get("name") if isinstance(table, dict) else None
    return str(canonicalize_name(name)) if isinstance(name, str) else None


_INCLUDE = re.compile(rb'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)
_CODE = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", "setup.py")
_SOURCE_FILE = re.compile(rb"""["']([\w./-]+\.(?:cu|cpp|cc|cxx))["']""")


def _members(sdist: str, limit: int) -> dict[str, bytes | None]:
    """An sdist's files: the text of its code files and setup.py, None for the rest."""
    import tarfile  # noqa: PLC0415 (install only)
    import zipfile  # noqa: PLC0415

    members: dict[str, bytes | None] = {}
    try:
        if sdist.endswith((".tar.gz", ".tgz")):
            with tarfile.open(sdist, "r:gz") as tar:
                for m in tar:
                    if m.isfile():
                        code = m.name.endswith(_CODE) and m.size <= limit
                        f = tar.extractfile(m) if code else None
                        members[m.name] = f.read() if f else None
        elif sdist.endswith(".zip"):
            with zipfile.ZipFile(sdist) as z:
                for info in z.infolist():
                    code = info.filename.endswith(_CODE) and info.file_size <= limit
                    members[info.filename] = z.read(info) if code else None
    except (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError):
        return {}
    return members


def missing_sources(sdist: str, external: Callable[[str], bool] = lambda _: False,
                    limit: int = 4 << 20) -> list[tuple[str, str]]:
    """(who names it, file) for each file the sdist's build needs and does not hold: a
    source file its setup.py names (fast-hadamard-transform 1.1.0 leaves out csrc/), or a
    header a compiled file includes (gaussian-splatting 2.11.0 leaves out its
    rasterizer's). Such an sdist cannot build anywhere, and the compiler's "No such
    file" is all a user would see. Only ``#include "name.h"`` of a header beside the file
    counts (a path such as ``hip/x.h`` comes from elsewhere); ``external``: whether a
    header comes from outside (the system's, CUDA's, torch's). Reads the archive only;
    [] for anything that is not a readable .tar.gz or .zip sdist."""
    members = _members(sdist, limit)
    names = {os.path.basename(n) for n in members}
    inside = {n.split("/", 1)[-1] for n in members}
    out = []
    setup = next((t for n, t in members.items() if n.split("/", 1)[-1] == "setup.py"), None)
    for wanted in _SOURCE_FILE.findall(setup or b""):
        path = os.path.normpath(wanted.decode(errors="replace"))
        if (path not in inside and os.path.basename(path) not in names
                and not os.path.isabs(path)):
            out.append(("setup.py", path))
    for name, text in members.items():
        if not name.endswith((".cu", ".cpp", ".cc", ".cxx")):
            continue  # compiled files' own includes: a header may be optional (HIP, NPU)
        for header in _INCLUDE.findall(text or b""):
            wanted = header.decode(errors="replace")
            if ("/" not in wanted and wanted.endswith((".h", ".cuh", ".hpp"))
                    and wanted not in names and not external(wanted)):
                out.append((name.split("/", 1)[-1], wanted))
    return sorted(set(out))


#: Folders a build writes into its own source tree: not part of the source's identity.
_NOT_SOURCE = {"build", "dist", ".eggs", ".tox", ".venv", "venv"}
_ALWAYS_OUT = {"__pycache__", ".git"}


def source_id(spec: str) -> str:
    """What identifies a package source: a folder's or file's content hash, else the
    requirement as written (the installer resolves it inside the key's own cache)."""
    if os.path.isdir(spec):
        return f"dir:{_tree_hash(Path(spec))}"
    if os.path.isfile(spec):
        try:
            return f"file:{os.path.basename(spec)}:{_file_hash(Path(spec))}"
        except OSError as exc:
            raise WheelcudaError(f"cannot read {spec}: {exc.strerror or exc}",
                                 f"check that {spec} is a readable sdist or wheel") from exc
    return spec


def file_sha256(path: Path) -> str:
    """The sha256 of a file's content, read in blocks (hex)."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _file_hash(path: Path) -> str:
    return file_sha256(path)[:16]


def _tree_hash(root: Path) -> str:
    """Content hash of a source folder, leaving out what a build writes at the top
    (build/, dist/, *.egg-info) and caches anywhere.

    Links are not followed into folders (a ``loop -> .`` link, or one leading out of
    the source, would walk outside it, or
    40 levels deep until ELOOP); a link counts by its target
    text, a regular file by its content.
    """
    digest = hashlib.sha256()
    for folder, dirs, files in os.walk(root, followlinks=False):
        top = Path(folder) == root
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]
        dirs[:] = sorted(d for d in dirs if d not in links and not d.endswith(".egg-info")
                         and d not in _ALWAYS_OUT and not (top and d in _NOT_SOURCE))
        for name in sorted([*files, *links]):
            path = Path(folder, name)
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            if path.is_symlink():
                with contextlib.suppress(OSError):
                    digest.update(b"->" + os.readlink(path).encode())
            elif path.is_file():  # a FIFO or a socket counts by its name only
                with contextlib.suppress(OSError):
                    digest.update(_file_hash(path).encode())
    return digest.hexdigest()[:16]
