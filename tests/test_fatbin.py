"""Reading which GPUs a built .so holds SASS for, from its own ELF, checked
against cuobjdump on real nvcc output (this machine's CUDA 13.0, used on purpose)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from wheelcuda._probe import fatbin

NVCC = Path("/usr/local/cuda-13.0/bin/nvcc")
KERNEL = """__global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }
extern "C" void launch(float* x) { k<<<1, 32>>>(x); }
"""


def _cuobjdump() -> str:
    found = sorted(Path(sys.prefix).glob("lib/python*/site-packages/nvidia/cu*/bin/cuobjdump"))
    if not found:
        pytest.fail("cuobjdump missing: pip install nvidia-cuda-cuobjdump (make dev does)")
    return str(found[0])


@pytest.mark.skipif(not NVCC.is_file(), reason="no CUDA 13.0 toolkit at /usr/local/cuda-13.0")
@pytest.mark.parametrize(("gencode", "sass", "ptx"), [
    (["arch=compute_80,code=sm_80", "arch=compute_90,code=[sm_90,compute_90]"], {80, 90}, {90}),
    (["arch=compute_120,code=sm_120"], {120}, set()),
    (["arch=compute_75,code=compute_75"], set(), {75}),
])
def test_the_archs_of_a_real_shared_object(tmp_path: Path, gencode: list[str], sass: set[int],
                                           ptx: set[int]) -> None:
    (tmp_path / "k.cu").write_text(KERNEL)
    flags = [a for g in gencode for a in ("-gencode", g)]
    subprocess.run([str(NVCC), "-shared", "-Xcompiler", "-fPIC", *flags, "k.cu", "-o", "k.so"],
                   cwd=tmp_path, check=True, capture_output=True)
    so = tmp_path / "k.so"
    code = fatbin.of_elf(so.read_bytes())
    assert code.sass == sass and code.ptx == ptx
    listed = subprocess.run([_cuobjdump(), "--list-elf", "--list-ptx", str(so)],
                            capture_output=True, text=True, check=False).stdout
    assert {int(n.rsplit(".", 2)[-2].removeprefix("sm_")) for n in listed.split()
            if n.endswith(".cubin")} == sass
    wheel = tmp_path / "x-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        z.write(so, "x/_C.cpython-311-x86_64-linux-gnu.so")
        z.writestr("x/__init__.py", "")
    assert fatbin.of_wheel(wheel).sass == sass


def test_what_cannot_be_read_holds_nothing(tmp_path: Path) -> None:
    assert fatbin.of_elf(b"") == fatbin.DeviceCode()
    assert fatbin.of_elf(b"\x7fELF" + b"\x02\x01" + b"\x00" * 100) == fatbin.DeviceCode()
    bad = tmp_path / "bad.whl"
    bad.write_bytes(b"not a zip")
    assert fatbin.of_wheel(bad) == fatbin.DeviceCode()
    with open(sys.executable, "rb") as f:  # an ELF without device code
        assert fatbin.of_elf(f.read()) == fatbin.DeviceCode()


@pytest.mark.skipif(not NVCC.is_file(), reason="no CUDA 13.0 toolkit at /usr/local/cuda-13.0")
def test_each_shared_object_must_hold_the_arch(tmp_path: Path) -> None:
    """Two .so in one wheel, sm_80 and sm_90: sm_90 is not there for certain."""
    (tmp_path / "k.cu").write_text(KERNEL)
    wheel = tmp_path / "x-1.0-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for code in ("80", "90"):
            subprocess.run([str(NVCC), "-shared", "-Xcompiler", "-fPIC", "-gencode",
                            f"arch=compute_{code},code=sm_{code}", "k.cu", "-o", f"{code}.so"],
                           cwd=tmp_path, check=True, capture_output=True)
            z.write(tmp_path / f"{code}.so", f"x/_{code}.so")
    assert fatbin.of_wheel(wheel).sass == set()
