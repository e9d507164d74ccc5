"""The target environment's own CUDA wheels (``uv pip install "cuda-toolkit[nvcc,cccl]"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..values import SourceName
from .base import Offer

if TYPE_CHECKING:
    from ..context import Context
    from ..store.layout import Layout
    from ..values import Target, Torch

__all__ = ["SOURCE"]


class _Venv:
    name = SourceName.VENV

    def offer(self, target: Target, torch: Torch | None,  # noqa: ARG002 (the protocol's)
              layout: Layout, ctx: Context  # noqa: ARG002
              ) -> Offer | None:
        return Offer(self.name, target.site_dirs, f"the wheels in {target.python}'s site folders")


SOURCE = _Venv()
