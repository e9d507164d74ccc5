"""Which environment variables a package's setup.py reads, and the values that make it
build from source (pure: the text comes in, decisions come out).

Packages of the flash-attn family download a prebuilt wheel from GitHub unless a
``<NAME>_FORCE_BUILD`` variable says ``TRUE``, and NAME need not match the distribution
name (bytedance's byte_flux reads ``FLASH_ATTENTION_FORCE_BUILD``); offline, that dies
with "urlopen error". The recipe table (_data/recipes.py) covers the known packages; for
the others the setup.py itself says which switches it has.

The text is parsed with :mod:`ast`, never run. A read is a call of the ``os`` module's
``getenv``, a ``get``/``setdefault`` or a subscript load of its ``environ`` mapping, or a
``"X" in environ`` test, spelled through any alias (``import os as o``,
``from os import environ as env``, a module-level ``E = <os>.environ``). The name may be
a literal or a module-level string constant (``VAR = "X"``; ``PREFIX + "_FORCE_BUILD"``;
an f-string of constants). Writes (``environ["X"] = ...``) are not reads. How the value is then used
(compared with ``==``/``in``, passed to ``int()``, tested for truth) picks the spelling of
"on" and "off" the package understands.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from . import arch as archmod

_ENVIRON_METHODS = {"get", "setdefault"}  # pop() removes a variable, it does not consult it
_CASE_METHODS = {"lower", "upper", "strip", "casefold", "lstrip", "rstrip"}
_TRUTHY = {"1", "true", "yes", "on", "y", "t"}
_FALSY = {"0", "false", "no", "off", "n", "f", ""}

#: Variables wheelcuda sets itself (_rules/environ.py): never decided from a setup.py.
_OWN = {"TORCH_CUDA_ARCH_LIST", "CUDAARCHS"}


@dataclass(frozen=True)
class EnvRead:
    """One variable a setup.py reads, and what the code does with the value."""

    name: str
    #: Literals the value is compared equal to (``== "TRUE"``, ``in ("1", "true")``).
    equals: tuple[str, ...] = ()
    #: Literals it is compared unequal to (``!= "0"``, ``not in (...)``).
    differs: tuple[str, ...] = ()
    #: String defaults given where it is read (``getenv("X", "80;90")``).
    defaults: tuple[str, ...] = ()
    #: Passed to ``int()``.
    as_int: bool = False
    #: Tested for truth as it is (``if getenv("X"):``, ``not ...``, ``bool(...)``).
    tested: bool = False


# --- reading -------------------------------------------------------------------------


class _Names:
    """How the code spells the ``os`` module, its ``environ`` and its ``getenv``."""

    def __init__(self, tree: ast.Module) -> None:
        self.os: set[str] = set()
        self.environ: set[str] = set()
        self.getenv: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "os" or a.name.startswith("os."):
                        self.os.add(a.asname if a.asname and a.name == "os" else "os")
            elif isinstance(node, ast.ImportFrom) and node.module == "os" and not node.level:
                for a in node.names:
                    if a.name == "environ":
                        self.environ.add(a.asname or a.name)
                    elif a.name == "getenv":
                        self.getenv.add(a.asname or a.name)
        for stmt in tree.body:  # E = <os>.environ, at module level
            if isinstance(stmt, ast.Assign) and self.is_environ(stmt.value):
                self.environ |= {t.id for t in stmt.targets if isinstance(t, ast.Name)}

    def _os_attr(self, node: ast.AST, attr: str) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr == attr
                and isinstance(node.value, ast.Name) and node.value.id in self.os)

    def is_environ(self, node: ast.AST) -> bool:
        return self._os_attr(node, "environ") or (
            isinstance(node, ast.Name) and node.id in self.environ)

    def is_getenv(self, node: ast.AST) -> bool:
        return self._os_attr(node, "getenv") or (
            isinstance(node, ast.Name) and node.id in self.getenv)


def _constants(tree: ast.Module) -> dict[str, str]:
    """Module-level ``NAME = "text"`` (a name bound twice to different texts is dropped)."""
    found: dict[str, str] = {}
    dropped: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        text = _text(value, found)
        for t in targets:
            if not isinstance(t, ast.Name) or t.id in dropped:
                continue
            if text is None or found.get(t.id, text) != text:
                found.pop(t.id, None)
                dropped.add(t.id)
            else:
                found[t.id] = text
    return found


def _text(node: ast.AST | None, consts: dict[str, str]) -> str | None:
    """The string an expression always has: a literal, a constant, ``+`` or an f-string
    of those; else None."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.Name):
        return consts.get(node.id)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        parts = [node.left, node.right]
    elif isinstance(node, ast.JoinedStr):
        parts = []
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                if value.conversion != -1 or value.format_spec is not None:
                    return None
                parts.append(value.value)
            else:
                parts.append(value)
    else:
        return None
    texts = [_text(p, consts) for p in parts]
    return None if any(t is None for t in texts) else "".join(t or "" for t in texts)


