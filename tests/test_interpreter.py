"""The interpreter probe against real interpreters: this one, and a venv made for the test.

What the probe must get right before anything is installed anywhere: which Python a
``--python`` spelling means, its version and where its imports look (never ours, never
its sys.path[0]); that the answer is asked once and kept until the environment changes;
and that anything that is not a Python ends in an InterpreterError with a fix, never in
another exception.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import sysconfig
from collections.abc import Callable
from pathlib import Path

import pytest

from wheelcuda import _pipeline as pipeline
from wheelcuda import _proc as proc
from wheelcuda._context import Context
from wheelcuda._probe import interpreter
from wheelcuda._store import memo, paths
from wheelcuda._store.layout import Layout
from wheelcuda._values import Target
from wheelcuda.errors import InterpreterError

#: Our own site-packages: a target venv must never see it.
OURS = sysconfig.get_paths()["purelib"]
VERSION = tuple(sys.version_info[:3])


def make_venv(folder: Path) -> Path:
    """A real, empty environment of the running Python (no pip: fast)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True,
                   capture_output=True, timeout=60)
    return folder


def site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def resolve(python: str | None, ctx: Context | None = None) -> Target:
    """The target as every command resolves it (through the memo in the test's cache)."""
    ctx = ctx or Context.current()
    return pipeline.resolve_target(ctx, Layout.for_environ(ctx.environ), python)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One throwaway venv for the tests that only read it (``.venv-t``: a dot name, as
    people spell theirs)."""
    return make_venv(tmp_path_factory.mktemp("target") / ".venv-t")


@pytest.fixture
def children(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Every child process the probe starts, in order (they still run)."""
    started: list[list[str]] = []
    real: Callable[..., str] = proc.capture

    def counting(argv: list[str], **kwargs: object) -> str:
        started.append(list(argv))
        return real(argv, **kwargs)

    monkeypatch.setattr(proc, "capture", counting)  # what interpreter.ask calls
    return started


# -- the running interpreter ------------------------------------------------------------


def test_ourselves_answers_without_a_child(children: list[list[str]]) -> None:
    ctx = Context.current()
    target = resolve(sys.executable, ctx)  # not None: the working folder may hold a .venv
    assert target.python == ctx.executable == os.path.abspath(sys.executable)
    assert target.version == VERSION
    assert target.tag == f"cp{sys.version_info[0]}{sys.version_info[1]}"
    assert target.prefix == sys.prefix
    assert OURS in target.site_dirs
    assert sys.path[0] not in target.site_dirs  # the script's or working folder
    assert children == []


def test_ourselves_agrees_with_a_child_of_ourselves() -> None:
    """The in-process shortcut says what the child probe (``python -E -c``) says, less
    nothing that matters: every site folder the child sees, in its order."""
    ctx = Context.current()
    ours = interpreter.ask(ctx.executable, ctx)
    stranger = dataclasses.replace(ctx, executable="/nonexistent/python")  # forces a child
    child = interpreter.ask(ctx.executable, stranger)
    assert (child["prefix"], child["version"]) == (ours["prefix"], list(VERSION))
    assert OURS in child["site_dirs"]
    assert [d for d in ours["site_dirs"] if d in child["site_dirs"]] == child["site_dirs"]


def test_ourselves_leaves_out_pythonpath(tmp_path: Path) -> None:
    """As ``-E`` does for a child: PYTHONPATH is the caller's, not the environment's."""
    extra = tmp_path / "extra"
    extra.mkdir()
    ctx = Context.current().with_env(PYTHONPATH=str(extra))
    sys.path.append(str(extra))
    try:
        assert str(extra) not in interpreter.ask(ctx.executable, ctx)["site_dirs"]
    finally:
        sys.path.remove(str(extra))


# -- a real venv ------------------------------------------------------------------------


def test_venv_target_is_the_venv(venv: Path) -> None:
    target = resolve(str(venv))
    assert target.python == str(venv / "bin" / "python")
    assert os.path.realpath(target.prefix) == os.path.realpath(venv)
    assert target.version == VERSION
    assert str(site_packages(venv)) in target.site_dirs
    assert OURS not in target.site_dirs
    assert not any(d.startswith(sys.prefix + os.sep) for d in target.site_dirs)


def test_venv_through_virtual_env(venv: Path) -> None:
    """No --python: the active environment (VIRTUAL_ENV) is the target, not ourselves."""
    ctx = Context.current().with_env(VIRTUAL_ENV=str(venv))
    assert resolve(None, ctx) == resolve(str(venv))


@pytest.mark.parametrize("spelling", [
    "{venv}", "{venv}/", "{venv}/bin/python", "{venv}/bin/../bin/python",
    ".venv-t", "./.venv-t", ".venv-t/bin/python", "../{parent}/.venv-t",
])
def test_every_spelling_gives_one_absolute_python(venv: Path, spelling: str) -> None:
    """By folder, by executable, absolute or relative to the working folder: the same
    interpreter path, so one memo entry and one tree per environment."""
    python = spelling.format(venv=venv, parent=venv.parent.name)
    ctx = Context.of(os.environ, cwd=str(venv.parent))
    assert interpreter.executable(python, ctx) == str(venv / "bin" / "python")
    assert resolve(python, ctx).python == str(venv / "bin" / "python")


# -- the memo ---------------------------------------------------------------------------


