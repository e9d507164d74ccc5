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
    code = (f"import os, sys\nfrom wheelcuda import _proc as proc\nproc.GRACE_S = {grace!r}\n"
            f"sys.exit(proc.call(['sh', '-c', {script!r}], env=dict(os.environ)))")
    child = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, text=True,
                             env={**os.environ, "PYTHONPATH": SRC}, stderr=subprocess.PIPE)
    return child, _started(child, pidfile)


def _started(child: subprocess.Popen[str], pidfile: Path) -> int:
    """The pid ``child``'s build wrote to ``pidfile``, once it has."""
    for _ in range(200):
        if pidfile.is_file() and pidfile.read_text().strip():
            return int(pidfile.read_text())
        time.sleep(0.05)
    child.kill()
    raise AssertionError("the child never started")


def _gone(pid: int) -> None:
    """Until ``pid`` has ended (5 s at most)."""
    for _ in range(100):
        if not _alive(pid):
            return
        time.sleep(0.05)


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
    code = ("import os, signal\nimport wheelcuda._entry\nos.kill(os.getpid(), signal.SIGINT)\n"
            "import wheelcuda._cli, time\ntime.sleep(2)\nprint('not reached')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": SRC}, timeout=30, check=False)
    assert r.returncode == 130, r.stderr
    assert "Traceback" not in r.stderr and "not reached" not in r.stdout


def test_ctrl_c_during_an_install_says_so_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    """A Ctrl-C during a clang compile left zero-byte /tmp/*.fatbin, .o and .s files (the
    compiler is killed when its group outlives the grace), and the summary read "uv exited
    with 130", then the end of the build's output, which said nothing. Each build now has
    a temporary folder of its own in the user's TMPDIR, gone when it ends, and the words
    say what happened. The build still shares the user's compile pool (named as the
    user's TMPDIR names it)."""
    from tests import fakes  # noqa: PLC0415

    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    seen = tmp_path / "seen"
    (bin_dir / "uv").write_text(
        '#!/bin/sh\ncase "$*" in\n  "cache prune"*) exit 0 ;;\nesac\n'
        f'echo "$TMPDIR $WHEELCUDA_POOL" > {seen}\n'
        ': > "$TMPDIR/causal_conv1d_bwd-1a2b.fatbin"\nexec sleep 60\n')
    (bin_dir / "uv").chmod(0o755)
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "pyproject.toml").write_text('[project]\nname = "ext"\nversion = "1.0"\n')
    user_tmp = tmp_path / "user-tmp"
    user_tmp.mkdir()
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": os.environ["WHEELCUDA_CACHE_DIR"],
           "PATH": f"{bin_dir}:{os.environ['PATH']}", "WHEELCUDA_INSTALLER": "uv",
           "TMPDIR": str(user_tmp)}
    env.pop("WHEELCUDA_POOL", None)
    py = fakes.user_env(tmp_path / "venv")
    child = subprocess.Popen([sys.executable, "-m", "wheelcuda", "install", "--python", str(py),
                              "--arch", "9.0", str(ext)], env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(400):
        if seen.is_file() and seen.read_text().strip():
            break
        time.sleep(0.05)
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert "the build was interrupted (Ctrl-C) after " in err and "exited with" not in err
    given_tmp, pool = seen.read_text().split()
    assert Path(given_tmp).parent == user_tmp and not Path(given_tmp).exists()
    assert not list(user_tmp.glob("wheelcuda-tmp-*"))
    assert Path(pool).parent == user_tmp and Path(pool).name.startswith("wheelcuda-pool-")


def test_the_keys_lock_lives_as_long_as_the_build_when_wheelcuda_is_killed(
        tmp_path: Path) -> None:
    """SIGKILL cannot be caught: a killed wheelcuda let the key's lock go while the build
    it started ran on, and a second install of the key built into the same folder. The
    installer holds the lock too now (its file descriptor handed over), until it ends."""
    from wheelcuda._store import fs  # noqa: PLC0415
    from wheelcuda._store.layout import Layout  # noqa: PLC0415

    cache = tmp_path / "cache"
    pidfile = tmp_path / "pid"
    code = ("import os, sys\nfrom pathlib import Path\nfrom wheelcuda import _proc as proc\n"
            "from wheelcuda._store import wheels\nfrom wheelcuda._store.layout import Layout\n"
            f"with wheels.building(Layout(Path({str(cache)!r})), 'k-0123') as build:\n"
            f"    proc.call(['sh', '-c', 'echo $$ > {pidfile}; exec sleep 60'], "
            "env=dict(os.environ), keep_fds=[build.lock_fd])\n")
    parent = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SRC},
                              text=True)
    build = _started(parent, pidfile)
    lock = Layout(cache).lock(Layout(cache).builds, "k-0123")
    try:
        parent.kill()
        parent.wait(timeout=10)
        assert _alive(build)
        with fs.try_locked(lock) as mine:
            assert not mine  # the build still runs: its key stays locked
    finally:
        os.kill(build, signal.SIGKILL)
    _gone(build)
    with fs.try_locked(lock) as mine:
        assert mine


def test_what_a_build_uses_stays_in_use_when_wheelcuda_is_killed(tmp_path: Path) -> None:
    """The shared locks on the tree and toolkits a build uses (prune and cache clear skip
    what they guard) went with a killed wheelcuda while its build ran on: prune could
    remove the tree from under the build. The build holds them too now."""
    from wheelcuda._store import fs  # noqa: PLC0415

    lock, pidfile = tmp_path / ".tree.lock", tmp_path / "pid"
    code = ("import os\nfrom pathlib import Path\nfrom wheelcuda import _proc as proc\n"
            "from wheelcuda._store import fs\n"
            f"with fs.shared([Path({str(lock)!r})], 'in use by a build') as held:\n"
            f"    proc.call(['sh', '-c', 'echo $$ > {pidfile}; exec sleep 60'], "
            "env=dict(os.environ), keep_fds=held)\n")
    parent = subprocess.Popen([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": SRC},
                              text=True)
    build = _started(parent, pidfile)
    try:
        parent.kill()
        parent.wait(timeout=10)
        assert _alive(build)
        with fs.try_locked(lock) as mine:
            assert not mine  # prune's exclusive try: still in use
    finally:
        os.kill(build, signal.SIGKILL)
    _gone(build)
    with fs.try_locked(lock) as mine:
        assert mine