def _texts(node: ast.AST, consts: dict[str, str]) -> list[str] | None:
    """A literal string, or a tuple/list/set of them (the right side of ``in``)."""
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        items = [_text(e, consts) for e in node.elts]
        return None if any(i is None for i in items) else [i for i in items if i is not None]
    one = _text(node, consts)
    return None if one is None else [one]


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _read_sites(tree: ast.Module, names: _Names, consts: dict[str, str]
                ) -> Iterator[tuple[str, ast.AST, str | None]]:
    """Each read: (variable, the expression whose value is the variable's, its default)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if names.is_getenv(func) or (
                    isinstance(func, ast.Attribute) and func.attr in _ENVIRON_METHODS
                    and names.is_environ(func.value)):
                given = {k.arg: k.value for k in node.keywords if k.arg}  # getenv(key=...)
                first = node.args[0] if node.args else given.get("key")
                second = node.args[1] if len(node.args) > 1 else given.get("default")
                name = _text(first, consts)
                if name is not None:
                    yield name, node, _text(second, consts)
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and names.is_environ(node.value):
            name = _text(node.slice, consts)
            if name is not None:
                yield name, node, None
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, op in enumerate(node.ops):
                if isinstance(op, (ast.In, ast.NotIn)) and names.is_environ(operands[i + 1]):
                    name = _text(operands[i], consts)
                    if name is not None:
                        yield name, node, None  # presence only: no value use to learn


def _usage(site: ast.AST, parents: dict[ast.AST, ast.AST], consts: dict[str, str],
           into: _Use) -> None:
    """Adds what the code does with the value one read produces to ``into``."""
    node = site
    while True:  # getenv("X", "").strip().lower(): the literals compare with that
        up = parents.get(node)
        if isinstance(up, ast.Attribute) and up.attr in _CASE_METHODS \
                and isinstance(parents.get(up), ast.Call):
            node = parents[up]
            continue
        break
    parent = parents.get(node)
    if isinstance(parent, ast.Compare):
        operands = [parent.left, *parent.comparators]
        at = next(i for i, o in enumerate(operands) if o is node)
        pairs = []
        if at > 0:
            pairs.append((parent.ops[at - 1], operands[at - 1], False))
        if at < len(parent.ops):
            pairs.append((parent.ops[at], operands[at + 1], True))
        for op, other, we_are_left in pairs:
            literals: list[str] | None = None
            if isinstance(op, (ast.Eq, ast.NotEq)):
                one = _text(other, consts)
                literals = None if one is None else [one]
            elif isinstance(op, (ast.In, ast.NotIn)) and we_are_left:
                literals = _texts(other, consts)
            if literals is not None:
                into.add(into.equals if isinstance(op, (ast.Eq, ast.In)) else into.differs,
                         literals)
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) \
            and node in parent.args:
        into.as_int |= parent.func.id == "int"
        into.tested |= parent.func.id == "bool"
    if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) \
            and parent.test is node:
        into.tested = True
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        into.tested = True


class _Use:
    """What is known of one variable so far (mutable, while reading)."""

    def __init__(self) -> None:
        self.equals: list[str] = []
        self.differs: list[str] = []
        self.defaults: list[str] = []
        self.as_int = False
        self.tested = False

    @staticmethod
    def add(into: list[str], items: Iterable[str]) -> None:
        into.extend(i for i in items if i not in into)

    def freeze(self, name: str) -> EnvRead:
        return EnvRead(name, tuple(self.equals), tuple(self.differs), tuple(self.defaults),
                       self.as_int, self.tested)


def reads(source_text: str) -> tuple[EnvRead, ...]:
    """Every environment variable ``source_text`` reads, in order of first read, each
    with what the code does with it (pure). Text that does not parse reads nothing."""
    try:
        return _reads(ast.parse(source_text))
    # ValueError: a NUL byte in the text; RecursionError: nesting too deep to parse or
    # to follow (a very long "a" + "b" + ... chain).
    except (SyntaxError, ValueError, RecursionError):
        return ()


def _reads(tree: ast.Module) -> tuple[EnvRead, ...]:
    names = _Names(tree)
    if not (names.os or names.environ or names.getenv):
        return ()
    consts = _constants(tree)
    parents = _parents(tree)
    merged: dict[str, _Use] = {}
    # ast.walk is breadth-first: order the reads by their place in the text.
    sites = sorted(_read_sites(tree, names, consts),
                   key=lambda s: (getattr(s[1], "lineno", 0), getattr(s[1], "col_offset", 0)))
    for name, site, default in sites:
        use = merged.setdefault(name, _Use())
        if not isinstance(site, ast.Compare):  # "X" in environ: presence, no value
            _usage(site, parents, consts, use)
        if default is not None:
            use.add(use.defaults, [default])
    return tuple(use.freeze(name) for name, use in merged.items())


def variables_read(source_text: str) -> list[str]:
    """The names of the environment variables ``source_text`` reads, in order (pure)."""
    return [r.name for r in reads(source_text)]


# --- deciding ------------------------------------------------------------------------


def _is_force_build(name: str) -> bool:
    return name == "FORCE_BUILD" or name.endswith("_FORCE_BUILD")


def _is_skip_cuda(name: str) -> bool:
    return name == "SKIP_CUDA_BUILD" or name.endswith("_SKIP_CUDA_BUILD")


def _is_arch_list(name: str) -> bool:
    return name not in _OWN and name.endswith(
        ("_CUDA_ARCHS", "_CUDA_ARCH_LIST", "_ARCH_LIST", "CUDA_ARCHITECTURES"))


def _on(read: EnvRead, default: str) -> str:
    """The value that switches the package's option on, in its own spelling."""
    for lit in read.equals:
        if lit.lower() in _TRUTHY:
            return lit
    return "1" if read.as_int else default


