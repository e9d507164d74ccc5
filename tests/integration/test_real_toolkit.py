"""The core path against the real NVIDIA CUDA 13 wheels and real compilers, with the
system toolkit out of reach (see sandbox.py): compile and link CUDA code, build a torch
extension with pip, configure and build a CMake project, race 8 processes, rebuild a
stale tree."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integration import sandbox
from tests.integration.conftest import REPO

pytestmark = pytest.mark.integration


def _home(wheelcuda: str, venv: Path, tmp_path: Path) -> Path:
    out = sandbox.assert_ok(sandbox.shell(f"{wheelcuda} home --python {venv}", tmp_path))
    return Path(out.strip())


def _env_line(wheelcuda: str, venv: Path, arch: str = "9.0") -> str:
    return f'eval "$({wheelcuda} env --python {venv} --arch {arch})"'


def test_hiding_really_hides() -> None:
    if not sandbox.can_hide():
        pytest.skip("unshare -m needs root; relying on the scrubbed environment")
    r = sandbox.shell("ls -A /usr/local; command -v nvcc || echo no-nvcc", Path("/tmp"))
    assert sandbox.assert_ok(r).split() == ["no-nvcc"]


def test_doctor_on_the_real_wheels(wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path
                                   ) -> None:
    r = sandbox.shell(f"{wheelcuda_cmd} doctor --json --arch 9.0 --python {wheels_venv}",
                      tmp_path)
    report = json.loads(sandbox.assert_ok(r))
    assert report["ok"] is True, report["problems"]
    assert report["torch"]["version"].startswith("2.14.1")
    assert report["torch"]["cuda"] == "13.0" and report["torch"]["cxx11_abi"] is True
    assert report["nvcc"]["version"] == "13.0.88"
    assert "release 13.0" in report["nvcc"]["banner"]
    assert {c["status"] for c in report["components"] if c["required"]} == {"ok"}
    sandbox.assert_no_system_toolkit(json.dumps(report))


def test_compile_and_link_cuda(wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path) -> None:
    """cub + cuda_bf16 + a kernel launch, through the tree's nvcc; then -lcuda (the stub)."""
    src = REPO / "examples/cmake_project/smoke.cu"
    script = f"""set -e
{_env_line(wheelcuda_cmd, wheels_venv)}
command -v nvcc
nvcc -arch=sm_90 -o smoke {src}
./smoke
nvcc -dryrun -arch=sm_90 -o smoke {src} 2>&1
nvcc -arch=sm_90 -DWHEELCUDA_DRIVER -o smoke-driver {src} -lcuda
readelf -d smoke smoke-driver
"""
    out = sandbox.assert_ok(sandbox.shell(script, tmp_path, cwd=tmp_path))
    home = out.splitlines()[0].removesuffix("/bin/nvcc")
    assert home.startswith(str(Path(os.environ["WHEELCUDA_CACHE_DIR"])))
    assert "built; no usable GPU" in out  # it ran: linked, loaded, called the runtime
    assert f"{home}/bin/../nvvm/bin" in out or f"{home}/nvvm/bin" in out  # cicc from the tree
    assert "libcuda.so.1" in out  # NEEDED from the stub's SONAME
    sandbox.assert_no_system_toolkit(out)


@pytest.mark.parametrize("installer", ["pip", "uv"])
def test_torch_extension(wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path, cuobjdump: str,
                         installer: str) -> None:
    """The README's `eval "$(wheelcuda env)"` path with pip and with uv, then import it."""
    src = tmp_path / "torch_ext"
    shutil.copytree(REPO / "examples/torch_ext", src)
    py = wheels_venv / "bin/python"
    uv = Path(sys.executable).parent / "uv"
    install = {
        "pip": f"{py} -m pip install --no-build-isolation --no-deps --no-cache-dir -v {src}",
        "uv": f"{uv} pip install --no-build-isolation --no-deps --no-cache --python {py} {src}",
    }[installer]
    script = f"""set -e
{_env_line(wheelcuda_cmd, wheels_venv)}
MAX_JOBS=2 {install}
cd /
{py} -c "import wheelcuda_demo, torch; print('IMPORTED', wheelcuda_demo._C.__file__)"
"""
    try:
        out = sandbox.assert_ok(sandbox.shell(script, tmp_path, timeout=1500))
        assert "IMPORTED" in out
        so = out.split("IMPORTED ")[1].split()[0]
        readelf = subprocess.run(["readelf", "-d", so], capture_output=True, text=True,
                                 check=True).stdout
        sandbox.assert_no_system_toolkit(readelf)
        elves = subprocess.run([cuobjdump, "--list-elf", so], capture_output=True, text=True,
                               check=True).stdout
        assert [line.rsplit(".", 2)[-2] for line in elves.splitlines()] == ["sm_90"]
        sandbox.assert_no_system_toolkit(out)
    finally:
        subprocess.run([str(py), "-m", "pip", "uninstall", "-y", "-q", "wheelcuda-demo-ext"],
                       check=False, capture_output=True)


