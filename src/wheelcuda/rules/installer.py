"""The installer's argument lists (pure); :mod:`wheelcuda.probe.installer` finds one.

uv is what our users run: ``uv pip install --no-build-isolation --python TARGET``.
Without uv, ``TARGET -m pip install --no-build-isolation`` (pip installs into the
interpreter it runs in).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Tool", "install_argv", "requirement_lines", "target_argv"]


@dataclass(frozen=True)
class Tool:
    name: Literal["uv", "pip"]
    command: tuple[str, ...]  # how to start it; empty for pip (the target's own python)


def install_argv(tool: Tool, python: str, packages: Sequence[str], extra: Sequence[str],
                 *, editable: Sequence[str] = (), requirements: Sequence[str] = ()
                 ) -> list[str]:
    """``--no-build-isolation`` so the build uses the environment's own torch (pure).
    ``editable`` folders and ``requirements`` files go as pip and uv take them (``-e DIR``,
    ``-r FILE``), before ``extra`` (the arguments after ``--``)."""
    given = [*packages, *(w for d in editable for w in ("-e", d)),
             *(w for f in requirements for w in ("-r", f))]
    if tool.name == "uv":
        return [*tool.command, "pip", "install", "--no-build-isolation", "--python", python,
                *given, *extra]
    return [python, "-m", "pip", "install", "--no-build-isolation", *given, *extra]


#: The options of a requirements file that name more to install.
_NAMING = {"-e": "-e", "--editable": "-e", "-r": "-r", "--requirement": "-r"}


def requirement_lines(text: str) -> list[tuple[str, str]]:
    """What a requirements file names, as pip and uv read it (pure): ``("", spec)`` for a
    requirement, ``("-e", target)`` for an editable one, ``("-r", file)`` for a nested
    file (relative to the file that names it); comments, blank lines and every other
    option (-c, --index-url...) left out. A line ending in a backslash goes on."""
    out: list[tuple[str, str]] = []
    for raw in re.sub(r"\\\r?\n", " ", text).splitlines():
        line = re.sub(r"(^|\s)#.*$", "", raw).strip()
        if not line:
            continue
        if not line.startswith("-"):
            # a requirement's own options (--hash=..., --config-settings ...) follow it
            out.append(("", re.split(r"\s+--?[A-Za-z]", line, maxsplit=1)[0]))
            continue
        # -e DIR, -e=DIR, -eDIR (optparse's forms), --editable DIR, --editable=DIR
        m = re.match(r"(-[A-Za-z]|--[A-Za-z-]+)(?:\s*=\s*|\s+)?(.*)$", line)
        if m and m.group(1) in _NAMING and m.group(2).strip():
            out.append((_NAMING[m.group(1)], m.group(2).strip()))
    return out


def target_argv(tool: Tool, requirements: Sequence[str], target: str, python: str
                ) -> list[str]:
    """Install ``requirements`` into a plain folder (the toolkit store) (pure); not quiet:
    what the installer says streams to the user during the long download. pip runs
    on the target's interpreter, which has pip where wheelcuda's own may not (a uv tool
    venv has none). Wheels only (``--only-binary :all:``): NVIDIA publishes every part
    as a wheel, and a compiler fetch must never run a build backend from an index."""
    if tool.name == "uv":
        return [*tool.command, "pip", "install", "--only-binary", ":all:", "--target", target,
                "--python", python, *requirements]
    return [python, "-m", "pip", "install", "--disable-pip-version-check",
            "--no-warn-script-location", "--only-binary", ":all:", "--target", target,
            *requirements]
