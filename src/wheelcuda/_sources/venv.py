"""The target environment's own CUDA wheels (``uv pip install "cuda-toolkit[nvcc,cccl]"``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._values import SourceName
from .base import Offer, Present

if TYPE_CHECKING:
    from .._context import Context
    from .._store.layout import Layout
    from .._values import Target, Torch


class _Venv(Present):
    name = SourceName.VENV
    said = "the environment's compiler wheels"

    def offer(self, target: Target, torch: Torch | None,  # noqa: ARG002 (the protocol's)
              layout: Layout, ctx: Context  # noqa: ARG002
              ) -> Offer | None:
        return Offer(self.name, target.site_dirs, f"the wheels in {target.python}'s site folders")

    def present(self, python: str, description: str) -> str:  # noqa: ARG002 (the protocol's)
        return f"{python} has the compiler wheels itself: nothing to fetch"


SOURCE = _Venv()
