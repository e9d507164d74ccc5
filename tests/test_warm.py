"""The warm path of ``wheelcuda env``: it replays exactly what the full path printed, and
only while the arguments, the environment and every file behind the answer are unchanged."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import fakes
from wheelcuda import _warm as warm
from wheelcuda._store import memo, named, paths

ENV = {"PATH": "/usr/bin", "HOME": "/home/u"}


@pytest.mark.parametrize("argv", [
    ["env"],
    ["env", "--arch", "9.0"],
    ["env", "--arch=9.0", "--shell", "fish", "--all-archs"],
    ["env", "--python", "/v/bin/python", "--shell=json"],
])
def test_key_for_the_spellings_it_knows(argv: list[str]) -> None:
    assert warm.key_for(argv, ENV) is not None


@pytest.mark.parametrize("argv", [
    [], ["home"], ["doctor", "--arch", "9.0"], ["env", "--help"], ["env", "--ar", "9.0"],
    ["env", "--arch"], ["env", "extra"], ["env", "--all-archs=1"],
])
def test_key_for_anything_else_is_none(argv: list[str]) -> None:
    assert warm.key_for(argv, ENV) is None


def test_key_reads_python_absolute_and_ignores_what_shells_change(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    relative = warm.key_for(["env", "--python", ".venv"], ENV)
    absolute = warm.key_for(["env", "--python", str(tmp_path / ".venv")], ENV)
    assert relative == absolute
    assert warm.key_for(["env"], {**ENV, "PWD": "/a", "SHLVL": "3", "_": "x"}) == \
        warm.key_for(["env"], ENV)
    assert warm.key_for(["env"], {**ENV, "CC": "clang"}) != warm.key_for(["env"], ENV)
    assert warm.key_for(["env"], {**ENV, "WHEELCUDA_NO_WARM": "1"}) is None


def test_empty_values_are_not_kept() -> None:
    assert warm.key_for(["env", "--python="], ENV) is None
    assert warm.key_for(["env", "--arch", ""], ENV) is None


def test_relative_paths_in_the_environment_key_the_working_folder(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    keys = {}
    given = ["env", "--python", "/v/bin/python"]
    for argv, env, differs in ((given, {**ENV, "VIRTUAL_ENV": ".venv"}, True),
                               (given, {**ENV, "PATH": "bin:/usr/bin"}, True),
                               (given, {**ENV, "PATH": "/usr/bin:"}, True),
                               (given, ENV, False),
                               # no --python, no VIRTUAL_ENV: the target is searched for
                               # from the working folder (.venv here or in a parent)
                               (["env"], ENV, True),
                               (["env"], {**ENV, "VIRTUAL_ENV": "/v"}, False)):
        for name in ("a", "b"):
            monkeypatch.chdir(tmp_path / name)
            keys[name] = warm.key_for(argv, env)
        assert (keys["a"] != keys["b"]) == differs, (argv, env)


def test_another_interpreter_running_wheelcuda_is_another_key(
        monkeypatch: pytest.MonkeyPatch) -> None:
    before = warm.key_for(["env"], ENV)
    monkeypatch.setattr(sys, "executable", "/other/venv/bin/python")
    assert warm.key_for(["env"], ENV) != before


def _replay(argv: list[str], env: dict[str, str]) -> tuple[bool, str, str]:
    out, err = io.StringIO(), io.StringIO()
    hit = warm.replay(argv, env, out, err)
    return hit, out.getvalue(), err.getvalue()


def test_record_then_replay_until_a_stamped_file_changes(tmp_path: Path) -> None:
    env = {**ENV, "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache")}
    watched = tmp_path / "site"
    watched.mkdir()
    (tmp_path / "cache").mkdir(mode=0o700)
    warm.record(["env"], env, "export A='1'\n", "wheelcuda: note\n",
                paths.stamps([str(watched)]), home=str(tmp_path / "homes" / "tree"))
    assert _replay(["env"], env) == (True, "export A='1'\n", "wheelcuda: note\n")
    assert _replay(["env", "--arch", "9.0"], env)[0] is False  # other arguments
    assert _replay(["env"], {**env, "CC": "clang"})[0] is False  # other environment
    time.sleep(0.01)
    (watched / "new-1.0.dist-info").mkdir()  # a distribution installed
    assert _replay(["env"], env)[0] is False


def test_no_replay_from_a_folder_others_can_write(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**ENV, "WHEELCUDA_CACHE_DIR": str(cache)}
    cache.mkdir(mode=0o700)
    warm.record(["env"], env, "export A='1'\n", "", [], home=str(tmp_path / "homes" / "tree"))
    assert _replay(["env"], env)[0] is True
    cache.chmod(0o777)
    assert _replay(["env"], env)[0] is False


def test_a_corrupt_memo_is_a_miss_and_is_rewritten(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**ENV, "WHEELCUDA_CACHE_DIR": str(cache)}
    (cache / "memo" / "env").mkdir(parents=True, mode=0o700)
    cache.chmod(0o700)
    (cache / "memo").chmod(0o700)
    key = warm.key_for(["env"], env)
    assert key is not None
    Path(memo.file_for(str(cache), "env", key)).write_bytes(b"\x00garbage")
    assert _replay(["env"], env)[0] is False
    warm.record(["env"], env, "x\n", "", [], home=str(tmp_path / "homes" / "tree"))
    assert _replay(["env"], env) == (True, "x\n", "")


def test_the_memo_keeps_the_newest_entries(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    env = {**ENV, "WHEELCUDA_CACHE_DIR": str(cache)}
    for i in range(memo.KEEP + 3):
        warm.record(["env", "--arch", f"{i}.0"], env, f"{i}\n", "", [],
                    home=str(tmp_path / "homes" / "tree"))
    assert _replay(["env", "--arch", "0.0"], env)[0] is False
    assert _replay(["env", "--arch", f"{memo.KEEP + 2}.0"], env)[0] is True


def test_no_value_of_the_environment_reaches_disk(tmp_path: Path) -> None:
    """Before: ``GITHUB_TOKEN=ghp_x wheelcuda env`` twice left the token in
    memo/env/*.marshal. Only the key's digest is kept, and old-format files go."""
    cache = tmp_path / "cache"
    env = {**ENV, "WHEELCUDA_CACHE_DIR": str(cache), "GITHUB_TOKEN": "ghp_s3cr3tvalue"}
    (cache / "memo" / "env").mkdir(parents=True, mode=0o700)
    cache.chmod(0o700)
    (cache / "memo").chmod(0o700)
    old = cache / "memo" / "env" / "0123456789abcdef.marshal"  # what an old wheelcuda kept
    old.write_bytes(b"(('env', (), (('GITHUB_TOKEN', 'ghp_s3cr3tvalue'),)))")
    warm.record(["env"], env, "export A='1'\n", "", [], home=str(tmp_path / "homes" / "tree"))
    assert _replay(["env"], env) == (True, "export A='1'\n", "")
    assert not old.exists()
    written = [p for p in cache.rglob("*") if p.is_file()]
    assert written
    for path in written:
        assert b"ghp_s3cr3tvalue" not in path.read_bytes(), path
    assert _replay(["env"], {**env, "GITHUB_TOKEN": "ghp_other"})[0] is False


# --- through the command, with a fake environment ----------------------------------

def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "wheelcuda", *args], capture_output=True,
                          text=True, env=env, check=False)


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    site = fakes.torch(fakes.cu13_site(tmp_path / "site"))
    python = fakes.python(tmp_path, [site])
    env = fakes.pythonpath_env()
    env["WHEELCUDA_CACHE_DIR"] = os.environ["WHEELCUDA_CACHE_DIR"]
    return python, site, env


_PROBE = ("import io, os, sys; from wheelcuda import _warm as warm; "
          "print(warm.replay(sys.argv[1:], os.environ, io.StringIO(), io.StringIO()))")


def _hits(env: dict[str, str], *args: str) -> bool:
    """Whether ``env`` would be answered from the memo, asked in a child started as the
    command is (same interpreter, sys.path and environment: all of them are in the key)."""
    r = subprocess.run([sys.executable, "-c", _PROBE, "env", *args], capture_output=True,
                       text=True, env=env, check=True)
    return r.stdout.strip() == "True"


def test_warm_answer_is_the_full_answer(world: tuple[Path, Path, dict[str, str]]) -> None:
    python, _, env = world
    args = ("env", "--python", str(python), "--arch", "9.0")
    first = _cli(*args, env=env)
    assert first.returncode == 0, first.stderr
    assert _hits(env, *args[1:])
    second = _cli(*args, env=env)
    assert (second.returncode, second.stdout, second.stderr) == (0, first.stdout, first.stderr)
    cold = _cli(*args, env={**env, "WHEELCUDA_NO_WARM": "1"})
    assert cold.stdout == first.stdout


def test_notes_are_replayed_too(world: tuple[Path, Path, dict[str, str]]) -> None:
    python, _, env = world
    env = {**env, "CUDA_HOME": "/opt/cuda-12.4"}
    args = ("env", "--python", str(python), "--arch", "9.0")
    first = _cli(*args, env=env)
    assert "CUDA_HOME=/opt/cuda-12.4 was set" in first.stderr
    assert _hits(env, *args[1:])
    assert _cli(*args, env=env).stderr == first.stderr


def test_changes_behind_the_answer_are_seen(world: tuple[Path, Path, dict[str, str]]) -> None:
    python, site, env = world
    args = ("env", "--python", str(python), "--arch", "9.0")
    assert _cli(*args, env=env).returncode == 0
    assert _hits(env, *args[1:])
    # torch removed: the site folder's stamp moves, and the full path says so
    for dist in site.glob("torch*"):
        subprocess.run(["rm", "-rf", str(dist)], check=True)
    assert not _hits(env, *args[1:])
    again = _cli(*args, env=env)
    assert "torch is not installed" in again.stderr


def test_a_removed_tree_is_not_replayed(world: tuple[Path, Path, dict[str, str]]) -> None:
    python, _, env = world
    args = ("env", "--python", str(python), "--arch", "9.0")
    first = _cli(*args, env=env)
    home = next(line for line in first.stdout.splitlines() if "CUDA_HOME=" in line)
    subprocess.run(["rm", "-rf", home.split("'")[1]], check=True)
    assert not _hits(env, *args[1:])
    second = _cli(*args, env=env)
    assert second.stdout == first.stdout  # rebuilt under the same key
    assert _hits(env, *args[1:])


def test_errors_are_never_kept(world: tuple[Path, Path, dict[str, str]]) -> None:
    python, _, env = world
    args = ("env", "--python", str(python), "--arch", "6.1")
    assert _cli(*args, env=env).returncode == 1
    assert not _hits(env, *args[1:])


def test_the_warm_path_imports_only_what_it_needs() -> None:
    """The replay of ``wheelcuda env`` should cost about what starting Python costs:
    importing the warm path pulls in neither filelock (about 45 ms) nor the store's
    file helpers, wheelcuda's context, or the registry of settings. A slow import here
    once doubled the replay's time without any test noticing."""
    code = ("import sys, wheelcuda._warm; print(' '.join(m for m in ('filelock', "
            "'wheelcuda._store.fs', 'wheelcuda._context', 'wheelcuda._data.settings', 'tempfile', "
            "'shutil') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=fakes.pythonpath_env()).stdout
    assert out.strip() == "", out


def test_the_shell_that_evaluates_env_names_its_tree(
        world: tuple[Path, Path, dict[str, str]]) -> None:
    """``cache prune`` keeps a tree that a live shell's exported CUDA_HOME may still use
    (_store/named.py): env records its session, and so does a warm replay (a new shell
    whose first ``env`` is answered from the memo names the tree too)."""
    python, _, env = world
    args = ("env", "--python", str(python), "--arch", "9.0")
    folder = Path(env["WHEELCUDA_CACHE_DIR"]) / "homes" / named.FOLDER

    def session_records(new_session: bool) -> list[str]:
        shutil.rmtree(folder, ignore_errors=True)
        r = subprocess.run([sys.executable, "-m", "wheelcuda", *args], capture_output=True,
                           text=True, env=env, check=False, start_new_session=new_session)
        assert r.returncode == 0, r.stderr
        home = next(line.split("=", 1)[1].strip("'") for line in r.stdout.splitlines()
                    if line.startswith("export CUDA_HOME="))
        return [p.name.removeprefix(Path(home).name) for p in folder.iterdir()]

    cold = session_records(False)
    sid, start = named.session() or (0, 0)  # this process's session (or its stand-in)
    assert cold == [f".session-{sid}-{start}"], cold
    assert _hits(env, *args[1:])
    warm_ = session_records(True)  # answered warm, in a session of its own
    assert len(warm_) == 1 and warm_ != cold and warm_[0].startswith(".session-"), warm_
