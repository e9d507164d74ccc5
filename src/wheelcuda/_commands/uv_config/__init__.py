"""``wheelcuda uv-config``: uv settings under which plain uv commands build CUDA packages.

With them, an unchanged ``uv pip install causal-conv1d``, ``uv add``, ``uv sync`` or
``uv lock`` builds with isolation on and still gets what ``wheelcuda install`` gives:
torch in the build environment matched to the runtime's, CUDA_HOME of a tree in
wheelcuda's cache (over the compiler set in its store, so it outlives any one .venv),
only the wanted archs, the recipe's variables, MAX_JOBS as a ceiling (the tree's
compilers decide the rest as each compile starts: memory, order, threads), and a key
variable so uv's cache never hands back a wheel built for another torch.

The torch to match is the target environment's; before the first ``uv sync`` it is
uv.lock's, or ``--cuda X.Y``.

The torch it is for is read by :mod:`.torch`, the settings made by :mod:`.settings`,
and where they go, by :mod:`.files`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from packaging.version import Version

from ... import _pipeline as pipeline
from ..._context import Context
from ..._data.recipes import RECIPES
from ..._pipeline import buildplan
from ..._probe import installer, uvforms, uvlock
from ..._rules import uvconfig, uvtorch
from ..._store import named, userfiles
from ...errors import ConfigError
from ..common import NO_FETCH_HELP, add_all_archs, add_arch, add_toolkit, note
from .files import remove, settings_files, write
from .settings import header, package_settings
from .torch import lock_agrees, resolve

NAME = "uv-config"


HELP = ("print (or --write into a uv.toml or pyproject.toml) the uv settings under which "
        "plain `uv pip install`, `uv add` and `uv sync` build CUDA packages, isolation on")


SUMMARY = "print or --write the uv settings that build CUDA packages"


#: extra-build-dependencies without --preview, match-runtime, extra-build-variables.
UV_NEEDED = Version("0.10.0")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("packages", nargs="*", metavar="PKG",
                   help="package names, or project folders with a static [project] name "
                        "(default: every package in wheelcuda's recipe table)")
    add_toolkit(p)
    add_arch(p)
    add_all_archs(p)
    p.add_argument("--write", metavar="FILE",
                   help="merge the settings into FILE: a pyproject.toml (under [tool.uv]) or "
                        "a uv.toml (any other name); comments and order are kept")
    p.add_argument("--remove", action="store_true",
                   help="take wheelcuda's settings out of --write FILE again")
    p.add_argument("--cuda", metavar="X.Y",
                   help="torch's CUDA, when there is neither an environment with torch nor "
                        "a uv.lock yet")
    p.add_argument("--no-fetch", action="store_true",
                   help=f"{NO_FETCH_HELP}; the headers of torch's libraries are not fetched "
                        "either (builds then miss cusparse.h)")
    p.add_argument("--torch-index", metavar="URL",
                   help="the index build environments find torch in (default: uv.lock's "
                        "registry for torch, else PyTorch's index of its local label, "
                        "https://download.pytorch.org/whl/cu128 for 2.11.0+cu128; none "
                        "for a torch from PyPI)")


def main(args: argparse.Namespace, ctx: Context) -> int:
    if args.remove:
        return remove(args, ctx)
    # Every cheap check first: a bad file or an old uv must not cost a fetch.
    if args.cuda:
        uvlock.torch_of_cuda(args.cuda)  # a --cuda that is no version stops here
    specs = _specs(args.packages, ctx)
    target = None
    if args.write:
        target = Path(ctx.cwd, args.write)
        userfiles.read_toml(target)  # not TOML: stop before any fetch
        userfiles.check_writable(target)
    _check_uv(ctx)
    lock_path = uvlock.find_lock(ctx.cwd)
    lock = uvlock.read_lock(lock_path) if lock_path else None
    found = uvforms.read(specs, ctx)  # a spec that is no package stops here
    resolved, torch, pin_version = resolve(args, ctx)
    lock_agrees(lock_path, lock, torch, pin_version)
    for line in buildplan.warnings(resolved):
        note(line)
    if pipeline.missing_headers(resolved.toolkit):
        note("warning: the headers of torch's libraries (cuBLAS, cuSPARSE, cuRAND...) are not in "
             "wheelcuda's store, and torch's CUDA headers include them: builds will fail to "
             "find cusparse.h (run without --no-fetch to fetch them)")
    settings = package_settings(resolved, pin_version, found, ctx=ctx)
    index = args.torch_index or uvtorch.torch_index(
        pin_version, uvlock.torch_registry(lock) if lock else None)
    if index:
        note(f"torch {pin_version} comes from {index}: the settings name it as an index "
             f"({uvtorch.INDEX_NAME}), so that uv finds that build inside build environments "
             "(uv searches it before PyPI for every package it holds)")
    if not args.packages:
        note("a local folder uv will build (`uv add ./ext`, a path in [tool.uv.sources]) is "
             "covered only when named: `wheelcuda uv-config --write FILE ./ext` (it needs a "
             "static [project] name)")
    if resolved.home is not None:  # so that prune keeps the tree these settings name
        named.by_files(resolved.layout, resolved.home.path,
                       [str(target)] if target else settings_files(ctx))
    if target is None:
        print(uvconfig.render(settings, header(resolved, torch), index), end="")
        note("save this as uv.toml (`wheelcuda uv-config --write uv.toml`), then plain "
             "`uv pip install PKG`, `uv add PKG` and `uv sync` build with it")
        return 0
    return write(target, settings, index)


def _specs(given: Sequence[str], ctx: Context) -> list[str]:
    """What to cover: the names and folders given, else the recipe table's packages
    and the local folders of the project here (``[tool.uv.sources]`` paths, which uv
    builds: ``uv add ./ext`` writes one)."""
    if given:
        return list(dict.fromkeys(given))
    return [*sorted(RECIPES), *uvforms.project_folders(ctx)]


def _check_uv(ctx: Context) -> None:
    """Refuse a uv too old to read these settings; a missing one is only said."""
    found = installer.uv_version(ctx)
    if found is None:
        note(f"no uv found; these settings need uv >= {UV_NEEDED}")
        return
    path, version = found
    try:
        too_old = Version(version) < UV_NEEDED
    except ValueError:
        return
    if too_old:
        raise ConfigError(
            f"uv {version} ({path}) is too old for these settings: extra-build-dependencies "
            f"needs --preview before uv {UV_NEEDED}, and match-runtime 0.8.5, "
            "extra-build-variables 0.8.6",
            f"uv self update, or pip install -U 'uv>={UV_NEEDED}'")
