"""What this environment has: find the catalog's components under a list of roots.

A root is a folder laid out like site-packages: the target interpreter's site folders,
and later other sources (wheelcuda's own toolkit store). Roots are searched in order
and the first that holds a component wins, as imports would. Versions come from the
distributions' metadata, never from importing anything.

Cost: a few ``stat`` calls per component and one directory listing per root (cached
by importlib), however many packages the environment holds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata

from ..data import catalog
from ..data.catalog import Component


@dataclass(frozen=True)
class Found:
    """One component found under one root, for one CUDA major layout."""

    component: Component
    major: int
    root: str
    folder: str
    version: str | None
    missing: tuple[str, ...]

    @property
    def complete(self) -> bool:
        return not self.missing

    @property
    def wheel(self) -> str:
        return self.component.wheels[self.major]


@dataclass(frozen=True)
class Inventory:
    """Everything found, and where we looked."""

    found: tuple[Found, ...]
    roots: tuple[str, ...]

    def get(self, name: str, major: int) -> Found | None:
        for f in self.found:
            if f.component.name == name and f.major == major:
                return f
        return None

    def majors(self) -> tuple[int, ...]:
        """CUDA majors with at least one compiler component present, newest first."""
        seen = {f.major for f in self.found if f.component.compiler}
        return tuple(m for m in catalog.MAJORS if m in seen)


def dist_version(root: str, name: str) -> str | None:
    """The version of distribution ``name`` installed in ``root``, from its metadata."""
    for dist in metadata.distributions(name=name, path=[root]):
        version = dist.version
        if version:
            return str(version)
    return None


def installed_version(roots: Sequence[str], name: str) -> str | None:
    """The version of ``name`` in the first of ``roots`` that has it installed."""
    return next((v for root in roots if (v := dist_version(root, name))), None)


def _find_in(component: Component, major: int, root: str) -> Found | None:
    folder = os.path.join(root, component.folders[major])
    if not os.path.isdir(folder):
        return None
    files = component.files[major]
    missing = tuple(f for f in files if not os.path.exists(os.path.join(folder, f)))
    version = dist_version(root, component.wheels[major])
    if version is None and len(missing) == len(files):
        return None  # the folder belongs to other wheels (nvidia/cu13 is shared)
    return Found(component, major, root, folder, version, missing)


def locate(roots: Sequence[str], components: Iterable[Component] = catalog.COMPONENTS
           ) -> Inventory:
    """Find each component, for each CUDA major layout, in the first root holding it."""
    found: list[Found] = []
    for component in components:
        for major in catalog.MAJORS:
            for root in roots:
                hit = _find_in(component, major, root)
                if hit is not None:
                    found.append(hit)
                    break
    return Inventory(tuple(found), tuple(roots))
