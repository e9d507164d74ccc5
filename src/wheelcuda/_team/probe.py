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
from .._rules.settings_read import Files
from . import rules as sharing


def user_file(environ: Mapping[str, str]) -> str:
    base = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME", "~"), ".config")
    return os.path.join(os.path.expanduser(base), "wheelcuda", "wheelcuda.toml")


def files(ctx: Context) -> Files:
    """The project's ``[tool.wheelcuda]`` and the user's file's (its top level, or its own
    ``[tool.wheelcuda]``), each with the path it was read from."""
    project, user = find_up(ctx.cwd, "pyproject.toml"), user_file(ctx.environ)
    mine = None
    if os.path.isfile(user):
        doc = toml_file(user) or {}
        mine = (user, _wheelcuda(doc) if "wheelcuda" in _tool(doc) else doc)
    return Files(project=(project, _wheelcuda(toml_file(project) or {})) if project else None,
                 user=mine)


def _tool(doc: Mapping[str, Any] | None) -> Mapping[str, Any]:
    tool = (doc or {}).get("tool")
    return tool if isinstance(tool, dict) else {}


def _wheelcuda(doc: Mapping[str, Any]) -> Mapping[str, Any] | None:
    table = _tool(doc).get("wheelcuda")
    return table if isinstance(table, dict) else None


def read(ctx: Context, indexes: tuple[str, ...] = (), publish: str | None = None,
         no_index: bool = False, prebuilt: tuple[str, ...] = ()) -> sharing.Sharing:
    """The settings for this run (raises :class:`~wheelcuda.errors.ConfigError`)."""
    return sharing.choose(indexes, publish, no_index, ctx.environ, files(ctx),
                          cli_prebuilt=prebuilt)
