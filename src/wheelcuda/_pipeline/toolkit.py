"""Which compiler set serves a run, read only: the sources' offers grouped (the wheels
count as one source), the first whole set for torch's CUDA major taken, every
component located with where it came from; and the tree planned over it (pure once the
folders are listed)."""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .. import _standalone as standalone
from .._context import Context
from .._data import catalog
from .._probe import locate
from .._rules import checks, packages, pins
from .._rules import tree as plan
from .._rules.checks import Problem
from .._sources import table as sources
from .._sources.choice import Choice
from .._store import toolkits
from .._store.layout import Layout
from .._values import Found, Inventory, Target, Torch


@dataclass(frozen=True)
class Toolkit:
    """The compiler set found for the target, and where each part came from."""

    major: int
    inventory: Inventory
    found_via: Mapping[str, str]  # component name -> source name ("venv", "store")
    fetched: Path | None = None  # the store folder fetched during this run
    #: where the compiler set comes from ("wheels", "local", "redist"), and what it is
    source: str = sources.WHEELS_GROUP
    description: str = ""
    #: what the other sources would have offered, or why they did not ("local: none fits")
    others: tuple[str, ...] = ()
    #: why the one source allowed has nothing (``--toolkit local`` and none fits)
    unavailable: str | None = None
    #: what would make it serve, when that source knows (the clang to install)
    unavailable_fix: str | None = None
    #: the compiler is clang, not nvcc (its source's ``by_clang``)
    by_clang: bool = False

    def compiler_parts(self) -> list[Found]:
        return [f for c in catalog.COMPILER if (f := self.inventory.get(c.name, self.major))]


def locate_toolkit(target: Target, torch: Torch | None, layout: Layout, ctx: Context,
                   fetched: Path | None = None, *, choice: Choice | None = None,
                   archs: tuple[str, ...] = ()) -> Toolkit:
    """The compiler set from ONE source, the first whose set is complete for torch's
    CUDA major (the CUDA wheels count as one: the target's and the store's, component by
    component), else the wheels (what a fetch would complete); the headers of
    torch's libraries from the target first (see :class:`Choice`)."""
    major = torch.cuda_major if torch is not None and torch.cuda_major in catalog.MAJORS \
        else None
    served = sources.serve(
        target, torch, layout, ctx, choice or Choice(), archs=archs,
        complete=lambda g: major is not None and _complete(
            locate.locate(sources.roots(g), catalog.COMPILER), major))
    compiler_roots = sources.roots(served.picked)
    headers = headers_folder(layout, torch)
    library_roots = tuple(dict.fromkeys([*sources.roots(served.own), *compiler_roots,
                                         *([str(headers)] if headers else [])]))
    compiler = locate.locate(compiler_roots, catalog.COMPILER)
    inventory = Inventory(
        compiler.found + locate.locate(library_roots, catalog.LIBRARIES).found,
        tuple(dict.fromkeys(compiler_roots + library_roots)), compiler.shadowed)
    via: dict[str, str] = {}
    for f in inventory.found:
        via.setdefault(f.component.name, served.via(f.root, compiler=f.component.compiler))
    picked = served.picked
    why = "; ".join(o.description for o in picked) if served.unserved else None
    fix = "; ".join(o.fix for o in picked if o.fix) if served.unserved else None
    return Toolkit(checks.choose_major(inventory, torch), inventory, via, fetched, served.name,
                   "; ".join(o.summary for o in picked), served.others, why, fix or None,
                   by_clang=sources.by_word(served.name).by_clang)


def unavailable(toolkit: Toolkit, torch: Torch | None, python: str) -> Problem:
    """The one source allowed has nothing: why, and the other ways, in its words."""
    cuda = torch.cuda if torch is not None and torch.cuda else f"{toolkit.major}.x"
    folder = f"--toolkit /path/to/cuda-{cuda} (the folder holding bin/nvcc)"
    return sources.by_word(toolkit.source).unavailable(
        toolkit.source, toolkit.unavailable, toolkit.unavailable_fix, python, folder)


def _complete(inventory: Inventory, major: int) -> bool:
    return all((f := inventory.get(c.name, major)) is not None and f.complete
               for c in catalog.COMPILER if major in c.wheels)