def test_direct_nvcc_is_pruned_unless_all_archs(wheelcuda_cmd: str, wheels_venv: Path,
                                                 tmp_path: Path, cuobjdump: str) -> None:
    """$CUDA_HOME/bin/nvcc asked for three archs builds the one given; --all-archs keeps
    the three. Checked in the binaries with cuobjdump, not in the command lines."""
    src = REPO / "examples/cmake_project/smoke.cu"
    three = "-gencode arch=compute_75,code=sm_75 --generate-code=arch=compute_80,code=sm_80 " \
            "-arch=sm_90"
    script = f"""set -e
{_env_line(wheelcuda_cmd, wheels_venv)}
"$CUDA_HOME/bin/nvcc" {three} -o pruned {src}
eval "$({wheelcuda_cmd} env --python {wheels_venv} --arch 9.0 --all-archs)"
"$CUDA_HOME/bin/nvcc" {three} -o full {src}
eval "$({wheelcuda_cmd} env --python {wheels_venv} --arch 12.0)"
"$CUDA_HOME/bin/nvcc" -arch=sm_80 -o other {src}
"""
    r = sandbox.shell(script, tmp_path, cwd=tmp_path)
    sandbox.assert_ok(r)

    def archs(binary: str) -> set[str]:
        out = subprocess.run([cuobjdump, "--list-elf", str(tmp_path / binary)],
                             capture_output=True, text=True, check=True).stdout
        return {line.rsplit(".", 2)[-2] for line in out.splitlines()}

    assert archs("pruned") == {"sm_90"}
    assert archs("full") == {"sm_75", "sm_80", "sm_90"}
    assert archs("other") == {"sm_120"}  # asked for none of the targets: built anyway
    assert "asked for sm_80, not for sm_120; building sm_120 anyway" in r.stderr


def test_cmake_project(wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path) -> None:
    build = tmp_path / "build"
    script = f"""set -e
{_env_line(wheelcuda_cmd, wheels_venv)}
cmake -S {REPO / "examples/cmake_project"} -B {build}
cmake --build {build}
grep -E '^(CMAKE_CUDA_COMPILER|CUDAToolkit_NVCC_EXECUTABLE|CUDA_cuda_driver_LIBRARY)' \\
    {build}/CMakeCache.txt
readelf -d {build}/smoke
"""
    out = sandbox.assert_ok(sandbox.shell(script, tmp_path))
    assert "CUDAToolkit 13.0.88" in out
    assert "/stubs/libcuda.so" in out  # CUDA::cuda_driver is the tree's stub
    assert "libcuda.so.1" in out and "libcudart.so.13" in out
    sandbox.assert_no_system_toolkit(out)


def test_eight_processes_one_tree(wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path,
                                  isolated: Path) -> None:
    def one(_: int) -> subprocess.CompletedProcess[str]:
        return sandbox.shell(f"{wheelcuda_cmd} home --python {wheels_venv}", tmp_path)

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(8)))
    homes = {sandbox.assert_ok(r).strip() for r in results}
    assert len(homes) == 1
    trees = [p.name for p in (isolated / "homes").iterdir() if not p.name.endswith(".lock")]
    assert trees == [Path(homes.pop()).name]


def test_stale_tree_is_rebuilt(wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path) -> None:
    home = _home(wheelcuda_cmd, wheels_venv, tmp_path)
    real = home / "bin/.nvcc-real"  # the link to the wheel's nvcc
    real.unlink()
    real.symlink_to(tmp_path / "uninstalled/nvcc")  # what an upgrade leaves behind
    assert _home(wheelcuda_cmd, wheels_venv, tmp_path) == home
    (home / "bin/nvcc").unlink()  # the wrapper itself gone
    assert _home(wheelcuda_cmd, wheels_venv, tmp_path) == home
    r = sandbox.shell(f"{home}/bin/nvcc --version", tmp_path)
    assert "release 13.0" in sandbox.assert_ok(r)
