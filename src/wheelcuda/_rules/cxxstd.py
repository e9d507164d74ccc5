"""Which C++ standard torch's headers need, and the variables that raise a build's own
to it (pure; the raise itself is done by the tree's compilers: _cxx_std.py).

torch's ``ATen/ATen.h`` says it: ``#if !defined(_MSC_VER) && __cplusplus < 202002L``
then ``#error C++20 or later compatible compiler is required to use ATen`` in 2.14;
``201703L`` (C++17) up to 2.13 (both read from the wheels, 2026-12-01). A build that names
an older standard (``-std=c++17`` in its setup.py) fails on that line under every route.
The user keeps the build's own with ``WHEELCUDA_CXX_STD=keep``.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence

from packaging.version import InvalidVersion, Version

from .._data import settings as registry
from .._standalone import _tree
from . import settings_read
from .checks import Kind, Problem
from .tree import HOST_SHIM

VAR = registry.CXX_STD.name  # _cxx_std.VAR
#: The compiler the host shim runs (the user's CXX, else ``c++``).
REAL_CXX_VAR = registry.REAL_CXX.name
#: What the tree's compilers write to WHEELCUDA_NVCC_LOG for each call they raised.
LOG_MARK = "# wheelcuda: raised"
_CPLUSPLUS = re.compile(r"__cplusplus\s*<\s*(\d{4})(\d{2})L")
#: The first torch whose headers need C++20 (2.13.0's take C++17): for a torch known by
#: its version alone (uv-config from uv.lock).
FIRST_CXX20 = Version("2.14")
#: Said in the way out of an extension that is not C++20-clean.
LAST_CXX17 = "2.13"


def from_header(text: str) -> int | None:
    """``__cplusplus < 202002L`` -> 20 (pure); None when the header says none."""
    m = _CPLUSPLUS.search(text)
    return int(m.group(1)) % 100 if m else None  # 2020 -> 20, 2017 -> 17


def from_version(version: str) -> int | None:
    """The standard by torch's version alone, when its headers cannot be read (pure)."""
    try:
        v = Version(version)
    except InvalidVersion:
        return None
    return 20 if v.release >= FIRST_CXX20.release else 17


def wanted(torch_std: int | None, environ: Mapping[str, str]) -> int | None:
    """The standard to raise builds to: torch's, unless the user keeps the build's own
    (``WHEELCUDA_CXX_STD=keep``) or names one (``WHEELCUDA_CXX_STD=23``) (pure)."""
    own = (environ.get(VAR) or "").strip()
    if not own:
        return torch_std
    # a number names the standard; keep, 0 or anything else keeps the build's own
    return int(own) if own.isdecimal() and int(own) > 0 else None


def problems(environ: Mapping[str, str]) -> list[Problem]:
    """WHEELCUDA_CXX_STD set to something that is neither ``keep`` (or ``0``) nor a
    standard, by its row's words (pure)."""
    return [Problem(Kind.HOST, e.message, e.fix)
            for e in settings_read.refused((registry.CXX_STD,), environ)]


def _is_shim(word: str) -> bool:
    return os.path.basename(word) == os.path.basename(HOST_SHIM)


def host_command(environ: Mapping[str, str]) -> list[str]:
    """The host compiler a build runs, as words (pure): the user's CXX (else ``c++``),
    where each word that is one of wheelcuda's host shims (this tree's, another tree's,
    ``ccache`` in front of one: ``CXX="ccache $CXX"`` after ``env``) stands for the
    compiler behind it, WHEELCUDA_REAL_CXX (itself without shims, else ``c++``). The
    one answer for the build (the shim runs it) and for the wheel cache's key: a key
    naming ``g++-12`` over a build that ran ``c++`` would hand its wheel to the wrong
    compiler's builds."""
    behind = _tree.without_shims(_tree.split_command(environ.get(REAL_CXX_VAR) or "c++"),
                                 _is_shim)
    out: list[str] = []
    for word in _tree.split_command(environ.get("CXX") or "c++") or ["c++"]:
        for w in behind if _is_shim(word) else [word]:
            if not out or out[-1] != w:  # ccache in front of a shim over ccache: once
                out.append(w)
    return out


def variables(std: int | None, home: str, environ: Mapping[str, str]) -> dict[str, str]:
    """What a build's host compiles get: the tree's host shim as CXX, running the
    compiler :func:`host_command` names, so that they wait for their turn in the
    machine's compile budget and are told like nvcc's; with ``std``, the standard it
    raises an older ``-std`` to (pure)."""
    if any(c.isspace() for c in home):
        return {}  # distutils and torch's ninja rule split CXX on whitespace
    shim = f"{home.rstrip('/')}/{HOST_SHIM}"
    return {**({VAR: str(std)} if std else {}), "CXX": shim,
            REAL_CXX_VAR: shlex.join(host_command(environ))}


def raised(log: Sequence[str]) -> tuple[int, set[str]]:
    """(how many compiles the tree's compilers raised, the standards raised from) from
    the WHEELCUDA_NVCC_LOG lines (pure)."""
    lines = [line for line in log if line.startswith(LOG_MARK)]
    found = {w for line in lines for w in line[len(LOG_MARK):].split("->")[0].split()}
    return len(lines), found
