"""B12: what watching a build costs. One compile of examples/torch_ext's kernel file
(torch's and cuBLAS' headers, sm_90), by the tree's nvcc with its progress on (the
wrapper prunes, then runs the compiler as its child, times it with wait4 and appends
two JSON lines and a stderr line) against the same arguments given to the real nvcc
behind it (``bin/.nvcc-real``), alternated, median of each: wall time, and CPU time of
the whole process tree (the wall time of one compile varied by 20% between runs of the same
command on this VM, 2026-12-02; CPU time is what the wrapper adds, and steadier).
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["b12", "b12_rows"]

REPO = Path(__file__).resolve().parents[1]
WHEELCUDA = str(Path(sys.executable).parent / "wheelcuda")
RUNS = 5


def _args(wheels_venv: Path, obj: Path) -> list[str]:
    site = next(wheels_venv.glob("lib/python*/site-packages"))
    torch_site = Path((site / "torch-venv.pth").read_text().strip()) \
        if (site / "torch-venv.pth").is_file() else site
    inc = torch_site / "torch" / "include"
    py_inc = subprocess.run([str(wheels_venv / "bin/python"), "-c",
                             "import sysconfig; print(sysconfig.get_paths()['include'])"],
                            capture_output=True, text=True, check=True).stdout.strip()
    return ["-c", str(REPO / "examples/torch_ext/csrc/scaled_add.cu"), "-o", str(obj),
            f"-I{inc}", f"-I{inc}/torch/csrc/api/include", f"-I{py_inc}",
            "-gencode=arch=compute_90,code=sm_90", "--expt-relaxed-constexpr", "-std=c++20",
            "-O3", "--compiler-options", "-fPIC"]


def _time(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU of the child and everything it waited for) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def b12(wheels_venv: Path, env: dict[str, str]) -> dict[str, float]:
    home = subprocess.run([WHEELCUDA, "home", "--python", str(wheels_venv)],
                          env=env, capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="wheelcuda-b12-") as tmp:
        args = _args(wheels_venv, Path(tmp) / "k.o")
        events = Path(tmp) / "events.jsonl"
        watched_env = {**env, "WHEELCUDA_ARCHS": "9.0", "WHEELCUDA_PROGRESS": str(events),
                       "WHEELCUDA_SPLIT_COMPILE": "1"}
        plain_env = {k: v for k, v in env.items() if not k.startswith("WHEELCUDA_")}
        watched, plain = [], []
        for _ in range(RUNS):
            watched.append(_time([os.path.join(home, "bin/nvcc"), *args], watched_env))
            plain.append(_time([os.path.join(home, "bin/.nvcc-real"), *args], plain_env))
        told = len(events.read_text().splitlines())
    return {"b12_watched": statistics.median(w for w, _ in watched),
            "b12_plain": statistics.median(w for w, _ in plain),
            "b12_watched_cpu": statistics.median(c for _, c in watched),
            "b12_plain_cpu": statistics.median(c for _, c in plain),
            "b12_events": told / RUNS}


def b12_rows(r: dict[str, float]) -> list[tuple[str, str, str, str, str]]:
    what = ("one real compile (the example's kernel file, sm_90) through the tree's nvcc with "
            f"its progress ({r['b12_events']:.0f} events each) vs the real nvcc")
    return [("B12", f"{what}: CPU time",
             f"{r['b12_watched_cpu']:.2f} s / {r['b12_plain_cpu']:.2f} s",
             f"{r['b12_watched_cpu'] / r['b12_plain_cpu']:.3f}", "<= 1.01"),
            ("B12", "the same, wall time (this VM varies by 20% run to run)",
             f"{r['b12_watched']:.2f} s / {r['b12_plain']:.2f} s",
             f"{r['b12_watched'] / r['b12_plain']:.3f}", "reported")]
