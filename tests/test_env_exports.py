"""What `wheelcuda env` leaves in one shell over time: the user's own values survive any
number of env runs, a constraints file under a path with a space reaches uv and pip
whole, and the exports end (`env --unset`, or env in another environment) without taking
the user's values with them. The shells are the real ones (bash, dash, zsh, fish), uv
and pip the real ones, offline."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from uv import find_uv_bin

from tests import fakes
from tests.test_cli import fail, run
from tests.test_render import _which
from wheelcuda import _warm as warm
from wheelcuda._rules import environ

PIP = environ.PIP_INDEX_VAR
UV_C, PIP_C = environ.BUILD_CONSTRAINT_VARS
CU128 = "https://download.pytorch.org/whl/cu128"
CU126 = "https://download.pytorch.org/whl/cu126"
MIRROR = "https://mirror.example/simple"
WC = f"{shlex.quote(sys.executable)} -m wheelcuda"


@pytest.fixture
def good(tmp_path: Path) -> Path:
    site = fakes.build_needs(fakes.torch(fakes.cu13_site(tmp_path / "site")))
    return fakes.python(tmp_path, [site])


def _env(shell: Mapping[str, str], index: str | None = None, constraints: str | None = None,
         constraints_dir: str = "/c") -> dict[str, str]:
    """The shell after evaluating what env exports for isolated builds (pure)."""
    out = environ.isolated(shell, constraints=constraints, constraints_dir=constraints_dir,
                           switches={}, arch_vars={}, index=index)
    return {**shell, **out}


# --- the user's own PIP_EXTRA_INDEX_URL ----------------------------------------------

def test_the_users_own_index_survives_every_env() -> None:
    """The user's PIP_EXTRA_INDEX_URL was PyTorch's cu128 index, the one env adds for a
    torch from there: env took it for its own, and the next env exported it empty."""
    shell = {PIP: CU128}
    for index in (CU128, CU128, None, CU126, None, CU128, None):
        shell = _env(shell, index)
        assert CU128 in shell[PIP].split(), index
    assert shell[PIP] == CU128


def test_an_equal_index_the_user_adds_after_env_is_theirs() -> None:
    """Only env's entry goes, the last equal one; the user's text stays byte for byte."""
    shell = _env({PIP: f"{MIRROR}\t{MIRROR}2"}, CU128)
    assert shell[PIP] == f"{MIRROR}\t{MIRROR}2 {CU128}" and shell[environ.ENV_INDEX_VAR] == CU128
    shell[PIP] += f" {CU128}"  # the user's own, after env's
    assert _env(shell)[PIP] == f"{MIRROR}\t{MIRROR}2 {CU128}"


# --- constraints under a path with a space -------------------------------------------

def test_constraints_under_a_path_with_a_space_are_named_by_their_url() -> None:
    folder = "/home/me/my cache/constraints"
    shell = _env({UV_C: "/mine.txt"}, constraints=f"{folder}/a.txt", constraints_dir=folder)
    url = "file:///home/me/my%20cache/constraints/a.txt"
    assert shell[UV_C] == f"/mine.txt {url}" and shell[PIP_C] == url
    again = _env(shell, constraints=f"{folder}/b.txt", constraints_dir=folder)
    assert again[UV_C] == f"/mine.txt {url.replace('a.txt', 'b.txt')}"
    assert environ.own_constraints(again[UV_C], folder) == [f"{folder}/b.txt"]


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A project whose build needs ``builddep`` (1.0 and 2.0 in a local folder of wheels)
    and whose backend stops the build saying which one it got; its folder and the links."""
    links = tmp_path / "links"
    for version in ("1.0", "2.0"):
        fakes.wheel(links, "builddep", version, {"builddep/__init__.py": f"V = {version!r}\n"})
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["builddep"]\nbuild-backend = "backend"\n'
        'backend-path = ["."]\n[project]\nname = "proj"\nversion = "0.1"\n')
    (project / "backend.py").write_text(
        "def build_wheel(directory, config_settings=None, metadata_directory=None):\n"
        "    import builddep\n    raise SystemExit('built with builddep ' + builddep.V)\n")
    return project, links


