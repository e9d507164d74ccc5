"""A setting's value from the sources its row names, in the row's order (pure).

A :class:`~wheelcuda._data.settings.Setting` says where it may be given: the command line
(or the backend's config setting), its variable, the project's ``[tool.wheelcuda]``, then
the user's file. :func:`read` asks them in that order, the first that gives it winning,
as uv does, and checks the value by the row's kind and schemes; so a consumer spells no
name and writes no precedence of its own. The callers read the files
(:mod:`wheelcuda._team.probe`).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._data.settings import Setting
from .._standalone._machine import parse_size
from ..errors import ConfigError
from . import redact

Value = str | tuple[str, ...]
#: ``(where it was found, its [tool.wheelcuda] table)``; None: the file has none.
Table = tuple[str, Mapping[str, Any] | None]


@dataclass(frozen=True)
class Files:
    """The tables a setting may come from: the project's, then the user's."""

    project: Table | None = None
    user: Table | None = None


NO_FILES = Files()


@dataclass(frozen=True)
class Read:
    """A setting's value and the place that gave it (doctor shows it); None: no source
    did, so the row's default holds. An empty tuple is a value: a file's ``index = []``
    turns the lookup off."""

    value: Value | None = None
    origin: str = ""

    @property
    def text(self) -> str | None:
        """The value of a setting that holds one."""
        return self.value if isinstance(self.value, str) else None

    @property
    def many(self) -> tuple[str, ...]:
        """The values of a setting that may hold several (``urls``)."""
        return _urls(self.value)


def read(setting: Setting, environ: Mapping[str, str], *,
         given: str | Sequence[str] | None = None, files: Files = NO_FILES) -> Read:
    """``setting`` from the first source that gives it: ``given`` (what the command line
    or the backend's config setting said), its variable, then the files. Every file that
    holds it is checked, winning or not, as uv checks a settings file whole; the variable
    only when it wins. Raises :class:`ConfigError` with the fix."""
    in_files = [Read(_from_file(setting, key, file[1][key], file[0]), file[0])
                for file, key in ((files.project, setting.project),
                                  (files.user, setting.user_file))
                if key and file and file[1] and key in file[1]]
    found = (_given(setting, given) or _from_environ(setting, environ)
             or (in_files[0] if in_files else Read()))
    for url in found.many:
        _check_url(setting, url, found.origin)
    _check_kind(setting, found)
    return _check_word(setting, found)


def refused(settings: Sequence[Setting], environ: Mapping[str, str]) -> list[ConfigError]:
    """What :func:`read` refuses of ``settings`` that only the environment gives, for
    doctor to list them all at once rather than stop at the first."""
    out = []
    for setting in settings:
        try:
            read(setting, environ)
        except ConfigError as error:
            out.append(error)
    return out


_TOO_LARGE = 1e6


def _count(text: str) -> bool:
    return text.isdecimal() and int(text) > 0


def _positive(text: str) -> bool:
    """Above 0 and below a million: nothing a setting measures is that large (a GiB
    figure of a million is a typo), and ``inf`` or ``nan`` is no figure."""
    try:
        return 0 < float(text) < _TOO_LARGE
    except ValueError:
        return False


def _size(text: str) -> bool:
    return parse_size(text) is not None


#: How a kind that is checked is checked, and what a bad value is said not to be.
_KINDS: dict[str, tuple[Callable[[str], bool], str]] = {
    "int": (_count, "a whole number above 0"),
    "number": (_positive, "a number above 0 and below a million"),
    "size": (_size, "a size (64G, 512M)"),
}


def _check_kind(setting: Setting, found: Read) -> None:
    if found.text is None or setting.kind not in _KINDS:
        return
    check, noun = _KINDS[setting.kind]
    if not check(found.text):
        raise ConfigError(f"{found.origin}: {found.text!r} is not {noun}",
                          _fix(setting, found.origin))


def _check_word(setting: Setting, found: Read) -> Read:
    """One of the row's words, in any case (given back in the row's case)."""
    if not setting.words or found.text is None:
        return found
    word = found.text.lower()
    if word not in setting.words:
        *most, last = setting.words
        listed = f"{', '.join(most)} or {last}" if most else last
        raise ConfigError(f"{found.origin}: {found.text!r} is not {listed}",
                          _fix(setting, found.origin))
    return Read(word, found.origin)


def _given_as(setting: Setting) -> str:
    """How the command line (or, for the backend alone, its config setting) names it."""
    return setting.cli or f"-C wheelcuda.{setting.config_setting}"


def _given(setting: Setting, given: str | Sequence[str] | None) -> Read | None:
    origin = _given_as(setting)
    if isinstance(given, str):
        return Read(given.strip(), origin) if given.strip() else None
    return Read(tuple(given), origin) if given else None


def _from_environ(setting: Setting, environ: Mapping[str, str]) -> Read | None:
    """The variable, unset when empty; ``urls`` are separated by spaces."""
    text = environ.get(setting.name, "").strip()
    if not text:
        return None
    return Read(tuple(text.split()) if setting.kind == "urls" else text, setting.name)


def _from_file(setting: Setting, key: str, value: object, where: str) -> Value:
    """A file's value, of the row's kind: one string, or for ``urls`` a list of them."""
    if setting.kind == "urls":
        listed = [value] if isinstance(value, str) else value
        if isinstance(listed, list) and all(isinstance(u, str) and u for u in listed):
            return tuple(listed)
        raise ConfigError(f"{where}: {key} must be a URL or a list of URLs",
                          f'{key} = ["{setting.example}"]')
    if isinstance(value, str) and value.strip():
        return value.strip()
    noun = "a URL" if setting.kind.startswith("url") else f"a {setting.kind}"
    raise ConfigError(f"{where}: {key} must be {noun}",
                      f'{key} = "{setting.example}"')


def _urls(value: Value | None) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else value or ()


def _check_url(setting: Setting, url: str, origin: str) -> None:
    """A URL of one of the row's schemes, with a host and a valid port. What is shown is
    its scheme and host: a password may hold '/', '@' or ':', and urllib's own message
    quotes the part it read as a port."""
    if not setting.schemes:
        return
    shown, named = redact.host_only(url), setting.cli or setting.name
    if origin != named:
        shown = f"{origin}: {shown}"
    fix = _fix(setting, origin)
    if url.startswith("file:"):
        fix += " (serve the folder with pypiserver)"
    try:
        split = urllib.parse.urlsplit(url)
        split.port  # noqa: B018 (raises for a bad port)
    except ValueError:
        raise ConfigError(f"{shown} is not a URL for {named}: its host or port cannot be "
                          "read", fix) from None
    if split.scheme not in setting.schemes or "://" not in url:
        schemes = " or ".join(f"{s}://" for s in setting.schemes)
        raise ConfigError(f"{shown} is not a URL for {named}: give an {schemes} one", fix)
    if not split.hostname:
        raise ConfigError(f"{shown} names no host", fix)


def _fix(setting: Setting, origin: str) -> str:
    """The example value, said the way the place that gave the bad one says it."""
    if origin == setting.name:
        return f"export {setting.name}={setting.example}   (or unset it)"
    if origin == _given_as(setting):
        return f"{origin} {setting.example}"
    return f'{setting.project or setting.user_file} = "{setting.example}"'
