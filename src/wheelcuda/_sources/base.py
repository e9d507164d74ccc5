"""What every toolkit source gives: an :class:`Offer` (what it has now), and, for a
source that can fetch a compiler set, a :class:`Fetch` (what a fetch would bring and
fix) and the fetch itself, through the :class:`Source` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .._rules.checks import Kind, Problem
from .._store import archives

if TYPE_CHECKING:
    from .._context import Context
    from .._rules.clangfit import Clang
    from .._rules.installer import Tool
    from .._store.layout import Layout
    from .._values import SourceName, Target, Torch

#: The errors that say the compiler set is not whole: none at all, parts missing, or
#: one that does not match torch's CUDA.
TOOLKIT_KINDS: tuple[Kind, ...] = (Kind.MISSING, Kind.COMPONENTS, Kind.TORCH)


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


@dataclass(frozen=True)
class Scene:
    """What a source needs to plan or run a fetch for one run."""

    ctx: Context
    layout: Layout
    torch: Torch
    major: int
    python: str
    tool: Tool | None
    #: the clang the clang toolkit would use (None: none serves, or not allowed)
    clang: Clang | None
    #: NVIDIA's archives as asked for (None: torch names no CUDA release)
    want: archives.Want | None
    #: the archives were named on purpose (a folder, a manifest): they stay the choice
    named_archives: bool
    #: what the run does with the compiler ("building with"), for its words
    action: str = "building with"

    @property
    def clang_stands_in(self) -> bool:
        """Whether the clang toolkit takes the place of NVIDIA's archives when they do
        not answer: a clang serves, an installer brings its wheels, and the archives were
        not named on purpose. The one place this fallback is decided."""
        return self.clang is not None and self.tool is not None and not self.named_archives


@dataclass(frozen=True)
class Fetch:
    """What a fetch would bring for the compiler (nothing: ``source`` None)."""

    source: SourceName | None = None
    #: one line: what, how big, from where ("release 12.8.1, linux-x86_64, 81 MB, from ...")
    summary: str = ""
    #: NVIDIA's archives as asked for (also when clang stands in for them)
    want: archives.Want | None = None
    #: the compiler's identity as the wheel cache keys it ("12.8.93", "clang 22.1.8 +
    #: ptxas 12.8.93 (...)"), when known before the fetch; None: known after it
    compiler: str | None = None
    #: NVIDIA's archives were asked and did not answer: why
    unreachable: str | None = None
    #: clang stands in for NVIDIA's archives: what those would have brought
    instead: str = ""
    #: the kinds of error it fixes (the CUDA wheels at torch's pin: only a missing set)
    fixes: tuple[Kind, ...] = ()

    def __bool__(self) -> bool:
        return self.source is not None

    def fixes_all(self, problems: Sequence[Problem]) -> bool:
        """Whether this fetch fixes every error among ``problems`` (a download of hundreds
        of MB must not come before an error it cannot fix)."""
        return self.source is not None and all(p.kind in self.fixes
                                               for p in problems if p.is_error)

    def left(self, problems: Sequence[Problem]) -> list[Problem]:
        """``problems`` less the errors this fetch fixes: what still stops a build that
        fetches first (doctor, ``install --explain``)."""
        return [p for p in problems if not (p.is_error and p.kind in self.fixes)]

    def listing(self) -> str:
        """NVIDIA's archives file by file, each with its URL, size and sha256, for a
        machine offline (``--no-fetch``, ``--explain``); "" when they are not asked (a
        manifest on disk is read for it, so only when said)."""
        return archives.listing(self.want) if self.want is not None else ""


class Source(Protocol):
    """One place a compiler set may come from. A source that fetches nothing has no
    ``fixes``; one that fetches says what a fetch would bring (:meth:`plan`) and
    fetches it (:meth:`fetch`)."""

    #: the source's name, which ``--toolkit`` takes and doctor shows
    name: SourceName
    #: how ``--toolkit auto``'s help names it
    said: str
    #: the errors a fetch from it fixes (none: it fetches nothing)
    fixes: tuple[Kind, ...]

    def offer(self, target: Target, torch: Torch | None, layout: Layout,
              ctx: Context) -> Offer | None:
        """The roots this source has for ``target`` and ``torch``; with no roots, why
        it has none (what it would need); None when there is nothing to say."""

    def plan(self, scene: Scene) -> Fetch:
        """What a fetch from it would bring (reads only)."""

    def fetch(self, scene: Scene) -> Path | None:
        """Fetch it into the store: the compiler set's folder."""


class Present:
    """A source that fetches nothing: it offers what is already there."""

    fixes: tuple[Kind, ...] = ()

    def plan(self, scene: Scene) -> Fetch:  # noqa: ARG002 (the protocol's)
        return Fetch()

    def fetch(self, scene: Scene) -> Path | None:  # noqa: ARG002 (the protocol's)
        return None
