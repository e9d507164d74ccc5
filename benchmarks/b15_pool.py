"""B15: what the compile pool costs a compile, and how soon it starts a build's longest
file, this tree's programs against an older commit's, side by side in one run.

- The toll: 20 compiles of 0.2 s (and of 1 s) at ``-j2``, run directly and through the
  tree's host compiler shim (``bin/wheelcuda-c++``, a Python start, the pool, the
  events): the extra wall per compile, ``(shim - direct) * jobs / compiles``. Under
  contention too: ``-j4`` on this machine's cores (the pool holds two back).
- The pool alone: ``_pool.admit`` and the slot's close in this process, with a free slot.
- The critical file's start: a build of causal-conv1d's four files as ninja starts them
  (all at once, setup.py's order: the .cpp first, the longest third), each a fake
  compiler of its file's share of the real build, through the nvcc wrapper: the seconds
  from the first compile's start to ``causal_conv1d_bwd.cu``'s, from the build's events.

Run alone: ``python benchmarks/b15_pool.py [--base COMMIT]`` (writes benchmarks/b15.json,
which every table quotes); run.py's ``--b15``. About 3 minutes on 2 cores; run it on an
idle machine (the toll is a difference of two walls).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wheelcuda._rules import tree as tree_rules
from wheelcuda._store import fs

REPO = Path(__file__).resolve().parents[1]
STANDALONE = REPO / "src/wheelcuda/_standalone"
MODULES = ("_pool.py", "_machine.py", "_cxx_std.py", "_progress.py", "_nvcc_table.py",
           "_build.py", "_events.py", "_tree.py", "_nvcc_wrapper.py")
#: causal-conv1d's files in ninja's order (setup.py's), and their seconds here scaled
#: from a real build (bwd 180 s, .cpp 38 s, fwd 16 s, update 7 s on the GPU machine)
FILES = (("csrc/causal_conv1d.cpp", 1.9), ("csrc/causal_conv1d_fwd.cu", 0.8),
         ("csrc/causal_conv1d_bwd.cu", 9.0), ("csrc/causal_conv1d_update.cu", 0.4))


def tree(where: Path, commit: str | None) -> Path:
    """A bin/ folder with the standalone programs of ``commit`` (None: the working tree),
    a host shim and an nvcc trampoline as a tree holds them, a fake compiler and facts."""
    bin_dir = where / "bin"
    bin_dir.mkdir(parents=True)
    for name in MODULES:
        if commit is None:
            shutil.copy(STANDALONE / name, bin_dir / name)
        else:
            text = subprocess.run(["git", "show", f"{commit}:src/wheelcuda/_standalone/{name}"],
                                  cwd=REPO, check=True, capture_output=True, text=True).stdout
            (bin_dir / name).write_text(text)
    for shim, module in (("wheelcuda-c++", "_cxx_std"), ("nvcc", "_nvcc_wrapper")):
        script = bin_dir / f".{shim}.py"
        if commit is None:  # as trees are written now: an entry, the modules precompiled
            script.write_text(tree_rules.entry(module))
        else:  # as they were: the module run as a script
            shutil.copy(bin_dir / f"{module}.py", script)
        (bin_dir / shim).write_text(f"#!/bin/sh\n# wheelcuda shim: bench\nexec {sys.executable}"
                                    f" -IBS {script} \"$@\"\n")
        (bin_dir / shim).chmod(0o755)
    if commit is None:
        fs.precompile(bin_dir)
    fake = bin_dir / ".nvcc-real"
    fake.write_text("#!/bin/sh\nsleep \"${FAKE_S:-0.2}\"\n")
    fake.chmod(0o755)
    shutil.copy(fake, bin_dir / "fake-c++")
    events = where / "events"
    events.mkdir()
    order = {Path(f).name: s * 20 for f, s in FILES}
    (bin_dir / ".wheelcuda-tree.json").write_text(json.dumps(
        {"events": str(events), "pool": str(where / "pool-fallback"), "split": True,
         "recipes": {"causal-conv1d": {"job_gb": 1.0, "order": order}}}))
    return bin_dir


def environ(bin_dir: Path, pool: Path) -> dict[str, str]:
    return {"PATH": f"{bin_dir}:/usr/bin:/bin", "WHEELCUDA_POOL": str(pool),
            "WHEELCUDA_NO_PROGRESS": "1", "WHEELCUDA_REAL_CXX": str(bin_dir / "fake-c++"),
            "WHEELCUDA_ARCHS": "9.0", "TMPDIR": str(pool.parent), "HOME": str(pool.parent)}


def jobs(program: list[str], count: int, parallel: int, env: dict[str, str]) -> float:
    """``count`` compiles of ``program`` at ``-j parallel`` (xargs); the wall seconds."""
    start = time.perf_counter()
    subprocess.run(["xargs", "-P", str(parallel), "-I{}", *program, "-c", "k{}.cpp",
                    "-o", "k{}.o"], input="\n".join(str(i) for i in range(count)),
                   text=True, check=True, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def toll(bin_dir: Path, work: Path, seconds: float, parallel: int, runs: int = 3) -> dict:
    env = {**environ(bin_dir, work / "pool"), "FAKE_S": str(seconds)}
    direct = statistics.median(jobs([str(bin_dir / "fake-c++")], 20, parallel, env)
                               for _ in range(runs))
    shim = statistics.median(jobs([str(bin_dir / "wheelcuda-c++")], 20, parallel, env)
                             for _ in range(runs))
    return {"direct": direct, "shim": shim,
            "per_compile_ms": (shim - direct) * min(parallel, os.cpu_count() or 1) / 20 * 1000}


def critical_start(bin_dir: Path, work: Path) -> float:
    """A build as ninja starts causal-conv1d's files: the seconds from the first
    compile's start to the longest file's."""
    package = work / "causal_conv1d-1.7.0"
    (package / "csrc").mkdir(parents=True)
    (package / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: causal_conv1d\n"
                                      "Version: 1.7.0\n")
    env = environ(bin_dir, work / "pool")
    script = (
        "import os, subprocess, sys\n"
        f"files = {[(f, s) for f, s in FILES]!r}\n"
        "procs = [subprocess.Popen([sys.argv[1], '-c', f, '-o', f + '.o', '-arch=sm_90'],\n"
        "                          env={**os.environ, 'FAKE_S': str(s)}) for f, s in files]\n"
        "sys.exit(max(p.wait() for p in procs))\n")
    subprocess.run([sys.executable, "-c", script, str(bin_dir / "nvcc")], cwd=package,
                   env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    starts = {}
    for events in (bin_dir.parent / "events").glob("tree-*.jsonl"):
        for line in events.read_text().splitlines():
            e = json.loads(line)
            if e.get("event") == "start":
                starts[Path(e["file"]).name] = e["t"]
        events.unlink()
    shutil.rmtree(package)
    return starts["causal_conv1d_bwd.cu"] - min(starts.values())


def pool_alone(runs: int = 200) -> float:
    """ms for one admit and close with a free slot, in this process."""
    sys.path.insert(0, str(STANDALONE))
    import _pool  # type: ignore[import-not-found]  # noqa: PLC0415

    with tempfile.TemporaryDirectory() as folder:
        env = {"WHEELCUDA_POOL": folder}
        times = []
        for i in range(runs):
            ask = _pool.Ask(os.getpid(), 1, time.time(), -1.0, 2**30, 1, True, f"k{i}.cu")
            start = time.perf_counter()
            _, slot = _pool.admit(ask, env)
            slot.close()
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def measure(base: str) -> dict:
    out: dict = {"date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
                 "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                          text=True, capture_output=True,
                                          check=False).stdout.strip(),
                 "base_commit": base, "pool_alone_ms": pool_alone()}
    with tempfile.TemporaryDirectory() as tmp:
        for label, commit in (("now", None), ("base", base)):
            work = Path(tmp) / label
            bin_dir = tree(work, commit)
            out[label] = {
                "free_0.2": toll(bin_dir, work, 0.2, 2),
                "free_1.0": toll(bin_dir, work, 1.0, 2, runs=1),
                "contended_0.2": toll(bin_dir, work, 0.2, 4),
                "critical_start": statistics.median(critical_start(bin_dir, work)
                                                    for _ in range(3)),
            }
    return out


#: the last run, quoted in every table (benchmarks/run.py)
RESULTS = REPO / "benchmarks" / "b15.json"


def b15_rows(r: dict | None = None) -> list[tuple[str, str, str, str, str]]:
    """The table's rows of a run (None: the kept one)."""
    if r is None:
        if not RESULTS.exists():
            return []
        r = json.loads(RESULTS.read_text())
    now, base = r["now"], r["base"]
    head = f"({r['date']}, {r['commit']} vs {r['base_commit']}, {r['cores']} cores)"
    rows = []
    for key, what in (("free_0.2", "20 compiles of 0.2 s at -j2"),
                      ("free_1.0", "20 compiles of 1 s at -j2"),
                      ("contended_0.2", "20 compiles of 0.2 s at -j4 (the pool holds two "
                                        "back)")):
        a, b = now[key]["per_compile_ms"], base[key]["per_compile_ms"]
        rows.append(("B15", f"what the host compiler shim and the pool add to a compile, "
                            f"{what}: this tree vs the base {head}",
                     f"{a:.0f} ms / {b:.0f} ms", f"{a / b:.2f}" if b > 0 else "-",
                     "<= 20 ms" if key.startswith("free") else "reported"))
    rows.append(("B15", "the pool alone: admit and release with a free slot, in one process",
                 f"{r['pool_alone_ms']:.1f} ms", "-", "reported"))
    a, b = now["critical_start"], base["critical_start"]
    rows.append(("B15", "causal-conv1d's four files started at once in setup.py's order "
                        "(fake compiles of their share): seconds from the first compile to "
                        "causal_conv1d_bwd.cu's start, this tree vs the base",
                 f"{a:.2f} s / {b:.2f} s", f"{a / b:.2f}" if b > 0 else "-", "<= 1 s"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default="5952a8b",
                        help="the commit whose programs are measured beside this tree's")
    results = measure(parser.parse_args().base)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
