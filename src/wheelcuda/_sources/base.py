"""What every toolkit source gives: an :class:`Offer` (what it has now), and, for a
source that can fetch a compiler set, a :class:`Fetch` (what a fetch would bring and
fix) and the fetch itself, through the :class:`Source` protocol."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .._rules.checks import Kind, Problem, Severity
from ..errors import ComponentError
from .redist import store_archives as archives

if TYPE_CHECKING:
    from .._context import Context
    from .._rules.installer import Tool
    from .._store.layout import Layout
    from .._values import SourceName, Target, Torch
    from .clang.rules import Clang

#: The errors that say the compiler set is not whole: none at all, parts missing, or
#: one that does not match torch's CUDA.
TOOLKIT_KINDS: tuple[Kind, ...] = (Kind.MISSING, Kind.COMPONENTS, Kind.TORCH)
#: Who fetches a missing compiler by themselves (uv-config too: a user in a uv project
#: runs it next), and who needs `wheelcuda fetch` first.
FETCHERS = "`wheelcuda install`, `env` and `uv-config`"
NEED_FETCH = "`home` and `run` need `wheelcuda fetch` first"
#: what --no-fetch's error adds when a fetch is what is missing
FORBIDS = "and --no-fetch forbids fetching them"


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
    #: the folder the user brought a fetch's files into (``fetch --from``), relative to
    #: the working folder; None: downloaded
    fetch_from: str | None = None
    #: what the run does with the compiler ("building with"), for its words
    action: str = "building with"


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
    #: the source asked did not answer (NVIDIA's archives): why
    unreachable: str | None = None
    #: another source stands in for the one that did not answer (``replaced``): what
    #: that one would have brought
    instead: str = ""
    replaced: SourceName | None = None
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


@dataclass(frozen=True)
class Asked:
    """Whom a source's words about its fetch are for (doctor, ``--no-fetch``): torch,
    the target's Python, whether ``--toolkit`` named this source, the manifest named,
    and the clang the clang toolkit would use."""

    torch: Torch
    python: str
    named: bool = False
    manifest: str | None = None
    clang: Clang | None = None


class Source(Protocol):
    """One place a compiler set may come from. A source that fetches nothing has no
    ``fixes``; one that fetches says what a fetch would bring (:meth:`plan`), fetches
    it (:meth:`fetch`), and says it to doctor, ``--explain`` and ``--no-fetch``. The
    pipeline and the commands ask the source; none of them names one."""

    #: the source's name, which ``--toolkit`` takes and doctor shows
    name: SourceName
    #: how ``--toolkit auto``'s help names it
    said: str
    #: the errors a fetch from it fixes (none: it fetches nothing)
    fixes: tuple[Kind, ...]
    #: its fetch runs through an installer (uv or pip): without one it cannot run
    via_installer: bool
    #: the source that stands in when this one does not answer (None: none does)
    fallback: SourceName | None
    #: what its fetch brings, in words (said when another stands in for it)
    brings: str
    #: its compiler is clang, not nvcc: clang compiles the host half too, and sccache
    #: cannot send its CUDA compiles to build servers
    by_clang: bool
    #: ``--toolkit auto`` may fetch from it (else only when named: ``--toolkit clang``, or
    #: as another's fallback); among those, the first in SOURCES that can fetch is taken
    auto_fetch: bool
    #: while its fetch is still to run, doctor names torch's cu130 build as the other way
    #: (its compiler comes as wheels from the package index) where the driver runs CUDA 13
    move_instead: bool

    def offer(self, target: Target, torch: Torch | None, layout: Layout,
              ctx: Context) -> Offer | None:
        """The roots this source has for ``target`` and ``torch``; with no roots, why
        it has none (what it would need); None when there is nothing to say."""

    def plan(self, scene: Scene) -> Fetch:
        """What a fetch from it would bring (reads only)."""

    def fetch(self, scene: Scene) -> Path | None:
        """Fetch it into the store: the compiler set's folder."""

    def can_fetch(self, torch: Torch, *, clang: bool) -> bool:
        """Whether a fetch from it brings a compiler set for ``torch`` (``clang``: a clang
        serves the clang toolkit)."""

    def stands_in(self, scene: Scene) -> bool:
        """Whether it may take the place of a source that does not answer."""

    def replaceable(self, scene: Scene) -> bool:
        """Whether its fallback may take its place when it does not answer (not when the
        user named what to fetch from it)."""

    def instead(self, why: str, scene: Scene) -> str:
        """The warning that it stands in for a source that did not answer (``why``)."""

    def silent(self, fetch: Fetch, torch: Torch) -> Problem | None:
        """The error when it is the only source left and does not answer."""

    def explain(self, fetch: Fetch) -> str:
        """What ``--explain`` lists for its fetch."""

    def no_fetch(self, fetch: Fetch, asked: Asked, missing: Problem | None) -> ComponentError:
        """``--no-fetch``'s error when its fetch is what is missing (``missing``: the
        error that says so, when there is one)."""

    def doctor(self, fetch: Fetch, asked: Asked, problems: Sequence[Problem]) -> list[Problem]:
        """doctor's problems when its fetch is still to run: what install fetches by
        itself is no error for install's sake, but said, with ``wheelcuda fetch`` for
        ``home`` and ``run``, which never download by themselves."""

    def present(self, python: str, description: str) -> str:
        """What ``wheelcuda fetch`` says when it serves already (``python``: the target's;
        ``description``: the toolkit's), so nothing is fetched."""

    def unavailable(self, word: str, why: str | None, fix: str | None, python: str,
                    folder: str) -> Problem:
        """``--toolkit WORD`` allows this source alone, and it has nothing (``why``; ``fix``:
        what would make it serve, when it knows): the error, with the other ways
        (``folder``: ``--toolkit`` with a toolkit folder)."""


