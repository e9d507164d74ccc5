"""The local toolkit source against this machine's real CUDA 13.0 toolkit
(/usr/local/cuda-13.0): its shim is found whole by locate, a wheelcuda tree is
assembled over it as over the wheels, and the tree's nvcc (the arch-pruning wrapper)
compiles and links through the tree, never naming /usr/local/cuda."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wheelcuda import _pipeline as pipeline
from wheelcuda._context import Context
from wheelcuda._data import catalog
from wheelcuda._probe import locate
from wheelcuda._sources.local import probe as localcuda
from wheelcuda._sources.local import store as shims
from wheelcuda._store import trees
from wheelcuda._store.layout import Layout

pytestmark = pytest.mark.integration

TOOLKIT = Path("/usr/local/cuda-13.0")

SOURCE = r"""#include <cstdio>
#include <cuda_bf16.h>
__global__ void scale(const __nv_bfloat16* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __bfloat162float(in[i]) * 2.0f;
}
int main() {
  int count = -1;
  cudaError_t err = cudaGetDeviceCount(&count);
  std::printf("linked; cudaGetDeviceCount -> %d (%s)\n", count, cudaGetErrorString(err));
  return 0;
}
"""


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, f"{argv}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout + done.stderr


def test_real_toolkit_through_a_shim_and_a_tree(tmp_path: Path) -> None:
    if not (TOOLKIT / "bin/nvcc").is_file():
        pytest.skip(f"no CUDA toolkit at {TOOLKIT}")
    ctx = Context.current()
    layout = Layout(tmp_path / "cache")

    candidate = localcuda.probe(str(TOOLKIT), localcuda.GIVEN, ctx)
    assert candidate.complete, candidate.missing
    assert candidate.major == 13 and candidate.release == "13.0"

    shim = shims.ensure(layout, candidate)
    assert shims.ensure(layout, candidate) == shim  # reused
    inventory = locate.locate([str(shim)])
    for comp in catalog.COMPILER:
        found = inventory.get(comp.name, 13)
        assert found is not None and found.complete, (comp.name, found)
        assert found.version == candidate.version

    toolkit = pipeline.Toolkit(13, inventory, {f.component.name: "local" for f in inventory.found})
    home = trees.ensure(layout, pipeline.tree_for(ctx, layout, toolkit), ctx, "gcc")
    assert home.nvcc_release == "13.0" and "sm_90" in home.gpu_codes
    assert os.path.realpath(home.path / "bin/.nvcc-real") == str(TOOLKIT / "bin/nvcc")
    # the tree's own driver stub, in the cache: never written through a link into the toolkit
    assert (home.path / "lib64/stubs/libcuda.so").is_file()
    assert not (home.path / "lib64/stubs").is_symlink()

    (tmp_path / "k.cu").write_text(SOURCE)
    nvcc = str(home.path / "bin/nvcc")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "WHEELCUDA_ARCHS": "9.0"}  # the wrapper prunes the two targets to sm_90
    gencode = ["-gencode", "arch=compute_80,code=sm_80",
               "-gencode", "arch=compute_90,code=sm_90"]
    _run([nvcc, *gencode, "-c", "k.cu", "-o", "k.o"], tmp_path, env)
    _run([nvcc, "-arch=sm_90", "-o", "k", "k.o"], tmp_path, env)
    out = _run([str(tmp_path / "k")], tmp_path, env)
    assert "linked; cudaGetDeviceCount" in out

    dry = _run([nvcc, "-dryrun", "-arch=sm_90", "-c", "k.cu", "-o", "k2.o"], tmp_path, env)
    top = f"{home.path}/bin/.."  # nvcc.profile's TOP: the tree, not the toolkit
    assert f"#$ TOP={top}\n" in dry, dry
    assert f"#$ CICC_PATH={top}/nvvm/bin\n" in dry, dry
    assert f'"-I{top}/targets/{catalog.target_dir()}/include"' in dry, dry
    assert "/usr/local/cuda" not in dry, dry

    cuobjdump = sorted(Path(sys.prefix).glob("lib/python*/site-packages/nvidia/cu*/bin/cuobjdump"))
    if cuobjdump:
        listed = _run([str(cuobjdump[0]), "--list-elf", "k.o"], tmp_path, env)
        assert "sm_90" in listed and "sm_80" not in listed, listed


def _cache_files(cache: Path) -> list[str]:
    return sorted(str(p.relative_to(cache)) for p in cache.rglob("*")) if cache.exists() else []


def test_doctor_writes_nothing_into_the_cache(tmp_path: Path, torch_venv: Path,
                                              wheelcuda_cmd: str) -> None:
    """Doctor on a fresh cache, with --toolkit auto and only this
    machine's toolkit to serve, used to leave the toolkit's links and a tree behind. It
    now tries them in a scratch folder that goes; env, a command that builds, makes
    them in the cache, and doctor then names that tree."""
    if not (TOOLKIT / "bin/nvcc").is_file():
        pytest.skip(f"no CUDA toolkit at {TOOLKIT}")
    cache, scratch = tmp_path / "cache", tmp_path / "tmp"
    scratch.mkdir()
    env = {"PATH": f"{TOOLKIT}/bin:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8",
           "WHEELCUDA_CACHE_DIR": str(cache), "TMPDIR": str(scratch),
           "WHEELCUDA_TOOLKIT": "auto", "CUDA_HOME": str(TOOLKIT)}
    doctor = [wheelcuda_cmd, "doctor", "--python", str(torch_venv / "bin/python"),
              "--arch", "9.0"]
    done = subprocess.run(doctor, env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "source         local:" in done.stdout and "linked by the first build" in done.stdout
    assert "not built yet: env, install and run build it" in done.stdout, done.stdout
    assert "OK: a build would work" in done.stdout
    assert _cache_files(cache) == [], _cache_files(cache)
    assert list(scratch.iterdir()) == []  # the scratch went too

    made = subprocess.run([*doctor[:1], "env", *doctor[2:]], env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert made.returncode == 0, made.stderr
    home = next(line.split("=", 1)[1].strip("'\"") for line in made.stdout.splitlines()
                if line.startswith("export CUDA_HOME="))
    before = _cache_files(cache)
    again = subprocess.run([*doctor, "--json"], env=env, capture_output=True, text=True,
                           timeout=300, check=False)
    report = json.loads(again.stdout)
    assert report.get("home") == home and report.get("home_built") is True, again.stdout
    assert _cache_files(cache) == before  # read, not rewritten (the memo included)
