"""The registry of ``WHEELCUDA_*`` variables (_data/settings.py) against the sources and the
docs: every name the code spells is registered, every registered one is used, the
names modules keep come from it, the docs' tables are what it generates, and every
flag is read one way (``1``, ``true``, ``yes``, ``on``)."""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

from tests.test_cli_help import parsers
from wheelcuda import _cli as cli
from wheelcuda import _context as context
from wheelcuda import _report as report
from wheelcuda import _warm as warm
from wheelcuda._backend import config as backend_config
from wheelcuda._context import Context
from wheelcuda._data import settings as registry
from wheelcuda._probe import gpus, installer
from wheelcuda._rules import cxxstd, jobs, settings_doc, uvconfig
from wheelcuda._sources.clang import data as clang_data
from wheelcuda._sources.local import probe as localcuda
from wheelcuda._sources.redist import data as redist_data
from wheelcuda._sources.redist import source as redist_source
from wheelcuda._sources.redist import store_archives as archives
from wheelcuda._standalone import _build, _pool
from wheelcuda._store import paths
from wheelcuda._team import rules as sharing
from wheelcuda._values import Torch

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "src" / "wheelcuda"
NAME = re.compile(r"WHEELCUDA_[A-Z0-9_]+")
#: The programs that run inside builds on the standard library alone: they spell their
#: names themselves (by file name: they may live in a subpackage).
STANDALONE = {p.name for p in (PKG / "_standalone").glob("_*.py")}
#: Modules that keep a name as a literal, and why.
LITERAL = {
    "_store/paths.py": "the warm path imports it before anything heavier (no dataclasses)",
    "_warm.py": "the warm path itself, for the same reason",
}
#: Where the registry itself and its docs live: not counted as uses.
OWN = {"_data/settings.py", "_rules/settings_doc.py"}


def _sources() -> dict[str, str]:
    return {str(p.relative_to(PKG)): p.read_text() for p in sorted(PKG.rglob("*.py"))}


def _names_in(text: str) -> set[str]:
    """The variable names in ``text``; a file name (``WHEELCUDA_KEY.json``) is none, and a
    family (``WHEELCUDA_INDEX_*``) stands for the names it begins."""
    found = set()
    for m in NAME.finditer(text):
        if text.startswith(".json", m.end()):
            continue
        name = m.group()
        if name.endswith("_"):
            assert any(s.name.startswith(name) for s in registry.ALL), name
            continue
        found.add(name)
    return found


def test_every_name_in_the_sources_is_registered() -> None:
    registered = {s.name for s in registry.ALL}
    unknown = {f"{where}: {name}" for where, text in _sources().items()
               for name in _names_in(text) - registered}
    assert not unknown, sorted(unknown)


def test_every_registered_name_is_used() -> None:
    """By its name, or through the registry's constant for it."""
    constants = {v.name: k for k, v in vars(registry).items() if isinstance(v, registry.Setting)}
    assert set(constants) == {s.name for s in registry.ALL}
    text = "\n".join(t for where, t in _sources().items() if where not in OWN)
    unused = [s.name for s in registry.ALL
              if s.name not in text and f"registry.{constants[s.name]}" not in text]
    assert not unused


def test_names_are_unique_and_described() -> None:
    names = [s.name for s in registry.ALL]
    assert len(names) == len(set(names))
    for s in registry.ALL:
        assert s.meaning.endswith(".") and s.readers, s.name
        assert s.audience == "user" or s.setters, f"{s.name}: internal, but who sets it?"


def test_readers_and_setters_exist() -> None:
    names = {p.name for p in PKG.rglob("*.py")}
    for s in registry.ALL:
        for file in (*s.readers, *s.setters):
            if not file.endswith(".py"):
                continue  # a program of another project (uv)
            there = (file in STANDALONE and file in names) or (PKG / file).is_file()
            assert there, f"{s.name}: {file} is not in src/wheelcuda"


def test_module_constants_come_from_the_registry() -> None:
    kept = [(sharing.INDEX_VAR, registry.INDEX_URL), (sharing.PUBLISH_VAR, registry.PUBLISH_URL),
            (sharing.PREBUILT_VAR, registry.PREBUILT_URL),
            (sharing.USERNAME_VAR, registry.INDEX_USERNAME),
            (sharing.PASSWORD_VAR, registry.INDEX_PASSWORD),
            (installer.ENV_VAR, registry.INSTALLER),
            (redist_data.MIRROR_VAR, registry.REDIST_URL),
            (gpus._NO_PROBE, registry.NO_GPU_PROBE), (clang_data.NAMED_VAR, registry.CLANG),
            (clang_data.ROOT_VAR, registry.LLVM_ROOT), (localcuda.ROOT_VAR, registry.LOCAL_ROOT),
            (archives.ALLOW_HTTP_VAR, registry.ALLOW_HTTP), (cxxstd.VAR, registry.CXX_STD),
            (cxxstd.REAL_CXX_VAR, registry.REAL_CXX), (jobs.JOB_GB_VAR, registry.JOB_GB),
            (_pool.FOLDER_VAR, registry.POOL), (_pool.MEMORY_VAR, registry.MEMORY),
            (_pool.JOB_GB_VAR, registry.JOB_GB), (_build.QUIET_VAR, registry.NO_PROGRESS),
            (_build.PROGRESS_VAR, registry.PROGRESS),
            (uvconfig.KEY, registry.BUILD_KEY), (uvconfig.OWNED, registry.SET),
            (report.DEBUG_VAR, registry.DEBUG),
            # the literals of the modules that may not import the registry (LITERAL)
            (paths.ENV_VAR, registry.CACHE_DIR), (paths.STORE_VAR, registry.STORE_DIR),
            (warm.NO_WARM_VAR, registry.NO_WARM)]
    assert [name for name, setting in kept if name != setting.name] == []


