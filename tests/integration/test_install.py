"""`wheelcuda install` from a bare torch environment (no compiler wheels) with uv and
with pip, `--no-fetch`, and `wheelcuda run` building a CMake project; the system
toolkit out of reach throughout (sandbox.py)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.integration import sandbox
from tests.integration.conftest import REPO

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_install_fetches_the_compiler_and_builds(
        wheelcuda_cmd: str, torch_venv: Path, tmp_path: Path, isolated: Path, cuobjdump: str,
        local_wheels: dict[str, str], installer: str) -> None:
    src = tmp_path / "torch_ext"
    shutil.copytree(REPO / "examples/torch_ext", src)
    py = torch_venv / "bin/python"
    script = f"""set -e
{wheelcuda_cmd} install --python {torch_venv} --arch 9.0 {src}
cd /
{py} -c "import wheelcuda_demo; print('IMPORTED', wheelcuda_demo._C.__file__)"
"""
    # The package hard-codes three targets, as causal-conv1d does: pruned to sm_90, and
    # the one-target call gets the real nvcc's --split-compile (the count is set here, so
    # that the test does not depend on this machine's cores and memory).
    env = {**local_wheels, "WHEELCUDA_INSTALLER": installer, "DEMO_GENCODE": "75;80;90",
           "WHEELCUDA_SPLIT_COMPILE": "2"}
    try:
        r = sandbox.shell(script, tmp_path, extra_env=env, timeout=1500)
        out = sandbox.assert_ok(r)
        assert f"fetching cuda-toolkit[nvcc,cccl]==13.0.3 into {isolated}/toolkits" in r.stderr
        store = isolated / f"toolkits/cuda-toolkit-13.0.3-{platform.machine()}"
        assert (store / "nvidia/cu13/bin/nvcc").exists()
        assert f"installed wheelcuda-demo-ext==0.1.0 with {installer} in" in r.stderr
        assert "built sm_90 (1 CUDA compile by nvcc 13.0.88, split-compile 2)" in r.stderr
        so = out.split("IMPORTED ")[1].split()[0]
        elves = subprocess.run([cuobjdump, "--list-elf", so], capture_output=True, text=True,
                               check=True).stdout
        assert [line.rsplit(".", 2)[-2] for line in elves.splitlines()] == ["sm_90"]
        sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
        # The store is seen by env and doctor too, and the user's venv was not touched.
        doctor = sandbox.shell(f"{wheelcuda_cmd} doctor --json --arch 9.0 --python {torch_venv}",
                               tmp_path)
        report = json.loads(sandbox.assert_ok(doctor))
        assert report["ok"], report["problems"]
        nvcc = next(c for c in report["components"] if c["name"] == "cuda_nvcc")
        assert nvcc["path"].startswith(str(isolated / "toolkits"))
        assert not list(torch_venv.glob("lib/python*/site-packages/nvidia_cuda_nvcc-*"))
    finally:
        subprocess.run([str(py), "-m", "pip", "uninstall", "-y", "-q", "wheelcuda-demo-ext"],
                       check=False, capture_output=True)


def test_an_older_standard_is_raised_to_torchs(wheelcuda_cmd: str, wheels_venv: Path,
                                               tmp_path: Path) -> None:
    """The extension names -std=c++17 for its C++ and CUDA files, as chamferdist 1.0.3
    does; torch 2.14's headers need C++20: the tree's nvcc and host shim raise it, the
    build says so, and WHEELCUDA_CXX_STD=keep brings back torch's #error."""
    src = tmp_path / "torch_ext"
    shutil.copytree(REPO / "examples/torch_ext", src)
    target = tmp_path / "target"  # the wheels venv's torch and compiler, installed apart
    script = f"""set -e
{wheelcuda_cmd} install --python {wheels_venv} --arch 9.0 {src} -- --no-deps --target {target}
"""
    env = {"DEMO_STD": "c++17", "WHEELCUDA_INSTALLER": "pip"}
    r = sandbox.shell(script, tmp_path, extra_env=env, timeout=1500)
    sandbox.assert_ok(r)
    said = " ".join(r.stderr.split())
    assert "note: the build asked for c++17; torch 2.14.1+cu130's headers need C++20, so " \
           "wheelcuda raised it in 2 compiles" in said, said
    assert list(target.glob("wheelcuda_demo/_C*.so"))
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
    kept = sandbox.shell(script.replace(str(target), str(tmp_path / "kept")), tmp_path,
                         extra_env={**env, "WHEELCUDA_CXX_STD": "keep"}, timeout=1500)
    assert kept.returncode != 0
    assert "C++20 or later compatible compiler is required" in kept.stdout + kept.stderr


