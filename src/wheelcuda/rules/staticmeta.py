"""Whether uv sees a package's metadata without building it, and whether it declares torch
(pure): the two facts that decide which torch entry uv accepts for the package.

uv 0.13's ``StaticMetadata::read`` (uv-distribution/src/source/mod.rs):

- ``pyproject.toml`` first: a ``[project]`` table with a name, whose ``dynamic`` holds
  none of ``dependencies``, ``optional-dependencies``, ``requires-python``; its version may
  be dynamic only for an archive (the file name says it).
- then, for an archive only (an sdist from an index or a file; never a folder),
  ``PKG-INFO``: Metadata-Version 2.2 or newer (below 3), whose ``Dynamic`` fields hold
  none of Requires-Dist, Requires-Python, Provides-Extra.

``{requirement = "torch", match-runtime = true}`` needs both: static metadata ("does not
declare static metadata, making runtime-matching impossible"), and torch in the
resolution, which for ``uv pip install PKG`` means PKG must depend on torch itself ("was
not found in the resolution"). Everything else gets torch's exact version.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import tomlkit
from packaging.metadata import parse_email
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from tomlkit.exceptions import TOMLKitError

__all__ = ["Form", "decided", "read", "requires", "unknown"]

_DYNAMIC_BLOCKS = frozenset({"dependencies", "optional-dependencies", "requires-python"})
_PKG_INFO_BLOCKS = frozenset({"requires-dist", "requires-python", "provides-extra"})


@dataclass(frozen=True)
class Form:
    """What uv learns of a package before building it."""

    static: bool | None  # None: the metadata could not be read
    torch: bool | None  # torch among its run-time requirements (None: unknown)
    why: str  # what was read, for people: "PKG-INFO 2.1 in x-1.0.tar.gz (no static ...)"

    @property
    def matches_runtime(self) -> bool:
        """uv accepts ``match-runtime`` for it."""
        return bool(self.static and self.torch)


def unknown(why: str) -> Form:
    return Form(None, None, why)


def requires(requirements: Iterable[str], name: str) -> bool:
    """Whether ``requirements`` (PEP 508 lines) name ``name`` at run time: an extra's
    requirement (``torch; extra == "cuda"``) does not count (pure)."""
    wanted = canonicalize_name(name)
    for line in requirements:
        with contextlib.suppress(InvalidRequirement):
            req = Requirement(line)
            if canonicalize_name(req.name) == wanted and \
                    (req.marker is None or "extra" not in str(req.marker)):
                return True
    return False


def _declares_torch(requirements: list[str]) -> bool:
    return requires(requirements, "torch")


def decided(found: dict[str, bytes]) -> bool:
    """An sdist's PKG-INFO already decides its form when it is static (uv reads
    pyproject.toml first, but either being static makes the package static): reading
    can stop there instead of going through the whole archive for a pyproject.toml."""
    raw = found.get("PKG-INFO")
    return raw is not None and _pkg_info(raw)[0]


def _pyproject(raw: bytes, archive: bool) -> tuple[bool, bool | None] | None:
    """(static, declares torch) from a pyproject.toml; None when it has no [project]."""
    try:
        doc: dict[str, Any] = tomlkit.parse(raw.decode("utf-8", errors="replace")).unwrap()
    except TOMLKitError:
        return None
    project = doc.get("project")
    if not isinstance(project, dict) or not isinstance(project.get("name"), str):
        return None
    dynamic = {str(d) for d in project.get("dynamic", []) if isinstance(d, str)}
    version_ok = "version" in project or (archive and "version" in dynamic)
    static = version_ok and not (dynamic & _DYNAMIC_BLOCKS)
    if "dependencies" in dynamic:
        return static, None
    deps = [d for d in project.get("dependencies", []) if isinstance(d, str)]
    return static, _declares_torch(deps)


def _pkg_info(raw: bytes) -> tuple[bool, bool, str]:
    """(static, declares torch, what it says) from a PKG-INFO."""
    fields, _ = parse_email(raw)
    version = fields.get("metadata_version") or "?"
    try:
        parsed = Version(version)
    except InvalidVersion:
        parsed = None
    blocks = sorted({d.lower() for d in fields.get("dynamic", [])} & _PKG_INFO_BLOCKS)
    torch = _declares_torch(list(fields.get("requires_dist", [])))
    if parsed is None or not Version("2.2") <= parsed < Version("3"):
        return False, torch, f"PKG-INFO {version} (static metadata needs 2.2 or newer)"
    if blocks:
        return False, torch, f"PKG-INFO {version} with Dynamic: {', '.join(blocks)}"
    return True, torch, f"PKG-INFO {version}"


def read(pyproject: bytes | None, pkg_info: bytes | None, *, archive: bool, where: str
         ) -> Form:
    """The form of a package from its two metadata files, as uv judges it."""
    from_pyproject = _pyproject(pyproject, archive) if pyproject is not None else None
    if from_pyproject is not None and from_pyproject[0]:
        static, torch = from_pyproject
        return Form(True, torch, f"static [project] table in {where}")
    if archive and pkg_info is not None:
        static, torch, said = _pkg_info(pkg_info)
        if static:
            return Form(True, torch, f"{said} in {where}")
        torch = torch or bool(from_pyproject and from_pyproject[1])  # either says it
        return Form(False, torch, f"no static metadata: {said} in {where}")
    if from_pyproject is not None:
        return Form(False, from_pyproject[1], f"no static metadata: the [project] table in "
                                              f"{where} has dynamic dependencies or version")
    return Form(False, None, f"no static metadata: {where} has no [project] table"
                + ("" if not archive else " and no PKG-INFO"))
