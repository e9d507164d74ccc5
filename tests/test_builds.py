"""The wheel cache key: it changes when torch, arch, compiler, Python, ABI, pruning or a
build variable changes, and only then; listing and clearing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import run
from wheelcuda import builds

BASE: dict[str, Any] = {
    "packages": ["causal-conv1d==1.7.0"], "torch": "2.14.1+cu130", "torch_cuda": "13.0",
    "compiler": "13.0.88", "archs": "9.0", "prune": True, "python_tag": "cp311",
    "cxx11_abi": True, "variables": {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE"}}


def key(**changes: Any) -> str:
    return builds.key_id(builds.key_fields(**{**BASE, **changes}))


def test_same_inputs_same_key() -> None:
    assert key() == key()
    assert key().startswith("causal-conv1d_1.7.0-")


@pytest.mark.parametrize("change", [
    {"torch": "2.14.2+cu130"}, {"torch_cuda": "13.1"}, {"compiler": "13.0.89"},
    {"archs": "12.0"}, {"prune": False}, {"python_tag": "cp312"}, {"cxx11_abi": False},
    {"variables": {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE", "NVCC_APPEND_FLAGS": "-G"}},
    {"packages": ["causal-conv1d==1.6.0"]},
])
def test_any_input_that_changes_the_binary_changes_the_key(change: dict[str, Any]) -> None:
    assert key(**change) != key()


def test_variables_in_the_key() -> None:
    recipe = {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE", "MAX_JOBS": "2"}
    env = {"CAUSAL_CONV1D_FORCE_BUILD": "FALSE", "NVCC_APPEND_FLAGS": "-lineinfo", "HOME": "/x",
           "MAX_JOBS": "16"}
    assert builds.build_variables(recipe, env) == {
        "CAUSAL_CONV1D_FORCE_BUILD": "FALSE", "NVCC_APPEND_FLAGS": "-lineinfo"}


def test_list_and_clear(isolated: Path) -> None:
    fields = builds.key_fields(**BASE)
    k = builds.key_id(fields)
    builds.record(k, fields, ["causal-conv1d==1.7.0"], 277.0, "uv")
    other = builds.key_id(builds.key_fields(**{**BASE, "packages": ["./ext"]}))
    builds.record(other, fields, ["wheelcuda-demo-ext==0.1.0"], 50.0, "pip")
    (builds.folder(k) / "uv").mkdir()
    (builds.folder(k) / "uv" / "wheel").write_bytes(b"x" * 1000)
    listing = run("cache", "list")
    assert listing.returncode == 0
    assert k in listing.stdout and "causal-conv1d==1.7.0" in listing.stdout
    assert "archs 9.0" in listing.stdout
    assert run("cache", "clear", "causal_conv1d").returncode == 0
    assert not builds.folder(k).exists() and builds.folder(other).exists()
    assert run("cache", "clear").returncode == 0
    assert builds.entries() == []
