"""The compiler set wheelcuda fetched into its store for torch's CUDA (``wheelcuda
install`` fetches it when the environment lacks one; see store/toolkits.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rules import checks
from ..store import toolkits
from .base import Offer

if TYPE_CHECKING:
    from ..probe.interpreter import Target
    from ..probe.torch import Torch
    from ..store.layout import Layout


class _Store:
    name = "store"

    def offer(self, target: Target,  # noqa: ARG002 (the protocol's)
              torch: Torch | None, layout: Layout) -> Offer | None:
        if torch is None or torch.cuda_major is None:
            return None
        fetched = toolkits.existing(layout, checks.wanted_specifier(torch, torch.cuda_major))
        if fetched is None:
            return None
        return Offer(self.name, (str(fetched),), f"wheelcuda's store ({fetched})")


SOURCE = _Store()
