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
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Sequence
from pathlib import Path

import tomlkit
from packaging.version import Version

from .. import _pipeline as pipeline
from .._context import Context
from .._data.recipes import RECIPES
from .._pipeline import buildplan
from .._probe import frontend, installer, locate, machine, uvforms, uvlock
from .._probe import torch as torch_probe
from .._rules import arch, buildkey, jobs, packages, uvconfig, uvtorch
from .._store import named, userfiles
from .._values import Torch
from ..errors import ConfigError, WheelcudaError
from .common import NO_FETCH_HELP, add_all_archs, add_arch, add_toolkit, note

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
        return _remove(args, ctx)
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
    resolved, torch, pin_version = _resolve(args, ctx)
    _lock_agrees(lock_path, lock, torch, pin_version)
    for line in buildplan.warnings(resolved):
        note(line)
    if pipeline.missing_headers(resolved.toolkit):
        note("warning: the headers of torch's libraries (cuBLAS, cuSPARSE, cuRAND...) are not in "
             "wheelcuda's store, and torch's CUDA headers include them: builds will fail to "
             "find cusparse.h (run without --no-fetch to fetch them)")
    settings = _settings(resolved, pin_version, found, ctx=ctx)
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
                       [str(target)] if target else _settings_files(ctx))
    if target is None:
        print(uvconfig.render(settings, _header(resolved, torch), index), end="")
        note("save this as uv.toml (`wheelcuda uv-config --write uv.toml`), then plain "
             "`uv pip install PKG`, `uv add PKG` and `uv sync` build with it")
        return 0
    return _write(target, settings, index)


def _settings_files(ctx: Context) -> list[str]:
    """Where printed settings are saved, as the note says: the files uv reads here."""
    user = os.path.join(ctx.get("XDG_CONFIG_HOME") or os.path.join(
        ctx.get("HOME") or os.path.expanduser("~"), ".config"), "uv", "uv.toml")
    return [*filter(None, [ctx.get("UV_CONFIG_FILE")]), os.path.join(ctx.cwd, "uv.toml"),
            os.path.join(ctx.cwd, "pyproject.toml"), user]


def _lock_agrees(lock_path: str | None, lock: dict[str, object] | None, torch: Torch,
                 version: str | None) -> None:
    """The environment's torch and uv.lock's differ: `uv sync` will install the lock's,
    and builds then get the environment's (a stale .venv). Said, with the fix."""
    if not (lock_path and lock and version and torch.path):
        return
    locked = uvlock.parse_lock(lock.get("package", []))  # type: ignore[arg-type]
    if locked is not None and not frontend.same_torch(locked.version, locked.cuda, version,
                                                      torch.cuda):
        note(f"warning: the environment holds torch {version}, but {lock_path} pins "
             f"{locked.version}: `uv sync` installs the lock's, and these settings are "
             f"for the environment's; run `uv sync` first, then uv-config again")


def _specs(given: Sequence[str], ctx: Context) -> list[str]:
    """What to cover: the names and folders given, else the recipe table's packages
    and the local folders of the project here (``[tool.uv.sources]`` paths, which uv
    builds: ``uv add ./ext`` writes one)."""
    if given:
        return list(dict.fromkeys(given))
    return [*sorted(RECIPES), *uvforms.project_folders(ctx)]


