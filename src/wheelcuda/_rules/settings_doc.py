"""The docs' tables of environment variables, generated from the registry
(:mod:`wheelcuda._data.settings`) and spliced between marker comments (pure).

README.md lists the user variables and docs/development.md the internal ones, each
between :data:`BEGIN` and :data:`END`; ``make settings-docs`` (tools/settings_docs.py)
rewrites them, and a unit test fails when they differ from what this generates.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .._data import settings
from .._data.settings import Audience, Setting

BEGIN = "<!-- settings:begin -->"
END = "<!-- settings:end -->"
_GENERATED = ("<!-- generated from src/wheelcuda/_data/settings.py by `make settings-docs`: "
              "edit it there -->")
#: Each generated file, relative to the repository, and the variables it lists.
DOCS: Mapping[str, Audience] = MappingProxyType({"README.md": "user",
                                                 "docs/development.md": "internal"})


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _words(words: tuple[str, ...]) -> str:
    quoted = [f"`{w}`" for w in words]
    return f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def _user_row(s: Setting) -> str:
    order = s.precedence()
    return _row([f"`{s.name}`", s.kind, s.meaning,
                 s.default, " > ".join(order) if len(order) > 1 else ""])


def _internal_row(s: Setting) -> str:
    return _row([f"`{s.name}`", s.kind, s.meaning, ", ".join(f"`{f}`" for f in s.setters),
                 ", ".join(f"`{f}`" for f in s.readers)])


def table(audience: Audience) -> str:
    """The markdown table of the ``audience`` variables, in the registry's order."""
    chosen = [s for s in settings.ALL if s.audience == audience]
    lines = [_GENERATED]
    if audience == "user":
        lines += [f"A flag is on for {_words(settings.FLAG_WORDS)} (any case). "
                  "Where a setting has several sources, the first that gives it wins.",
                  "",
                  "| variable | type | what it does | when unset | precedence |",
                  "|---|---|---|---|---|",
                  *map(_user_row, chosen)]
    else:
        lines += ["| variable | type | what it does | set by | read by |",
                  "|---|---|---|---|---|",
                  *map(_internal_row, chosen)]
    return "\n".join(lines)


def spliced(text: str, audience: Audience) -> str:
    """``text`` with the table between its markers replaced by :func:`table`'s; raises
    ValueError when the markers are missing or out of order."""
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"no {BEGIN} ... {END} markers")
    return f"{text[:start + len(BEGIN)]}\n{table(audience)}\n{text[end:]}"
