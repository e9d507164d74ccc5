"""The target environment: which Python gets the packages, and where its imports look.

The target is found as ``uv pip install`` finds it (:func:`choose_python`): ``--python``
(a Python executable or an environment folder), else the active virtual environment
(``VIRTUAL_ENV``), else an activated conda environment other than conda's base
(``CONDA_PREFIX``), else the environment the working folder is in or a ``.venv`` in it
or one of its parents, else conda's base environment. Last comes the environment
wheelcuda runs from (``pip install wheelcuda`` next to torch), but never a uv or pipx
tool environment of its own (``uv tool install``, ``uvx``, ``pipx``): with nothing else
found that is an error that says how to make an environment (a tool environment
holds wheelcuda alone, never the user's torch).

wheelcuda itself may live elsewhere (a uv tool), so another interpreter is asked once,
in a child process, and the answer is kept in the cache until that interpreter or its
site-packages change: the warm path spawns nothing.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .. import _proc as proc
from .._context import Context
from .._standalone import _interp_probe, source
from .._values import Target
from ..errors import InterpreterError, ToolError

#: The oldest target Python: what the probe (_interp_probe) and the fixes promise.
MIN_VERSION = (3, 8)


@dataclass(frozen=True)
class Choice:
    """Which interpreter is the target, and why (doctor and ``install --explain`` say it)."""

    #: What :func:`executable` turns into the interpreter: a Python, or an environment
    #: folder (as ``--python`` takes either).
    python: str
    #: ``--python``, ``VIRTUAL_ENV=/x``, ``found .venv in /work/proj``, ...
    why: str
    #: What the search looked at that was not there (a ``.venv`` in each folder up from
    #: the working folder): one appearing changes the choice. Empty when the choice did
    #: not search (``--python``, ``VIRTUAL_ENV``, a conda environment).
    watch: tuple[str, ...] = ()


#: Uv's and pipx's marks of an environment they made for a tool, in its root.
_TOOL_MARKS = (("uv-receipt.toml", "a uv tool environment (uv tool install)"),
               ("pipx_metadata.json", "a pipx environment"))
_NONE_FOUND = "no VIRTUAL_ENV, .venv or CONDA_PREFIX"


def choose_python(python: str | None, ctx: Context) -> Choice:
    """The target and the reason for it, found as ``uv pip install`` finds it (see the
    module's docstring); reads only ``ctx`` and the folders from its working folder up.

    Raises :class:`InterpreterError` for an empty ``--python``, a ``.venv`` that is not
    an environment (uv stops there too) and when nothing is found but a tool
    environment of wheelcuda's own."""
    if python is not None:
        if not python.strip():
            raise InterpreterError(
                "--python is empty: it names no interpreter",
                "pass --python PATH (a Python, or an environment folder such as .venv), "
                "or leave --python out to use the active environment or ./.venv")
        return Choice(python, "--python")
    venv = ctx.get("VIRTUAL_ENV")
    if venv:  # asked for, even when it is wheelcuda's own environment
        return Choice(venv, f"VIRTUAL_ENV={venv}")
    conda = ctx.get("CONDA_PREFIX")
    base = bool(conda) and _conda_base(_absolute(conda or "", ctx), ctx)
    if conda and not base:
        return Choice(conda, f"CONDA_PREFIX={conda}")
    own_root, own_tool = _own(ctx)
    found, watched = _search(ctx, own_root if own_tool else None)
    if found is not None:
        return found
    if conda:
        return Choice(conda, f"CONDA_PREFIX={conda} (conda's base environment)", watched)
    if own_tool is None:
        return Choice(ctx.executable,
                      f"wheelcuda's own environment {own_root} ({_NONE_FOUND})", watched)
    raise InterpreterError(
        f"no Python environment found: no VIRTUAL_ENV, no .venv in {ctx.cwd} or its "
        f"parents, no CONDA_PREFIX; wheelcuda's own environment {own_root} is "
        f"{own_tool}, not a place for torch",
        "uv venv && uv pip install torch   (in the project folder; "
        "or pass --python PATH, or activate an environment)")


def _absolute(path: str, ctx: Context) -> str:
    return os.path.normpath(os.path.join(ctx.cwd, os.path.expanduser(path)))


def _conda_base(prefix: str, ctx: Context) -> bool:
    """Whether ``CONDA_PREFIX`` is conda's base environment, which uv takes only after a
    ``.venv`` (uv's heuristic: ``_CONDA_ROOT``, else an environment whose folder is not
    named ``CONDA_DEFAULT_ENV``; pixi's environments are never a base)."""
    if os.path.isfile(os.path.join(prefix, "conda-meta", "pixi")):
        return False
    root = ctx.get("_CONDA_ROOT")
    if root and _absolute(root, ctx) == prefix:
        return True
    name = ctx.get("CONDA_DEFAULT_ENV")
    if not name or _absolute(name, ctx) == prefix:  # unnamed: conda create -p /path
        return False
    return os.path.basename(prefix) != name


def _is_env(folder: str) -> bool:
    return os.path.isfile(os.path.join(folder, "pyvenv.cfg"))


def _same(a: str, b: str | None) -> bool:
    return b is not None and os.path.realpath(a) == os.path.realpath(b)


def _search(ctx: Context, skip: str | None) -> tuple[Choice | None, tuple[str, ...]]:
    """The environment the working folder is in, else the nearest ``.venv`` up from it
    (uv's ``virtualenv_from_working_dir``), less ``skip`` (our own tool environment);
    and the ``.venv`` paths looked at and not found."""
    watched: list[str] = []
    folder = os.path.normpath(os.path.abspath(ctx.cwd))
    while True:
        if _is_env(folder) and not _same(folder, skip):
            return Choice(folder, f"the working folder is inside the environment {folder}",
                          tuple(watched)), tuple(watched)
        dot = os.path.join(folder, ".venv")
        try:
            mode = os.lstat(dot).st_mode
        except OSError:
            mode = None
            watched.append(dot)
        # a .venv file is uv's (experimental) redirect; newer uv passes over it, as here
        if mode is not None and (stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
            if not _is_env(dot):
                what = (f"links to {os.readlink(dot)}, which holds no pyvenv.cfg"
                        if stat.S_ISLNK(mode) else "holds no pyvenv.cfg")
                raise InterpreterError(
                    f"{dot} is not a Python environment: it {what} (uv stops at it too)",
                    f"make it again: uv venv --clear {dot}   (or pass --python PATH)")
            if not _same(dot, skip):
                return (Choice(dot, f"found .venv in {folder}", tuple(watched)),
                        tuple(watched))
        parent = os.path.dirname(folder)
        if parent == folder:
            return None, tuple(watched)
        folder = parent


def dot_venv(cwd: str) -> str | None:
    """The environment ``cwd`` is in, else the nearest ``.venv`` up from it, as uv finds
    it; None when there is none (or one that is no environment)."""
    try:
        found, _ = _search(Context.of({}, cwd=cwd), None)
    except InterpreterError:
        return None
    return found.python if found else None


def _own(ctx: Context) -> tuple[str, str | None]:
    """The environment running wheelcuda, and what made it when that was a tool
    installer (None for an environment a person made, or a Python installation)."""
    root = os.path.dirname(os.path.dirname(ctx.executable))
    if not _is_env(root):
        return root, None
    for mark, what in _TOOL_MARKS:
        if os.path.isfile(os.path.join(root, mark)):
            return root, what
    # uvx keeps its environments in <uv cache>/archive-v0/<hash>, pipx run in
    # <pipx home>/.cache/<hash>: cache folders, which CACHEDIR.TAG marks
    parent = os.path.dirname(root)
    if any(os.path.isfile(os.path.join(d, "CACHEDIR.TAG"))
           for d in (parent, os.path.dirname(parent))):
        return root, "a throwaway environment in a cache (uvx, pipx run)"
    return root, None


def chosen_executable(choice: Choice, ctx: Context) -> str:
    """:func:`executable` for a choice; an error names what chose the target when that
    was not ``--python`` (a stale VIRTUAL_ENV, a .venv whose Python is gone)."""
    try:
        return executable(choice.python, ctx)
    except InterpreterError as exc:
        if choice.why == "--python":
            raise
        fix = exc.fix
        if choice.why.startswith(("VIRTUAL_ENV=", "CONDA_PREFIX=")):
            var = choice.why.split("=", 1)[0]
            fix = (f"deactivate it (or unset {var}), or make it again: "
                   f"uv venv --clear {choice.python}; or pass --python PATH")
        raise InterpreterError(f"{exc.message} (the target: {choice.why})", fix) from None


def executable(python: str, ctx: Context) -> str:
    """An environment folder becomes its ``bin/python``; anything else must run. The
    path is made absolute against ``ctx``'s working folder."""
    path = os.path.normpath(os.path.join(ctx.cwd, os.path.expanduser(python)))
    if os.path.isdir(path):
        found = [os.path.join(path, name) for name in ("bin/python", "bin/python3")
                 if os.path.lexists(os.path.join(path, name))]
        if not found:
            raise InterpreterError(
                f"{python} is a folder but holds no bin/python: not a Python environment",
                f"uv venv {python}   (or pass --python /path/to/bin/python)",
            )
        path = found[0]
    if not os.path.exists(path):
        if os.path.islink(path):
            raise _dangling(path)
        raise InterpreterError(
            f"no Python at {python}",
            "pass --python with an existing interpreter or environment, "
            "or activate one: source .venv/bin/activate",
        )
    if not os.access(path, os.X_OK):
        raise InterpreterError(f"{python} is not executable, so it is not a Python",
                               "pass --python /path/to/bin/python")
    return path


def _dangling(path: str) -> InterpreterError:
    """A link to nothing: most often an environment whose base Python was removed or
    upgraded away, which is neither "no Python here" nor "not an environment"."""
    env = os.path.dirname(os.path.dirname(path))
    if os.path.isfile(os.path.join(env, "pyvenv.cfg")):
        return InterpreterError(
            f"{path} links to {os.readlink(path)}, which no longer exists: the Python "
            f"the environment {env} was made with is gone",
            f"make it again with an installed Python: uv venv --clear {env}",
        )
    return InterpreterError(f"{path} links to {os.readlink(path)}, which does not exist",
                            "pass --python with an existing interpreter or environment")


def watch(python: str, info: Mapping[str, Any]) -> list[str]:
    """Files whose change invalidates what we know of an interpreter."""
    prefix = str(info.get("prefix", ""))
    return [python, os.path.join(prefix, "pyvenv.cfg"), *map(str, info.get("site_dirs", []))]


#: Run first in the target: an old Python answers with its version (which
#: :func:`_checked` refuses by name) before the probe's first 3.8-only line fails.
_OLD_PYTHON = """import sys
if sys.version_info[:2] < (3, 8):
    import json
    print(json.dumps({"prefix": sys.prefix, "site_dirs": [],
                      "version": list(sys.version_info[:3])}))
    sys.exit(0)
"""


def ask(python: str, ctx: Context, *, child: bool = False) -> dict[str, Any]:
    """What ``python`` says of itself (a child process, except for ourselves unless
    ``child``: pip's build environment runs us on the target interpreter with another
    ``sys.path``, and the target's own is wanted)."""
    if python == ctx.executable and not child:
        return _ourselves(ctx)
    code = _OLD_PYTHON + source("_interp_probe.py")
    argv = [python, "-E", "-c", code]
    fix = f"pass --python with a Python {'.'.join(map(str, MIN_VERSION))}+ executable"
    try:
        out = proc.capture(argv, env=proc.child_environ(ctx.environ), timeout=60)
    except ToolError as exc:
        if exc.message.endswith(proc.SILENT):  # nothing to show: say how to see more
            fix = (f"run `{shlex.quote(python)} -c 'import sys'` to see why it fails, or {fix}")
        raise InterpreterError(f"{python} did not answer as a Python interpreter: "
                               f"{_without(argv, exc.message)}", fix) from exc
    try:
        info = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        said = (f"its answer is not JSON: {out.strip().splitlines()[-1][:200]!r}"
                if out.strip() else "it printed nothing")
        raise InterpreterError(f"{python} did not answer as a Python interpreter: {said}",
                               fix) from exc
    return _checked(python, info)


def _without(argv: list[str], message: str) -> str:
    """A failed probe's message less its command line, which holds the whole probe
    script, hundreds of lines that bury the cause: ``failed with exit code 1: <its last lines>``."""
    message = message.replace(shlex.join(argv), "").strip()
    first, _, rest = message.partition("\n")
    lines = [line.strip() for line in rest.splitlines() if line.strip()][-3:]
    return " | ".join([first, *lines]).replace(": | ", ": ", 1)


def _checked(python: str, info: object) -> dict[str, Any]:
    """The probe's answer, if it has every key of the right type (an answer missing
    ``version`` must be a message naming what it lacks, not a KeyError traceback)."""
    ok = (isinstance(info, dict) and isinstance(info.get("prefix"), str)
          and isinstance(info.get("site_dirs"), list)
          and all(isinstance(d, str) for d in info["site_dirs"])
          and isinstance(info.get("version"), list) and len(info["version"]) >= 3
          and all(isinstance(v, int) for v in info["version"][:3]))
    if not ok:
        raise InterpreterError(f"{python} did not answer as a Python interpreter "
                               "(its answer lacks prefix, version or site_dirs)",
                               "pass --python with a Python 3.8+ executable")
    version = tuple(info["version"][:3])  # type: ignore[index]
    if version < MIN_VERSION:
        shown = ".".join(map(str, version))
        raise InterpreterError(f"{python} is Python {shown}: wheelcuda installs into "
                               f"Python {'.'.join(map(str, MIN_VERSION))} or later only",
                               "pass --python with a Python 3.8+ executable")
    return info  # type: ignore[return-value]


def _ourselves(ctx: Context) -> dict[str, Any]:
    """The running interpreter, without a child process. Leave out what ``-E`` and
    safe_path leave out for others: PYTHONPATH, and sys.path[0] (the script's folder,
    or the working folder under -m)."""
    info = dict(_interp_probe.describe())  # type: ignore[no-untyped-call]
    extra = set((ctx.get("PYTHONPATH") or "").split(os.pathsep)) - {""}
    if sys.path and not getattr(sys.flags, "safe_path", False):
        extra.add(sys.path[0])
    info["site_dirs"] = [d for d in info["site_dirs"] if d not in extra]
    return info


def target(python: str, info: Mapping[str, Any], choice: Choice | None = None) -> Target:
    """The :class:`Target` for an interpreter's (checked) answer, and what chose it."""
    info = _checked(python, dict(info))
    major, minor, micro = info["version"][:3]
    return Target(python=python, prefix=info["prefix"], version=(major, minor, micro),
                  site_dirs=tuple(info["site_dirs"]), why=choice.why if choice else "",
                  watch=choice.watch if choice else ())
