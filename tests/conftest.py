"""Every test gets its own cache folder, no GPU probing, and fresh per-process caches."""

from __future__ import annotations

import contextlib
import gc
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from wheelcuda._probe import gpus
from wheelcuda._probe import hostcc as hostcc_probe


def _clear() -> None:
    # Both are keyed on everything they read; cleared so a test that fakes the driver
    # or a compiler at the same path starts afresh.
    for fn in (gpus._all_gpus, hostcc_probe._probe):
        fn.cache_clear()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]
                              ) -> Iterator[None]:
    report = yield
    if report.when == "call":
        item.stash[_PASSED] = report.passed
    return report


_PASSED = pytest.StashKey[bool]()
_STARTED = pytest.StashKey[set[int]]()


def _children() -> set[int]:
    """The children this process's main thread started, the test body's, that still run
    (zombies left out: they ended). Threads' children are left alone: the live routes
    run in a module fixture's thread pool, across tests."""
    pids: set[int] = set()
    with contextlib.suppress(OSError), \
            open(f"/proc/{os.getpid()}/task/{os.getpid()}/children") as f:
        pids.update(int(p) for p in f.read().split())
    return {p for p in pids if _state(p) not in ("", "Z")}


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def _lives_with_python(pid: int) -> bool:
    """multiprocessing's resource tracker and fork server: started once by the first
    test that needs them, they live as long as the test run, by design."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return False
    return any(b"multiprocessing." + name in cmdline
               for name in (b"resource_tracker", b"forkserver"))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    before = _children()
    try:
        return (yield)
    finally:
        item.stash[_STARTED] = _children() - before


@pytest.fixture(autouse=True)
def ends_what_it_starts(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that starts a process ends it however the test ends: one left running
    (a compile a timed-out communicate() never waited for) is killed here, and the test
    that left it fails for it, by name. Its dropped Popen and pipes are collected here
    too, so that their ResourceWarnings fail this test, not a later one that happened to
    run the garbage collector (they once failed tests/test_settings.py)."""
    yield
    gc.collect()
    left = sorted(p for p in request.node.stash.get(_STARTED, set()) if _state(p) not in
                  ("", "Z") and not _lives_with_python(p))
    if not left:
        return
    shown = []
    for pid in left:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
            shown.append(f"{pid} {b' '.join(words).decode(errors='replace')[:200]}")
        with contextlib.suppress(OSError):
            if os.getpgid(pid) == pid:  # a group of its own (start_new_session): all of it
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.waitpid(pid, 0)
    pytest.fail(f"the test left {len(left)} process(es) running (killed now): "
                + "; ".join(shown), pytrace=False)


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             request: pytest.FixtureRequest) -> Iterator[Path]:
    cache = tmp_path / "cache"
    monkeypatch.setenv("WHEELCUDA_CACHE_DIR", str(cache))
    monkeypatch.setenv("WHEELCUDA_NO_GPU_PROBE", "1")
    # each test's compiles in a pool of their own: the machine's is shared by every build
    # of the user here (make live runs beside make test)
    monkeypatch.setenv("WHEELCUDA_POOL", str(tmp_path / "pool"))
    # This machine has a system CUDA 13.0 (/usr/local/cuda, /usr/local/bin/nvcc), which
    # `--toolkit auto` would find: the tests run the default (auto) with it out of sight;
    # those of the local source name theirs (forcing the wheels would hide what auto picks).
    empty = tmp_path / "no-local-toolkits"
    empty.mkdir(exist_ok=True)
    monkeypatch.setenv("WHEELCUDA_LOCAL_ROOT", str(empty))
    monkeypatch.delenv("WHEELCUDA_TOOLKIT", raising=False)
    # and its clangs (clang-22, clang-19: .ci/run installs them), which a CUDA 12 torch's
    # `auto` would turn to when NVIDIA's archives cannot be reached; the clang tests name
    # theirs
    monkeypatch.setenv("WHEELCUDA_CLANG", "none")
    path = os.environ.get("PATH", os.defpath).split(os.pathsep)
    monkeypatch.setenv("PATH", os.pathsep.join(
        d for d in path if not os.path.isfile(os.path.join(d, "nvcc"))))
    for var in ("CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "VIRTUAL_ENV", "CC",
                "NVCC_CCBIN", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        monkeypatch.delenv(var, raising=False)
    _clear()
    yield cache
    _clear()
    # A passed test's folder goes at once (builds unpack torch into it: GBs over a run);
    # a failed one's stays for the diagnosis (kept whole, one run left 13 GB, three filled
    # an 80 GB disk).
    if request.node.stash.get(_PASSED, False):
        shutil.rmtree(tmp_path, ignore_errors=True)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """tests/live asks PyPI for the newest torch when collected: only under `-m live`."""
    if collection_path.name == "live" and "live" not in (config.getoption("-m") or ""):
        return True
    return None
