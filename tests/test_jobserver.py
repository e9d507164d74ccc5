"""The nvcc wrapper's thread pool: its arithmetic (pure), then the real wrapper file run
as concurrent processes (``python -I -S``, as bin/nvcc runs it) in front of a fake
``.nvcc-real`` that prints its arguments and holds its tokens for a moment."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wheelcuda.rules import jobs
from wheelcuda.rules.tree import WRAPPER_MODULES
from wheelcuda.standalone import _nvcc_pool
from wheelcuda.standalone import _nvcc_wrapper as w

# --- arithmetic (pure) ------------------------------------------------------------


@pytest.mark.parametrize(("free", "waiting", "cap", "want"), [
    (16, 1, 16, 16),   # a lone call takes the pool, up to the cap
    (32, 1, 16, 16),
    (16, 3, 16, 5),    # three at once: a third each
    (11, 2, 16, 5),
    (6, 1, 16, 6),
    (3, 3, 16, 2),     # two while two are free: one thread is no split
    (1, 1, 16, 1),
    (0, 2, 16, 0),
])
def test_take(free: int, waiting: int, cap: int, want: int) -> None:
    assert _nvcc_pool.take(free, waiting, cap) == want


@pytest.mark.parametrize(("tokens", "threads", "want"), [
    (5, 1, 5), (1, 1, 0),   # one thread: no split, the token goes back
    (5, 2, 4), (3, 2, 0),   # --threads 2 (two targets): split 2 uses 4
])
def test_used(tokens: int, threads: int, want: int) -> None:
    assert _nvcc_pool.used(tokens, threads) == want


def test_parse_pool() -> None:
    assert _nvcc_pool.parse_pool("/tmp/p:32:15:16") == ("/tmp/p", 32, 15, 16)
    assert _nvcc_pool.parse_pool("/a:b/p:4:2:2") == ("/a:b/p", 4, 2, 2)  # a colon in the folder
    assert _nvcc_pool.parse_pool(":4:2:2") == ("", 4, 2, 2)              # the default folder
    assert _nvcc_pool.parse_pool("/tmp/p:16") is None
    assert _nvcc_pool.parse_pool("") is None


def _never(*_: object) -> list[int]:
    raise AssertionError("the pool was used")


def test_share_without_the_pool() -> None:
    pool = {"WHEELCUDA_JOBSERVER": "/p:16:4:16"}
    assert _nvcc_pool.share({**pool, "WHEELCUDA_SPLIT_COMPILE": "3"}, 1, _never) == 3  # the user's
    assert _nvcc_pool.share({}, 1, _never) == 1
    assert _nvcc_pool.share({"WHEELCUDA_JOBSERVER": "/p:16:0:16"}, 1, _never) == 1  # no split token
    assert _nvcc_pool.share({"WHEELCUDA_JOBSERVER": "/p:16:4:1"}, 1, _never) == 1   # cap of one
    assert _nvcc_pool.share(pool, 0, _never) == 1      # --threads 0: all CPUs already
    assert _nvcc_pool.share(pool, 1, lambda *_: [7, 8, 9]) == 3


def test_share_waits_only_when_who_else_starts_matters() -> None:
    waits: list[float] = []

    def record(*args: object) -> list[int]:
        assert isinstance(args[-1], float)
        waits.append(args[-1])
        return [1, 2]
    _nvcc_pool.share({"WHEELCUDA_JOBSERVER": "/p:4:2:2"}, 1, record)     # 2 splits of 2 fit in 4
    _nvcc_pool.share({"WHEELCUDA_JOBSERVER": "/p:32:14:16"}, 1, record)  # the GPU machine
    assert waits == [0.0, _nvcc_pool.SETTLE_S]


def test_share_survives_a_broken_pool(capsys: pytest.CaptureFixture[str]) -> None:
    def broken(*_: object) -> list[int]:
        raise PermissionError(13, "Permission denied")
    assert _nvcc_pool.share({"WHEELCUDA_JOBSERVER": "/p:16:4:16"}, 1, broken) == 1
    assert "nvcc thread pool /p unusable (Permission denied)" in capsys.readouterr().err


# --- the real wrapper, as concurrent processes ---------------------------------------

FAKE_NVCC = '#!/bin/sh\necho "ARGS $*"\nsleep "${FAKE_NVCC_S:-1}"\n'


@pytest.fixture
def nvcc(tmp_path: Path) -> Path:
    """A bin/ folder with the wrapper and a fake real nvcc beside it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(w.__file__, bin_dir / "nvcc.py")
    for name in WRAPPER_MODULES:  # what the tree holds beside it
        shutil.copy(Path(w.__file__).with_name(name), bin_dir / name)
    real = bin_dir / w.REAL
    real.write_text(FAKE_NVCC)
    real.chmod(0o755)
    return bin_dir / "nvcc.py"


