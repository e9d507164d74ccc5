"""The ``wheelcuda`` command: the warm replay of ``env`` first, the full CLI otherwise.

Only :mod:`.warm` is imported up front; the CLI and everything behind it are imported
when the replay has nothing to give (see _warm.py for why that matters).
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # builtin; ``signal`` imports enum: ms
import os
import sys


def _quiet_exit(_signum: int, _frame: object) -> None:
    """^C before the CLI is ready (importing, replaying): exit 130, no traceback."""
    os._exit(130)


_signal.signal(_signal.SIGINT, _quiet_exit)

from . import _warm as warm  # noqa: E402 (after the handler: ^C while importing is clean too)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    try:
        replayed = warm.replay(args, os.environ, sys.stdout, sys.stderr)
    except Exception:
        replayed = False  # e.g. the working folder was removed: os.getcwd() fails
    if replayed:
        return 0
    from ._cli import main as full  # noqa: PLC0415 (the full CLI's imports are what we skip)

    # from here ^C is KeyboardInterrupt again: the CLI cleans up and exits 130
    _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    return full(args)
