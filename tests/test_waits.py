"""Lock waits and stream timeouts: a wait says, after a few
seconds, what it waits for and which process holds the lock; no message ever advises
removing a lock file (with flock that lets two holders in); a child that keeps printing
still times out."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from wheelcuda import _proc as proc
from wheelcuda._store import fs
from wheelcuda.errors import CacheError, ToolError


@pytest.fixture
def held(tmp_path: Path) -> tuple[Path, subprocess.Popen[str]]:
    lock = tmp_path / "key.lock"
    code = ("import filelock, sys, time\nl = filelock.FileLock(sys.argv[1]); l.acquire()\n"
            "print('held', flush=True)\ntime.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", code, str(lock)], stdout=subprocess.PIPE,
                             text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    yield lock, child
    child.kill()
    child.wait()
    child.stdout.close()


def test_a_wait_says_what_it_waits_for_and_who_holds_it(
        held: tuple[Path, subprocess.Popen[str]], monkeypatch: pytest.MonkeyPatch) -> None:
    lock, child = held
    monkeypatch.setattr(fs, "NOTE_AFTER_S", 0.3)
    monkeypatch.setattr(fs, "NOTE_EVERY_S", 0.3)
    notes: list[str] = []
    assert fs.holder(lock) is not None and fs.holder(lock).startswith(f"pid {child.pid}: ")
    with pytest.raises(CacheError) as caught, \
            fs.locked(lock, "a build of demo-1234", timeout=1.0, note=notes.append):
        pass
    assert notes and notes[0].startswith("waiting for a build of demo-1234: pid "
                                         f"{child.pid}: python")
    assert str(lock) in notes[0]
    text = str(caught.value)
    assert f"pid {child.pid}" in text and "gave up waiting" in text
    assert "remove" not in text.lower()


def test_a_lock_let_go_is_taken_without_a_word(tmp_path: Path) -> None:
    notes: list[str] = []
    with fs.locked(tmp_path / "free.lock", "x", note=notes.append):
        assert fs.holder(tmp_path / "free.lock") is not None  # ours, now
    assert notes == [] and fs.holder(tmp_path / "free.lock") is None


def test_no_message_advises_removing_a_lock_file() -> None:
    src = Path(proc.__file__).parent
    for path in src.rglob("*.py"):
        text = path.read_text()
        assert "remove {lock}" not in text and "if none runs, remove" not in text, path


def test_a_child_that_keeps_printing_still_times_out() -> None:
    """Before: the timeout fired only while the child was silent."""
    started = time.monotonic()
    with pytest.raises(ToolError, match=r"did not finish within 1\.5 s"):
        proc.stream(["sh", "-c", "while true; do echo busy; sleep 0.1; done"],
                    env=dict(os.environ), timeout=1.5, note=lambda _: None)
    assert time.monotonic() - started < 10
