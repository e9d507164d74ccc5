"""Which torch uv-config's settings are for: the environment's, else uv.lock's (settings
written before ``uv sync``), and whether the two agree."""

from __future__ import annotations

import argparse
import dataclasses

from ... import _pipeline as pipeline
from ..._context import Context
from ..._probe import frontend, locate, uvlock
from ..._probe import torch as torch_probe
from ..._values import Torch
from ...errors import ConfigError, WheelcudaError
from ..common import note


def lock_agrees(lock_path: str | None, lock: dict[str, object] | None, torch: Torch,
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


def resolve(args: argparse.Namespace, ctx: Context
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
