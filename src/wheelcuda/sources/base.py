"""What every toolkit source gives: an :class:`Offer`, through the :class:`Source` protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..context import Context
    from ..store.layout import Layout
    from ..values import Target, Torch

__all__ = ["Offer", "Source"]


@dataclass(frozen=True)
class Offer:
    """What one source has for this build: its name, its roots, and what it is; no
    roots when it has nothing, ``description`` then saying why (doctor shows it)."""

    source: str
    roots: tuple[str, ...]
    description: str
    #: with no roots: what would make the source serve, when it knows (kept apart, so
    #: that an error names it as its fix)
    fix: str = ""

    @property
    def summary(self) -> str:
        """The description, with the fix when there is one (doctor's lines)."""
        return f"{self.description} (fix: {self.fix})" if self.fix else self.description


class Source(Protocol):
    @property
    def name(self) -> str:
        """The source's name (a :class:`wheelcuda.values.SourceName`)."""

    def offer(self, target: Target, torch: Torch | None, layout: Layout,
              ctx: Context) -> Offer | None:
        """The roots this source has for ``target`` and ``torch``; with no roots, why
        it has none (what it would need); None when there is nothing to say."""
