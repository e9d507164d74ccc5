"""NVIDIA's CUDA wheels as two sources that count as one: the target environment's own
(``uv pip install "cuda-toolkit[nvcc,cccl]"``), and the compiler set wheelcuda fetched
into its store for torch's CUDA (``wheelcuda install`` fetches it when the environment
lacks one; see _store/toolkits.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ..._data import catalog
from ..._rules import checks
from ..._rules.checks import Kind
from ..._store import toolkits
from ..._values import SourceName
from ..base import Fetch, Offer, Present, Scene

if TYPE_CHECKING:
    from ..._context import Context
    from ..._store.layout import Layout
    from ..._values import Target, Torch


class _Venv(Present):
    name = SourceName.VENV
    said = "the environment's compiler wheels"

    def offer(self, target: Target, torch: Torch | None,  # noqa: ARG002 (the protocol's)
              layout: Layout, ctx: Context  # noqa: ARG002
              ) -> Offer | None:
        return Offer(self.name, target.site_dirs, f"the wheels in {target.python}'s site folders")

    def present(self, python: str, description: str) -> str:  # noqa: ARG002 (the protocol's)
        return f"{python} has the compiler wheels itself: nothing to fetch"


VENV = _Venv()


class _Store(Present):
    name = SourceName.STORE
    said = "wheelcuda's store"
    #: the CUDA wheels at torch's pin fix only a missing set (the parts there stay)
    fixes: tuple[Kind, ...] = (Kind.MISSING,)
    via_installer = True

    def can_fetch(self, torch: Torch, *, clang: bool) -> bool:  # noqa: ARG002
        """The package index's wheels hold a compiler for CUDA 13, not 12 (only ptxas)."""
        return torch.cuda_major in catalog.WHEEL_COMPILER_MAJORS

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

    def plan(self, scene: Scene) -> Fetch:
        spec = checks.wanted_specifier(scene.torch, scene.major)
        return Fetch(self.name, f"{catalog.toolkit_requirements(spec)[0]} (about "
                                f"{catalog.COMPILER_WHEELS_MB} MB) into "
                                f"{toolkits.folder(scene.layout, spec)}", fixes=self.fixes)

    def fetch(self, scene: Scene) -> Path | None:
        assert scene.tool is not None  # the wheels come through an installer
        return toolkits.fetch(scene.layout, scene.ctx, scene.tool,
                              checks.wanted_specifier(scene.torch, scene.major),
                              python=scene.python, major=scene.major)


STORE = _Store()
