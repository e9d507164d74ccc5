"""Every test gets its own cache folder, no GPU probing, and fresh per-process caches."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from wheelcuda import api, gpus, hostcc, interpreter


def _clear() -> None:
    for fn in (api.inspect, interpreter.resolve, gpus.probe_gpus, hostcc.probe_host_compiler):
        fn.cache_clear()


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    cache = tmp_path / "cache"
    monkeypatch.setenv("WHEELCUDA_CACHE_DIR", str(cache))
    monkeypatch.setenv("WHEELCUDA_NO_GPU_PROBE", "1")
    for var in ("CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "VIRTUAL_ENV", "CC",
                "NVCC_CCBIN", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"):
        monkeypatch.delenv(var, raising=False)
    _clear()
    yield cache
    _clear()
