"""Every test gets its own cache folder, no GPU probing, and fresh per-process caches."""

from __future__ import annotations

import os
import shutil
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
