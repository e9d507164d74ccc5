"""The table of toolkit sources: where a compiler set may come from, one package each.

A source offers folders laid out like site-packages (``roots``) for the CUDA major the
build needs; :mod:`wheelcuda._probe.locate` finds each component in the first root that
holds it, and the pipeline records which source each came from (``found_via``, after
cuda-pathfinder). Order is preference: the target's own wheels, then the store's.

A source that can fetch also says what a fetch would bring and fix, and fetches it
(:class:`~.base.Source`). Adding a source means a package beside this module (its
``source`` module, and its data, rules, probes and store, each named by its layer) and its
row in :data:`SOURCES`; ``--toolkit``'s words and help come from this table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .._values import SourceName
from ..errors import WheelcudaError
from .base import TOOLKIT_KINDS, Asked, Fetch, Offer, Scene, Source
from .choice import Choice
from .clang import source as clang
from .local import source as local
from .redist import source as redist
from .wheels import source as wheels

if TYPE_CHECKING:
    from .._context import Context
    from .._store.layout import Layout
    from .._values import Target, Torch

__all__ = ["SOURCES", "TOOLKIT_KINDS", "WHEELS", "WHEELS_GROUP", "WORDS", "Asked", "Choice",
           "Fetch", "Offer", "Scene", "Served", "Source", "by_name", "by_word", "grouped", "of",
           "offers", "pick", "roots", "serve", "stand_in", "toolkit_help"]


SOURCES: tuple[Source, ...] = (wheels.VENV, wheels.STORE, local.SOURCE, redist.SOURCE,
                                clang.SOURCE)
#: The sources of the CUDA wheels: the target's own, and the store's.
WHEELS = (SourceName.VENV, SourceName.STORE)
#: The name they count as together (a toolkit's source, ``--toolkit wheels``).
WHEELS_GROUP = SourceName.WHEELS
#: ``--toolkit`` words and the sources each allows (None: all, in order of preference).
WORDS: dict[str, tuple[str, ...] | None] = {
    "auto": None, SourceName.WHEELS: WHEELS,
    **{str(s.name): (s.name,) for s in SOURCES if s.name not in WHEELS}}


def grouped(offers: Sequence[Offer]) -> list[tuple[str, list[Offer]]]:
    """The offers by source, in order, the CUDA wheels' (the target's and the store's,
    component by component) as one, ``wheels``."""
    groups: list[tuple[str, list[Offer]]] = []
    for o in offers:
        name = SourceName.WHEELS if o.source in WHEELS else o.source
        if groups and groups[-1][0] == name:
            groups[-1][1].append(o)
        else:
            groups.append((name, [o]))
    return groups


def pick(groups: Sequence[tuple[str, list[Offer]]], offers: Sequence[Offer], *, store: bool,
         complete: Callable[[list[Offer]], bool]) -> tuple[str, list[Offer]]:
    """The first group whose compiler set is ``complete``; else the wheels, which a fetch
    completes (when ``store``, the store, is allowed: with no offer yet); else the first
    group's name, over every offer."""
    chosen = next((g for g in groups if complete(g[1])), None)
    if chosen is not None:
        return chosen
    wheels = next((g for g in groups if g[0] == SourceName.WHEELS), None)
    if wheels is not None:
        return wheels
    if store:
        return SourceName.WHEELS, []
    return (groups[0][0] if groups else SourceName.WHEELS), list(offers)


def roots(offers: Sequence[Offer]) -> tuple[str, ...]:
    """The roots of ``offers``, in order, each once."""
    return tuple(dict.fromkeys(r for o in offers for r in o.roots))


@dataclass(frozen=True)
class Served:
    """Which offers serve one run: the group whose compiler set is taken (``name``,
    ``picked``), the target's own wheels for the headers of torch's libraries (``own``),
    and every offer asked, grouped."""

    name: str
    picked: list[Offer]
    own: list[Offer]
    offers: list[Offer]
    groups: list[tuple[str, list[Offer]]]

    @property
    def others(self) -> tuple[str, ...]:
        """What the other groups offered, or why they did not ("local: none fits")."""
        return tuple(f"{n}: {', '.join(o.summary for o in g)}" for n, g in self.groups
                     if n != self.name)

    @property
    def unserved(self) -> bool:
        """The one group taken has nothing, and no fetch completes it (every group but
        the wheels)."""
        return self.name != SourceName.WHEELS and not roots(self.picked)

    def via(self, root: str, *, compiler: bool) -> str:
        """The source a component found in ``root`` came from; the store's when no
        offer holds it (the headers of torch's libraries, fetched into the store
        whatever source the compiler came from)."""
        pool = self.picked if compiler else [*self.own, *self.offers]
        return next((o.source for o in pool if root in o.roots), SourceName.STORE)


def serve(target: Target, torch: Torch | None, layout: Layout, ctx: Context, choice: Choice,
          *, complete: Callable[[list[Offer]], bool], archs: tuple[str, ...] = ()) -> Served:
    """The offers ``choice`` allows, grouped, and the first group whose set is
    ``complete`` (:func:`pick`); the target's own wheels for torch's libraries, asked
    apart when the choice leaves them out of the compiler's sources."""
    found = offers(target, torch, layout, ctx, only=choice.only, given=choice.given,
                   skip=choice.skipped, archs=archs)
    groups = grouped(found)
    name, picked = pick(groups, found, store=choice.store_wheels, complete=complete)
    own = [o for o in found if o.source == SourceName.VENV]
    if not own and choice.target_libraries:
        own = offers(target, torch, layout, ctx, only=(SourceName.VENV,))
    return Served(name, picked, own, found, groups)


def by_name(name: str) -> Source:
    """The source called ``name``."""
    return next(s for s in SOURCES if s.name == name)


def by_word(word: str) -> Source:
    """The source a ``--toolkit`` word or a toolkit's source names: ``wheels`` (the target's
    and the store's CUDA wheels, which count as one) speaks as the store."""
    return by_name(SourceName.STORE if word == SourceName.WHEELS else word)


def stand_in(source: Source, scene: Scene) -> Source | None:
    """The source that takes ``source``'s place when it does not answer: its fallback,
    when ``source`` may be replaced and the fallback may stand in for this run; else
    None. The one place this is decided."""
    fallback = by_name(source.fallback) if source.fallback else None
    if fallback is None or not source.replaceable(scene):
        return None
    return fallback if fallback.stands_in(scene) else None


def of(fetch: Fetch) -> Source | None:
    """The source ``fetch`` comes from (None: nothing is to fetch)."""
    return by_name(fetch.source) if fetch.source is not None else None


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