def test_no_fetch_fails_fast(wheelcuda_cmd: str, torch_venv: Path, tmp_path: Path) -> None:
    r = sandbox.shell(f"{wheelcuda_cmd} install --no-fetch --python {torch_venv} --arch 9.0 "
                      "causal-conv1d==1.7.0", tmp_path)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "missing CUDA 13 wheels: nvidia-cuda-nvcc" in r.stderr
    assert 'cuda-toolkit[nvcc,cccl]==13.0.3' in r.stderr


def test_run_builds_a_cmake_project(wheelcuda_cmd: str, wheels_venv: Path, tmp_path: Path,
                                    cuobjdump: str) -> None:
    """The project asks for three archs (its own CMAKE_CUDA_ARCHITECTURES); the tree's
    nvcc builds the one given with --arch."""
    build = tmp_path / "build"
    src = REPO / "examples/cmake_project"
    script = f"""set -e
{wheelcuda_cmd} run --python {wheels_venv} --arch 9.0 -- cmake -S {src} -B {build} \\
    '-DCMAKE_CUDA_ARCHITECTURES=75-real;80-real;90-real'
grep -c 'arch=compute_75' {build}/CMakeFiles/smoke.dir/flags.make
{wheelcuda_cmd} run --python {wheels_venv} --arch 9.0 -- cmake --build {build}
{wheelcuda_cmd} run --python {wheels_venv} --arch 9.0 -- sh -c 'exit 7' || echo "code $?"
"""
    out = sandbox.assert_ok(sandbox.shell(script, tmp_path))
    assert "CUDAToolkit 13.0.88" in out and "Built target smoke" in out
    assert out.strip().endswith("code 7")
    assert os.path.exists(build / "smoke")
    elves = subprocess.run([cuobjdump, "--list-elf", str(build / "smoke")], capture_output=True,
                           text=True, check=True).stdout
    assert {line.rsplit(".", 2)[-2] for line in elves.splitlines()} == {"sm_90"}
    sandbox.assert_no_system_toolkit(out)


def _copy_venv_with_torch_version(source: Path, dest: Path, version: str) -> Path:
    """A hard-linked copy of a venv whose torch says another version: what wheelcuda
    reads (torch/version.py, the dist-info) changes, the 5 GB of files are shared."""
    subprocess.run(["cp", "-al", str(source), str(dest)], check=True)
    (dest / "pyvenv.cfg").write_text((source / "pyvenv.cfg").read_text())
    site = next(dest.glob("lib/python*/site-packages"))
    version_py = site / "torch/version.py"
    text = version_py.read_text()
    version_py.unlink()  # break the hard link before writing
    old = text.split("__version__ = '")[1].split("'")[0]
    version_py.write_text(text.replace(f"__version__ = '{old}'", f"__version__ = '{version}'"))
    return dest


