"""What a package source says it needs installed to build, and which of it the target
environment lacks (pure: texts and what is installed come in, requirements come out).

Two places declare it: pyproject.toml's ``[build-system] requires`` (PEP 518) and
setup.py's ``setup_requires`` (setuptools' own, which its PEP 517 backend reports from
``get_requires_for_build_wheel``). An isolated build installs both; ``install`` builds
with ``--no-build-isolation`` so that the build sees the environment's torch, and then
nothing installs them: a missing one fails in its package's own words, far from the cause.
inplace-abn 1.1.0 (``setup_requires=["setuptools_scm"]``) got the version 0.0.0 without
it, and uv refused the wheel: "Package metadata version `0.0.0` does not match given
version `1.1.0`".

torch is left to the pipeline (it must be the environment's own, and is checked there).
A requirement whose marker does not hold for the target is not needed.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence

import tomlkit
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from tomlkit.exceptions import TOMLKitError


def _setup_requires(text: str) -> list[str]:
    """The literal ``setup_requires`` of a ``setup(...)`` call (a list, a tuple or one
    string); nothing for a value computed at run time, or text that does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.id if isinstance(func, ast.Name) else \
            func.attr if isinstance(func, ast.Attribute) else ""
        if name != "setup":
            continue
        for kw in node.keywords:
            if kw.arg == "setup_requires":
                value = kw.value
                items = value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]
                return [i.value for i in items
                        if isinstance(i, ast.Constant) and isinstance(i.value, str)]
    return []


def _pyproject_requires(text: str) -> list[str]:
    try:
        table = tomlkit.parse(text).unwrap().get("build-system") or {}
    except TOMLKitError:
        return []
    requires = table.get("requires") if isinstance(table, dict) else None
    return [r for r in requires if isinstance(r, str)] if isinstance(requires, list) else []


def declared(setup_text: str | None, pyproject_text: str | None) -> list[Requirement]:
    """The build requirements a source declares (pyproject.toml's, then setup.py's),
    each once, torch left out; one that does not parse is left to the installer."""
    out: dict[str, Requirement] = {}
    texts = [*(_pyproject_requires(pyproject_text) if pyproject_text else []),
             *(_setup_requires(setup_text) if setup_text else [])]
    for text in texts:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if name != "torch" and name not in out:
            out[name] = req
    return list(out.values())


def missing(requirements: Sequence[Requirement], installed: Callable[[str], str | None],
            python: Sequence[int]) -> list[Requirement]:
    """Those of ``requirements`` not installed in the target (``installed``: a name's
    version there, or None) whose marker holds for its Python (``python``: its version)."""
    # the rest of the marker environment is this machine's, as the target's
    env = {"python_version": ".".join(map(str, python[:2])),
           "python_full_version": ".".join(map(str, python[:3]))}
    return [r for r in requirements
            if (r.marker is None or r.marker.evaluate(env)) and installed(r.name) is None]
