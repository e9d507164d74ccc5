"""The clang toolkit: clang compiling CUDA over NVIDIA's CUDA 12 wheels, for a CUDA 12
torch on a machine that can reach neither NVIDIA's archives nor a local toolkit
(no CUDA 12 wheel holds nvcc). Chosen by ``--toolkit clang``, and by ``auto`` when
NVIDIA's archives cannot be reached (pipeline.acquire) or when the store already holds it.

The offer needs a clang that serves (:mod:`wheelcuda._sources.clang.probe`,
:func:`wheelcuda._sources.clang.rules.fit`) and the CUDA 12 wheels in the store
(``toolkits.fetch(clang=True)``); then it links the root (_sources/clang/store.py) when
missing, as the local source links its shim.
"""

from __future__ import annotations

import functools
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..._probe import locate
from ..._rules import checks
from ..._rules.checks import Kind, Problem, Severity
from ..._store import toolkits
from ..._values import SourceName
from ...errors import ComponentError
from ..base import FETCHERS, FORBIDS, NEED_FETCH, TOOLKIT_KINDS, Asked, Fetch, Offer, Present, Scene
from . import data as clang_data
from . import probe as clang_probe
from . import rules as clangfit
from . import store as clangroot

if TYPE_CHECKING:
    from ..._context import Context
    from ..._store.layout import Layout
    from ..._values import Target, Torch
    from ..choice import Choice


@functools.lru_cache(maxsize=8)
def _find(key: tuple[str, ...], ctx: Context, index: str | None, to_fetch: str
          ) -> tuple[clangfit.Clang, ...]:
    del key  # the cache key: what the search reads
    return tuple(clang_probe.find(ctx, index, to_fetch))


def choose(ctx: Context, archs: Sequence[str], layout: Layout) -> clangfit.Fit:
    """The clang for ``archs`` and why not the others (reads only; probed once a run,
    and again once the package index's clang is fetched)."""
    named = (ctx.get(clang_data.NAMED_VAR) or "").strip()
    found = toolkits.index_clang(layout)
    index = str(found) if found else None
    to_fetch = str(toolkits.index_clang_path(layout))
    key = (named, ctx.get(clang_data.ROOT_VAR) or "", ctx.get("PATH") or "", index or "")
    return clangfit.fit(_find(key, ctx, index, to_fetch), archs,
                        off=named == clang_data.OFF)


def for_run(ctx: Context, layout: Layout, torch: Torch | None, choice: Choice,
            archs: Sequence[str]) -> clangfit.Clang | None:
    """The clang that would serve the clang toolkit for a CUDA 12 torch, when ``choice``
    allows it; else None."""
    if torch is None or not serves(torch) or not choice.allows(SourceName.CLANG):
        return None
    return choose(ctx, archs, layout).chosen


def serves(torch: Torch) -> bool:
    """A CUDA 12 torch of a release whose wheels hold libnvfatbin (12.4 on)."""
    try:
        release = tuple(int(x) for x in (torch.cuda or "").split(".")[:2])
    except ValueError:
        return False
    return torch.cuda_major == 12 and release >= clang_data.MIN_CUDA