def _off(read: EnvRead) -> str | None:
    """The value that leaves the option off, or None where no value is known to."""
    if read.equals:
        falsy = [lit for lit in read.equals if lit.lower() in _FALSY]
        if falsy:
            return falsy[0]
        return "0" if read.as_int else "FALSE"  # equal to none of the "on" literals
    falsy = [lit for lit in read.differs if lit.lower() in _FALSY]
    if falsy:
        return falsy[0]
    if read.differs:  # != "TRUE" means "anything else is on": no safe value
        return None
    if read.as_int:
        return "0"
    # if getenv("X_SKIP_CUDA_BUILD"): any text, "FALSE" too, is true; unset is off.
    return None if read.tested else "FALSE"


_DOTTED = re.compile(r"^\d+\.\d+[af]?(\+PTX)?$", re.IGNORECASE)
_BARE = re.compile(r"^\d{2,3}[af]?$", re.IGNORECASE)
_CMAKE = re.compile(r"^\d{2,3}[af]?(-real|-virtual)?$", re.IGNORECASE)


def arch_value(name: str, archs: Sequence[archmod.Arch], defaults: Sequence[str] = ()) -> str:
    """An arch list in the form a package's own variable takes.

    The setup.py's default, where it gives one, shows the form: ``"80;90;100;120"``
    (flash-attn) is bare numbers joined by ``;``; ``"8.0 9.0"`` dotted, space-separated.
    Without one: ``*_CUDA_ARCHS`` and ``*CUDA_ARCHITECTURES`` take bare numbers
    (``80;90;120``, as _rules/packages.py writes a recipe's ``arch_var``); ``*_ARCH_LIST``
    names follow TORCH_CUDA_ARCH_LIST's dotted form, joined by spaces, which torch
    accepts too and flashinfer's FLASHINFER_CUDA_ARCH_LIST requires (it splits on " ").
    """
    form, sep = "", ""
    for default in defaults:
        tokens = [t for t in re.split(r"[;,\s]+", default.strip()) if t]
        if not tokens:
            continue
        for kind, pattern in (("dotted", _DOTTED), ("bare", _BARE), ("cmake", _CMAKE)):
            if all(pattern.match(t) for t in tokens):
                form = kind
                found = re.search(r"[;,\s]", default.strip())
                sep = found.group(0) if found else ""
                break
        if form:
            break
    if not form:
        form = "dotted" if name.endswith("_ARCH_LIST") else "bare"
    if form == "dotted":
        items = list(dict.fromkeys(f"{a.major}.{a.minor}{a.suffix}" for a in archs))
        return (sep or " ").join(items)
    if form == "cmake":
        return (sep or ";").join(archmod.to_cmake(archs).split(";"))
    numbers = sorted({a.major * 10 + a.minor for a in archs})
    return (sep or ";").join(map(str, numbers))