def test_no_other_module_spells_a_name() -> None:
    """A ``"WHEELCUDA_..."`` constant anywhere in the code (a module's name for it, or
    ``environ.get("WHEELCUDA_...")`` in a function) is the registry's to say, but where the
    module cannot import it (:data:`LITERAL`) or runs inside builds (:data:`STANDALONE`).
    Words for people (a fix, a docstring) may name a variable within their text."""
    own = []
    for where, text in _sources().items():
        if where in LITERAL or where in OWN or Path(where).name in STANDALONE:
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and NAME.fullmatch(node.value):
                own.append(f"{where}:{node.lineno}")
    assert not own


def test_the_cli_options_and_config_settings_named_exist() -> None:
    options = {o for _prog, p in parsers(cli._parser()) for a in p._actions
               if not isinstance(a, argparse._SubParsersAction) for o in a.option_strings}
    for s in registry.ALL:
        assert not s.cli or s.cli in options, s.name
        assert not s.config_setting or s.config_setting in backend_config.SETTINGS, s.name


def test_precedence_reads_first_source_first() -> None:
    assert registry.INDEX_URL.precedence() == (
        "`--index`", "`WHEELCUDA_INDEX_URL`", "`[tool.wheelcuda] index` (pyproject.toml)",
        f"`index` ({registry.USER_FILE})")
    assert registry.TOOLKIT.precedence() == ("`--toolkit` / `-C wheelcuda.toolkit`",
                                             "`WHEELCUDA_TOOLKIT`")
    assert registry.NO_WARM.precedence() == ("`WHEELCUDA_NO_WARM`",)


@pytest.mark.parametrize(("name", "audience"), sorted(settings_doc.DOCS.items()))
def test_the_docs_tables_are_the_registrys(name: str, audience: registry.Audience) -> None:
    text = (ROOT / name).read_text()
    assert settings_doc.spliced(text, audience) == text, \
        f"{name} is stale: run `make settings-docs`"


def test_the_tables_list_each_variable_once() -> None:
    user, internal = settings_doc.table("user"), settings_doc.table("internal")
    for s in registry.ALL:
        row = f"| `{s.name}` |"
        assert (user.count(row), internal.count(row)) == \
            ((1, 0) if s.audience == "user" else (0, 1)), s.name


def test_splicing_needs_the_markers() -> None:
    with pytest.raises(ValueError, match="markers"):
        settings_doc.spliced("no markers here", "user")
    text = f"a\n{settings_doc.BEGIN}\nold\n{settings_doc.END}\nb\n"
    assert settings_doc.spliced(text, "internal") == \
        f"a\n{settings_doc.BEGIN}\n{settings_doc.table('internal')}\n{settings_doc.END}\nb\n"


# --- one parse for every flag -----------------------------------------------------------

ON = ["1", "true", "TRUE", "yes", "on", " On "]
OFF = ["", "0", "false", "no", "off", "2"]


def test_the_registry_and_context_agree_on_flags() -> None:
    assert registry.FLAG_WORDS == context.FLAG_WORDS
    assert all(context.is_on(w) for w in ON)
    assert not any(context.is_on(w) for w in OFF)
    assert not context.is_on(None)


@pytest.mark.parametrize("value", ON)
def test_no_gpu_probe_takes_every_spelling(value: str) -> None:
    probe = gpus.probe_gpus(Context.of({registry.NO_GPU_PROBE.name: value}))
    assert probe == gpus.GpuProbe((), f"disabled by {registry.NO_GPU_PROBE.name}")


@pytest.mark.parametrize("value", ON)
def test_no_warm_takes_every_spelling(value: str) -> None:
    env = {"PATH": "/usr/bin", "HOME": "/home/u"}
    assert warm.key_for(["env"], env) is not None
    assert warm.key_for(["env"], {**env, registry.NO_WARM.name: value}) is None


@pytest.mark.parametrize("value", OFF[1:])
def test_no_warm_off_spellings_keep_it(value: str) -> None:
    env = {"PATH": "/usr/bin", "HOME": "/home/u", registry.NO_WARM.name: value}
    assert warm.key_for(["env"], env) is not None


@pytest.mark.parametrize(("value", "allowed"), [*((v, True) for v in ON),
                                                *((v, False) for v in OFF)])
def test_allow_http_takes_every_spelling(value: str, allowed: bool) -> None:
    torch = Torch("2.9.1+cu128", "12.8", "/site/torch", None)
    ctx = Context.of({registry.ALLOW_HTTP.name: value})
    assert redist_source.wanted(ctx, torch, None).allow_http is allowed
