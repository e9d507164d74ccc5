"""A cache folder that cannot serve is named first, by every command: with
WHEELCUDA_CACHE_DIR a file, a folder others may write to, or another user's, env, doctor,
install and `cache list` said "missing CUDA 13 wheels ... fix: wheelcuda fetch" or "the
cache is empty". And a complete cache mounted read-only serves: reading needs no write
access."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests import fakes
from tests.test_cli import run


def _a_file(cache: Path) -> str:
    cache.write_text("not a folder")
    return "it is not a folder"


def _open_to_all(cache: Path) -> str:
    cache.mkdir()
    cache.chmod(0o777)
    return "others can write to it (mode 777)"


def _someone_elses(cache: Path) -> str:
    if os.getuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    cache.mkdir(mode=0o700)
    os.chown(cache, 65534, 65534)
    return "it belongs to uid 65534"


BAD: dict[str, Callable[[Path], str]] = {
    "a file": _a_file, "mode 777": _open_to_all, "another user's": _someone_elses}
COMMANDS = [("env", "--arch", "9.0"), ("doctor", "--arch", "9.0"), ("home",),
            ("install", "--explain", "--arch", "9.0", "somepkg"), ("fetch",),
            ("cache", "list")]


@pytest.mark.parametrize("bad", list(BAD))
def test_every_command_names_the_cache_first(bad: str, tmp_path: Path) -> None:
    py = fakes.user_env(tmp_path)
    cache = tmp_path / "bad-cache"
    reason = BAD[bad](cache)
    for command in COMMANDS:
        args = [*command, "--python", str(py)] if command[0] != "cache" else list(command)
        r = run(*args, env={"WHEELCUDA_CACHE_DIR": str(cache)})
        assert r.returncode == 1, (command, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        first = r.stderr.splitlines()[0] if r.stderr else ""
        assert first.startswith(f"wheelcuda: error: refusing to use the cache folder {cache}"), \
            (command, r.stderr)
        assert reason in first and "wheelcuda fetch" not in r.stderr, (command, r.stderr)


def _unshare_works() -> bool:
    if os.getuid() != 0 or not shutil.which("unshare"):
        return False
    done = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    return done.returncode == 0


@pytest.mark.skipif(not _unshare_works(), reason="needs root and unshare -m")
def test_a_complete_cache_read_only_serves(tmp_path: Path, isolated: Path) -> None:
    """The tree and the memo are there; the cache is mounted read-only: env answers as
    before (it used to fail, naming the folder it could not write). doctor says what
    install would meet: it cannot write its build there (they once disagreed)."""
    py = fakes.user_env(tmp_path)
    first = run("env", "--python", str(py), "--arch", "9.0")
    assert first.returncode == 0, first.stderr
    env = fakes.pythonpath_env()
    env["WHEELCUDA_CACHE_DIR"] = str(isolated)
    script = (f"mount --bind {isolated} {isolated} && "
              f"mount -o remount,bind,ro {isolated} && "
              f"{sys.executable} -m wheelcuda env --python {py} "
              "--arch 9.0 && "
              f"{{ {sys.executable} -m wheelcuda doctor --python {py} --arch 9.0; "
              "echo \"doctor exited $?\"; }")
    again = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True,
                           text=True, env=env, check=False)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(first.stdout), (first.stdout, again.stdout)
    assert "doctor exited 1" in again.stdout and "NOT OK" in again.stdout, again.stdout
    assert "point WHEELCUDA_CACHE_DIR at a folder of yours on a writable disk" in again.stdout
