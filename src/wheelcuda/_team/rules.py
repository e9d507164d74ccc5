"""Where a team's wheels are looked for and published, as uv users expect:
each setting from the first place that gives it, in this order: the command line
(``--index URL``, repeatable; ``--publish URL``), the environment (WHEELCUDA_INDEX_URL,
space-separated; WHEELCUDA_PUBLISH_URL), the project's ``[tool.wheelcuda]`` (``index``, a
list or a string; ``publish``; ``prebuilt``), then the user's file (the same keys at its
top level or under ``[tool.wheelcuda]``). Pure: the callers read the files
(:mod:`wheelcuda._team.probe`). ``--no-index`` turns the lookup off; an empty list in a
file does too.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._data import settings as registry
from .._rules import redact
from ..errors import ConfigError

INDEX_VAR = registry.INDEX_URL.name
PUBLISH_VAR = registry.PUBLISH_URL.name
USERNAME_VAR = registry.INDEX_USERNAME.name
PASSWORD_VAR = registry.INDEX_PASSWORD.name
#: The team's index and who wheelcuda is there. ``install`` looks up and publishes
#: itself, so the installer's environment goes without them: any sdist's setup.py runs
#: in it and could read the password and publish under a teammate's label.
TEAM_VARS = (INDEX_VAR, PUBLISH_VAR, USERNAME_VAR, PASSWORD_VAR)
#: An index of fat prebuilt wheels (Astral's GPU index and the like): off unless named,
#: nothing is downloaded from a third party without consent.
PREBUILT_VAR = registry.PREBUILT_URL.name


@dataclass(frozen=True)
class Sharing:
    """The indexes looked in before a build, in order, and where a build is published;
    each with the place that set it (doctor shows it)."""

    indexes: tuple[str, ...] = ()
    publish: str | None = None
    index_origin: str = ""
    publish_origin: str = ""
    #: public indexes of prebuilt wheels, consulted after the team's (``--prebuilt``)
    prebuilt: tuple[str, ...] = ()


def from_table(table: Mapping[str, Any] | None, where: str
               ) -> tuple[tuple[str, ...] | None, str | None]:
    """``index`` and ``publish`` of one ``[tool.wheelcuda]`` table (None: not set there);
    raises with the fix when they are not URLs."""
    if not table:
        return None, None
    index = table.get("index")
    if isinstance(index, str):
        index = [index]
    if index is not None and not (isinstance(index, list)
                                  and all(isinstance(u, str) and u for u in index)):
        raise ConfigError(f"{where}: [tool.wheelcuda] index must be a URL or a list of URLs",
                          'index = ["https://pypi.example.com/simple/"]')
    listed = table.get("prebuilt")
    if listed is not None and not (isinstance(listed, str) or (
            isinstance(listed, list) and all(isinstance(u, str) for u in listed))):
        raise ConfigError(f"{where}: [tool.wheelcuda] prebuilt must be a URL or a list of "
                          "URLs", 'prebuilt = ["https://wheels.example.com/simple/"]')
    publish = table.get("publish")
    if publish is not None and not (isinstance(publish, str) and publish):
        raise ConfigError(f"{where}: [tool.wheelcuda] publish must be a URL",
                          'publish = "https://pypi.example.com/"')
    return (tuple(index) if index is not None else None), publish


def _check(url: str) -> None:
    """An index wheelcuda can take wheels from: http(s), with a host and a valid port. A
    folder (file://) lists no sha256 to check a wheel against."""
    # scheme and host only: a password may hold '/', '@' or ':', and urllib's own
    # message quotes the part it read as a port
    shown = redact.host_only(url)
    fix = "--index https://pypi.example.com/simple/ (serve a folder with pypiserver)"
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{shown} is not an index URL: give an http:// or https:// one",
                          fix)
    try:
        split = urllib.parse.urlsplit(url)
        split.port  # noqa: B018 (raises for a bad port)
    except ValueError:
        raise ConfigError(f"{shown} is not an index URL: its host or port cannot be read",
                          fix) from None
    if not split.hostname:
        raise ConfigError(f"{shown} names no host", fix)


def choose(cli_indexes: Sequence[str], cli_publish: str | None, no_index: bool,
           environ: Mapping[str, str],
           files: Sequence[tuple[str, Mapping[str, Any] | None]], *,
           cli_prebuilt: Sequence[str] = ()) -> Sharing:
    """The settings (pure): ``files`` are ``(where, [tool.wheelcuda] table)``, the
    project's first, then the user's."""
    indexes: tuple[str, ...] | None = tuple(cli_indexes) if cli_indexes else None
    index_origin = "--index" if indexes else ""
    publish, publish_origin = cli_publish, "--publish" if cli_publish else ""
    if indexes is None and environ.get(INDEX_VAR, "").strip():
        indexes, index_origin = tuple(environ[INDEX_VAR].split()), INDEX_VAR
    if publish is None and environ.get(PUBLISH_VAR, "").strip():
        publish, publish_origin = environ[PUBLISH_VAR].strip(), PUBLISH_VAR
    for where, table in files:
        index, url = from_table(table, where)
        if indexes is None and index is not None:
            indexes, index_origin = index, where
        if publish is None and url is not None:
            publish, publish_origin = url, where
    prebuilt = tuple(cli_prebuilt) or tuple(environ.get(PREBUILT_VAR, "").split())
    for _where, table in files:
        listed = (table or {}).get("prebuilt")
        if not prebuilt and listed:
            prebuilt = (listed,) if isinstance(listed, str) else tuple(map(str, listed))
    if no_index:
        indexes, index_origin, prebuilt = (), "--no-index", ()
    for url in [*(indexes or ()), *([publish] if publish else []), *prebuilt]:
        _check(url)
    return Sharing(indexes or (), publish, index_origin, publish_origin, prebuilt)
