"""The architecture, checked: data flows down (standalone -> data -> rules -> probe ->
store -> sources -> pipeline -> commands -> cli -> entry), inside each concern's package
too (a source's, the team's: its modules are named by their layer), nothing imports the
CLI but the entry point, there are no import cycles, and one module reads the process
environment.

Imports inside functions count (they run), and so do imports under ``if
TYPE_CHECKING:`` for the layers (a type from a layer above is a dependency
on it too); only the cycle check leaves those out, as Python does."""

from __future__ import annotations

import ast
import functools
import re
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "wheelcuda"

#: Layer of each top-level part, and the layers it may import at run time.
ALLOWED = {
    # programs run inside builds or by another Python (copied into trees, the clang
    # toolkit, or passed as text): the standard library and each other only, below all
    "_standalone": {"_standalone"},
    # the value types (torch, the target, the inventory, the host compiler): the bottom
    "_values": {"_data", "errors"},
    "_data": {"_data", "errors", "_standalone"},
    "_rules": {"_values", "_data", "_rules", "errors", "_standalone"},
    "_probe": {"_report", "_values", "_data", "_rules", "_probe", "errors", "_proc", "_context",
              "_standalone"},
    "_store": {"_report", "_values", "_data", "_rules", "_probe", "_store", "errors", "_proc",
              "_context", "_standalone"},
    "_sources": {"_report", "_values", "_data", "_rules", "_probe", "_store", "_sources", "errors",
                "_context"},
    "_pipeline": {"_report", "_values", "_data", "_rules", "_probe", "_store", "_sources", "errors",
                 "_proc", "_context", "_standalone"},
    "_commands": {"_report", "_values", "_data", "_rules", "_probe", "_store", "_sources", "errors",
                 "_proc", "_context", "_pipeline", "_commands", "_warm", "_standalone"},
    "api": {"_pipeline", "_context", "_rules", "errors", "_values"},
    # the PEP 517 backend: what install decides, for the build environment's Python
    "build_meta": {"_report", "_values", "_data", "_rules", "_probe", "_store", "errors",
                   "_context", "_pipeline", "_backend"},
    # what it decides: its config settings, the wrapped backend, the build's plan
    "_backend": {"_report", "_values", "_data", "_rules", "_probe", "_store", "errors", "_context",
                "_pipeline", "_backend"},
    "_cli": {"_report", "_commands", "_context", "errors", "__init__"},
    "_entry": {"_warm", "_cli"},
    # the warm replay of ``wheelcuda env``: the cache's files, and context's flag parse,
    # imported only when WHEELCUDA_NO_WARM is set (warm._no_warm: it costs milliseconds)
    "_warm": {"_store", "_context"},
    "_proc": {"errors"},
    # how wheelcuda speaks: the logger and the error frame (stdlib logging underneath);
    # the data its rules stand on, for the names of the settings it reads
    "_report": {"_context", "errors", "_rules", "_data"},
    "_context": set(),
    "errors": set(),
    # a concern's package itself imports nothing (its modules are in the layers above)
    "_team": set(),
}


def _modules() -> dict[str, Path]:
    return {".".join(p.relative_to(SRC).with_suffix("").parts): p for p in PKG.rglob("*.py")}


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _imports(tree: ast.AST, *, types: bool) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if not types and isinstance(child, ast.If) and _is_type_checking(child):
                for stmt in child.orelse:
                    walk(stmt)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            walk(child)

    walk(tree)
    return found


def _targets(name: str, path: Path, modules: dict[str, Path], *, types: bool) -> set[str]:
    """The wheelcuda modules ``name`` (at ``path``) imports (with ``types``, those under
    ``if TYPE_CHECKING:`` too)."""
    package = name.removesuffix(".__init__") if path.name == "__init__.py" \
        else name.rsplit(".", 1)[0]
    out = set()
    for node in _imports(ast.parse(path.read_text()), types=types):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.startswith("wheelcuda")}
            continue
        base = node.module or ""
        if node.level:
            parts = package.split(".")
            parts = parts[:len(parts) - node.level + 1]
            base = ".".join([*parts, base] if base else parts)
        if not base.startswith("wheelcuda"):
            continue
        for alias in node.names:
            sub = f"{base}.{alias.name}"
            out.add(sub if sub in modules or f"{sub}.__init__" in modules else base)
    return {t.removesuffix(".__init__") for t in out}