def _resolve(args: argparse.Namespace, ctx: Context
             ) -> tuple[pipeline.Resolved, Torch, str | None]:
    """The pipeline's answer for the torch to match, that torch, and its version as an
    installer resolves it (``2.14.1``; None when only its CUDA is known)."""
    req = pipeline.Request(python=args.python, arch=args.arch, all_archs=args.all_archs,
                           need_torch=True, jobs=True, fetch=not args.no_fetch,
                           toolkit=args.toolkit, redist_manifest=args.redist_manifest,
                           portable=True, headers=True)
    located = None
    if not args.cuda:
        try:
            located = pipeline.locate(ctx, req)
        except WheelcudaError:
            if args.python:
                raise
    found = torch_probe.find_torch(located.target.site_dirs) if located else None
    if located is not None and found is not None:
        version = locate.installed_version(located.target.site_dirs, "torch")
        # the torch just read: finish() need not look for it again
        given = dataclasses.replace(req, torch=found)
        r = pipeline.resolve_located(dataclasses.replace(located, request=given))
        r.raise_first()
        return r, found, version
    torch = _torch_without_environment(args, ctx)
    given = dataclasses.replace(req, python=ctx.executable, torch=torch)
    r = pipeline.resolve(ctx, given)
    r.raise_first()
    return r, torch, None if args.cuda else torch.version


def _torch_without_environment(args: argparse.Namespace, ctx: Context) -> Torch:
    if args.cuda:
        return uvlock.torch_of_cuda(args.cuda)
    lock = uvlock.find_lock(ctx.cwd)
    torch = uvlock.torch_from_lock(lock) if lock else None
    if torch is None or torch.cuda is None:
        where = f"{lock} pins no CUDA build of torch" if lock else "there is no uv.lock here"
        raise ConfigError(f"no torch to match: no environment with torch was found, and {where}",
                          "run `uv sync` (or `uv lock`) first, or give torch's CUDA: --cuda 13.0")
    note(f"matching torch {torch.version} (CUDA {torch.cuda}) as {lock} pins it")
    return torch


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


def _settings(r: pipeline.Resolved, version: str | None,
              found: Sequence[uvforms.Package], *, ctx: Context) -> list[uvconfig.Settings]:
    base = r.variables()
    archs = () if r.request.all_archs else r.archs
    key = buildplan.build_key(ctx, r, (), (), {}).label()
    # a name's setup.py is read from its sdist on the index uv takes it from
    places = [(p.url, p.flat) for p in uvforms.indexes(ctx)]
    out = []
    for package in found:
        name = package.name
        dependency, why = uvtorch.torch_entry(version)
        shown = "match-runtime" if isinstance(dependency, dict) else dependency
        note(f"{name}: {shown} ({why})")
        variables = dict(base)
        # The tree's bin only: uv puts the OS PATH after it, and this value is in uv's
        # cache key, so it must not change with the shell uv-config ran in.
        variables["PATH"] = str(r.home.path / "bin") if r.home else variables["PATH"]
        # what install sets for this source: its setup.py's switches (an sdist's or a
        # folder's FORCE_CUDA), then the recipe table's (chamferdist built CPU-only here)
        wanted, _ = buildplan.package_variables(ctx, [package.spec], [name], archs, places)
        variables.update({k: ctx.environ.get(k) or v for k, v in wanted.items()})
        # a ceiling, the same from run to run (it is in uv's key): the tree's compilers
        # decide how many run at once, and their threads, as each compile starts
        variables.update(jobs.for_build({}, machine.cores(),
                                        files=packages.known_files([name])))
        if ctx.get("MAX_JOBS"):
            variables["MAX_JOBS"] = ctx.environ["MAX_JOBS"]
        variables[uvconfig.KEY] = key
        out.append(uvconfig.Settings(name, dependency, variables))
    return out


def _header(r: pipeline.Resolved, torch: Torch) -> list[str]:
    return [
        f"uv settings by `wheelcuda uv-config`: torch {torch.version} (CUDA {torch.cuda}),",
        f"{buildkey.compiler_name(r.compiler)} in {r.home.path if r.home else '?'}, "
        f"archs {arch.to_torch(r.archs) or '(all)'}.",
        "CUDA_HOME is a folder in this machine's wheelcuda cache: keep this file out of",
        "version control. Save it as uv.toml beside your project (or pass it with",
        "UV_CONFIG_FILE); run `wheelcuda uv-config` again after torch changes.",
    ]


def _is_pyproject(path: Path) -> bool:
    return path.name == "pyproject.toml"


