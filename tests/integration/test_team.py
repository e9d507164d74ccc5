"""A team builds once, for real: machine A builds the example extension with
this machine's CUDA 13.0 (used on purpose) and publishes it to a real pypiserver
(authentication on); machine B, its own cache and venv, the system toolkit hidden and no
compiler anywhere, installs the same key from the index, imports it, and the .so holds
SASS for sm_90 only. Another arch makes B build (here: --no-fetch, so it says it would)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import pypi_server as ps
from tests.integration import sandbox
from tests.integration.conftest import REPO

pytestmark = pytest.mark.integration

TOOLKIT = Path("/usr/local/cuda-13.0")


def _overlay(base: Path, dest: Path) -> Path:
    """A venv that sees ``base``'s packages through a .pth file (no torch copy)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    site = next(dest.glob("lib/python*/site-packages"))
    (site / "base.pth").write_text(f"{next(base.glob('lib/python*/site-packages'))}\n")
    return dest


def test_b_installs_a_real_build_from_the_index(wheelcuda_cmd: str, torch_venv: Path,
                                                tmp_path: Path, cuobjdump: str) -> None:
    if not (TOOLKIT / "bin/nvcc").is_file():
        pytest.skip(f"no CUDA toolkit at {TOOLKIT}")
    src = tmp_path / "torch_ext"
    shutil.copytree(REPO / "examples/torch_ext", src)
    a, b = _overlay(torch_venv, tmp_path / "venv-a"), _overlay(torch_venv, tmp_path / "venv-b")
    uv = str(Path(sys.executable).parent / "uv")
    with ps.pypiserver(tmp_path / "index") as server:
        creds = f"http://{ps.USER}:{ps.PASSWORD}@"
        built = subprocess.run(
            [wheelcuda_cmd, "install", "--python", str(a), "--arch", "9.0", "--toolkit",
             str(TOOLKIT), "--publish", server.url.replace("http://", creds), str(src),
             "--", "--no-deps"],
            capture_output=True, text=True, timeout=1500, check=False,
            env={"PATH": f"{Path(uv).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
                 "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache-a"),
                 "WHEELCUDA_NO_GPU_PROBE": "1", "WHEELCUDA_INSTALLER": "uv"})
        assert built.returncode == 0, built.stderr[-4000:]
        assert "published wheelcuda_demo_ext-0.1.0+wc" in built.stderr, built.stderr[-2000:]

        index = server.simple.replace("http://", creds)
        script = f"""set -e
{wheelcuda_cmd} install --python {b} --arch 9.0 --index {index} {src} -- --no-deps
cd /
{b}/bin/python -c "import wheelcuda_demo; print('IMPORTED', wheelcuda_demo._C.__file__)"
"""
        env = {"WHEELCUDA_CACHE_DIR": str(tmp_path / "cache-b"), "WHEELCUDA_INSTALLER": "uv",
               "PATH": f"{Path(uv).parent}:{sandbox.SCRUBBED_PATH}"}
        r = sandbox.shell(script, tmp_path, extra_env=env, timeout=600)
        out = sandbox.assert_ok(r)
        assert "found this build (wc" in r.stderr and "nothing to compile" in r.stderr
        assert "fetching" not in r.stderr and "CUDA compile" not in r.stderr
        assert ps.PASSWORD not in r.stderr
        sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
        so = out.split("IMPORTED ")[1].split()[0]
        elves = subprocess.run([cuobjdump, "--list-elf", so], capture_output=True, text=True,
                               check=True).stdout
        assert [line.rsplit(".", 2)[-2] for line in elves.splitlines()] == ["sm_90"]

        other = sandbox.shell(
            f"{wheelcuda_cmd} install --python {b} --arch 12.0 --no-fetch --index {index} "
            f"{src} -- --no-deps", tmp_path,
            extra_env={**env, "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache-b2")})
        assert other.returncode == 1 and "found this build" not in other.stderr
        assert "missing CUDA 13 wheels" in other.stderr
