"""The indexes pip would search, read as pip reads its settings (pip's ``configuration``
module, 26.x): the files, global (``/etc/xdg/pip/pip.conf``, ``/etc/pip.conf``), then
the user's (``~/.pip/pip.conf``, ``$XDG_CONFIG_HOME/pip/pip.conf``; not when
``PIP_CONFIG_FILE`` names a file that exists), then the environment's own
(``<prefix>/pip.conf``), then ``PIP_CONFIG_FILE`` (``os.devnull``: no file at all), each
``[global]`` then ``[install]``; later ones win, and ``PIP_*`` variables win over every
file.

pip has no index priority: every index and find-links place is searched and the best
version wins (uv takes the first index that has the project: _probe/uvforms.py).
"""

from __future__ import annotations

import configparser
import os

from .._context import Context
from .uvforms import Place

_PYPI = "https://pypi.org/simple"
#: where pip looks, then what else chooses among the releases it finds there
_KEYS = ("index-url", "extra-index-url", "find-links", "no-index", "constraint", "pre")
_CHOOSING = ("constraint", "pre")


def _files(ctx: Context, prefix: str) -> list[str]:
    named = ctx.get("PIP_CONFIG_FILE")
    if named == os.devnull:
        return []
    home = ctx.get("HOME") or os.path.expanduser("~")
    xdg = ctx.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    dirs = [d for d in (ctx.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") if d]
    found = [os.path.join(d, "pip", "pip.conf") for d in dirs] + ["/etc/pip.conf"]
    if not (named and os.path.exists(named)):  # pip skips the user's files then
        found += [os.path.join(home, ".pip", "pip.conf"), os.path.join(xdg, "pip", "pip.conf")]
    return [*found, os.path.join(prefix, "pip.conf"), *([named] if named else [])]


def _settings(ctx: Context, prefix: str) -> dict[str, str]:
    """The settings that say where pip looks and what it takes, the last file's value
    winning."""
    out: dict[str, str] = {}
    for path in _files(ctx, prefix):
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, OSError, UnicodeDecodeError):
            continue  # pip stops on such a file; its own error will say so
        for section in ("global", "install"):
            if parser.has_section(section):
                out.update({k: v for k, v in parser.items(section) if k in _KEYS})
    for key in _KEYS:
        value = ctx.get("PIP_" + key.upper().replace("-", "_"))
        if value is not None:
            out[key] = value
    return out


def indexes(ctx: Context, prefix: str) -> list[Place]:
    """The indexes and find-links pip would search for the environment at ``prefix``."""
    s = _settings(ctx, prefix)
    off = s.get("no-index", "").strip().lower() in ("1", "true", "yes", "on")
    urls = [] if off else [s.get("index-url", "").strip() or _PYPI,
                           *s.get("extra-index-url", "").split()]
    places = [Place(u) for u in urls if u]
    places += [Place(u, flat=True) for u in s.get("find-links", "").split()]
    return list(dict.fromkeys(places))


def choosing(ctx: Context, prefix: str) -> str | None:
    """The first pip setting other than its indexes that chooses the release pip takes
    (``constraint``, ``pre``), by its variable's name; None when there is none."""
    s = _settings(ctx, prefix)
    return next((f"PIP_{k.upper()}" for k in _CHOOSING
                 if s.get(k, "").strip().lower() not in ("", "0", "false", "no", "off")), None)