@functools.cache
def _graph(*, types: bool = False) -> dict[str, set[str]]:
    modules = _modules()
    return {name.removesuffix(".__init__"): _targets(name, path, modules, types=types)
            for name, path in modules.items()}


#: A concern's package holds the whole concern, its modules named by their layer (``data``,
#: ``rules``, ``probe``, ``store``, or a name that begins with one: ``store_archives``), so
#: the pure/I-O rule holds inside it; any other module of a source (``source``) is the
#: sources' layer. The concerns: each compiler source (``_sources/clang/``), and the team
#: (``_team/``: its settings, credentials, index, variants and prebuilt wheels).
ROLES = {"data": "_data", "rules": "_rules", "probe": "_probe", "store": "_store"}


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 4 and parts[1] == "_sources":
        return ROLES.get(parts[3].split("_")[0], "_sources")
    if len(parts) == 3 and parts[1] == "_team":
        return ROLES[parts[2].split("_")[0]]
    return parts[1] if len(parts) > 1 else "__init__"


@pytest.mark.parametrize("module", sorted(_graph()))
def test_imports_follow_the_layers(module: str) -> None:
    layer = _layer(module)
    if layer in ("__init__", "__main__"):
        return
    allowed = ALLOWED[layer] | {layer}
    bad = sorted(t for t in _graph(types=True)[module]
                 if _layer(t) not in allowed and t != "wheelcuda")
    assert not bad, f"{module} ({layer}) may not import {bad}"


@pytest.mark.parametrize("path", sorted((PKG / "_standalone").glob("*.py")), ids=lambda p: p.name)
def test_standalone_programs_import_the_standard_library_alone(path: Path) -> None:
    """Copied flat into a tree's bin/ or the clang toolkit, or run by another Python, they
    find only the standard library and each other (``import _nvcc_table`` beside them)."""
    siblings = {p.stem for p in path.parent.glob("*.py")}
    names = {a.name.split(".")[0] for n in _imports(ast.parse(path.read_text()), types=True)
             if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in _imports(ast.parse(path.read_text()), types=True)
              if isinstance(n, ast.ImportFrom) and not n.level and n.module}
    bad = sorted(names - sys.stdlib_module_names - siblings - {"__future__"})
    assert not bad, f"{path.name} imports {bad}"


def test_nothing_imports_the_cli_but_the_entry_point() -> None:
    users = sorted(m for m, targets in _graph().items() if "wheelcuda._cli" in targets)
    assert users == ["wheelcuda._entry"]


