"""The command line: argument parsing, and errors turned into messages and exit codes.

Exit codes: 0 ok, 1 a problem the message explains, 2 a usage error (argparse),
130 interrupted; ``install`` and ``run`` pass the child's own code through. An error
wheelcuda did not expect is reported as an internal error in one line, with the way to
see its traceback (``WHEELCUDA_DEBUG=1``), after pypa/build's ``_handle_build_error``.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Mapping, Sequence

from . import __version__
from .commands import COMMANDS
from .context import Context
from .errors import WheelcudaError

__all__ = ["main"]

DEBUG_VAR = "WHEELCUDA_DEBUG"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wheelcuda",
        description="Build PyTorch CUDA extensions with NVIDIA's pip CUDA wheels.")
    parser.add_argument("--version", action="version", version=f"wheelcuda {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP, description=command.HELP)
        if not getattr(command, "NO_PYTHON", False):
            p.add_argument("--python", metavar="PATH",
                           help="target interpreter or environment folder (default: "
                                "VIRTUAL_ENV, else CONDA_PREFIX, else .venv here or in a "
                                "parent, else this Python unless it is a uv/pipx tool's)")
        command.add_arguments(p)
        p.set_defaults(func=command.main, takes_rest=getattr(command, "TAKES_REST", False),
                       parser=p)
    return parser


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Arguments before the first ``--`` are ours; after it, the child's."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    ctx = Context.current() if environ is None else Context.of(environ)
    ours, rest = _split(sys.argv[1:] if argv is None else argv)
    parser = _parser()
    args = parser.parse_args(ours)
    args.rest, args.argv = rest, ours
    if rest and not args.takes_rest:
        parser.error(f"{args.command} takes no arguments after --")
    try:
        return int(args.func(args, ctx))
    except WheelcudaError as exc:
        sys.stderr.write(f"wheelcuda: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug of ours: one line, the traceback on request
        if ctx.flag(DEBUG_VAR):
            traceback.print_exc()
        sys.stderr.write(
            f"wheelcuda: internal error: {type(exc).__name__}: {exc}\n"
            f"  this is a bug in wheelcuda; rerun with {DEBUG_VAR}=1 to see where, "
            "and report it with that output\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