def test_second_install_is_cached_and_a_changed_torch_rebuilds(
        wheelcuda_cmd: str, torch_venv: Path, wheels_venv: Path, tmp_path: Path,
        local_wheels: dict[str, str]) -> None:
    src = tmp_path / "torch_ext"
    shutil.copytree(REPO / "examples/torch_ext", src)
    other = _copy_venv_with_torch_version(torch_venv, tmp_path / "venv-other-torch",
                                          "2.14.1+cu130.other")
    runs = {}
    try:
        # wheels_venv sees torch through a .pth file, which uv does not count as installed:
        # --no-deps, as benchmarks/run.py's B2 does. It changes no binary, so not the key.
        for name, venv, rest in (("first", torch_venv, ""), ("again", wheels_venv, "-- --no-deps"),
                                 ("torch", other, "")):
            r = sandbox.shell(f"{wheelcuda_cmd} install --python {venv} --arch 9.0 {src} {rest}",
                              tmp_path, extra_env=local_wheels, timeout=1500)
            sandbox.assert_ok(r)
            runs[name] = r.stderr.strip().splitlines()[-1]
        assert "built sm_90" in runs["first"]
        # Another environment, same torch, nvcc, archs and Python: served from the cache.
        assert "from wheelcuda's wheel cache (nothing compiled)" in runs["again"]
        assert runs["again"].split("cache key ")[1] == runs["first"].split("cache key ")[1]
        # Another torch: a new key, and a real build.
        assert "built sm_90" in runs["torch"]
        assert runs["torch"].split("cache key ")[1] != runs["first"].split("cache key ")[1]
        listing = sandbox.assert_ok(sandbox.shell(f"{wheelcuda_cmd} cache list", tmp_path))
        assert "torch 2.14.1+cu130 (CUDA 13.0)" in listing
        assert "torch 2.14.1+cu130.other" in listing
        # an entry is its wheel and what a rebuild needs, not
        # setuptools' objects and a private installer cache (64 MB for a 3.2 MB wheel)
        data = json.loads(sandbox.assert_ok(sandbox.shell(f"{wheelcuda_cmd} cache list --json",
                                                          tmp_path)))
        assert len(data["entries"]) == 2
        for entry in data["entries"]:
            folder = Path(entry["path"])
            wheel = sum(w.stat().st_size for w in folder.glob("wheels/*.whl"))
            assert wheel > 0 and not (folder / "setuptools-build").exists()
            assert entry["size"] < 3 * wheel + 2_000_000, (entry["size"], wheel)
    finally:
        for venv in (torch_venv, wheels_venv):
            subprocess.run([str(venv / "bin/python"), "-m", "pip", "uninstall", "-y", "-q",
                            "wheelcuda-demo-ext"], check=False, capture_output=True)
        shutil.rmtree(other, ignore_errors=True)


def test_eval_env_from_a_bare_torch_environment(
        wheelcuda_cmd: str, torch_venv: Path, tmp_path: Path, isolated: Path,
        local_wheels: dict[str, str]) -> None:
    """`eval "$(wheelcuda env)"`, the card's own usage, in an environment with torch and no
    compiler: env fetches the set into the store (its installer's
    output on stderr, stdout stays shell text), and the next build finds a CUDA_HOME whose
    nvcc compiles and links a kernel; with --no-fetch the error stays."""
    (tmp_path / "k.cu").write_text(
        "#include <cstdio>\n__global__ void k(int* x) { *x = 7; }\n"
        "int main() { int* d; cudaMalloc(&d, 4); k<<<1, 1>>>(d); return 0; }\n")
    script = f"""set -e
if {wheelcuda_cmd} env --python {torch_venv} --arch 9.0 --no-fetch >out.sh 2>err.txt; then
    echo "no-fetch succeeded"; exit 3; fi
grep -q "missing CUDA 13 wheels" err.txt && test ! -s out.sh
eval "$({wheelcuda_cmd} env --python {torch_venv} --arch 9.0)"
echo "CUDA_HOME=$CUDA_HOME"
"$CUDACXX" -arch=sm_90 -o {tmp_path}/k {tmp_path}/k.cu
"$CUDACXX" -dryrun -arch=sm_90 -o {tmp_path}/k {tmp_path}/k.cu 2>&1 | grep -q "$CUDA_HOME"
echo COMPILED
"""
    r = sandbox.shell(script, tmp_path, extra_env={**local_wheels}, timeout=900,
                      cwd=tmp_path)
    out = sandbox.assert_ok(r)
    assert "COMPILED" in out and f"CUDA_HOME={isolated}/homes/cu13.0-" in out
    assert f"fetching cuda-toolkit[nvcc,cccl]==13.0.3 into {isolated}/toolkits" in r.stderr
    assert (tmp_path / "k").exists()
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
