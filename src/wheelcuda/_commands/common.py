"""What several commands share: their common options and how they talk to people.

stdout carries data only (shell text, paths, JSON), so ``eval "$(wheelcuda env)"`` and
``$(wheelcuda home)`` are safe; notes and warnings go to stderr.
"""

from __future__ import annotations

import argparse
from typing import Any

from .. import _report as report
from .._pipeline import Request
from .._sources import table as sources


def note(text: str) -> None:
    """A command's note, or its warning (the text says ``warning:``): ``-q`` keeps those."""
    (report.warn if text.startswith("warning: ") else report.note)(text)


#: What ``--no-fetch`` forbids, for every command that fetches: the compiler comes as
#: wheels for a CUDA 13 torch, as NVIDIA's archives for a CUDA 12 one.
NO_FETCH_HELP = ("never download the CUDA compiler into wheelcuda's store (the CUDA 13 "
                 "compiler wheels, or NVIDIA's archives for a CUDA 12 torch); a missing one "
                 "is an error that names the files to bring")


def add_arch(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arch", metavar="LIST", help="GPU archs, e.g. 12.0 or '8.0;9.0+PTX' "
                   "(default: TORCH_CUDA_ARCH_LIST, else the visible GPUs)")


def add_all_archs(p: argparse.ArgumentParser) -> None:
    p.add_argument("--all-archs", action="store_true",
                   help="keep the package's own GPU targets instead of pruning to --arch")


def add_toolkit(p: argparse.ArgumentParser) -> None:
    p.add_argument("--toolkit", metavar="SOURCE",
                   help=f"{sources.toolkit_help()} (default: WHEELCUDA_TOOLKIT, else auto)")
    p.add_argument("--redist-manifest", metavar="URL|FILE",
                   help="NVIDIA's release manifest (redistrib_X.Y.Z.json) to use as given, for "
                        "a mirror or an offline copy; its archives resolve beside it, or under "
                        "WHEELCUDA_REDIST_URL (default: WHEELCUDA_REDIST_MANIFEST, else the "
                        "pinned manifest of torch's release)")


def request(args: argparse.Namespace, **flags: Any) -> Request:
    """The pipeline request for a command's parsed arguments."""
    return Request(python=args.python, arch=getattr(args, "arch", None),
                   all_archs=getattr(args, "all_archs", False),
                   toolkit=getattr(args, "toolkit", None),
                   redist_manifest=getattr(args, "redist_manifest", None), **flags)
