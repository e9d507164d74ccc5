"""The architecture, checked: data flows down (standalone -> data -> rules -> probe ->
store -> sources -> pipeline -> commands -> cli -> entry), nothing imports the CLI but
the entry point, there are no import cycles, and one module reads the process
environment.

Imports inside functions count (they run), and so do imports under ``if
TYPE_CHECKING:`` for the layers (a type from a layer above is a dependency
on it too); only the cycle check leaves those out, as Python does."""

from __future__ import annotations

import ast
import functools
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "wheelcuda"

#: Layer of each top-level part, and the layers it may import at run time.
ALLOWED = {
    # programs run inside builds or by another Python (copied into trees, the clang
    # toolkit, or passed as text): the standard library and each other only, below all
    "standalone": {"standalone"},
    # the value types (torch, the target, the inventory, the host compiler): the bottom
    "values": {"data", "errors"},
    "data": {"data", "errors", "standalone"},
    "rules": {"values", "data", "rules", "errors", "standalone"},
    "probe": {"report", "values", "data", "rules", "probe", "errors", "proc", "context",
              "standalone"},
    "store": {"report", "values", "data", "rules", "probe", "store", "errors", "proc",
              "context", "standalone"},
    "sources": {"report", "values", "data", "rules", "probe", "store", "sources", "errors",
                "context"},
    "pipeline": {"report", "values", "data", "rules", "probe", "store", "sources", "errors",
                 "proc", "context", "standalone"},
    "commands": {"report", "values", "data", "rules", "probe", "store", "sources", "errors",
                 "proc", "context", "pipeline", "commands", "warm", "standalone"},
    "api": {"pipeline", "context", "rules", "errors", "values"},
    # the PEP 517 backend: what install decides, for the build environment's Python
    "build_meta": {"report", "values", "data", "rules", "probe", "store", "errors", "context",
                   "pipeline", "backend"},
    # what it decides: its config settings, the wrapped backend, the build's plan
    "backend": {"report", "values", "data", "rules", "probe", "store", "errors", "context",
                "pipeline", "backend"},
    "cli": {"report", "commands", "context", "errors", "__init__"},
    "entry": {"warm", "cli"},
    # the warm replay of ``wheelcuda env``: the cache's files, and context's flag parse,
    # imported only when WHEELCUDA_NO_WARM is set (warm._no_warm: it costs milliseconds)
    "warm": {"store", "context"},
    "proc": {"errors"},
    # how wheelcuda speaks: the logger and the error frame (stdlib logging underneath)
    "report": {"context", "errors", "rules"},
    "context": set(),
    "errors": set(),
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


def _layer(module: str) -> str:
    parts = module.split(".")
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


@pytest.mark.parametrize("path", sorted((PKG / "standalone").glob("*.py")), ids=lambda p: p.name)
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
    users = sorted(m for m, targets in _graph().items() if "wheelcuda.cli" in targets)
    assert users == ["wheelcuda.entry"]


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
    """context.py builds the Context everything else is handed; entry.py is the warm
    path, which runs before anything (dataclasses included) may be imported; the nvcc
    wrapper, the tree's ninja and the clang toolkit's nvcc and fatbinary run inside
    builds, standalone."""
    readers = sorted(str(p.relative_to(PKG)) for p in PKG.rglob("*.py")
                     if "os.environ" in p.read_text() or "os.getenv" in p.read_text())
    assert readers == ["context.py", "entry.py", "standalone/_clang_nvcc.py",
                       "standalone/_cxx_std.py", "standalone/_fatbinary.py",
                       "standalone/_ninja.py", "standalone/_nvcc_pool.py",
                       "standalone/_nvcc_wrapper.py", "standalone/_site.py"]


def test_every_module_says_what_it_exports() -> None:
    """``__all__`` in every module (the public surface said), less the two run as scripts:
    ``__main__`` and the nvcc wrapper, whose text is copied into each tree."""
    lacking = sorted(str(p.relative_to(PKG)) for p in PKG.rglob("*.py")
                     if p.name not in ("__main__.py", "_nvcc_wrapper.py")
                     and not any(isinstance(n, (ast.Assign, ast.AnnAssign))
                                 and "__all__" in ast.dump(n)
                                 for n in ast.parse(p.read_text()).body))
    assert not lacking, lacking


def test_no_module_is_longer_than_400_lines() -> None:
    """Rooms with one job each: the largest module under 400 lines."""
    long = sorted((len(p.read_text().splitlines()), str(p.relative_to(PKG)))
                  for p in PKG.rglob("*.py"))
    assert long[-1][0] < 400, long[-3:]
