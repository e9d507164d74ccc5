"""Text that sets and unsets environment variables, for ``wheelcuda env --shell
sh|fish|json|github``.

Pure string building: the tests feed every format to its real reader (bash, dash,
fish, a GITHUB_ENV parser), so each value must come back byte for byte. stdout
carries only this text, which is what makes ``eval "$(wheelcuda env)"`` safe.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence

SCHEMA_VERSION = 1

#: POSIX sh's ``name`` token (XBD 3.235); fish and GITHUB_ENV accept it too, and a
#: name outside it could break out of the assignment in one of them.
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Keys that ``envelope`` owns; ``data`` silently overwriting them would lie to readers.
_RESERVED = ("schema", "kind")


def envelope(kind: str, data: Mapping[str, object]) -> str:
    """JSON text of a versioned envelope, so a reader can check what it parses.

    Sorted keys and a fixed indent keep the output stable and diffable.
    """
    clashes = [key for key in _RESERVED if key in data]
    if clashes:
        raise ValueError(f"envelope data must not set the reserved keys {clashes}")
    body = {"schema": SCHEMA_VERSION, "kind": kind, **data}
    return json.dumps(body, sort_keys=True, indent=2) + "\n"


def _sh_quote(value: str) -> str:
    """Quote for POSIX sh, where nothing inside '...' is special except the closing '.

    Each ' becomes '\\'' (close, escaped quote, reopen). Unlike shlex.quote this
    always quotes, so every line has the same shape.
    """
    return "'" + value.replace("'", "'\\''") + "'"


def _sh(variables: Mapping[str, str], unset: Sequence[str]) -> str:
    """``export NAME='value'`` and ``unset NAME`` lines, read by bash, dash and zsh alike."""
    return "".join([*(f"export {name}={_sh_quote(value)}\n" for name, value in variables.items()),
                    *(f"unset {name}\n" for name in unset)])


def _fish_quote(value: str) -> str:
    """Quote for fish, whose single quotes take exactly two escapes: \\\\ and \\'."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish_items(name: str, value: str) -> list[str]:
    """The list items fish should hold for one variable.

    fish treats every variable whose name ends in PATH as a path list and joins it
    with ':' on export, so its parts are given as items; splitting on every ':'
    (empty parts kept) joins back to the exact value.
    """
    return value.split(":") if name.endswith("PATH") else [value]


def _fish(variables: Mapping[str, str], unset: Sequence[str]) -> str:
    """``set -gx NAME 'item' ...;`` and ``set -e NAME;`` lines, for ``wheelcuda env
    --shell fish | source``."""
    lines = []
    for name, value in variables.items():
        items = " ".join(_fish_quote(item) for item in _fish_items(name, value))
        lines.append(f"set -gx {name} {items};\n")
    return "".join([*lines, *(f"set -e {name};\n" for name in unset)])


def _json(variables: Mapping[str, str], unset: Sequence[str]) -> str:
    """The variables as a versioned envelope, for tools rather than shells; ``unset``
    only where there are some, so that readers of schema 1 before it read the same."""
    return envelope("env", {"variables": dict(variables),
                            **({"unset": sorted(unset)} if unset else {})})


def _github_delimiter(value: str) -> str:
    """A heredoc delimiter absent from ``value``, so the value cannot close its block
    early and smuggle in other variables (GitHub's docs ask for exactly this)."""
    while True:
        delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
        if delimiter not in value:
            return delimiter


def _github(variables: Mapping[str, str], _unset: Sequence[str]) -> str:
    """Lines for the file ``$GITHUB_ENV`` (which has no way to unset: :data:`UNSETS`).

    The runner reads ``NAME=value`` up to the line's end, so a value holding a
    newline takes the documented multiline form ``NAME<<DELIM``, value, ``DELIM``.
    The file must be written as is: on Windows the runner also ends lines at CRLF.
    """
    lines = []
    for name, value in variables.items():
        if "\n" in value:
            delimiter = _github_delimiter(value)
            lines.append(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            lines.append(f"{name}={value}\n")
    return "".join(lines)


_RENDERERS: dict[str, Callable[[Mapping[str, str], Sequence[str]], str]] = {
    "sh": _sh,
    "fish": _fish,
    "json": _json,
    "github": _github,
}

SHELLS: tuple[str, ...] = tuple(_RENDERERS)
#: The formats that can unset a variable: the Actions runner reads ``$GITHUB_ENV`` as
#: ``NAME=value`` and ``NAME<<DELIM`` blocks only, and an empty value is not an unset one
#: (distutils runs an empty CXX as the compiler).
UNSETS: tuple[str, ...] = ("sh", "fish", "json")


def _check(name: str, value: str) -> None:
    """Refuse what no environment can hold, rather than emit text that breaks."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"invalid environment variable name {name!r}: want [A-Za-z_][A-Za-z0-9_]*")
    if "\0" in value:
        raise ValueError(f"environment variable {name} cannot hold a NUL character: {value!r}")


def render(variables: Mapping[str, str], shell: str, unset: Sequence[str] = ()) -> str:
    """Text that sets every variable, in the mapping's order, then unsets each of
    ``unset``, for ``shell``.

    Raises ValueError for an unknown shell, a name outside [A-Za-z_][A-Za-z0-9_]*,
    a value holding NUL (environments are C strings), a name both set and unset, or an
    unset for a format that cannot say it (:data:`UNSETS`).
    """
    renderer = _RENDERERS.get(shell)
    if renderer is None:
        raise ValueError(f"unknown shell {shell!r}; choose one of: {', '.join(SHELLS)}")
    for name, value in variables.items():
        _check(name, value)
    for name in unset:
        _check(name, "")
    both = sorted(set(unset) & set(variables))
    if both:
        raise ValueError(f"variables both set and unset: {', '.join(both)}")
    if unset and shell not in UNSETS:
        raise ValueError(f"{shell} cannot unset variables ({', '.join(unset)}); "
                         f"these can: {', '.join(UNSETS)}")
    return renderer(variables, unset)
