"""No shim of a tree ever runs another wheelcuda shim: two trees on one PATH, a CXX that
names another tree's host shim or puts a launcher in front of this one's, a tree whose
compiler is another tree's nvcc. Each used to run for ever (or build with a compiler the
key did not name); trees laid out as _rules/tree.py plans them, run for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wheelcuda import _standalone as standalone
from wheelcuda._rules import tree
from wheelcuda._standalone import _nvcc_wrapper as w
from wheelcuda._standalone import _tree

#: a shim that runs itself for ever is stopped after this: far more than a shim needs
LIMIT_S = 20


def _tree_at(home: Path) -> Path:
    """A tree's programs at ``home`` (its bin/), as trees.py writes them."""
    modules = tuple((n, standalone.source(n)) for n in tree.WRAPPER_MODULES)
    for rel, text in tree.wrapper_files(sys.executable, str(home), modules):
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(0o755)
    return home / "bin"


def _tools(tmp_path: Path) -> Path:
    """A c++ that says it ran, and a ccache that runs what follows it, as ccache does."""
    tools = tmp_path / "tools"
    tools.mkdir()
    for name, body in (("c++", 'echo "REAL c++ $*"'), ("ccache", 'exec "$@"')):
        (tools / name).write_text(f"#!/bin/sh\n{body}\n")
        (tools / name).chmod(0o755)
    return tools


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(argv, env={"WHEELCUDA_NO_PROGRESS": "1", **env}, cwd=cwd,
                              capture_output=True, text=True, check=False, timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{argv[0]} still ran after {LIMIT_S} s: a shim ran a shim")


def test_two_trees_on_one_path_run_the_real_ninja(tmp_path: Path) -> None:
    """After `eval "$(wheelcuda env)"` the backend builds its own tree and puts it first:
    two trees' bins on PATH. torch's first `ninja --version` once made their ninja shims
    run each other for ever, at 100% CPU. No tree holds a ninja of its own now (the
    compile pool orders the compiles), so the real one answers."""
    a, b = _tree_at(tmp_path / "a"), _tree_at(tmp_path / "b")
    ninja = shutil.which("ninja")
    assert ninja, "ninja is a test dependency (pyproject.toml's test extra)"
    path = os.pathsep.join([str(a), str(b), os.path.dirname(ninja), "/usr/bin", "/bin"])
    r = _run(["ninja", "--version"], {"PATH": path}, tmp_path)
    real = subprocess.run([ninja, "--version"], capture_output=True, text=True, check=True)
    assert r.returncode == 0 and r.stdout == real.stdout, r.stderr
    assert not (a / "ninja").exists() and not (b / "ninja").exists()


@pytest.mark.parametrize("real_cxx", [
    "ccache {a}/wheelcuda-c++",   # CXX="ccache $CXX" after env, then env (or install) again
    "{b}/wheelcuda-c++",          # another tree's shim, named by CXX
    "ccache {b}/wheelcuda-c++ -m64",
])
def test_the_host_shim_never_runs_a_shim(tmp_path: Path, real_cxx: str) -> None:
    """The shim runs WHEELCUDA_REAL_CXX: a shim in it (this tree's behind ccache, or
    another tree's) is replaced by c++; a launcher in front stays."""
    a, b = _tree_at(tmp_path / "a"), _tree_at(tmp_path / "b")
    tools = _tools(tmp_path)
    env = {"PATH": f"{a}:{tools}:/usr/bin:/bin", "WHEELCUDA_POOL": str(tmp_path / "pool"),
           "WHEELCUDA_REAL_CXX": real_cxx.format(a=a, b=b)}
    (tmp_path / "x.cpp").write_text("int x;\n")
    r = _run([str(a / "wheelcuda-c++"), "-c", "x.cpp", "-o", "x.o"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("REAL c++ "), r.stdout
    assert "-c x.cpp -o x.o" in r.stdout
    assert ("-m64" in r.stdout) == ("-m64" in real_cxx)


def test_a_trees_compiler_that_is_another_trees_nvcc_is_refused(tmp_path: Path) -> None:
    """A tree made over another tree (CUDA_HOME naming a wheelcuda tree, taken for a local
    toolkit): its nvcc would run the other's, which could run it back, for ever."""
    a, b = _tree_at(tmp_path / "a"), _tree_at(tmp_path / "b")
    (a / w.REAL).symlink_to(b / "nvcc")
    (b / w.REAL).symlink_to(a / "nvcc")
    env = {"PATH": "/usr/bin:/bin", "WHEELCUDA_POOL": str(tmp_path / "pool"),
           "WHEELCUDA_ARCHS": "9.0"}
    r = _run([str(a / "nvcc"), "-c", "k.cu", "-o", "k.o"], env, tmp_path)
    assert r.returncode == 1
    assert "is another wheelcuda tree's nvcc, not a compiler" in r.stderr
    assert "fix: unset CUDA_HOME and CUDA_PATH" in r.stderr


def test_every_shim_says_it_is_one(tmp_path: Path) -> None:
    a = _tree_at(tmp_path / "a")
    assert _tree.is_shim(str(a / "nvcc")) and _tree.is_shim(str(a / "wheelcuda-c++"))
    assert not _tree.is_shim(sys.executable) and not _tree.is_shim(str(tmp_path / "none"))
