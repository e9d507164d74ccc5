"""The files that may configure a team's index of built wheels: the project's pyproject.toml
(here or in a folder above, as uv finds its project) and the user's
``$XDG_CONFIG_HOME/wheelcuda/wheelcuda.toml`` (``~/.config/...``). Reads only; the
choice is :func:`wheelcuda._team.rules.choose`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .._context import Context
from .._probe.source import find_up, toml_file
from . import rules as sharing


def user_file(environ: Mapping[str, str]) -> str:
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME", "~"), ".config")
    return os.path.join(os.path.expanduser(base), "wheelcuda", "wheelcuda.toml")


def files(ctx: Context) -> list[tuple[str, Mapping[str, Any] | None]]:
    """``(where, [tool.wheelcuda])`` of the project's file, then the user's."""
    out: list[tuple[str, Mapping[str, Any] | None]] = []
    project = find_up(ctx.cwd, "pyproject.toml")
    if project:
        tool = (toml_file(project) or {}).get("tool", {})
        out.append((project, tool.get("wheelcuda") if isinstance(tool, dict) else None))
    user = user_file(ctx.environ)
    if os.path.isfile(user):
        doc = toml_file(user) or {}
        tool = doc.get("tool", {})
        table = tool.get("wheelcuda") if isinstance(tool, dict) and "wheelcuda" in tool else doc
        out.append((user, table if isinstance(table, dict) else None))
    return out


def read(ctx: Context, indexes: tuple[str, ...] = (), publish: str | None = None,
         no_index: bool = False, prebuilt: tuple[str, ...] = ()) -> sharing.Sharing:
    """The settings for this run (raises :class:`~wheelcuda.errors.ConfigError`)."""
    return sharing.choose(indexes, publish, no_index, ctx.environ, files(ctx),
                          cli_prebuilt=prebuilt)