def test_no_import_cycles() -> None:
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle = [*stack[stack.index(nxt):], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


def test_one_module_reads_the_process_environment() -> None:
    """_context.py builds the Context everything else is handed; _entry.py is the warm
    path, which runs before anything (dataclasses included) may be imported; the nvcc
    wrapper, the tree's ninja and the clang toolkit's nvcc and fatbinary run inside
    builds, standalone."""
    readers = sorted(str(p.relative_to(PKG)) for p in PKG.rglob("*.py")
                     if "os.environ" in p.read_text() or "os.getenv" in p.read_text())
    assert readers == ["_context.py", "_entry.py", "_standalone/_clang_nvcc.py",
                       "_standalone/_cxx_std.py", "_standalone/_fatbinary.py",
                       "_standalone/_nvcc_wrapper.py", "_standalone/_pool.py"]


def test_the_public_surface_is_the_api_the_backend_and_the_errors() -> None:
    """Public modules say what they export (``__all__``); everything else is private, as
    in pypa/build: an underscore package or module, and tests may import it."""
    public = sorted(p.name for p in PKG.glob("*.py") if not p.name.startswith("_"))
    assert public == ["api.py", "build_meta.py", "errors.py"]
    assert all(p.name.startswith("_") for p in PKG.iterdir() if p.is_dir()
               and (p / "__init__.py").exists())
    for path in [PKG / "__init__.py", *(PKG / name for name in public)]:
        assert any(isinstance(n, (ast.Assign, ast.AnnAssign)) and "__all__" in ast.dump(n)
                   for n in ast.parse(path.read_text()).body), path


def test_functions_stay_short_and_modules_follow_their_concern() -> None:
    """Functions are capped, not modules: a module holds one concern however long it
    needs (the anchors' largest are near 1,000 lines), and one split only to stay under a
    number (the old 400-line cap split nvcc's argument table and doctor in two) reads
    worse. A function of more than 90 lines is doing several things."""
    functions = sorted((n.end_lineno - n.lineno + 1, f"{p.relative_to(PKG)}:{n.name}")
                       for p in PKG.rglob("*.py") for n in ast.walk(ast.parse(p.read_text()))
                       if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and n.end_lineno is not None)
    assert functions[-1][0] <= 90, functions[-3:]
    modules = sorted((len(p.read_text().splitlines()), str(p.relative_to(PKG)))
                     for p in PKG.rglob("*.py"))
    assert modules[-1][0] < 1000, modules[-3:]


#: Who imports a source's package from outside it, besides the table that lists it: each
#: with its reason. A new source (its package and its row in the table) adds none; this
#: list growing is a source's concern leaking out.
SOURCE_USERS = {
    "wheels": {},
    "local": {
        # the clang toolkit's root is a shim of links too, made by the same code
        "_sources.clang.store": {"store"},
        # prune keeps the links of every toolkit a tree leads into
        "_store.prune": {"store"},
    },
    "redist": {
        # whether NVIDIA answers is asked once a run, of the archives a Fetch plans
        "_pipeline.fetchplan": {"store_archives"},
        "_sources.base": {"store_archives"},
        # every unpacked tar member is judged by the same rules (links, paths)
        "_sources.local.store": {"rules"},
        "_store.extract": {"rules"},
    },
    "clang": {
        # doctor's clang section says which clang serves and why not the others
        "_commands.doctor.clang": {"data", "probe", "source"},
        # the clang a run would use is the Scene's (clang stands in for NVIDIA's archives)
        "_pipeline": {"source"},
        "_pipeline.fetchplan": {"rules"},
        "_pipeline.resolved": {"rules"},
        "_sources.base": {"rules"},
        "_sources.redist.source": {"data"},
        # the lowest clang per arch bounds --arch; the index's clang is fetched into the
        # store beside the CUDA wheels
        "_rules.arch": {"data"},
        "_store.toolkits": {"data"},
    },
}


@pytest.mark.parametrize("name", sorted(SOURCE_USERS))
def test_a_source_is_named_outside_its_package_only_where_listed(name: str) -> None:
    """Each source's package holds its concern; outside it, the table imports its
    ``source`` and the users listed in :data:`SOURCE_USERS`, for their reasons, and no
    other module does."""
    package = f"wheelcuda._sources.{name}"
    assert (PKG / "_sources" / name / "source.py").exists()
    users: dict[str, set[str]] = {}
    for module, targets in _graph(types=True).items():
        if module == package or module.startswith(package + "."):
            continue
        for t in targets:
            if t.startswith(package + "."):
                users.setdefault(module.removeprefix("wheelcuda."), set()).add(
                    t.removeprefix(package + "."))
    assert users.pop("_sources.table", None) == {"source"}
    assert users == SOURCE_USERS[name]


def test_every_module_has_its_row_in_the_developer_guide() -> None:
    """docs/development.md says what each module decides or does, one row each: a module
    without its row, or a row whose module is gone, is the guide drifting from the code
    (a package's ``__init__.py`` is said in its folder's text)."""
    guide = (SRC.parent / "docs" / "development.md").read_text()
    rows = set(re.findall(r"^\| `([^`]+\.py)` \|", guide, re.M))
    modules = {str(p.relative_to(PKG)) for p in PKG.rglob("*.py")}
    assert sorted(rows - modules) == []
    assert sorted(m for m in modules - rows if not m.endswith("__init__.py")) == []