def test_uv_and_pip_read_a_url_whole_and_split_a_path(tmp_path: Path) -> None:
    """What the installers do with the value (uv 0.13.9, pip 26.3 here; uv 0.10.0 and
    pip 25.3 did the same): a path with a space is two files, quoted or not; its
    file:// URL is the one file."""
    project, links = _project(tmp_path)
    folder = tmp_path / "my dir"
    folder.mkdir()
    (folder / "c.txt").write_text("builddep==1.0\n")
    path = str(folder / "c.txt")
    base = {**os.environ, "UV_CACHE_DIR": str(tmp_path / "uv-cache"), "PIP_NO_CACHE_DIR": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    uv = [find_uv_bin(), "pip", "install", "--python", sys.executable, "--target",
          str(tmp_path / "t1"), "--offline", "--no-index", "--find-links", str(links),
          "--no-cache", str(project)]
    pip = [sys.executable, "-m", "pip", "install", "--target", str(tmp_path / "t2"),
           "--no-index", "--find-links", str(links), str(project)]
    for command, var in ((uv, UV_C), (pip, PIP_C)):
        for value, said in ((environ.constraint_word(path), "built with builddep 1.0"),
                            (path, str(folder.parent / "my")),
                            (f'"{path}"', f'"{folder.parent / "my"}')):
            done = subprocess.run(command, capture_output=True, text=True, check=False,
                                  env={**base, var: value}, timeout=120)
            assert done.returncode != 0 and said in done.stdout + done.stderr, (var, value)
    assert environ.constraint_word(path).startswith("file:///")
    assert environ.word_path(environ.constraint_word(path)) == path


def test_env_says_what_uv_and_pip_make_of_the_users_own_path(good: Path,
                                                             tmp_path: Path) -> None:
    """The user's own file under `my dir` is theirs, kept as they wrote it: env says that
    uv and pip read it as two files, and names the URL they read whole."""
    folder = tmp_path / "my dir"
    folder.mkdir()
    (folder / "c.txt").write_text("numpy<3\n")
    mine = f"{folder / 'c.txt'} {tmp_path / 'gone.txt'}"
    r = run("env", "--python", str(good), "--arch", "9.0", env={UV_C: mine})
    assert r.returncode == 0, r.stderr
    assert f"export {UV_C}='{mine} " in r.stdout  # kept as written, env's file after it
    assert "file://" + str(folder).replace(" ", "%20") + "/c.txt" in r.stderr
    assert f"names {tmp_path / 'gone.txt'}, which is not a file" in r.stderr


# --- the exports end -------------------------------------------------------------------

def _read(shell: str, script: str, env: Mapping[str, str], tmp_path: Path
          ) -> tuple[dict[str, str], dict[str, str], str]:
    """Run ``script`` in ``shell`` after writing ``env -0`` to ``before``, and again to
    ``after`` when it is done: (before, after, stderr)."""
    before, after = tmp_path / "before", tmp_path / "after"
    if shell == "fish":
        text = f"command env -0 > {before}; {script}; command env -0 > {after}"
        argv = [_which("fish"), "--no-config", "-c", text]
    else:
        text = f"env -0 > {before} && {script} && env -0 > {after}"
        argv = [_which(shell), "-c", text]
    done = subprocess.run(argv, capture_output=True, text=True, env=dict(env), check=False,
                          timeout=120)
    assert done.returncode == 0, done.stderr

    def parse(path: Path) -> dict[str, str]:
        items = path.read_bytes().decode().split("\0")
        pairs = (i.split("=", 1) for i in items if i)
        return {k: v for k, v in pairs if k not in warm.VOLATILE}  # zsh execs the last

    return parse(before), parse(after), done.stderr


def _user_env(tmp_path: Path) -> dict[str, str]:
    mine = tmp_path / "mine.txt"
    mine.write_text("numpy<3\n")
    env = fakes.pythonpath_env()
    env.update(WHEELCUDA_CACHE_DIR=os.environ["WHEELCUDA_CACHE_DIR"], TORCH_CUDA_ARCH_LIST="8.0",
               CXX="g++", PIP_EXTRA_INDEX_URL=MIRROR, UV_BUILD_CONSTRAINT=str(mine),
               CAUSAL_CONV1D_FORCE_BUILD="FALSE")
    return env


@pytest.mark.parametrize("shell", ["bash", "dash", "zsh"])
def test_env_unset_gives_the_shell_back(good: Path, tmp_path: Path, shell: str) -> None:
    """env twice, then env --unset: the environment is the one before, to the byte: the
    user's arch list, CXX, index and constraints come back, everything env added goes."""
    env = _user_env(tmp_path)
    made = f"{WC} env --python {good} --arch 9.0"
    step = 'out=$({}) && eval "$out"'
    script = " && ".join([step.format(made), step.format(made), step.format(f"{WC} env --unset")])
    before, after, err = _read(shell, script, env, tmp_path)
    assert after == before
    assert f"taking back what wheelcuda env exported for {good.parent}" in err


def test_env_unset_gives_a_fish_back(good: Path, tmp_path: Path) -> None:
    env = _user_env(tmp_path)
    made = f"{WC} env --python {good} --arch 9.0 --shell fish"
    script = f"{made} | source; {made} | source; {WC} env --unset --shell fish | source"
    before, after, _ = _read("fish", script, env, tmp_path)
    assert after == before


def test_env_in_another_environment_takes_the_old_torch_out(good: Path, tmp_path: Path) -> None:
    """After env for a torch 2.14.1 venv, env for one without torch left the build
    constraints pinning torch 2.14.1 for every isolated build, C++20 included."""
    other = tmp_path / "other"
    bare = fakes.python(other, [fakes.build_needs(fakes.cu13_site(other / "site"))])
    env = _user_env(tmp_path)
    step = 'out=$({}) && eval "$out"'
    script = " && ".join(step.format(f"{WC} env --python {py} --arch 9.0")
                         for py in (good, bare))
    before, after, err = _read("bash", script, env, tmp_path)
    assert after[UV_C] == before[UV_C] and PIP_C not in after
    assert "WHEELCUDA_CXX_STD" not in after
    assert after["WHEELCUDA_REAL_CXX"] == "g++"  # the user's, not c++ behind the old shim
    assert after["CAUSAL_CONV1D_FORCE_BUILD"] == "FALSE"
    assert f"replace what wheelcuda env exported for {good.parent}" in err
    assert environ.made_for(after) == str(other)


def test_env_twice_prints_the_same() -> None:
    """A second env in the same shell sets what the first did, its record included (and
    what it puts back of the first is nothing) (pure)."""
    shell = {"TORCH_CUDA_ARCH_LIST": "8.0", "CXX": "g++", "PATH": "/usr/bin"}
    wanted = {"CUDA_HOME": "/h", "PATH": "/h/bin:/usr/bin", "TORCH_CUDA_ARCH_LIST": "9.0",
              "CXX": "/h/bin/wheelcuda-c++", "FLASH_ATTN_CUDA_ARCHS": "90", PIP_C: ""}
    first, unset = environ.exports(wanted, shell, "/venv")
    assert unset == [] and PIP_C not in first
    second, unset = environ.exports(wanted, {**shell, **first}, "/venv")
    assert second == first and unset == []
    assert environ.Record.read(first[environ.RECORD_VAR]).entries["CXX"][1] == "g++"


def test_unset_keeps_what_the_user_changed_after_env() -> None:
    """A value the user set after env is theirs: --unset leaves it; of PATH only the
    tree's bin goes, the venv activated after env stays (pure)."""
    shell = {"PATH": "/usr/bin", PIP: MIRROR}
    wanted = {"CUDA_HOME": "/cache/homes/t", "PATH": "/cache/homes/t/bin:/usr/bin",
              "CAUSAL_CONV1D_FORCE_BUILD": "TRUE", "TORCH_CUDA_ARCH_LIST": "9.0",
              UV_C: "/cache/constraints/a.txt", PIP: f"{MIRROR} {CU128}",
              environ.ENV_INDEX_VAR: CU128}
    out, _ = environ.exports(wanted, shell, "/venv")
    shell = {**shell, **out, "TORCH_CUDA_ARCH_LIST": "8.6"}
    shell["PATH"] = f"/venv/bin:{shell['PATH']}"
    back, unset = environ.undo(shell, "/cache/homes", "/cache/constraints")
    assert back == {"PATH": "/venv/bin:/usr/bin", PIP: MIRROR}
    assert sorted(unset) == sorted(["CUDA_HOME", "CAUSAL_CONV1D_FORCE_BUILD", UV_C,
                                    environ.ENV_INDEX_VAR, environ.RECORD_VAR])


@pytest.mark.parametrize("record", ["", "garbage", "@", "A-B:12 :12 PATH:12 B", "C:%zz:%zz"])
def test_a_record_edited_by_hand_takes_back_nothing_else(record: str) -> None:
    """A record that is no record of env's names nothing to unset but itself."""
    digest = hashlib.sha256(b"12").hexdigest()[:8]
    shell = {environ.RECORD_VAR: record.replace("12", digest), "A-B": "12", "PATH": "12",
             "B": "12"}
    assert environ.undo(shell, "/h", "/c") == ({}, [environ.RECORD_VAR])


def test_unset_says_what_it_cannot_do(tmp_path: Path) -> None:
    digest = hashlib.sha256(b"TRUE").hexdigest()[:8]
    shell = {environ.RECORD_VAR: f"@/venv X_FORCE_BUILD:{digest}", "X_FORCE_BUILD": "TRUE"}
    fail(run("env", "--unset", "--shell", "github", env=shell), "cannot unset variables",
         "unset X_FORCE_BUILD WHEELCUDA_ENV_SET")
    data = json.loads(run("env", "--unset", "--shell", "json", env=shell).stdout)
    assert data["unset"] == sorted(["X_FORCE_BUILD", environ.RECORD_VAR])
    r = run("env", "--unset", "--arch", "9.0")
    assert r.returncode == 2 and "--unset" in r.stderr and "--arch" in r.stderr
    r = run("env", "--unset", env={"PATH": os.environ["PATH"]})
    assert r.returncode == 0 and r.stdout == "" and "nothing to take back" in r.stderr
    assert "Traceback" not in r.stderr
