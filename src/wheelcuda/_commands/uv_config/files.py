"""Where uv-config writes (uv.toml, pyproject.toml's ``[tool.uv]``, the user's settings
file), how it writes and removes its part, and the warnings on where it was put."""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

import tomlkit

from ..._context import Context
from ..._probe import uvforms
from ..._rules import uvconfig
from ..._store import userfiles
from ...errors import ConfigError
from ..common import note


def settings_files(ctx: Context) -> list[str]:
    """Where printed settings are saved, as the note says: the files uv reads here."""
    user = os.path.join(ctx.get("XDG_CONFIG_HOME") or os.path.join(
        ctx.get("HOME") or os.path.expanduser("~"), ".config"), "uv", "uv.toml")
    return [*filter(None, [ctx.get("UV_CONFIG_FILE")]), os.path.join(ctx.cwd, "uv.toml"),
            os.path.join(ctx.cwd, "pyproject.toml"), user]


def is_pyproject(path: Path) -> bool:
    return path.name == "pyproject.toml"


def write(path: Path, settings: Sequence[uvconfig.Settings], index: str | None) -> int:
    doc = userfiles.read_toml(path)  # again: the fetch may have taken minutes
    before = tomlkit.dumps(doc)
    pyproject = is_pyproject(path)
    conflicts = uvconfig.merge(doc, settings, pyproject=pyproject, index=index)
    after = tomlkit.dumps(doc)
    if uvconfig.without_ours(after, pyproject=pyproject) != \
            uvconfig.without_ours(before, pyproject=pyproject):
        raise ConfigError(f"wheelcuda cannot merge its settings into {path} without changing "
                          "yours (dotted keys such as `uv.package = true` under [tool]?); it "
                          "was not changed",
                          "print the settings (without --write) and add them by hand, or "
                          "write them to a uv.toml")
    if after != before:
        userfiles.replace_text(path, after)
        where = "[tool.uv] of " if pyproject else ""
        note(f"wrote uv settings for {len(settings)} package(s) into {where}{path}")
    else:
        note(f"{path} already holds these settings: nothing changed")
    for line in conflicts:
        note(f"warning: {line}")
    for line in _placement_warnings(path, doc, pyproject):
        note(f"warning: {line}")
    return 0


def _placement_warnings(path: Path, doc: tomlkit.TOMLDocument, pyproject: bool) -> list[str]:
    """Where uv will not read what was written, or where it should not be committed."""
    out = []
    if pyproject:
        # Not "use a uv.toml instead": one beside pyproject.toml hides the project's whole
        # [tool.uv] (uv's configuration docs), PyTorch's index for a cu128 torch included.
        out.append(f"{path} now holds paths of this machine (CUDA_HOME in wheelcuda's cache) "
                   "under [tool.uv]: before committing it, take them out (`wheelcuda "
                   "uv-config --remove --write pyproject.toml`); each machine writes its own")
        if (path.parent / "uv.toml").exists():
            out.append(f"{path.parent / 'uv.toml'} exists: uv reads it and ignores [tool.uv] "
                       f"of {path}")
    else:
        pyproject_file = path.parent / "pyproject.toml"
        if path.name == "uv.toml" and pyproject_file.exists():
            try:
                tool = userfiles.read_toml(pyproject_file).get("tool", {})
                has_uv = isinstance(tool, dict) and "uv" in tool
            except ConfigError:
                has_uv = False
            if has_uv:
                out.append(f"{pyproject_file} has a [tool.uv] table: uv now reads {path} and "
                           "ignores that table; move its settings into " + path.name)
        pip = doc.get("pip")
        if isinstance(pip, dict) and any(k in pip for k in (uvconfig.DEPENDENCIES,
                                                            uvconfig.VARIABLES)):
            out.append(f"{path} has its own [pip] {uvconfig.DEPENDENCIES}/"
                       f"{uvconfig.VARIABLES}: `uv pip` reads those instead of the top level "
                       "wheelcuda wrote; merge them")
    return out


def remove(args: argparse.Namespace, ctx: Context) -> int:
    if not args.write:
        raise ConfigError("--remove needs the file to take the settings out of",
                          "wheelcuda uv-config --remove --write uv.toml")
    path = Path(ctx.cwd, args.write)
    if not path.exists():
        note(f"{path} does not exist: nothing to remove")
        return 0
    doc = userfiles.read_toml(path)
    names = [p.name for p in uvforms.read(args.packages, ctx)] if args.packages else []
    kept: list[str] = []
    done = uvconfig.remove(doc, pyproject=is_pyproject(path), packages=names, kept=kept)
    if done:
        userfiles.replace_text(path, tomlkit.dumps(doc))
        note(f"removed wheelcuda's uv settings for {', '.join(done)} from {path}")
    else:
        note(f"{path} holds no settings of wheelcuda's: nothing changed")
    for line in kept:
        note(f"kept {line}")
    return 0
