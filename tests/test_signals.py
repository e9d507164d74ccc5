"""Signals: a child of ``wheelcuda run``/``install``
runs in its own process group; SIGTERM and SIGINT reach that whole group, wheelcuda waits
for it (holding its locks meanwhile), and nothing outlives wheelcuda. ^C while wheelcuda
is still importing exits 130 without a traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (reaped later by init in a container) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _start(tmp_path: Path, script: str, grace: float = 10.0) -> tuple[subprocess.Popen[str], int]:
    """proc.call(sh -c SCRIPT) in a child Python; the pid of SCRIPT's own child."""
    pidfile = tmp_path / "pid"
    code = (f"import os, sys\nfrom wheelcuda import proc\nproc.GRACE_S = {grace!r}\n"
            f"sys.exit(proc.call(['sh', '-c', {script!r}], env=dict(os.environ)))")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, text=True,
                             env={**os.environ, "PYTHONPATH": SRC}, stderr=subprocess.PIPE)
    for _ in range(200):
        if pidfile.is_file() and pidfile.read_text().strip():
            return child, int(pidfile.read_text())
        time.sleep(0.05)
    child.kill()
    raise AssertionError("the child never started")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_reaches_the_whole_group_and_nothing_outlives_wheelcuda(
        tmp_path: Path, sig: signal.Signals) -> None:
    """Before: SIGTERM to `wheelcuda run -- sleep 37` left sleep running and let the
    key's lock go, so a second install could build in the same folder."""
    child, grandchild = _start(tmp_path, "sleep 37 & echo $! > pid; wait")
    child.send_signal(sig)
    _, err = child.communicate(timeout=20)
    assert child.returncode == 128 + sig, err
    assert "Traceback" not in err
    assert not _alive(grandchild)


def test_a_child_that_ignores_the_signal_is_killed_after_the_grace(tmp_path: Path) -> None:
    child, grandchild = _start(tmp_path, "trap '' TERM INT; sleep 37 & echo $! > pid; "
                                         "trap '' TERM INT; wait; wait", grace=1.0)
    started = time.monotonic()
    child.send_signal(signal.SIGTERM)
    _, err = child.communicate(timeout=20)
    assert child.returncode == 128 + signal.SIGTERM, err
    assert time.monotonic() - started < 15
    for _ in range(40):
        if not _alive(grandchild):
            break
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_ctrl_c_while_importing_exits_130_without_a_traceback() -> None:
    """Before: ^C in the first second printed a KeyboardInterrupt traceback through
    filelock and importlib. The entry point's handler is set before anything else is
    imported; here the signal comes right after that, while the rest still imports."""
    code = ("import os, signal\nimport wheelcuda.entry\nos.kill(os.getpid(), signal.SIGINT)\n"
            "import wheelcuda.cli, time\ntime.sleep(2)\nprint('not reached')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": SRC}, timeout=30, check=False)
    assert r.returncode == 130, r.stderr
    assert "Traceback" not in r.stderr and "not reached" not in r.stdout
