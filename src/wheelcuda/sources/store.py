"""The compiler set wheelcuda fetched into its store for torch's CUDA (``wheelcuda
install`` fetches it when the environment lacks one; see store/toolkits.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..rules import checks
from ..store import toolkits
from ..values import SourceName
from .base import Offer

if TYPE_CHECKING:
    from ..context import Context
    from ..store.layout import Layout
    from ..values import Target, Torch

__all__ = ["SOURCE"]


class _Store:
    name = SourceName.STORE

    def offer(self, target: Target,  # noqa: ARG002 (the protocol's)
              torch: Torch | None, layout: Layout,
              ctx: Context) -> Offer | None:  # noqa: ARG002
        if torch is None or torch.cuda_major is None:
            return None
        spec = checks.wanted_specifier(torch, torch.cuda_major)
        found = toolkits.existing(layout, spec)
        if found is None:
            return None
        # the headers of torch's libraries are the pipeline's (every source's trees)
        return Offer(self.name, (str(found),), f"wheelcuda's store ({found})")


SOURCE = _Store()
