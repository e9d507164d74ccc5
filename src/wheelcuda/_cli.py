"""The command line: argument parsing, and errors turned into messages and exit codes.

Exit codes: 0 ok, 1 a problem the message explains, 2 a usage error (argparse),
130 interrupted; ``install`` and ``run`` pass the child's own code through. An error
wheelcuda did not expect is reported as an internal error in one line, with the way to
see its traceback (``WHEELCUDA_DEBUG=1``), after pypa/build's ``_handle_build_error``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence

from . import __version__
from . import _report as report
from ._commands import COMMANDS
from ._context import Context

DEBUG_VAR = report.DEBUG_VAR


#: The help of an option a command declares without one (doctor's ``--json``).
_FALLBACK_HELP = {"--json": "print the answer as JSON (a versioned envelope) instead of text"}


class _Formatter(argparse.HelpFormatter):
    """argparse measures a command's name in the list without its indent, so a long one
    (constraints) pushed its help onto a line of its own: counted whole here."""

    def add_argument(self, action: argparse.Action) -> None:
        super().add_argument(action)
        if isinstance(action, argparse._SubParsersAction):
            longest = max((len(self._format_action_invocation(a))
                           for a in action._get_subactions()), default=0)
            self._action_max_length = max(self._action_max_length,
                                          longest + self._current_indent + 2)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wheelcuda", formatter_class=_Formatter,
        description="Build PyTorch CUDA extensions with NVIDIA's pip CUDA wheels.")
    parser.add_argument("--version", action="version", version=f"wheelcuda {__version__}")
    _verbosity(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                title="commands",
                                help="`wheelcuda COMMAND -h` shows its options")
    for command in COMMANDS:
        # SUMMARY: one line in the list of commands; HELP: the whole of it, under -h
        p = sub.add_parser(command.NAME, help=getattr(command, "SUMMARY", command.HELP),
                           description=command.HELP, usage=getattr(command, "USAGE", None))
        if not getattr(command, "NO_PYTHON", False):
            p.add_argument("--python", metavar="PATH",
                           help="target interpreter or environment folder (default: "
                                "VIRTUAL_ENV, else CONDA_PREFIX, else .venv here or in a "
                                "parent, else this Python unless it is a uv/pipx tool's)")
        _verbosity(p, default=argparse.SUPPRESS)  # after the command too, as uv takes them
        command.add_arguments(p)
        _fill_help(p)
        p.set_defaults(func=command.main, takes_rest=getattr(command, "TAKES_REST", False),
                       parser=p)
    return parser


def _fill_help(parser: argparse.ArgumentParser) -> None:
    """Give the options a command left without help their usual one, in its subcommands
    too (the parser walk in tests/test_cli_help.py checks that none is left without)."""
    for action in parser._actions:  # argparse has no public walk
        if action.help is None:
            action.help = next((_FALLBACK_HELP[o] for o in action.option_strings
                                if o in _FALLBACK_HELP), None)
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _fill_help(child)


def _verbosity(p: argparse.ArgumentParser, default: object = 0) -> None:
    p.add_argument("-v", "--verbose", action="count", default=default,
                   help="say more: the pipeline's decisions (which source, what is fetched)")
    p.add_argument("-q", "--quiet", action="count", default=default,
                   help="say less: warnings and errors only")


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
    if not ours:  # bare `wheelcuda`: the commands, as uv does (its help, exit 2)
        parser.print_help(sys.stderr)
        return 2
    args = parser.parse_args(ours)
    args.rest, args.argv = rest, ours
    if rest and not args.takes_rest:
        parser.error(f"{args.command} takes no arguments after --")
    report.configure(args.verbose - args.quiet)
    try:
        return int(args.func(args, ctx))
    except (Exception, KeyboardInterrupt) as exc:  # the one frame (_report.py)
        return report.failure(exc, ctx)

if __name__ == "__main__":
    sys.exit(main())