class ClangSource(Present):
    """The ``clang`` source for the archs asked (``"9.0"``)."""

    name = SourceName.CLANG
    said = "clang over the CUDA 12 wheels when those cannot be reached"
    #: a whole compiler set of torch's CUDA
    fixes = TOOLKIT_KINDS
    via_installer = True
    by_clang = True
    #: only when named, or standing in for NVIDIA's archives that do not answer
    auto_fetch = False

    def __init__(self, archs: Sequence[str] = ()) -> None:
        self.archs = tuple(archs)

    def offer(self, target: Target,  # noqa: ARG002 (the protocol's)
              torch: Torch | None, layout: Layout, ctx: Context) -> Offer | None:
        if torch is None or torch.cuda is None or torch.cuda_major != 12:
            return None
        if not serves(torch):
            low = ".".join(map(str, clang_data.MIN_CUDA))
            return Offer(self.name, (), f"CUDA {torch.cuda}: the clang toolkit packs GPU code "
                                        f"with libnvfatbin, whose wheels begin at CUDA {low}",
                         f"a torch built with CUDA {low} or newer, or --toolkit redist or local")
        fit = choose(ctx, self.archs, layout)
        if fit.chosen is None:
            return Offer(self.name, (), fit.why, fit.fix)
        clang = fit.chosen
        wheels = toolkits.existing(layout, checks.wanted_specifier(torch, 12), toolkits.CLANG)
        if wheels is None or clang.fetch:
            what, size = ("it and ", 110 + clang_data.INDEX_CLANG_MB) if clang.fetch else ("", 110)
            return Offer(self.name, (), f"{clang.describe()}; {what}the CUDA {torch.cuda} "
                                        "wheels it compiles over are fetched by the first "
                                        f"build (about {size} MB)")
        ptxas = locate.dist_version(str(wheels), "nvidia-cuda-nvcc-cu12") or torch.cuda
        root = clangroot.ensure(layout, wheels, clang, ctx.executable,
                                cuda=".".join(ptxas.split(".")[:2]), ptxas_version=ptxas)
        return Offer(self.name, (str(root),), f"{clang.describe()} over NVIDIA's CUDA "
                                              f"{ptxas} wheels (ptxas {ptxas})")

    def plan(self, scene: Scene) -> Fetch:
        clang, release = scene.clang, scene.torch.cuda or ""
        assert clang is not None
        # a clang still to fetch is said once, with what it is (its description already
        # says "to fetch")
        what = (f"the CUDA {release} wheels for clang {clang.version} (about 110 MB) and "
                f"that clang from the package index ({' + '.join(clang_data.INDEX_CLANG)}, "
                f"about {clang_data.INDEX_CLANG_MB} MB)" if clang.fetch else
                f"the CUDA {release} wheels for {clang.describe()} (about 110 MB)")
        ptxas = clang_data.ptxas_version(release)
        return Fetch(self.name, f"{what} into {scene.layout.toolkits}",
                     compiler=clangroot.compiler_id(clang, scene.ctx.executable, ptxas)
                     if ptxas else None, fixes=self.fixes)

    def fetch(self, scene: Scene) -> Path | None:
        assert scene.tool is not None  # the wheels come through an installer
        if scene.clang is not None and scene.clang.fetch:  # no clang on the machine serves
            toolkits.fetch(scene.layout, scene.ctx, scene.tool, "", python=scene.python,
                           major=scene.major, clang_index=True)
        return toolkits.fetch(scene.layout, scene.ctx, scene.tool,
                              checks.wanted_specifier(scene.torch, scene.major),
                              python=scene.python, major=scene.major, clang=True)

    def can_fetch(self, torch: Torch, *, clang: bool) -> bool:
        return clang and torch.cuda_major == 12

    def stands_in(self, scene: Scene) -> bool:
        """A clang serves, and an installer brings the CUDA wheels it compiles over."""
        return scene.clang is not None and scene.tool is not None

    def instead(self, why: str, scene: Scene) -> str:
        """NVIDIA's archives gave way to the clang toolkit, and why."""
        clang = scene.clang
        assert clang is not None
        return (f"{why}; {scene.action} {clang.describe()} over NVIDIA's CUDA "
                f"{scene.torch.cuda} wheels instead (--toolkit clang; --toolkit redist "
                "insists on NVIDIA's archives)"
                + ("; that clang comes from the package index" if clang.fetch else ""))

    def no_fetch(self, fetch: Fetch, asked: Asked,
                 missing: Problem | None) -> ComponentError:  # noqa: ARG002 (the protocol's)
        why = f" (NVIDIA's archives do not answer: {fetch.unreachable})" \
            if fetch.unreachable else ""
        archives = f"; or bring NVIDIA's archives: {fetch.listing()}" if fetch.want else ""
        return ComponentError(
            f"the clang toolkit needs {fetch.summary}{why}, {FORBIDS}",
            f"run without --no-fetch once, or wheelcuda fetch --python "
            f"{shlex.quote(asked.python)}" + (f" --toolkit {self.name}" if asked.named else "")
            + archives)

    def doctor(self, fetch: Fetch, asked: Asked, problems: Sequence[Problem]) -> list[Problem]:
        """The errors a fetch fixes, said as what install would fetch (as for NVIDIA's
        archives): under ``--toolkit clang``, or ``auto`` with NVIDIA's archives silent."""
        chosen, torch = asked.clang, asked.torch
        assert chosen is not None  # the pipeline's Fetch had it
        why = (f"NVIDIA's archives do not answer ({fetch.unreachable}), so " if
               fetch.unreachable else "")
        toolkit = f" --toolkit {self.name}" if asked.named and not fetch.unreachable else ""
        note = Problem(
            Kind.MISSING,
            f"torch {torch.version} needs a CUDA {torch.cuda} compiler; {why}it builds with "
            f"{chosen.describe()} over NVIDIA's CUDA {torch.cuda} wheels; {FETCHERS} fetch "
            f"{'that clang and ' if chosen.fetch else ''}those (about "
            f"{110 + (clang_data.INDEX_CLANG_MB if chosen.fetch else 0)} MB) into wheelcuda's "
            f"store by themselves, {NEED_FETCH}",
            f"wheelcuda fetch{toolkit} --python {shlex.quote(asked.python)}",
            Severity.WARNING)
        return [note, *fetch.left(problems)]

    def unavailable(self, word: str, why: str | None,
                    fix: str | None, python: str, folder: str) -> Problem:  # noqa: ARG002
        fix = fix or (f"wheelcuda fetch --toolkit {self.name} --python {shlex.quote(python)} "
                      "(install and env fetch the CUDA 12 wheels by themselves unless "
                      "--no-fetch), or --toolkit redist")
        return Problem(Kind.COMPONENTS, f"--toolkit {word}: {why}", fix)


SOURCE = ClangSource()