#: The switches that make a package build its CUDA code without a visible GPU.
_FORCE_CUDA = ("FORCE_CUDA", "FORCE_CUDA_EXTENSION")


def build_from_source(names: Sequence[str | EnvRead], archs: Sequence[archmod.Arch]
                      ) -> dict[str, str]:
    """The values that make a package build its CUDA code from source (pure).

    ``names``: what :func:`variables_read` (plain names) or :func:`reads` (names with
    their use, for the package's own spelling of on and off) found. Decided:

    - ``*_FORCE_BUILD``: on (``TRUE``, or the literal the code compares with: ``"1"``);
    - ``*_SKIP_CUDA_BUILD``: off (``FALSE``, or the package's own off literal; left
      alone where the code only tests the value for truth, as any text is true there);
    - ``FORCE_CUDA`` (pyg, xformers), ``FORCE_CUDA_EXTENSION`` (torch-harmonics 0.8.1:
      without it and without a visible GPU it builds no CUDA code): on (``1``);
    - the package's own arch-list variables (``*_CUDA_ARCHS``, ``*_CUDA_ARCH_LIST``,
      ``*_ARCH_LIST``, ``*CUDA_ARCHITECTURES``; not TORCH_CUDA_ARCH_LIST or CUDAARCHS,
      which wheelcuda sets itself): ``archs`` in the variable's form (:func:`arch_value`),
      when ``archs`` is not empty.

    Anything else is left alone. The caller drops what the user already set.
    """
    out: dict[str, str] = {}
    for item in names:
        read = item if isinstance(item, EnvRead) else EnvRead(item)
        name = read.name
        value: str | None = None
        if _is_force_build(name):
            value = _on(read, "TRUE")
        elif _is_skip_cuda(name):
            value = _off(read)
        elif name in _FORCE_CUDA:
            value = _on(read, "1")
        elif _is_arch_list(name) and archs:
            value = arch_value(name, archs, read.defaults)
        if value is not None:
            out[name] = value
    return out