class Present:
    """A source that fetches nothing, and the words of one that does, which a fetching
    source keeps or overrides: the CUDA wheels' (their set at torch's pin)."""

    fixes: tuple[Kind, ...] = ()
    via_installer = False
    fallback: SourceName | None = None
    brings = "its compiler set"
    by_clang = False
    auto_fetch = True
    move_instead = False

    def plan(self, scene: Scene) -> Fetch:  # noqa: ARG002 (the protocol's)
        return Fetch()

    def fetch(self, scene: Scene) -> Path | None:  # noqa: ARG002 (the protocol's)
        return None

    def can_fetch(self, torch: Torch, *, clang: bool) -> bool:  # noqa: ARG002
        return False

    def stands_in(self, scene: Scene) -> bool:  # noqa: ARG002 (the protocol's)
        return False

    def replaceable(self, scene: Scene) -> bool:  # noqa: ARG002 (the protocol's)
        return True

    def instead(self, why: str, scene: Scene) -> str:  # noqa: ARG002 (the protocol's)
        return why

    def silent(self, fetch: Fetch, torch: Torch) -> Problem | None:  # noqa: ARG002
        return None

    def explain(self, fetch: Fetch) -> str:
        return fetch.summary

    def no_fetch(self, fetch: Fetch, asked: Asked,  # noqa: ARG002 (the protocol's)
                 missing: Problem | None) -> ComponentError:
        message = missing.message if missing else f"the compiler set is missing: {fetch.summary}"
        return ComponentError(f"{message} ({FORBIDS})", missing.fix if missing else None)

    def doctor(self, fetch: Fetch, asked: Asked,  # noqa: ARG002 (the protocol's)
               problems: Sequence[Problem]) -> list[Problem]:
        return [Problem(p.kind, f"{p.message}; {FETCHERS} fetch them into wheelcuda's store "
                        f"by themselves, {NEED_FETCH}", p.fix, Severity.WARNING)
                if p.kind in fetch.fixes else p for p in problems]

    def present(self, python: str, description: str) -> str:  # noqa: ARG002 (the protocol's)
        return "the compiler set was already in wheelcuda's store"

    def unavailable(self, word: str, why: str | None,
                    fix: str | None, python: str, folder: str) -> Problem:  # noqa: ARG002
        return Problem(Kind.COMPONENTS, f"--toolkit {word}: {why}",
                       f"--toolkit auto (the wheels, NVIDIA's archives), or {folder}")