def component_problems(toolkit: Toolkit, torch: Torch | None, target: Target
                        ) -> list[Problem]:
    return checks.component_problems(toolkit.inventory, toolkit.major, torch, target.python)


def headers_folder(layout: Layout, torch: Torch | None) -> Path | None:
    """The store's headers of torch's libraries for ``torch``, when fetched."""
    if torch is None or torch.cuda_major not in catalog.MAJORS:
        return None
    major = torch.cuda_major
    wanted = pins.header_requirements(torch, major)
    return toolkits.existing(layout, checks.wanted_specifier(torch, major),
                             toolkits.headers_kind(wanted))


def missing_headers(toolkit: Toolkit) -> bool:
    """torch's library headers are not found."""
    return any(toolkit.inventory.get(name, toolkit.major) is None
               for name in catalog.HEADER_LIBRARIES)


def tree_for(ctx: Context, layout: Layout, toolkit: Toolkit) -> plan.TreePlan:
    """The tree for this component set (pure once the folders are listed)."""
    found = [f for f in toolkit.inventory.found if f.major == toolkit.major]
    folders = list(dict.fromkeys(f.folder for f in found))
    metas = (locate.dist_version(r, catalog.METAPACKAGE) for r in toolkit.inventory.roots)
    release = checks.compiler_release(toolkit.inventory, toolkit.major)
    cuda = next((v for v in metas if v), None) or f"{release}.0"
    parts = [(f.component.name, f.version, f.folder) for f in found]
    # The wrapper runs on this Python: each wheelcuda installation gets its own tree.
    # version.json holds the metapackage's version: a change there is a new tree too.
    parts += [("wrapper", _wrapper_version(), ctx.executable), (catalog.METAPACKAGE, cuda, "")]
    # a copy passed over for one of nvcc's release (locate) keeps its files out
    hidden = frozenset(path for f in toolkit.inventory.shadowed if f.major == toolkit.major
                       for path in locate.dist_files(f.root, f.wheel))
    parts += [("shadowed", f.version, f.folder) for f in toolkit.inventory.shadowed]
    key = plan.tree_key(toolkit.major, parts, catalog.target_dir())
    versions = {f.component.name: f.version for f in toolkit.compiler_parts() if f.version}
    return plan.plan_tree(key, folders, plan.os_listdir, versions=versions,
                          cuda=".".join(cuda.split(".")[:3]), target_dir=catalog.target_dir(),
                          wrapper=plan.wrapper_files(ctx.executable, str(layout.home(key)),
                                                     _modules(),
                                                     _facts(str(layout.events),
                                                            str(layout.pool),
                                                            str(layout.views),
                                                            not toolkit.by_clang)),
                          hidden=hidden)


@functools.cache
def _modules() -> tuple[tuple[str, str], ...]:
    """The standalone modules the wrapper runs with, copied beside it."""
    return tuple((name, standalone.source(name)) for name in plan.WRAPPER_MODULES)


@functools.cache
def _facts(events: str, pool: str, views: str, split: bool) -> str:
    """The tree's facts (_rules/tree.py): its cache's events folder and fallback pool, the
    recipes' memory and seconds; --split-compile for NVIDIA's nvcc only (clang ignores
    it)."""
    return plan.tree_facts(events, pool=pool, views=views, recipes=packages.tree_recipes(),
                           split=split)


def _wrapper_version() -> str:
    blob = "".join(text for _, text in _modules())
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


def found_problems(toolkit: Toolkit, torch: Torch | None, target: Target, *,
                   need_torch: bool) -> list[Problem]:
    """The toolkit's problems; when the one source allowed has nothing, why, in place of
    its errors. None when torch is needed and missing: its CUDA decides which compiler
    set a build needs (advice for CUDA 13 is wrong for someone about to install a cu128
    torch), so the missing torch is the one thing to say."""
    if torch is None and need_torch:
        return []
    found = component_problems(toolkit, torch, target)
    if toolkit.unavailable:
        found = [unavailable(toolkit, torch, target.python),
                 *(p for p in found if not p.is_error)]
    return found