def test_answer_is_kept_until_a_package_is_installed(
        tmp_path: Path, children: list[list[str]]) -> None:
    venv = make_venv(tmp_path / "v")
    python = str(venv / "bin" / "python")
    first = resolve(str(venv))
    assert [argv[:2] for argv in children] == [[python, "-E"]]  # asked once, -E
    root = str(Layout.for_environ(os.environ).root)
    assert os.path.isfile(memo.file_for(root, "interpreter", python))

    relative = Context.of(os.environ, cwd=str(tmp_path))
    assert resolve("v", relative) == resolve(python) == first
    assert len(children) == 1  # warm: kept, whatever the spelling

    (site_packages(venv) / "demo-1.0.dist-info").mkdir()  # what any installer makes
    assert resolve(str(venv)) == first
    assert len(children) == 2  # the site folder changed: asked again
    assert resolve(str(venv)) == first
    assert len(children) == 2


def test_answer_is_asked_again_when_the_environment_is_remade(
        tmp_path: Path, children: list[list[str]]) -> None:
    venv = make_venv(tmp_path / "v")
    resolve(str(venv))
    cfg = venv / "pyvenv.cfg"
    cfg.write_text(cfg.read_text() + "# remade\n")
    resolve(str(venv))
    assert len(children) == 2


def test_a_kept_answer_is_not_trusted_blindly(
        tmp_path: Path, children: list[list[str]]) -> None:
    """A memo entry for this interpreter that an older wheelcuda (or a bug) wrote
    without ``version`` is checked like a fresh answer: an InterpreterError, no
    KeyError."""
    venv = make_venv(tmp_path / "v")
    python = str(venv / "bin" / "python")
    info = interpreter.ask(python, Context.current())
    del info["version"]
    layout = Layout.for_environ(os.environ)
    layout.private()
    memo.save(str(layout.root), "interpreter", python, info,
              paths.stamps(interpreter.watch(python, info)))
    with pytest.raises(InterpreterError, match="lacks prefix, version or site_dirs"):
        resolve(python)
    assert len(children) == 1  # the answer came from the memo


# -- what is not a Python ---------------------------------------------------------------


def _script(path: Path, body: str, mode: int = 0o755) -> str:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(mode)
    return str(path)


def _folder_without_python(tmp: Path) -> str:
    (tmp / "env" / "bin").mkdir(parents=True)
    return str(tmp / "env")


def _venv_whose_python_is_gone(tmp: Path) -> str:
    (tmp / "env" / "bin").mkdir(parents=True)
    (tmp / "env" / "pyvenv.cfg").write_text("home = /gone/bin\n")
    (tmp / "env" / "bin" / "python").symlink_to(tmp / "gone" / "python3.11")
    return str(tmp / "env")


NOT_A_PYTHON: dict[str, tuple[Callable[[Path], str], str]] = {
    "missing": (lambda tmp: str(tmp / "nothing"), "no Python at"),
    "folder_without_bin_python": (_folder_without_python, "not a Python environment"),
    "venv_whose_python_is_gone": (_venv_whose_python_is_gone, "was made with is gone"),
    "not_executable": (lambda tmp: _script(tmp / "py", "exit 0\n", 0o644), "not executable"),
    "no_shebang": (lambda tmp: str(_no_shebang(tmp / "py")), "did not answer"),
    "folder_as_bin_python": (lambda tmp: str(_bin_python_folder(tmp)), "did not answer"),
    "bin_false": (lambda _tmp: "/bin/false", "did not answer"),
    "prints_nothing": (lambda tmp: _script(tmp / "py", "exit 0\n"), "did not answer"),
    "prints_garbage": (lambda tmp: _script(tmp / "py", "echo 'Python 3.11.7'\n"),
                       "did not answer"),
    "prints_json_without_version": (
        lambda tmp: _script(tmp / "py", """echo '{"prefix": "/p", "site_dirs": []}'\n"""),
        "lacks prefix, version or site_dirs"),
    "prints_a_json_list": (lambda tmp: _script(tmp / "py", "echo '[3, 11, 7]'\n"), "lacks"),
    "fails_with_a_traceback": (
        lambda tmp: _script(tmp / "py", "echo 'SyntaxError: invalid syntax' >&2; exit 1\n"),
        "SyntaxError"),
    "python_2": (
        lambda tmp: _script(tmp / "py", """echo '{"prefix": "/p", "site_dirs": [], """
                            """"version": [2, 7, 18]}'\n"""),
        "is Python 2.7.18"),
}


def _no_shebang(path: Path) -> Path:
    path.write_bytes(b"\x7fNOT-AN-ELF\0\0")
    path.chmod(0o755)
    return path


def _bin_python_folder(tmp: Path) -> Path:
    (tmp / "env" / "bin" / "python").mkdir(parents=True)
    return tmp / "env"


@pytest.mark.parametrize("case", list(NOT_A_PYTHON))
def test_not_a_python_is_an_interpreter_error_with_a_fix(tmp_path: Path, case: str) -> None:
    make, says = NOT_A_PYTHON[case]
    python = make(tmp_path)
    with pytest.raises(InterpreterError, match=says) as caught:
        resolve(python)
    assert caught.value.fix
    assert list((tmp_path / "cache").glob("**/*.memo")) == []  # nothing kept


def test_not_a_python_is_not_remembered(tmp_path: Path) -> None:
    """A failed answer is not kept: once the path holds a Python, it is asked again."""
    python = tmp_path / "py"
    _script(python, "echo garbage\n")
    with pytest.raises(InterpreterError):
        resolve(str(python))
    python.unlink()
    python.symlink_to(sys.executable)
    assert resolve(str(python)).version == VERSION
