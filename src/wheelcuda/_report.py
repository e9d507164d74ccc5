"""How wheelcuda speaks on stderr: one logger, and one error frame.

Every note (``wheelcuda: fetching ...``), warning and error goes through the
``wheelcuda`` logger, to stderr, one line per message, prefixed ``wheelcuda:``; stdout
stays data (``env``'s exports, ``--json``). ``-q`` keeps warnings and errors, ``-v`` adds
the pipeline's decisions (:func:`configure`). The command line and the PEP 517 backend
end the same way (:func:`failure`): an expected error as its message and fix, exit 1;
^C as 130; anything else as a bug of ours in one line, its traceback with
WHEELCUDA_DEBUG=1.
"""

from __future__ import annotations

import logging
import sys
import traceback
from collections.abc import Callable
from typing import TextIO

from ._context import Context
from ._data import settings as registry
from ._rules import redact
from .errors import WheelcudaError

DEBUG_VAR = registry.DEBUG.name
LOG = logging.getLogger("wheelcuda")


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A handler that writes to the ``sys.stderr`` of the moment (tests swap it)."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, _value: TextIO) -> None:
        pass


class _Redacting(logging.Formatter):
    """Every line wheelcuda writes to stderr passes the one redactor (_rules/redact.py):
    a URL a user gave with a token in it is shown without it, whoever formats it."""

    def format(self, record: logging.LogRecord) -> str:
        return redact.text(super().format(record))


def _install() -> None:
    if not any(isinstance(h, _Stderr) for h in LOG.handlers):
        handler = _Stderr()
        handler.setFormatter(_Redacting("wheelcuda: %(message)s"))
        LOG.addHandler(handler)
    LOG.propagate = False
    if LOG.level == logging.NOTSET:
        LOG.setLevel(logging.INFO)


_install()


def configure(verbosity: int = 0) -> None:
    """How much to say: below 0 (``-q``) warnings and errors only, 0 notes too, above 0
    (``-v``) the decisions as well."""
    LOG.setLevel(logging.WARNING if verbosity < 0 else
                 logging.INFO if verbosity == 0 else logging.DEBUG)


def verbosity() -> int:
    """-1 with ``-q``, 0 by default, 1 with ``-v`` (as :func:`configure` was told)."""
    return -1 if LOG.level >= logging.WARNING else 1 if LOG.level <= logging.DEBUG else 0


def note(text: str) -> None:
    """What wheelcuda does (``-q`` hides it)."""
    LOG.info(text)


def warn(text: str) -> None:
    """Something the user should know; the build goes on. ``text`` says ``warning:``."""
    LOG.warning(text)


def debug(text: str) -> None:
    """A decision, for ``-v``."""
    LOG.debug(text)


def failure(exc: BaseException, ctx: Context,
            translate: Callable[[str], str] = lambda text: text) -> int:
    """Say how the run ended and return its exit code (``translate``: the backend shows
    the command line's flags as its config settings)."""
    if isinstance(exc, WheelcudaError):
        LOG.error("error: %s", translate(str(exc)))
        return 1
    if isinstance(exc, KeyboardInterrupt):
        return 130
    if ctx.flag(DEBUG_VAR):
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    LOG.error("internal error: %s: %s\n  this is a bug in wheelcuda; rerun with %s=1 to "
              "see where, and report it with that output", type(exc).__name__, exc, DEBUG_VAR)
    return 1
