"""Integration fixtures: the torch environment made by `make torch-venv`.

Outside `make test` these tests skip when that environment is missing; under
`make test` (WHEELCUDA_REQUIRE_INTEGRATION=1) a missing environment fails the run, so
CI can never pass by skipping them.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def torch_venv() -> Path:
    path = Path(os.environ.get("WHEELCUDA_TEST_TORCH_VENV", REPO / ".venv-torch"))
    if not (path / ".installed").exists():
        message = f"no torch environment at {path}: run `make torch-venv`"
        if os.environ.get("WHEELCUDA_REQUIRE_INTEGRATION"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def wheelcuda_cmd() -> str:
    """The wheelcuda console script of the running environment (.venv/bin/wheelcuda)."""
    script = Path(sys.executable).parent / "wheelcuda"
    if script.exists():
        return str(script)
    found = shutil.which("wheelcuda")
    if not found:
        pytest.fail("wheelcuda is not installed in the test environment: run `make dev`")
    return found


@pytest.fixture(scope="session")
def cuobjdump() -> str:
    """cuobjdump from the nvidia-cuda-cuobjdump wheel in the test environment."""
    found = sorted(Path(sys.prefix).glob("lib/python*/site-packages/nvidia/cu*/bin/cuobjdump"))
    if not found:
        pytest.fail("cuobjdump missing: pip install nvidia-cuda-cuobjdump (make dev does)")
    return str(found[0])
