"""What this environment has: find the catalog's components under a list of roots.

A root is a folder laid out like site-packages: the target interpreter's site folders,
and later other sources (wheelcuda's own toolkit store). Roots are searched in order
and the first that holds a component wins, as imports would, with one exception: a
part that nvcc requires with no version bound (runtime, nvvm, crt) is taken from the
first root whose copy is of nvcc's own CUDA release. pip's isolated build environment
has two prefixes, installed by separate pip runs; the second resolves
``nvidia-cuda-nvcc==13.0.*`` without seeing the first, and brings the newest runtime
(13.5) beside the 13.0 one torch brought (docs/facts.md). The copy passed over is
``shadowed``: its files are kept out of the tree. Versions come from the
distributions' metadata, never from importing anything.

Cost: a few ``stat`` calls per component and one directory listing per root (cached
by importlib), however many packages the environment holds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from importlib import metadata

from .._data import catalog
from .._data.catalog import Component
from .._rules.checks import prefer_release, release
from .._values import Found, Inventory


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


def dist_files(root: str, name: str) -> tuple[str, ...]:
    """The files distribution ``name`` installed under ``root`` (its RECORD), absolute."""
    for dist in metadata.distributions(name=name, path=[root]):
        return tuple(os.path.normpath(os.path.join(root, str(f))) for f in dist.files or ())
    return ()


def locate(roots: Sequence[str], components: Iterable[Component] = catalog.COMPONENTS
           ) -> Inventory:
    """Find each component, for each CUDA major layout, in the first root holding it
    (for the parts nvcc leaves unbounded: the first of nvcc's release)."""
    found: list[Found] = []
    shadowed: list[Found] = []
    for component in components:
        for major in catalog.MAJORS:
            hits = [h for root in roots if (h := _find_in(component, major, root))]
            if not hits:
                continue
            nvcc = next((f for f in found if f.component is catalog.NVCC and f.major == major),
                        None)
            wanted = release(nvcc.version) if nvcc and component.pin_release else None
            chosen = prefer_release([(h.version, h) for h in hits], wanted)
            found.append(chosen)
            # another release's copy: its files must not reach the tree (same release:
            # the first root wins, as imports do, and nothing needs saying)
            shadowed += [h for h in hits if h is not chosen
                         and release(h.version) != release(chosen.version)]
    return Inventory(tuple(found), tuple(roots), tuple(shadowed))
