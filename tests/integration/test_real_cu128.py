"""The first user's kind of torch, for real: torch 2.9.1 from PyPI, built with CUDA 12.8
(`make cu128-venv`, no dependencies). Without any toolkit (sandbox.py) and without the
network to NVIDIA, doctor, `install --explain` and `install --no-fetch` show the whole
plan: release 12.8.1 and its archives with the URLs, sizes and sha256 of NVIDIA's real
manifest (FACTS.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def test_real_cu128_torch_shows_the_whole_cu12_plan(wheelcuda_cmd: str, cu128_venv: Path,
                                                    tmp_path: Path) -> None:
    py = f"--python {cu128_venv} --arch 12.0"
    r = sandbox.shell(f"""set -e
{wheelcuda_cmd} doctor --json {py} > {tmp_path}/doctor.json
{wheelcuda_cmd} install --explain {py} causal-conv1d
""", tmp_path)
    out = sandbox.assert_ok(r)
    report = json.loads((tmp_path / "doctor.json").read_text())
    assert report["torch"]["version"] == "2.9.1+cu128" and report["torch"]["cuda"] == "12.8"
    assert report["ok"], report["problems"]  # install would fetch: a warning, not an error
    assert report["toolkit"]["source"] == "redist" and not report["toolkit"]["fetched"]
    assert report["toolkit"]["description"] == (
        f"to fetch: release 12.8.1, linux-x86_64, 81 MB, from {BASE}")
    [warning] = [p for p in report["problems"] if p["kind"] == "missing"]
    assert warning["message"].startswith("torch 2.9.1+cu128 needs a CUDA 12.8 compiler")
    assert "compiler   would fetch the CUDA 12.8 compiler from NVIDIA's archives (release " \
           "12.8.1, linux-x86_64, 81 MB)" in out
    for line in REAL:
        assert f"  {line}\n" in out, out

    offline = sandbox.shell(f"{wheelcuda_cmd} install --no-fetch {py} causal-conv1d", tmp_path)
    assert offline.returncode == 1 and "Traceback" not in offline.stderr
    assert "and --no-fetch forbids fetching them" in offline.stderr
    for line in REAL:
        assert line in offline.stderr
    assert offline.stderr.rstrip().endswith(REAL[-1])
    assert "also       local: no local CUDA toolkit for torch's CUDA 12.8: none in " in out
    sandbox.assert_no_system_toolkit(out + r.stderr + offline.stderr)
