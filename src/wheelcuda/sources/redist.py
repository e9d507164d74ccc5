"""The compiler set wheelcuda unpacked from NVIDIA's redistributable archives for torch's
CUDA (``cuda_nvcc``, ``cuda_cudart``, ``cuda_cccl``...; see store/archives.py): the
only source of a CUDA 12 compiler, since no CUDA 12 wheel holds nvcc."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..data import redist as redist_data
from ..store import redistroots
from ..values import SourceName
from .base import Offer

if TYPE_CHECKING:
    from ..context import Context
    from ..store.layout import Layout
    from ..values import Target, Torch

__all__ = ["SOURCE"]


class _Redist:
    name = SourceName.REDIST

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


SOURCE = _Redist()
