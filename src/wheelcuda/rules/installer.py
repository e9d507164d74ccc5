"""The installer's argument lists (pure); :mod:`wheelcuda.probe.installer` finds one.

uv is what our users run: ``uv pip install --no-build-isolation --python TARGET``.
Without uv, ``TARGET -m pip install --no-build-isolation`` (pip installs into the
interpreter it runs in).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["Tool", "install_argv", "target_argv"]


@dataclass(frozen=True)
class Tool:
    name: Literal["uv", "pip"]
    command: tuple[str, ...]  # how to start it; empty for pip (the target's own python)


def install_argv(tool: Tool, python: str, packages: Sequence[str], extra: Sequence[str]
                 ) -> list[str]:
    """``--no-build-isolation`` so the build uses the environment's own torch (pure)."""
    if tool.name == "uv":
        return [*tool.command, "pip", "install", "--no-build-isolation", "--python", python,
                *packages, *extra]
    return [python, "-m", "pip", "install", "--no-build-isolation", *packages, *extra]


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
