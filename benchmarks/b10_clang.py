"""B10: the clang toolkit against NVIDIA's nvcc on the same sources and arch.

Here (no GPU): examples/clang_gpu/build.sh compiles causal-conv1d 1.7.0's forward and
backward kernels (its own nvcc flags, sm_90) and a CUDA test program with each compiler,
one after the other: compile seconds, binary sizes, and registers per kernel from
cuobjdump. On the H200, examples/clang_gpu/run.sh runs both builds side by side; its
output from the last such run (benchmarks/clang_gpu_run.txt) gives the kernel times.
The nvcc here is 13.0 (the only NVIDIA nvcc this machine and the GPU machine have; no
CUDA 12 nvcc can be downloaded here), so the ratios compare clang + ptxas 12.8 with
nvcc + ptxas 13.0.
"""

from __future__ import annotations

import re
import statistics
import subprocess
from pathlib import Path

__all__ = ["b10", "b10_rows"]

REPO = Path(__file__).resolve().parents[1]
GPU_RUN = REPO / "benchmarks" / "clang_gpu_run.txt"


def _registers(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    name = None
    for line in path.read_text().splitlines():
        m = re.match(r"\s*Function (\S+):", line)
        if m:
            name = m.group(1)
            continue
        m = re.search(r"REG:(\d+)", line)
        if m and name:
            out[name] = int(m.group(1))
            name = None
    return out


def b10(work: Path) -> dict[str, float]:
    out_dir = work / "clang-gpu"
    subprocess.run(["bash", str(REPO / "examples/clang_gpu/build.sh"), str(out_dir)],
                   check=True, capture_output=True, text=True)
    r: dict[str, float] = {}
    for variant in ("clang", "nvcc"):
        times = (out_dir / variant / "compile_times.txt").read_text()
        r[f"{variant}_build"] = float(re.search(r"cc_harness=([\d.]+)", times)[1])  # type: ignore[index]
        r[f"{variant}_size"] = (out_dir / variant / "cc_harness").stat().st_size
    c, n = (_registers(out_dir / v / "resources.txt") for v in ("clang", "nvcc"))
    common = set(c) & set(n)
    r["reg_clang"] = statistics.mean(c[k] for k in common)
    r["reg_nvcc"] = statistics.mean(n[k] for k in common)
    r["reg_more"] = sum(c[k] > n[k] for k in common)
    r["reg_less"] = sum(c[k] < n[k] for k in common)
    r["reg_kernels"] = len(common)
    if GPU_RUN.exists():
        for m in re.finditer(r"^(\w+)_ms\s+clang=\s*([\d.]+) nvcc=\s*([\d.]+)", GPU_RUN.read_text(),
                             re.MULTILINE):
            r[f"gpu_{m[1]}"] = float(m[2]) / float(m[3])
    return r


def b10_rows(r: dict[str, float]) -> list[tuple[str, str, str, str, str]]:
    rows = [
        ("B10", "causal-conv1d's fwd+bwd kernels, sm_90: compile time, clang toolkit vs "
                "nvcc 13.0", f"{r['clang_build']:.0f} s / {r['nvcc_build']:.0f} s",
         f"{r['clang_build'] / r['nvcc_build']:.2f}", "reported"),
        ("B10", "the same: harness binary size (kernels' fatbin inside)",
         f"{r['clang_size'] / 1e6:.1f} MB / {r['nvcc_size'] / 1e6:.1f} MB",
         f"{r['clang_size'] / r['nvcc_size']:.2f}", "reported"),
        ("B10", f"registers per kernel, mean over {r['reg_kernels']:.0f} kernels (clang "
                f"uses more in {r['reg_more']:.0f}, fewer in {r['reg_less']:.0f})",
         f"{r['reg_clang']:.0f} / {r['reg_nvcc']:.0f}",
         f"{r['reg_clang'] / r['reg_nvcc']:.2f}", "reported"),
    ]
    rows += [("B10", f"H200 kernel time, {key.replace('gpu_', '').replace('_', ' ')} "
                     "(benchmarks/clang_gpu_run.txt)", "-", f"{r[key]:.3f}", "<= 1.3")
             for key in sorted(r) if key.startswith("gpu_")]
    return rows
