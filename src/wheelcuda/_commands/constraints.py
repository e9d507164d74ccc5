"""``wheelcuda constraints``: build constraints that hold torch in every isolated build
environment to the runtime's exact version.

An isolated build installs the newest torch the index offers unless told otherwise
(causal-conv1d PR 5, mamba issue 720): an extension built against it fails to load in
the environment it is installed into. Plain constraints no longer reach build
environments (pip 26.2); build constraints do: ``pip install --build-constraint FILE``
(pip >= 25.3), ``uv pip install --build-constraint FILE``, or ``PIP_BUILD_CONSTRAINT`` /
``UV_BUILD_CONSTRAINT``. ``eval "$(wheelcuda env)"`` exports the same constraints (and
CUDA_HOME, the archs, the recipes' switches), which is what most users need; this command
writes them where a CI file or a Dockerfile can name them.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from packaging.version import Version

from .. import _pipeline as pipeline
from .._context import Context
from .._pipeline import isolated
from .._probe import locate
from .._rules import environ
from .._store import userfiles
from ..errors import TorchError
from .common import note

NAME = "constraints"
HELP = ("print build constraints pinning torch (and its companions) to the target's exact "
        "versions, for --build-constraint / PIP_BUILD_CONSTRAINT / UV_BUILD_CONSTRAINT")
SUMMARY = "print constraints that pin builds to the target's torch"

PYTORCH_INDEX = "https://download.pytorch.org/whl"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the constraints to FILE instead of printing them")


def main(args: argparse.Namespace, ctx: Context) -> int:
    located = pipeline.locate(ctx, pipeline.Request(python=args.python, need_archs=False))
    target = located.target
    versions = isolated.torch_pins(target)
    if "torch" not in versions:
        raise TorchError(f"torch is not installed in {target.python}: there is nothing to pin",
                         f"install torch into it first (uv pip install --python "
                         f"{target.python} torch), or give --python")
    text = environ.constraints_text(target.python, versions)
    if args.output:
        path = Path(ctx.cwd, args.output)
        userfiles.replace_text(path, text)
        note(f"wrote {path}")
    else:
        print(text, end="")
    local = re.search(r"\+(cu\d+|cpu|rocm[\d.]+)$", versions["torch"])
    if local:
        note(f"torch {versions['torch']} comes from PyTorch's own index, which installers do "
             f"not search by default: add --extra-index-url {PYTORCH_INDEX}/{local.group(1)} "
             f"(pip), or --index {PYTORCH_INDEX}/{local.group(1)} with "
             "--index-strategy unsafe-best-match (uv)")
    pip = locate.installed_version(target.site_dirs, "pip")
    if pip and Version(pip) < isolated.PIP_NEEDED:
        note(f"warning: pip {pip} in {target.python} ignores build constraints (they came in "
             f"pip {isolated.PIP_NEEDED}): {target.python} -m pip install -U "
             f"'pip>={isolated.PIP_NEEDED}'")
    return 0
