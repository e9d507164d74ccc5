"""Which clang serves the clang toolkit, and why the others do not (pure).

A clang serves when it runs, has an NVPTX backend and clang's CUDA wrapper headers, is
no older than :data:`~wheelcuda._sources.clang.data.MIN_MAJOR`, and knows every arch asked for
(sm_120 needs clang 20: :func:`~wheelcuda._sources.clang.data.clang_for`). Of those, by
:attr:`Clang.rank`: the one the user named (then the only candidate), the package
index's already in the store, the system's (newest first), and last the package index's
still to fetch (126 MB: not when the machine has a clang that serves).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from . import data as clang_data


@dataclass(frozen=True)
class Clang:
    """One clang++ and what it can do."""

    path: str
    origin: str  # "WHEELCUDA_CLANG", "system package", "PATH"
    version: str | None  # "22.1.8"
    resource_dir: str = ""
    wrappers: bool = False  # __clang_cuda_runtime_wrapper.h in its resource dir
    nvptx: bool = False
    why: str = ""  # why it does not run, when it does not
    #: preference, lower first: named (0), the package index's in the store (1), the
    #: system's (2, newest first), the package index's still to fetch (3)
    rank: int = 2
    #: the package index's clang, to fetch before it can run
    fetch: bool = False

    @property
    def major(self) -> int:
        return major(self.version)

    def describe(self) -> str:
        return f"clang {self.version} ({self.path}, {self.origin})"


def major(version: str | None) -> int:
    try:
        return int((version or "").split(".")[0])
    except ValueError:
        return 0


@dataclass(frozen=True)
class Fit:
    chosen: Clang | None
    #: one line per candidate not taken, and why
    passed_over: tuple[str, ...]
    #: why none serves (with the fix), when none does
    why: str = ""
    fix: str = ""


def _refusal(c: Clang, need: int, archs: Sequence[str]) -> str | None:  # noqa: PLR0911
    if c.version is None:
        return c.why or "not a clang"
    if c.why:
        return c.why
    if not c.nvptx:
        return "has no NVPTX backend (it cannot make GPU code)"
    if not c.wrappers:
        return (f"lacks clang's CUDA wrapper headers ({c.resource_dir}/include/"
                "__clang_cuda_runtime_wrapper.h)")
    if c.major < clang_data.MIN_MAJOR:
        return f"is older than clang {clang_data.MIN_MAJOR} (torch's headers need newer)"
    if c.major < need:
        asked = ", ".join(f"sm_{a.replace('.', '')}" for a in archs
                          if clang_data.clang_for(a) > c.major)
        return f"cannot build {asked} (needs clang {need} or newer)"
    return None


def fit(candidates: Sequence[Clang], archs: Sequence[str], *, off: bool = False) -> Fit:
    """The newest clang that builds ``archs`` (``"12.0"``), and why not the others;
    ``off``: the user turned the clang toolkit off (WHEELCUDA_CLANG=none)."""
    if off:
        return Fit(None, (), f"{clang_data.NAMED_VAR}={clang_data.OFF}: no clang is looked at",
                   f"unset {clang_data.NAMED_VAR}, or name a clang++ in it")
    need = max([clang_data.clang_for(a) for a in archs] or [clang_data.MIN_MAJOR])
    usable = []
    passed = []
    for c in candidates:
        refusal = _refusal(c, need, archs)
        if refusal is None:
            usable.append(c)
        else:
            passed.append(f"{c.path} ({c.origin}{', clang ' + c.version if c.version else ''})"
                          f": {refusal}")
    usable.sort(key=lambda c: (-c.rank, tuple(int(p) for p in (c.version or "0").split(".")
                                              if p.isdigit())), reverse=True)
    if usable:
        chosen = usable[0]
        passed = [f"{c.describe()}: {chosen.describe()} comes first" for c in usable[1:]] \
            + passed
        return Fit(chosen, tuple(passed))
    why = (f"no clang {need} or newer with CUDA support was found" if not passed else
           f"no clang found serves: {'; '.join(passed)}")
    return Fit(None, tuple(passed), why, clang_data.install_hint(need))
