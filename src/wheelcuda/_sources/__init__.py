"""Toolkit sources: where a compiler set may come from, one module each.

A source offers folders laid out like site-packages (``roots``) for the CUDA major the
build needs; :mod:`wheelcuda._probe.locate` finds each component in the first root that
holds it, and the pipeline records which source each came from (``found_via``, after
cuda-pathfinder). Order is preference: the target's own wheels, then the store's.

A source that can fetch also says what a fetch would bring and fix, and fetches it
(:class:`~.base.Source`). Adding a source means a module here and its row in
:data:`SOURCES`; ``--toolkit``'s words and help come from this table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._values import SourceName
from ..errors import WheelcudaError
from . import clang, local, redist, store, venv
from .base import TOOLKIT_KINDS, Fetch, Offer, Scene, Source

if TYPE_CHECKING:
    from .._context import Context
    from .._store.layout import Layout
    from .._values import Target, Torch

__all__ = ["SOURCES", "TOOLKIT_KINDS", "WHEELS", "WORDS", "Fetch", "Offer", "Scene", "Source",
           "by_name", "offers", "toolkit_help"]


SOURCES: tuple[Source, ...] = (venv.SOURCE, store.SOURCE, local.SOURCE, redist.SOURCE,
                                clang.SOURCE)
#: The sources of the CUDA wheels: the target's own, and the store's.
WHEELS = (SourceName.VENV, SourceName.STORE)
#: ``--toolkit`` words and the sources each allows (None: all, in order of preference).
WORDS: dict[str, tuple[str, ...] | None] = {
    "auto": None, SourceName.WHEELS: WHEELS,
    **{str(s.name): (s.name,) for s in SOURCES if s.name not in WHEELS}}


def by_name(name: str) -> Source:
    """The source called ``name``."""
    return next(s for s in SOURCES if s.name == name)


def toolkit_help() -> str:
    """``--toolkit``'s help: what ``auto`` tries, in order, and the other words."""
    tried = [s.said for s in SOURCES]
    return (f"where the CUDA compiler comes from: auto (default: {', '.join(tried[:-1])}, "
            f"then {tried[-1]}), {', '.join(w for w in WORDS if w != 'auto')}, or a "
            "toolkit folder")


def offers(target: Target, torch: Torch | None, layout: Layout, ctx: Context, *,
           only: tuple[str, ...] | None = None, given: str | None = None,
           skip: tuple[str, ...] = (), archs: tuple[str, ...] = ()) -> list[Offer]:
    """The offers of the sources named in ``only`` (all when None) less those in
    ``skip``, in order of preference; ``given`` is a toolkit folder (``--toolkit PATH``):
    the local source looks at that one only; ``archs`` (``"9.0"``): the clang source
    takes a clang that builds them."""
    def configured(s: Source) -> Source:
        if s.name == SourceName.LOCAL:
            return local.LocalSource(given, older=only is not None)
        if s.name == SourceName.CLANG:
            return clang.ClangSource(archs)
        return s

    chosen = [configured(s) for s in SOURCES
              if (only is None or s.name in only) and s.name not in skip]
    return [o for s in chosen if (o := _offer(s, target, torch, layout, ctx)) is not None]


def _offer(source: Source, target: Target, torch: Torch | None, layout: Layout,
           ctx: Context) -> Offer | None:
    """One source's offer; one that fails (a folder it cannot write) offers nothing and
    says why, so that it stops no run another source serves."""
    try:
        return source.offer(target, torch, layout, ctx)
    except WheelcudaError as exc:
        return Offer(source.name, (), f"unusable: {exc.message}")
