"""`wheelcuda install --toolkit redist`: the compiler from NVIDIA's archives, served on
127.0.0.1 from a mirror laid out exactly as NVIDIA's and made at test time from the real
CUDA 13 wheels' files (every byte), with no compiler wheel anywhere and the system
toolkit out of reach (sandbox.py). The example extension builds for sm_90 and imports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import redist_server as rs
from tests.integration import sandbox
from tests.integration.conftest import REPO
from wheelcuda._sources.redist import store_roots as redistroots

pytestmark = pytest.mark.integration

LABEL = "13.0.2"


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory, wheels_venv: Path) -> Path:
    [site] = sorted(wheels_venv.glob("lib/python*/site-packages"))
    folder = tmp_path_factory.mktemp("mirror13")
    rs.cu13_mirror(folder, site, LABEL, keep=None)  # every byte: this compiler builds
    return folder


@pytest.fixture
def server(mirror: Path) -> Iterator[rs.Server]:
    with rs.serve(mirror) as running:
        yield running


def test_install_builds_with_the_compiler_from_the_archives(
        wheelcuda_cmd: str, torch_venv: Path, tmp_path: Path, isolated: Path, cuobjdump: str,
        local_wheels: dict[str, str], server: rs.Server) -> None:
    src = tmp_path / "torch_ext"
    shutil.copytree(REPO / "examples/torch_ext", src)
    py = torch_venv / "bin/python"
    manifest = f"{server.url}redistrib_{LABEL}.json"
    flags = f"--toolkit redist --redist-manifest {manifest} --python {torch_venv} --arch 9.0"
    script = f"""set -e
{wheelcuda_cmd} install {flags} {src}
cd /
{py} -c "import wheelcuda_demo; print('IMPORTED', wheelcuda_demo._C.__file__)"
{wheelcuda_cmd} doctor --json {flags} > {tmp_path}/doctor.json
"""
    # three targets in the package, pruned to sm_90 by the tree's nvcc
    env = {**local_wheels, "WHEELCUDA_INSTALLER": "uv", "DEMO_GENCODE": "75;80;90",
           "WHEELCUDA_SPLIT_COMPILE": "2"}
    try:
        r = sandbox.shell(script, tmp_path, extra_env=env, timeout=1500)
        out = sandbox.assert_ok(r)
        sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
        # a manifest given is stored under its digest, never in the pinned release's folder
        root = isolated / "toolkits" / redistroots.folder_name(
            LABEL, "x86_64", digest=rs.sha256(server.folder / f"redistrib_{LABEL}.json"))
        for comp in rs.CU13_WHEELS:  # each archive downloaded once, and said so
            fetched = [p for p, _ in server.requests if p.startswith(f"{comp}/")]
            assert len(fetched) == 1, (comp, server.requests)
            assert f"downloading {comp} " in r.stderr
        assert f"into {root}" in r.stderr
        assert "built sm_90 (1 CUDA compile by nvcc 13.0.88, split-compile 2)" in r.stderr
        so = out.split("IMPORTED ")[1].split()[0]
        elves = subprocess.run([cuobjdump, "--list-elf", so], capture_output=True, text=True,
                               check=True).stdout
        assert [line.rsplit(".", 2)[-2] for line in elves.splitlines()] == ["sm_90"]

        # the tree's compiler is the archives' (no wheel, no system toolkit)
        report = json.loads((tmp_path / "doctor.json").read_text())
        assert report["ok"], report["problems"]
        assert report["toolkit"]["source"] == "redist", report["toolkit"]
        home = Path(report["home"])
        assert os.path.realpath(home / "bin/.nvcc-real") == str(root / "nvidia/cu13/bin/nvcc")
        assert os.path.realpath(home / "nvvm/bin/cicc") == str(root / "nvidia/cu13/nvvm/bin/cicc")
        assert not list(torch_venv.glob("lib/python*/site-packages/nvidia_cuda_nvcc-*"))
        # the doctor run asked the server for the manifest only: nothing downloaded twice
        assert sum(1 for p, _ in server.requests if p.endswith(".tar.xz")) == 5
    finally:
        subprocess.run([str(py), "-m", "pip", "uninstall", "-y", "-q", "wheelcuda-demo-ext"],
                       check=False, capture_output=True)
