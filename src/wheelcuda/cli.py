"""The command line: argument parsing, and errors turned into messages and exit codes.

stdout carries data only (shell text, paths, JSON), so ``eval "$(wheelcuda env)"`` and
``$(wheelcuda home)`` are safe; notes and warnings go to stderr. Exit codes: 0 ok,
1 a problem the message explains, 2 a usage error (argparse).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from . import __version__, api, builds, cache, doctor, environ, install, render, warm
from .errors import WheelcudaError


def _line(text: str) -> str:
    return f"wheelcuda: {text}\n"


def _note(text: str) -> None:
    sys.stderr.write(_line(text))


def _cmd_env(args: argparse.Namespace) -> int:
    variables, stamps = api.build_env_stamped(args.python, args.arch,
                                              all_archs=args.all_archs)
    notes = []
    setup = api.inspect(args.python)
    if setup.torch is None:
        notes.append(f"note: torch is not installed in {setup.target.python}; fine for CMake "
                     "or Makefile builds, torch extensions need it")
    homes = str(cache.cache_root() / "homes")
    other = environ.foreign_home(os.environ, variables["CUDA_HOME"], homes)
    if other:
        notes.append(f"warning: {other} was set; wheelcuda's tree wins once this output is "
                     "evaluated, because it exports CUDA_HOME and CUDA_PATH and torch reads "
                     "CUDA_HOME first. To keep your toolkit, do not eval wheelcuda env.")
    err = "".join(_line(n) for n in notes)
    text = render.render(variables, args.shell)
    sys.stderr.write(err)
    sys.stdout.write(text)
    if stamps is not None:
        warm.record(args.argv, os.environ, text, err, stamps)
    return 0


def _cmd_home(args: argparse.Namespace) -> int:
    path = api.cuda_home(args.python)
    if args.json:
        sys.stdout.write(render.envelope("home", {"home": str(path)}))
    else:
        print(path)
    return 0


def _cmd_doctor(args: argparse.Namespace) -> int:
    report = doctor.diagnose(args.python, args.arch)
    if args.json:
        sys.stdout.write(render.envelope("doctor", report))
    else:
        sys.stdout.write(doctor.to_text(report))
    return 0 if report["ok"] else 1


def _cmd_install(args: argparse.Namespace) -> int:
    prepared = install.prepare(args.packages, args.python, args.arch, args.rest,
                               fetch=not args.no_fetch, all_archs=args.all_archs)
    if args.explain:
        sys.stdout.write(install.explain(prepared))
        return 0
    _note(f"building with {prepared.tool.name} for "
          f"{';'.join(str(a) for a in prepared.archs)} (from {prepared.arch_source}): "
          + " ".join(prepared.argv))
    code, summary = install.execute(prepared)
    _note(summary)
    return code


def _cmd_run(args: argparse.Namespace) -> int:
    if not args.rest:
        _parser().error("run: give the command after --, e.g. "
                        "wheelcuda run -- cmake -S . -B build")
    return install.run_command(args.rest, args.python, args.arch, args.all_archs)


def _all_archs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all-archs", action="store_true",
                   help="keep the package's own GPU targets instead of pruning to --arch")


def _cmd_cache_list(args: argparse.Namespace) -> int:
    entries = builds.entries()
    if args.json:
        rows = [{"key": e.path.name, "path": str(e.path), "size": e.size, **e.record}
                for e in entries]
        sys.stdout.write(render.envelope("cache", {"entries": rows}))
        return 0
    for e in entries:
        f = e.record.get("fields", {})
        print(f"{e.path.name}  {e.size / 1e6:.1f} MB  "
              f"{', '.join(e.record.get('installed', [])) or '(nothing recorded)'}")
        print(f"    torch {f.get('torch')} (CUDA {f.get('torch_cuda')}), nvcc "
              f"{f.get('compiler')}, archs {f.get('archs')}"
              f"{'' if f.get('prune', True) else ' (all of the package)'}, {f.get('python')}, "
              f"C++11 ABI {f.get('cxx11_abi')}, host {f.get('host_compiler') or 'unknown'}")
    if not entries:
        _note(f"the wheel cache in {cache.cache_root() / 'builds'} is empty")
    return 0


def _cmd_cache_clear(args: argparse.Namespace) -> int:
    removed = builds.clear(args.package)
    _note(f"removed {len(removed)} cached build(s)"
          + (f" of {args.package}" if args.package else ""))
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wheelcuda",
        description="Build PyTorch CUDA extensions with NVIDIA's pip CUDA wheels.")
    parser.add_argument("--version", action="version", version=f"wheelcuda {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help_: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_, description=help_)
        p.add_argument("--python", metavar="PATH",
                       help="target interpreter or environment folder "
                            "(default: the active venv, else this Python)")
        return p

    env = command("env", "print shell code that sets CUDA_HOME, PATH and arch variables")
    env.add_argument("--shell", choices=render.SHELLS, default="sh")
    env.add_argument("--arch", metavar="LIST", help="GPU archs, e.g. 12.0 or '8.0;9.0+PTX'")
    _all_archs(env)
    env.set_defaults(func=_cmd_env)

    home = command("home", "print the synthesized CUDA_HOME, building it if needed")
    home.add_argument("--json", action="store_true")
    home.set_defaults(func=_cmd_home)

    doc = command("doctor", "show what is there, what is missing, and how to fix it")
    doc.add_argument("--json", action="store_true")
    doc.add_argument("--arch", metavar="LIST")
    doc.set_defaults(func=_cmd_doctor)

    ins = command("install", "build and install CUDA extension packages "
                             "(uv pip install --no-build-isolation); args after -- go to uv/pip")
    ins.add_argument("packages", nargs="+", metavar="PKG",
                     help="a requirement (causal-conv1d==1.7.0), a folder or an sdist")
    ins.add_argument("--arch", metavar="LIST")
    ins.add_argument("--no-fetch", action="store_true",
                     help="never fetch the compiler wheels into wheelcuda's store")
    ins.add_argument("--explain", action="store_true",
                     help="print what would be set and run, and stop")
    _all_archs(ins)
    ins.set_defaults(func=_cmd_install)

    run = command("run", "run a command (after --) with the build environment")
    run.add_argument("--arch", metavar="LIST")
    _all_archs(run)
    run.set_defaults(func=_cmd_run)

    cache_cmd = sub.add_parser("cache", help="list or clear the wheel cache")
    cache_sub = cache_cmd.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = cache_sub.add_parser("list", help="what is cached, with its key and size")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(func=_cmd_cache_list)
    clearing = cache_sub.add_parser("clear", help="remove cached builds (of PKG only)")
    clearing.add_argument("package", nargs="?", metavar="PKG")
    clearing.set_defaults(func=_cmd_cache_clear)
    return parser


def _split(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """Arguments before the first ``--`` are ours; after it, the child's."""
    argv = list(argv)
    if "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1:]
    return argv, []


def main(argv: Sequence[str] | None = None) -> int:
    ours, rest = _split(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(ours)
    args.rest = rest
    args.argv = ours
    if rest and args.command not in ("install", "run"):
        _parser().error(f"{args.command} takes no arguments after --")
    try:
        return int(args.func(args))
    except WheelcudaError as exc:
        _note(f"error: {exc}")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
