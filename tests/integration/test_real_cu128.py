"""The first user's kind of torch, for real: torch 2.9.1 from PyPI, built with CUDA 12.8
(`make cu128-venv`, no dependencies). Without any toolkit (sandbox.py) and without the
network to NVIDIA, doctor, `install --explain` and `install --no-fetch` show the whole
plan: release 12.8.1 and its archives with the URLs, sizes and sha256 of NVIDIA's real
manifest (docs/facts.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import redist_server as rs
from tests.integration import sandbox

pytestmark = pytest.mark.integration

BASE = "https://developer.download.nvidia.com/compute/cuda/redist/"
REAL = [
    f"{BASE}redistrib_12.8.1.json  sha256 "
    "249e28a83008d711d5f72880541c8be6253f6d61608461de4fcb715554a6cf17",
    f"{BASE}cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.8.93-archive.tar.xz  79015464 "
    "bytes  sha256 9961b3484b6b71314063709a4f9529654f96782ad39e72bf1e00f070db8210d3",
    f"{BASE}cuda_cudart/linux-x86_64/cuda_cudart-linux-x86_64-12.8.90-archive.tar.xz  1354240 "
    "bytes  sha256 8d566b5fe745c46842dc16945cf36686227536decd2302c372be86da37faca68",
    f"{BASE}cuda_cccl/linux-x86_64/cuda_cccl-linux-x86_64-12.8.90-archive.tar.xz  928524 "
    "bytes  sha256 0740e9e01e4f15e17c5ab8d68bba4f8ec0eb6b84edccba4ac45112d2d2174e4b",
]


def _real(base: str) -> list[str]:
    """REAL's lines with the archives under ``base`` (a mirror laid out as NVIDIA's)."""
    return [line.replace(BASE, base) for line in REAL[1:]]


def test_real_cu128_torch_shows_the_whole_cu12_plan(wheelcuda_cmd: str, cu128_venv: Path,
                                                    tmp_path: Path) -> None:
    """NVIDIA's archives answer (a mirror on 127.0.0.1 stands in for them: the tests
    reach no NVIDIA host): doctor, --explain and --no-fetch show release 12.8.1's
    archives with the sizes and sha256 of NVIDIA's real manifest."""
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "redistrib_12.8.1.json").write_text("{}")  # it answers; nothing is read
    with rs.serve(mirror) as server:
        base = server.url
        py = f"--python {cu128_venv} --arch 12.0"
        env = {"WHEELCUDA_REDIST_URL": base}
        r = sandbox.shell(f"""set -e
{wheelcuda_cmd} doctor --json {py} > {tmp_path}/doctor.json
{wheelcuda_cmd} install --explain {py} causal-conv1d
""", tmp_path, extra_env=env)
        out = sandbox.assert_ok(r)
        report = json.loads((tmp_path / "doctor.json").read_text())
        assert report["torch"]["version"] == "2.9.1+cu128" and report["torch"]["cuda"] == "12.8"
        assert report["ok"], report["problems"]  # install would fetch: a warning, not an error
        assert report["toolkit"]["source"] == "redist" and not report["toolkit"]["fetched"]
        assert report["toolkit"]["description"] == (
            f"to fetch: release 12.8.1, linux-x86_64, 81 MB, from {base}")
        [warning] = [p for p in report["problems"] if p["kind"] == "missing"]
        assert warning["message"].startswith("torch 2.9.1+cu128 needs a CUDA 12.8 compiler")
        assert "compiler   would fetch the CUDA 12.8 compiler from NVIDIA's archives (release " \
               "12.8.1, linux-x86_64, 81 MB)" in out
        for line in _real(base):
            assert f"  {line}\n" in out, out
        assert "also       local: no local CUDA toolkit for torch's CUDA 12.8: none in " in out
        sandbox.assert_no_system_toolkit(out + r.stderr)


def test_real_cu128_torch_with_nvidia_out_of_reach(wheelcuda_cmd: str, cu128_venv: Path,
                                                   tmp_path: Path) -> None:
    """NVIDIA's archives do not answer and no clang serves (WHEELCUDA_CLANG=none):
    doctor and --explain say install would stop, and why; --no-fetch lists NVIDIA's real
    files to bring."""
    py = f"--python {cu128_venv} --arch 12.0"
    closed = "http://127.0.0.1:9/"
    env = {"WHEELCUDA_REDIST_URL": closed, "WHEELCUDA_CLANG": "none"}
    doctor = sandbox.shell(f"{wheelcuda_cmd} doctor --json {py}", tmp_path, extra_env=env)
    report = json.loads(doctor.stdout)
    assert not report["ok"]
    [silent] = [p for p in report["problems"] if p["kind"] == "unreachable"]
    assert f"could not read {closed}redistrib_12.8.1.json" in silent["message"]
    explained = sandbox.shell(f"{wheelcuda_cmd} install --explain {py} causal-conv1d", tmp_path,
                              extra_env=env)
    assert explained.returncode == 1 and "NOT OK: install would stop here" in explained.stdout
    offline = sandbox.shell(f"{wheelcuda_cmd} install --no-fetch {py} causal-conv1d", tmp_path,
                            extra_env=env)
    assert offline.returncode == 1 and "Traceback" not in offline.stderr
    assert "and --no-fetch forbids fetching them" in offline.stderr
    for line in _real(closed):
        assert line in offline.stderr
    assert offline.stderr.rstrip().endswith(_real(closed)[-1])
    sandbox.assert_no_system_toolkit(doctor.stdout + offline.stderr)