def _write(path: Path, settings: Sequence[uvconfig.Settings], index: str | None) -> int:
    doc = userfiles.read_toml(path)  # again: the fetch may have taken minutes
    before = tomlkit.dumps(doc)
    pyproject = _is_pyproject(path)
    conflicts = uvconfig.merge(doc, settings, pyproject=pyproject, index=index)
    after = tomlkit.dumps(doc)
    if uvconfig.without_ours(after, pyproject=pyproject) != \
            uvconfig.without_ours(before, pyproject=pyproject):
        raise ConfigError(f"wheelcuda cannot merge its settings into {path} without changing "
                          "yours (dotted keys such as `uv.package = true` under [tool]?); it "
                          "was not changed",
                          "print the settings (without --write) and add them by hand, or "
                          "write them to a uv.toml")
    if after != before:
        userfiles.replace_text(path, after)
        where = "[tool.uv] of " if pyproject else ""
        note(f"wrote uv settings for {len(settings)} package(s) into {where}{path}")
    else:
        note(f"{path} already holds these settings: nothing changed")
    for line in conflicts:
        note(f"warning: {line}")
    for line in _placement_warnings(path, doc, pyproject):
        note(f"warning: {line}")
    return 0


def _placement_warnings(path: Path, doc: tomlkit.TOMLDocument, pyproject: bool) -> list[str]:
    """Where uv will not read what was written, or where it should not be committed."""
    out = []
    if pyproject:
        # Not "use a uv.toml instead": one beside pyproject.toml hides the project's whole
        # [tool.uv] (uv's configuration docs), PyTorch's index for a cu128 torch included.
        out.append(f"{path} now holds paths of this machine (CUDA_HOME in wheelcuda's cache) "
                   "under [tool.uv]: before committing it, take them out (`wheelcuda "
                   "uv-config --remove --write pyproject.toml`); each machine writes its own")
        if (path.parent / "uv.toml").exists():
            out.append(f"{path.parent / 'uv.toml'} exists: uv reads it and ignores [tool.uv] "
                       f"of {path}")
    else:
        pyproject_file = path.parent / "pyproject.toml"
        if path.name == "uv.toml" and pyproject_file.exists():
            try:
                tool = userfiles.read_toml(pyproject_file).get("tool", {})
                has_uv = isinstance(tool, dict) and "uv" in tool
            except ConfigError:
                has_uv = False
            if has_uv:
                out.append(f"{pyproject_file} has a [tool.uv] table: uv now reads {path} and "
                           "ignores that table; move its settings into " + path.name)
        pip = doc.get("pip")
        if isinstance(pip, dict) and any(k in pip for k in (uvconfig.DEPENDENCIES,
                                                            uvconfig.VARIABLES)):
            out.append(f"{path} has its own [pip] {uvconfig.DEPENDENCIES}/"
                       f"{uvconfig.VARIABLES}: `uv pip` reads those instead of the top level "
                       "wheelcuda wrote; merge them")
    return out


def _remove(args: argparse.Namespace, ctx: Context) -> int:
    if not args.write:
        raise ConfigError("--remove needs the file to take the settings out of",
                          "wheelcuda uv-config --remove --write uv.toml")
    path = Path(ctx.cwd, args.write)
    if not path.exists():
        note(f"{path} does not exist: nothing to remove")
        return 0
    doc = userfiles.read_toml(path)
    names = [p.name for p in uvforms.read(args.packages, ctx)] if args.packages else []
    kept: list[str] = []
    done = uvconfig.remove(doc, pyproject=_is_pyproject(path), packages=names, kept=kept)
    if done:
        userfiles.replace_text(path, tomlkit.dumps(doc))
        note(f"removed wheelcuda's uv settings for {', '.join(done)} from {path}")
    else:
        note(f"{path} holds no settings of wheelcuda's: nothing changed")
    for line in kept:
        note(f"kept {line}")
    return 0
