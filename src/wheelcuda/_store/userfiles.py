"""The one writer of files that belong to the user (uv.toml, pyproject.toml): read as
TOML, changed by a rule, written back whole at once, or not at all.

A file that is not valid TOML, or that cannot be written, is an error before anything
changes: the file keeps its bytes, its mode and its owner's edits.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import tomlkit
from tomlkit.exceptions import ParseError
from tomlkit.toml_document import TOMLDocument

from ..errors import ConfigError
from . import fs


def read_toml(path: Path) -> TOMLDocument:
    """``path`` as a round-trip document; an empty one when the file does not exist."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return tomlkit.document()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}", "check the path") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text", "give a TOML file") from None
    try:
        return tomlkit.parse(text)
    except ParseError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}; it was not changed",
                          f"fix {path} (uv would refuse it too), then run this again") from None


def check_writable(path: Path) -> int:
    """Raise unless ``path`` may be replaced (a read-only file would be, by a rename:
    refused); the mode the new file gets. A link is followed: its target is the file."""
    path = path.resolve()
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    else:
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{path} is read-only; it was not changed",
                              f"chmod u+w {path}, or leave out the option that writes it")
    if not path.parent.is_dir():
        raise ConfigError(f"no folder {path.parent}", "create it, or give another path")
    return mode


def replace_text(path: Path, text: str) -> None:
    """Write ``text`` over ``path`` at once, keeping its mode (see :func:`check_writable`),
    its line endings (a CRLF file stays CRLF) and its links: a symbolic link is followed,
    and a file with hard links is written in place (a rename would leave the other
    names with the old text)."""
    mode = check_writable(path)
    path = path.resolve()  # a linked uv.toml stays a link (dotfile managers)
    try:
        with open(path, "rb") as f:
            old = f.read()
        links = os.stat(path).st_nlink
    except FileNotFoundError:
        old, links = b"", 1
    except OSError:
        old, links = b"", 1
    if b"\r\n" in old:
        text = text.replace("\r\n", "\n").replace("\n", "\r\n")
    try:
        if links > 1:  # the text is whole already: one write, then it is there
            with open(path, "w", encoding="utf-8", newline="") as f:
                f.write(text)
        else:
            fs.write_text(path, text, mode)
    except OSError as exc:
        raise ConfigError(f"cannot write {path}: {exc.strerror}; it was not changed",
                          "check the folder's permissions") from None


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current