def start(nvcc: Path, pool: str, hold: float = 1.0,
          args: tuple[str, ...] = ("-c", "k.cu", "-o", "k.o", "-arch=sm_80"),
          **env: str) -> subprocess.Popen[str]:
    environ = {"PATH": os.environ["PATH"], "WHEELCUDA_ARCHS": "9.0",
               "WHEELCUDA_JOBSERVER": pool, "FAKE_NVCC_S": str(hold), **env}
    return subprocess.Popen([sys.executable, "-I", "-S", str(nvcc), *args], env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def split_of(proc: subprocess.Popen[str]) -> int:
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "ARGS " in out, (out, err)
    m = re.search(r"--split-compile=(\d+)", out)
    return int(m.group(1)) if m else 1


def test_calls_started_together_divide_the_threads(nvcc: Path, tmp_path: Path) -> None:
    pool = f"{tmp_path}/pool:16:3:16"
    splits = sorted(split_of(p) for p in [start(nvcc, pool) for _ in range(3)])
    assert splits == [5, 5, 6]


def test_a_lone_call_takes_the_pool_up_to_the_cap(nvcc: Path, tmp_path: Path) -> None:
    assert split_of(start(nvcc, f"{tmp_path}/pool:16:3:16", hold=0)) == 16
    assert split_of(start(nvcc, f"{tmp_path}/pool2:32:3:16", hold=0)) == 16


def test_tokens_come_back_when_calls_end(nvcc: Path, tmp_path: Path) -> None:
    pool = f"{tmp_path}/pool:16:3:16"
    first = start(nvcc, pool, hold=2)
    time.sleep(1)  # first holds all 16 now
    assert split_of(start(nvcc, pool, hold=0)) == 1
    assert split_of(first) == 16
    assert split_of(start(nvcc, pool, hold=0)) == 16  # all back


def test_a_killed_compile_gives_its_tokens_back(nvcc: Path, tmp_path: Path) -> None:
    pool = f"{tmp_path}/pool:16:3:16"
    victim = start(nvcc, pool, hold=30)
    time.sleep(1)
    os.killpg(victim.pid, signal.SIGKILL)  # the compile and its children: an OOM kill
    victim.communicate(timeout=10)
    assert split_of(start(nvcc, pool, hold=0)) == 16


def test_split_tokens_bound_the_calls_that_split(nvcc: Path, tmp_path: Path) -> None:
    # Memory lets one call split: it gets the threads, the others compile unsplit.
    pool = f"{tmp_path}/pool:16:1:16"
    assert sorted(split_of(p) for p in [start(nvcc, pool) for _ in range(3)]) == [1, 1, 16]


def test_a_pool_that_cannot_be_made_costs_only_the_split(nvcc: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    proc = start(nvcc, f"{tmp_path}/file/pool:16:3:16", hold=0)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "ARGS " in out and "--split-compile" not in out
    assert f"nvcc thread pool {tmp_path}/file/pool unusable" in err


def test_a_pool_others_can_write_is_refused(nvcc: Path, tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)  # as a folder in /tmp made by someone else would be
    proc = start(nvcc, f"{folder}:16:3:16", hold=0)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "--split-compile" not in out
    assert "not a folder only this user can write" in err
    assert not any(folder.iterdir())


def test_the_users_split_compile_wins(nvcc: Path, tmp_path: Path) -> None:
    proc = start(nvcc, f"{tmp_path}/pool:16:3:16", hold=0, WHEELCUDA_SPLIT_COMPILE="3")
    assert split_of(proc) == 3
    assert not (tmp_path / "pool").exists()


def test_calls_that_compile_nothing_leave_the_pool_alone(nvcc: Path, tmp_path: Path) -> None:
    proc = start(nvcc, f"{tmp_path}/pool:16:3:16", hold=0, args=("--version",))
    assert split_of(proc) == 1
    assert not (tmp_path / "pool").exists()


def test_a_dead_calls_registration_is_cleared(nvcc: Path, tmp_path: Path) -> None:
    folder = tmp_path / "pool"
    folder.mkdir(mode=0o700)
    (folder / "wait-999999").write_text("")  # left by a call killed while it waited
    assert split_of(start(nvcc, f"{folder}:16:3:16", hold=0)) == 16
    assert not (folder / "wait-999999").exists()


def test_the_rules_pool_is_one_the_wrapper_reads() -> None:
    chosen = jobs.for_build(4.0, {}, 16, 120 * 1024**3, pool_dir="/tmp/x")
    assert _nvcc_pool.parse_pool(chosen[_nvcc_pool.POOL]) == ("/tmp/x", 32, 14, 16)
