"""`make live`: the CUDA 12 wheels' layout the tests' fixtures take (tests/layouts.py,
tests/data/cu12_wheels.json) is still what PyPI serves, and still the versions the first
user's kind of torch (the newest cu128 build on PyPI) requires. Read with HTTP range
requests: a few KB of each wheel."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import layouts
from tests.live.test_pypi import CU12_TORCH, _compile

pytestmark = pytest.mark.live


@pytest.mark.parametrize("pin", layouts.WHEELS)
def test_the_recorded_layout_is_what_pypi_serves(pin: str) -> None:
    name = pin.split("==", maxsplit=1)[0]
    assert layouts.read_remote(pin) == layouts.recorded()[name], (
        f"{pin} on PyPI today is laid out otherwise than tests/data/cu12_wheels.json "
        "records: run `.venv/bin/python -m tests.layouts --write`, then the tests")


def test_the_recorded_versions_are_the_cu12_torchs(tmp_path: Path) -> None:
    """The wheels torch pins, at the versions recorded (the nvcc, cccl and nvfatbin
    wheels of its release are the clang toolkit's, pinned by wheelcuda)."""
    pins = _compile([f"torch=={CU12_TORCH}"], tmp_path)
    for pin in layouts.WHEELS:
        name, version = pin.split("==")
        if name in pins:
            assert pins[name] == version, (
                f"torch {CU12_TORCH} requires {name}=={pins[name]}, the fixtures record "
                f"{version}: add it to tests/layouts.py WHEELS and record again")
