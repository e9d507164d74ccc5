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
from wheelcuda._rules import buildkey, cxxstd, tree
from wheelcuda._standalone import _nvcc_wrapper as w
from wheelcuda._standalone import _tree
from wheelcuda._store import fs

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


@pytest.mark.parametrize(("cxx", "real", "runs"), [
    ("{b}/wheelcuda-c++", "g++-12", "g++-12"),            # another tree's, after env
    ("ccache {a}/wheelcuda-c++", "g++-12", "ccache g++-12"),  # CXX="ccache $CXX"
    ("ccache {b}/wheelcuda-c++", "ccache g++-12", "ccache g++-12"),  # ccache once
    ("{a}/wheelcuda-c++", "{b}/wheelcuda-c++", "c++"),    # shims all the way: c++
    ("g++-13", "g++-12", "g++-13"),                       # the user's own CXX wins
])
def test_the_build_runs_the_compiler_its_key_names(tmp_path: Path, cxx: str, real: str,
                                                   runs: str) -> None:
    """The key read WHEELCUDA_REAL_CXX for any tree's shim in CXX, the build only for
    this tree's: with another tree's shim in CXX and WHEELCUDA_REAL_CXX=g++-12, the build
    ran c++ and the key said g++-12. One function decides for both."""
    a, b = _tree_at(tmp_path / "a"), _tree_at(tmp_path / "b")
    environ = {"CXX": cxx.format(a=a, b=b), "WHEELCUDA_REAL_CXX": real.format(a=a, b=b)}
    build = cxxstd.variables(None, str(tmp_path / "a"), environ)
    assert build["CXX"] == f"{a}/wheelcuda-c++"
    assert build["WHEELCUDA_REAL_CXX"] == runs
    # c++ is what no CXX runs: the key says nothing (install after env kept its key)
    assert buildkey.build_variables({}, environ).get("CXX", "c++") == runs
    assert ("CXX" in buildkey.build_variables({}, environ)) == (runs != "c++")


def test_a_host_compile_through_sccache_keeps_the_users_tmpdir(tmp_path: Path) -> None:
    """A compile's own temporary folder goes when it ends; sccache's client starts a
    server that outlives it and keeps the TMPDIR it was started with (nvcc.rs:391
    panicked in the next build). A host compile through sccache gets the user's."""
    a = _tree_at(tmp_path / "a")
    tools = _tools(tmp_path)
    (tools / "sccache").write_text('#!/bin/sh\necho "$TMPDIR" > "$SEEN"\nexec "$@"\n')
    (tools / "sccache").chmod(0o755)
    user_tmp = tmp_path / "user-tmp"
    user_tmp.mkdir()
    env = {"PATH": f"{tools}:/usr/bin:/bin", "WHEELCUDA_POOL": str(tmp_path / "pool"),
           "WHEELCUDA_REAL_CXX": "sccache c++", "TMPDIR": str(user_tmp),
           "SEEN": str(tmp_path / "seen")}
    r = _run([str(a / "wheelcuda-c++"), "-c", "x.cpp", "-o", "x.o"], env, tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("REAL c++ -c x.cpp"), r.stdout
    assert (tmp_path / "seen").read_text().strip() == str(user_tmp)
    assert "through sccache" in r.stderr


def test_a_trees_programs_start_from_precompiled_modules(tmp_path: Path) -> None:
    """A compile through a tree imported its wrapper and modules from source at every
    start (about 100 ms of each compile's toll on 2 cores): a tree holds them compiled,
    and its entries are a few lines that import them."""
    a = _tree_at(tmp_path / "a")
    fs.precompile(a)
    cached = {p.name.split(".")[0] for p in (a / "__pycache__").glob("*.pyc")}
    assert {m[:-3] for m in tree.WRAPPER_MODULES} <= cached
    for entry in (tree.WRAPPER_SOURCE, tree.HOST_ENTRY):
        assert len((tmp_path / "a" / entry).read_text().splitlines()) <= 4
    r = subprocess.run([sys.executable, "-IBSv", str(tmp_path / "a" / tree.HOST_ENTRY),
                        "--version"], capture_output=True, text=True, check=False,
                       env={"PATH": f"{_tools(tmp_path)}:/usr/bin:/bin"})
    assert f"code object from '{a}/__pycache__/_progress" in r.stderr, r.stderr[-2000:]
