"""Toolkit sources: where a compiler set may come from, one module each.

A source offers folders laid out like site-packages (``roots``) for the CUDA major the
build needs; :mod:`wheelcuda.probe.locate` finds each component in the first root that
holds it, and the pipeline records which source each came from (``found_via``, after
cuda-pathfinder). Order is preference: the target's own wheels, then the store's.
Adding a source (NVIDIA's archives, a local toolkit) means adding a module here and
naming it in :data:`SOURCES`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import store, venv
from .base import Offer, Source

if TYPE_CHECKING:
    from ..probe.interpreter import Target
    from ..probe.torch import Torch
    from ..store.layout import Layout

__all__ = ["SOURCES", "Offer", "Source", "offers"]


SOURCES: tuple[Source, ...] = (venv.SOURCE, store.SOURCE)


def offers(target: Target, torch: Torch | None, layout: Layout) -> list[Offer]:
    """Every source's offer, in order of preference."""
    return [o for s in SOURCES if (o := s.offer(target, torch, layout)) is not None]
