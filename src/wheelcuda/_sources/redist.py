"""The compiler set wheelcuda unpacked from NVIDIA's redistributable archives for torch's
CUDA (``cuda_nvcc``, ``cuda_cudart``, ``cuda_cccl``...; see _store/archives.py): the
only source of a CUDA 12 compiler, since no CUDA 12 wheel holds nvcc."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .._data import redist as redist_data
from .._rules import redist as redist_rules
from .._store import archives, redistroots
from .._values import SourceName
from .base import TOOLKIT_KINDS, Fetch, Offer, Scene

if TYPE_CHECKING:
    from .._context import Context
    from .._store.layout import Layout
    from .._values import Target, Torch


class _Redist:
    name = SourceName.REDIST
    said = "NVIDIA's archives"
    #: a whole compiler set of torch's CUDA
    fixes = TOOLKIT_KINDS

    def offer(self, target: Target,  # noqa: ARG002 (the protocol's)
              torch: Torch | None, layout: Layout,
              ctx: Context) -> Offer | None:
        if torch is None or torch.cuda is None:
            return None
        # a manifest the user named: only its root; else only pinned releases' roots
        found = redistroots.existing(layout, torch.cuda,
                                  manifest=ctx.get(redist_data.MANIFEST_VAR) or None)
        if found is None:
            return Offer(self.name, (), f"nothing fetched for CUDA {torch.cuda} yet (install "
                                        "and fetch bring it when no other source has a "
                                        "compiler, or with --toolkit redist)")
        return Offer(self.name, (str(found),), f"NVIDIA's CUDA archives in wheelcuda's store "
                                               f"({found})")

    def plan(self, scene: Scene) -> Fetch:
        want = scene.want
        assert want is not None
        known = None if want.manifest else redist_rules.known_nvcc(scene.torch.cuda or "",
                                                                    want.host)
        return Fetch(self.name, archives.summary(want), want=want, compiler=known,
                     fixes=self.fixes)

    def fetch(self, scene: Scene) -> Path | None:
        assert scene.want is not None
        return archives.fetch(scene.layout, scene.want)


SOURCE = _Redist()
