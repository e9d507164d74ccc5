"""The wheel tags an interpreter on this machine installs (PEP 425), as pip and uv judge
them: :mod:`packaging.tags` for the target's CPython version and this machine's
platforms (its glibc's ``manylinux_2_N`` and older, never musllinux on a glibc system,
never another OS), not a match on the file name's suffix."""

from __future__ import annotations

import functools

from packaging import tags


@functools.lru_cache(maxsize=4)
def supported(python: tuple[int, int]) -> frozenset[tags.Tag]:
    """The tags a CPython of ``python`` (major, minor) on this machine installs."""
    return frozenset([*tags.cpython_tags(python_version=python),
                      *tags.compatible_tags(python_version=python,
                                            interpreter=f"cp{python[0]}{python[1]}")])
