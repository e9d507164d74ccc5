"""A CUDA toolkit already on this machine (``/usr/local/cuda-12.8``, ``CUDA_HOME``, a
conda environment's cuda-nvcc), offered through a shim of links in wheelcuda's cache
(:mod:`wheelcuda._sources.local.store`), so the tree, the checks and the wheel cache treat it
like the wheels.

Which toolkit: :func:`wheelcuda._sources.local.probe.fit` over the candidates on this
machine (or only the folder given, ``--toolkit PATH``): torch's CUDA major, an exact
major.minor first, then the newest of that major. The offer builds the shim when it is
missing (links only, milliseconds, under the store's lock), as ``env`` builds a tree:
without it no root holds the toolkit. A run that only looks (doctor) links it in its
scratch folder, never in the cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._context import Context
from ..._values import SourceName
from ..base import Offer, Present
from . import probe as localcuda
from . import rules as localfit
from . import store as shims

if TYPE_CHECKING:
    from ..._store.layout import Layout
    from ..._values import Target, Torch


def choose(ctx: Context, torch: Torch | None, layout: Layout, given: str | None = None, *,
           older: bool = True) -> localfit.Fit:
    """The local toolkit for ``torch`` and why (doctor and ``--toolkit local`` say it);
    reads only. wheelcuda's own cache (its trees) is never a candidate."""
    found = localcuda.find(ctx, skip=tuple(dict.fromkeys(
        [str(layout.root), str(layout.toolkits.parent)])), given=given)
    return localfit.fit(found, torch.cuda if torch is not None else None, older=older)


class LocalSource(Present):
    """The ``local`` source; ``given`` is a toolkit folder (``--toolkit PATH``); ``older``:
    a toolkit of an older minor than torch's may serve (not under ``auto``)."""

    name = SourceName.LOCAL
    said = "a local toolkit that fits torch"

    def __init__(self, given: str | None = None, *, older: bool = True) -> None:
        self.given = given
        self.older = older

    def offer(self, target: Target,  # noqa: ARG002 (the protocol's)
              torch: Torch | None, layout: Layout, ctx: Context) -> Offer | None:
        """The shim of the toolkit that fits ``torch``; none, and why, when none does."""
        fit = choose(ctx, torch, layout, self.given, older=self.older)
        if fit.chosen is None:
            return Offer(self.name, (), fit.why)
        root = shims.ensure(layout, fit.chosen)
        where = (f"linked in {root}" if layout.scratch is None
                 or not root.is_relative_to(layout.scratch) else "linked by the first build")
        return Offer(self.name, (str(root),), f"{fit.chosen.describe()}, {where}")

    def present(self, python: str, description: str) -> str:  # noqa: ARG002 (the protocol's)
        return f"a local toolkit serves: {description}; nothing to fetch"


SOURCE = LocalSource()
