"""A compiler source is a strategy: the pipeline and the commands ask it, and none of them
names it. docs/development.md says a new fetching source (a conda `cuda-nvcc`, say) is its
own module and a row in SOURCES; here one that no code names is put in that row, and
which source a fetch takes, what it plans, what doctor, ``--explain`` and ``--no-fetch``
say, and what an acquire fetches all follow without an edit elsewhere.

What this does not show: ``--toolkit conda`` (its word comes from SOURCES when the module
is imported, with the SourceName the row needs) and a real download."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from types import SimpleNamespace

import pytest

from wheelcuda._commands import doctor
from wheelcuda._commands.install import explain as install_plan
from wheelcuda._context import Context
from wheelcuda._data import settings as registry
from wheelcuda._pipeline import Resolved, acquire, fetchplan
from wheelcuda._pipeline.request import Request
from wheelcuda._rules.checks import Kind, Problem, Severity
from wheelcuda._rules.installer import Pip
from wheelcuda._sources import table as sources
from wheelcuda._sources.base import TOOLKIT_KINDS, Fetch, Present, Scene
from wheelcuda._sources.choice import Choice
from wheelcuda._sources.clang.rules import Clang
from wheelcuda._store.layout import Layout
from wheelcuda._values import Torch
from wheelcuda.errors import ComponentError

CU128 = Torch("2.10.0+cu128", "12.8", "/site/torch", None)
MISSING = Problem(Kind.MISSING, "no CUDA 12.8 compiler", "fetch one")
BROKEN = Problem(Kind.COMPONENTS, "nvcc 12.8 lacks cicc", "reinstall it")


class _Conda(Present):
    """A source no code names: conda-forge's nvcc, on paper."""

    name = "conda"  # type: ignore[assignment] (a SourceName in the real row)
    said = "conda-forge's cuda-nvcc"
    fixes = TOOLKIT_KINDS
    fetched: list[Scene]

    def __init__(self) -> None:
        self.fetched = []

    def offer(self, target: object, torch: object, layout: object,
              ctx: object) -> None:
        return None

    def can_fetch(self, torch: Torch, *, clang: bool) -> bool:
        return torch.cuda_major == 12

    def plan(self, scene: Scene) -> Fetch:
        return Fetch(self.name, f"cuda-nvcc {scene.torch.cuda} from conda-forge (about 60 MB)",
                     fixes=self.fixes)

    def fetch(self, scene: Scene) -> Path | None:
        self.fetched.append(scene)
        return Path("/store/conda-12.8")


@pytest.fixture
def conda(monkeypatch: pytest.MonkeyPatch) -> _Conda:
    """The source in SOURCES before NVIDIA's archives: ``auto`` fetches from it first."""
    source = _Conda()
    rows = list(sources.SOURCES)
    rows.insert(rows.index(sources.by_name("redist")), source)  # type: ignore[arg-type]
    monkeypatch.setattr(sources, "SOURCES", tuple(rows))
    return source


def _scene(tmp_path: Path) -> Scene:
    ctx = Context.of({"WHEELCUDA_CACHE_DIR": str(tmp_path)}, str(tmp_path))
    return Scene(ctx, Layout.for_environ(ctx.environ), CU128, 12, "/venv/bin/python",
                 tool=None, clang=None)


def _resolved(fetch: Fetch, problems: list[Problem]) -> SimpleNamespace:
    """What doctor and install's plan read of a run (pipeline.Resolved, its own ``asked``)."""
    r = SimpleNamespace(
        fetch=fetch, torch=CU128, target=SimpleNamespace(python="/venv/bin/python"),
        choice=Choice(), request=Request(), clang=None, problems=tuple(problems),
        errors=lambda: [p for p in problems if p.is_error])
    r.asked = lambda source: Resolved.asked(r, source)  # type: ignore[arg-type]
    return r


def test_auto_fetches_from_the_new_source_and_every_command_says_it(
        conda: _Conda, tmp_path: Path) -> None:
    scene = _scene(tmp_path)
    fetch = fetchplan.decide(scene, [MISSING], Choice(), answers=fetchplan.unasked)
    assert fetch.source == "conda"
    assert fetch.summary == "cuda-nvcc 12.8 from conda-forge (about 60 MB)"
    assert fetch.fixes_all([MISSING])

    r = _resolved(fetch, [MISSING])
    assert install_plan.fetch_text(r) == fetch.summary  # type: ignore[arg-type]
    error = install_plan.no_fetch_error(r)  # type: ignore[arg-type]
    assert isinstance(error, ComponentError)
    assert "no CUDA 12.8 compiler" in error.message and "--no-fetch" in error.message
    # doctor: what install fetches by itself is a warning with `wheelcuda fetch`'s way,
    # never an error (it used to fall through to the error for a source it did not name)
    # (each error its fetch fixes, not only a missing set)
    said = doctor.problems.fetchable(_resolved(fetch, [MISSING, BROKEN]))  # type: ignore[arg-type]
    assert [(p.kind, p.severity) for p in said] == [(Kind.MISSING, Severity.WARNING),
                                                    (Kind.COMPONENTS, Severity.WARNING)]
    assert "fetch them into wheelcuda's store by themselves" in said[0].message

    wants = acquire.plan(Request(fetch=True), SimpleNamespace(), [MISSING],  # type: ignore[arg-type]
                         tool=None, fetch=fetch)
    assert wants.compiler == "conda"
    assert acquire.run(scene, wants, fetch) == Path("/store/conda-12.8")
    assert conda.fetched == [scene]


def test_a_choice_that_leaves_it_out_or_a_torch_it_cannot_serve_takes_another(
        conda: _Conda) -> None:
    assert fetchplan.compiler_fix([MISSING], CU128, Choice(("redist",))) == "redist"
    cu130 = Torch("2.14.1+cu130", "13.0", "/site/torch", None)
    assert fetchplan.compiler_fix([MISSING], cu130, Choice()) == "store"


def test_clang_stands_in_for_archives_not_named_on_purpose(tmp_path: Path) -> None:
    """NVIDIA's archives say whether they may be replaced (not when the user named a
    folder or a manifest), the clang toolkit whether it can stand in (a clang serves and
    an installer brings its wheels): ``stand_in`` asks both."""
    redist, clang = sources.by_name("redist"), sources.by_name("clang")
    serves = Clang("/usr/bin/clang++", "PATH", "22.1.8", nvptx=True, wrappers=True)
    scene = dataclasses.replace(_scene(tmp_path), clang=serves, tool=Pip())
    assert sources.stand_in(redist, scene) is clang
    assert sources.stand_in(redist, dataclasses.replace(scene, fetch_from="dir")) is None
    named = scene.ctx.with_env(**{registry.REDIST_MANIFEST.name: "/srv/redistrib_12.8.1.json"})
    assert sources.stand_in(redist, dataclasses.replace(scene, ctx=named)) is None
    assert sources.stand_in(redist, dataclasses.replace(scene, tool=None)) is None
    assert sources.stand_in(redist, dataclasses.replace(scene, clang=None)) is None
    assert sources.stand_in(clang, scene) is None  # the clang toolkit has no fallback
