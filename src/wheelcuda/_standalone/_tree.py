"""What a program in a tree's ``bin/`` knows of its tree, at compile time: the tree's own
file of facts (written with the tree: where its cache keeps the builds' events, the
recipe table's memory and seconds per package, whether its compiler splits), and how to
tell one of wheelcuda's shims from a compiler.

Standalone: copied into each tree's bin/ beside the nvcc wrapper; the standard library
only. _rules/tree.py writes what this reads (:data:`CONFIG`, :data:`SHIM_MARK`).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import Any

#: The tree's facts, beside its programs in bin/.
CONFIG = ".wheelcuda-tree.json"
#: The second line of every shim a tree holds (its nvcc trampoline, its host compiler
#: shim): a program whose start says this is never a compiler.
SHIM_MARK = "# wheelcuda shim:"
#: A compile's memory when neither the build nor the recipe table says (GiB): a
#: causal-conv1d compile peaked at 3.4 GB here (_data/recipes.py takes it from here).
DEFAULT_JOB_GB = 4.0
ORDER_VAR = "WHEELCUDA_ORDER"
_JOB_GB_VAR = "WHEELCUDA_JOB_GB"
#: The compile cache compile calls run through: ``sccache`` (found on PATH) or its path.
CACHE_VAR = "WHEELCUDA_COMPILE_CACHE"


def compile_cache(environ: Mapping[str, str]) -> tuple[str, str | None]:
    """WHEELCUDA_COMPILE_CACHE as given (``""``: off) and the program it names, found on
    the PATH of ``environ`` (None: off, or no such program)."""
    value = (environ.get(CACHE_VAR) or "").strip()
    if value.lower() in ("", "0", "off", "no", "false"):
        return "", None
    word = "sccache" if value.lower() in ("1", "on", "yes", "true") else value
    return value, which(word, environ.get("PATH"))


@functools.cache
def config(here: str) -> dict[str, Any]:
    """The tree's facts (``{}`` when the file is missing or not the tree's: the programs
    then fall back to what needs no tree)."""
    try:
        with open(os.path.join(here, CONFIG), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def flag(value: str | None) -> bool:
    """A flag variable switched on, as wheelcuda reads every flag (``1``, ``true``,
    ``yes``, ``on``, any case; _data/settings.py's FLAG_WORDS) (pure)."""
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def canonical(name: str) -> str:
    """PEP 503's normalized name: ``Causal_Conv1d`` -> ``causal-conv1d`` (pure)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _recipe(facts: Mapping[str, Any], package: str) -> Mapping[str, Any]:
    recipes = facts.get("recipes")
    found = recipes.get(canonical(package)) if isinstance(recipes, dict) and package else None
    return found if isinstance(found, dict) else {}


def job_gb(environ: Mapping[str, str], facts: Mapping[str, Any], package: str) -> float:
    """The memory one compile of this build holds (GiB): the build's own
    (``WHEELCUDA_JOB_GB``: its last profile's), else the recipe table's for the package,
    else :data:`DEFAULT_JOB_GB` (pure)."""
    for value in (environ.get(_JOB_GB_VAR), _recipe(facts, package).get("job_gb")):
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
        if 0 < number < 1e6:
            return number
    return DEFAULT_JOB_GB


def _seconds(data: object) -> dict[str, float]:
    if not isinstance(data, dict):
        return {}
    return {str(k): float(v) for k, v in data.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1e9}


def order(environ: Mapping[str, str], facts: Mapping[str, Any],
          package: str) -> dict[str, float]:
    """Each source's expected seconds (by its path in the package; the recipe's guess by
    file name), for the order compiles start in:
    the file ``WHEELCUDA_ORDER`` names (the package's last build, written by install),
    else the recipe table's guess for the package; empty when neither knows."""
    path = environ.get(ORDER_VAR)
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                return _seconds(json.load(f))
        except (OSError, ValueError):
            pass
    return _seconds(_recipe(facts, package).get("order"))


def which(program: str, path: str | None) -> str | None:
    """``program`` as the shell finds it on ``path`` (shutil.which's answer, without
    importing shutil at each compile's start): a name with a slash as it is."""
    if "/" in program:
        return program if os.access(program, os.X_OK) and not os.path.isdir(program) else None
    for folder in (os.defpath if path is None else path).split(os.pathsep):
        full = os.path.join(folder or ".", program)
        if os.access(full, os.X_OK) and not os.path.isdir(full):
            return full
    return None


def is_shim(path: str) -> bool:
    """Whether ``path`` (a file, links followed) is one of wheelcuda's tree shims."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return False
    lines = head.split(b"\n")
    return len(lines) > 1 and lines[1].startswith(SHIM_MARK.encode())


def without_shims(words: Sequence[str], shim: Callable[[str], bool]) -> list[str]:
    """A compiler command (``ccache g++``) with the words ``shim`` says are wheelcuda's
    shims replaced by ``c++``, once (pure): a shim that runs a shim runs itself, or
    another tree's compilers, for ever. ``ccache $CXX`` after ``env`` becomes ``ccache
    c++``; another tree's shim alone, ``c++``."""
    out: list[str] = []
    for word in words:
        if not shim(word):
            out.append(word)
        elif "c++" not in out:
            out.append("c++")
    return out or ["c++"]


def real_command(words: Sequence[str], path: str) -> list[str]:
    """:func:`without_shims`, each word judged by what it runs (its file's start)."""
    return without_shims(words, lambda w: is_shim(which(w, path) or w))


def split_command(text: str) -> list[str]:
    """``CXX`` as torch's ninja rule and CMake take it: words (``ccache g++``)."""
    try:
        return shlex.split(text)
    except ValueError:
        return text.split()
