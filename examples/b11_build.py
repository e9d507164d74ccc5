"""B11: one `wheelcuda install` of a CUDA extension's sdist on the GPU machine, measured
with the floor it is held to.

Prints one JSON line and a sentence: wall seconds; CPU seconds of everything the install
ran (the children's rusage); busy cores (CPU / wall); the peak of used memory
(MemTotal - MemAvailable sampled every second: the whole machine, every process of the
build); MAX_JOBS as wheelcuda chose it; the compiles of the build's profile, the longest
one's own wall time; and the floor: CPU seconds / cores, or the longest compile alone,
whichever is larger (no schedule can beat it).

    usage: python examples/b11_build.py REPO PYTHON SDIST [LABEL] [-- INSTALL ARGS...]
           python examples/b11_build.py --analyse BUILD_JSON JOBS [NVCC_TIME_CSV]

``--analyse`` reads what a build kept (its build.json, with the profile, or the events
file of one still running) and says where
its time went: the compiles' span, how many ran at once over it, what the same files
would take on JOBS slots in the order they started and longest first (a list schedule
of the measured walls: a model, which assumes a file's time does not change with what
runs beside it), and, from nvcc's own phase times (``nvcc --time``), the seconds of each
phase (cudafe++, cicc, ptxas, the host compiler) over all files and in the longest one.

The cache is ``$WHEELCUDA_CACHE_DIR`` (a fresh one unless set): run it twice with the
same cache and another key (``-- --no-deps --no-cache-dir``, say) to build with the
first build's profile (its memory per job and its longest-first order).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def _used_kib() -> int:
    info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
    return int(info["MemTotal"].split()[0]) - int(info["MemAvailable"].split()[0])


def _sample(peak: list[int], stop: threading.Event) -> None:
    while not stop.wait(1.0):
        peak[0] = max(peak[0], _used_kib())


def _profile(cache: Path) -> tuple[list[dict[str, object]], dict[str, object]]:
    records = sorted(cache.glob("builds/*/build.json"), key=lambda p: p.stat().st_mtime)
    if not records:
        return [], {}
    data = json.loads(records[-1].read_text())
    return list(data.get("profile") or []), data


def schedule(walls: list[float], jobs: int) -> float:
    """The span of ``walls`` started in this order on ``jobs`` slots, each as soon as
    one is free (ninja's way)."""
    free = [0.0] * max(1, jobs)
    for wall in walls:
        slot = min(range(len(free)), key=free.__getitem__)
        free[slot] += wall
    return max(free)


def phases(csv_path: Path) -> dict[str, dict[str, float]]:
    """Seconds per nvcc phase: {"all": {phase: s}, file: {phase: s}} from ``nvcc --time``
    (lines "file , phase , inputs , output , arch , tool , metric , unit"; calls that
    ran at once append to one file, so a torn line is skipped)."""
    out: dict[str, dict[str, float]] = {"all": {}}
    for line in csv_path.read_text(errors="replace").splitlines()[1:]:
        cells = [c.strip() for c in line.split(",")]
        if len(cells) != 8 or cells[7] != "ms":
            continue
        try:
            seconds = float(cells[6]) / 1000
        except ValueError:
            continue
        name = Path(cells[0]).name or "(driver)"
        phase = cells[1].split(" (")[0] if cells[1].startswith("gcc (pre") else cells[1]
        for where in ("all", name):
            bucket = out.setdefault(where, {})
            bucket[phase] = round(bucket.get(phase, 0.0) + seconds, 1)
    return out


def _rows(record: Path) -> list[dict[str, object]]:
    """The compiles of a build.json's profile, or of a build's events file (``.jsonl``,
    while it runs: each compile's end event, its start its end less its wall)."""
    if record.suffix != ".jsonl":
        return list(json.loads(record.read_text()).get("profile") or [])
    ends = [json.loads(line) for line in record.read_text().splitlines() if '"end"' in line]
    return [{**e, "start": float(e["t"]) - float(e["wall"])} for e in ends]


def analyse(record: Path, jobs: int, csv_path: Path | None) -> dict[str, object]:
    rows = _rows(record)
    if not rows:
        return {"compiles": 0}
    started = sorted(rows, key=lambda r: float(r["start"]))
    begin = float(started[0]["start"])
    end = max(float(r["start"]) + float(r["wall"]) for r in rows)
    # how many compiles ran at once, sampled each second of the span
    busy = [sum(1 for r in rows if float(r["start"]) <= begin + t < float(r["start"])
                + float(r["wall"])) for t in range(int(end - begin) + 1)]
    walls = [float(r["wall"]) for r in started]
    longest = max(rows, key=lambda r: float(r["wall"]))
    result: dict[str, object] = {
        "compiles": len(rows), "span_s": round(end - begin, 1),
        "cpu_s": round(sum(float(r["cpu"]) for r in rows), 1),
        "mean_running": round(sum(busy) / len(busy), 1),
        "last_quarter_running": round(sum(tail := busy[-max(1, len(busy) // 4):]) / len(tail),
                                      1),
        "longest": Path(str(longest["file"])).name, "longest_s": float(longest["wall"]),
        "longest_started_at_s": round(float(longest["start"]) - begin, 1),
        "model_as_started_s": round(schedule(walls, jobs), 1),
        "model_longest_first_s": round(schedule(sorted(walls, reverse=True), jobs), 1),
        "largest_peak_gib": round(max(int(r.get("peak_kb") or 0) for r in rows) / 1024**2, 2),
        "splits": sorted({int(r.get("split") or 1) for r in rows}),
        "first_started": [Path(str(r["file"])).name for r in started[:4]],
        "last_ended": [Path(str(r["file"])).name for r in sorted(
            rows, key=lambda r: float(r["start"]) + float(r["wall"]))[-4:]],
    }
    if csv_path is not None and csv_path.is_file():
        times = phases(csv_path)
        result["phases_all_s"] = times["all"]
        result["phases_longest_s"] = times.get(str(result["longest"]), {})
    return result


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["--analyse"]:
        csv_path = Path(args[3]) if len(args) > 3 else None
        print(json.dumps(analyse(Path(args[1]), int(args[2]), csv_path), indent=1))
        return 0
    extra = args[args.index("--") + 1:] if "--" in args else []
    args = args[:args.index("--")] if "--" in args else args
    repo, python, sdist = args[0], args[1], args[2]
    label = args[3] if len(args) > 3 else Path(sdist).name
    cache = Path(os.environ.get("WHEELCUDA_CACHE_DIR") or tempfile.mkdtemp(prefix="b11-"))
    env = {**os.environ, "PYTHONPATH": str(Path(repo, "src")),
           "WHEELCUDA_CACHE_DIR": str(cache)}
    argv = [python, "-m", "wheelcuda", "install", "--python", python, "--toolkit", "local",
            "--arch", "9.0", sdist, "--", "--no-deps", *extra]
    explained = subprocess.run([*argv[:4], "--explain", *argv[4:]], env=env,
                               capture_output=True, text=True, check=False).stdout
    jobs = [line.split("=", 1)[1].strip() for line in explained.splitlines()
            if line.startswith("set        MAX_JOBS=")]
    # an installed release is not built again: the build is what is measured
    subprocess.run(["uv", "pip", "uninstall", "--python", python, Path(sdist).name.split("-")[0]],
                   capture_output=True, check=False)
    before_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak, stop = [_used_kib()], threading.Event()
    idle = peak[0]
    sampler = threading.Thread(target=_sample, args=(peak, stop), daemon=True)
    sampler.start()
    start = time.monotonic()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    wall = time.monotonic() - start
    stop.set()
    after_cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after_cpu.ru_utime - before_cpu.ru_utime) + (after_cpu.ru_stime - before_cpu.ru_stime)
    if done.returncode:
        sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
        return done.returncode
    rows, _ = _profile(cache)
    longest = max(rows, key=lambda r: float(r.get("wall") or 0), default={})
    cores = os.cpu_count() or 1
    floor = max(cpu / cores, float(longest.get("wall") or 0))
    summary = [line for line in done.stderr.splitlines() if "installed " in line][-1:]
    result = {
        "label": label, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1),
        "busy_cores": round(cpu / wall, 2), "cores": cores,
        "peak_used_gib": round(peak[0] / 1024**2, 1),
        "build_used_gib": round((peak[0] - idle) / 1024**2, 1),
        "total_gib": round(int(Path("/proc/meminfo").read_text().split()[1]) / 1024**2, 1),
        "max_jobs": jobs[0] if jobs else None,
        "compiles": len(rows),
        "compile_cpu_s": round(sum(float(r.get("cpu") or 0) for r in rows), 1),
        "longest": Path(str(longest.get("file") or "?")).name,
        "longest_s": round(float(longest.get("wall") or 0), 1),
        "largest_peak_gib": round(max((int(r.get("peak_kb") or 0) for r in rows), default=0)
                                  / 1024**2, 2),
        "floor_s": round(floor, 1), "wall_over_floor": round(wall / floor, 2) if floor else None,
        "summary": summary[0] if summary else "",
    }
    print(json.dumps(result, sort_keys=True))
    print(f"b11 {label}: {wall:.0f} s wall, {cpu:.0f} CPU-s ({cpu / wall:.1f} of {cores} cores "
          f"busy), peak {result['peak_used_gib']} GiB used of {result['total_gib']}; floor "
          f"{floor:.0f} s (CPU/cores {cpu / cores:.0f} s, longest file {result['longest']} "
          f"{result['longest_s']} s alone)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
