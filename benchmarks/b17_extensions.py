"""B17: packages of many extensions, built one compile at a time (as setuptools calls
them without ninja) against side by side (the tree's compilers answer setuptools at
once and compile in the pool: _standalone/_overlap.py), in one run, each pair one after
the other on an idle machine.

The packages are the corpus's (corpus/packages.toml: the sdists from PyPI, pinned by
sha256): torch-spline-conv, torch-sparse and torch-cluster, whose setup.py asks for
``BuildExtension(use_ninja=False)``. Each is built by ``install`` and by the uv route
(uv-config, then ``uv pip install``, isolation on), under torch 2.14.1+cu130 with the
CUDA 13.0 wheels' nvcc, ``--arch 9.0``, the system toolkit hidden: the install
column's conditions in docs/compat.md. The baseline is the same build with
``WHEELCUDA_SERIAL_COMPILES=1``; each pair compiles the same files (checked, from the
build's events), and the venv and the compiler are made before the clock.

    python benchmarks/b17_extensions.py [--only torch-spline-conv,...] [--routes install,uv]

Kept in benchmarks/b17.json (each run adds its pairs), which every table quotes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "corpus")]

import run as corpus  # noqa: E402 - corpus/run.py: its packages, routes and environment
from tests.integration import sandbox  # noqa: E402

RESULTS = REPO / "benchmarks" / "b17.json"
PACKAGES = ("torch-spline-conv", "torch-sparse", "torch-cluster")
#: the corpus's route names
ROUTES = {"install": "install", "uv": "uv-pip"}
SERIAL = "WHEELCUDA_SERIAL_COMPILES"


def _compiles(cache: Path) -> list[dict[str, Any]]:
    """Every compile the build's events and profiles hold (install keeps its build's in
    its record; a uv build's go to the tree cache's events)."""
    seen: list[dict[str, Any]] = []
    for record in cache.glob("builds/*/build.json"):
        seen += json.loads(record.read_text()).get("profile", [])
    for events in [*cache.glob("events/*.jsonl"), *cache.glob("logs/*.jsonl")]:
        for line in events.read_text().splitlines():
            event = json.loads(line) if line.strip() else {}
            if event.get("event") == "end":
                seen.append(event)
    return seen


def one(pkg: dict[str, Any], route: str, serial: bool, sdist: Path, arch: str,
        torch_python: str, work: Path) -> dict[str, Any]:
    """One timed build in a fresh venv and a fresh wheelcuda cache (its compiler fetched
    before the clock)."""
    w = Path(tempfile.mkdtemp(prefix=f"{route}-", dir=work))
    cache = w / "cache"
    env = {**corpus.env(work, route), "WHEELCUDA_CACHE_DIR": str(cache),
           **({SERIAL: "1"} if serial else {})}
    # no import here (the corpus checks it): none of the run-time needs, nor torch-sparse's
    # torch-scatter built first, which would be built again for each run
    setup, build = corpus.script(route, sdist, w, arch, torch_python)
    made = sandbox.shell(f"set -e\n{setup}\n{corpus.WHEELCUDA} fetch --python {w}/venv "
                         f"> /dev/null\n{corpus.UV} cache clean -q {pkg['name']}\n", w,
                         extra_env=env, timeout=3600)
    if made.returncode:
        raise SystemExit(f"b17: set-up failed:\n{(made.stdout + made.stderr)[-3000:]}")
    shutil.rmtree(cache / "builds", ignore_errors=True)  # what set-up built first
    shutil.rmtree(cache / "events", ignore_errors=True)
    start = time.perf_counter()
    r = sandbox.shell(f"set -e\n{build}\n", w, extra_env=env, timeout=7200)
    wall = time.perf_counter() - start
    if r.returncode:
        raise SystemExit(f"b17: {pkg['name']} {route} failed:\n"
                         f"{(r.stdout + r.stderr)[-3000:]}")
    compiles = _compiles(cache)
    files = sorted(Path(str(c["file"])).name for c in compiles if c.get("code") == 0)
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
    shutil.rmtree(w, ignore_errors=True)
    return {"wall_s": round(wall, 1), "files": files,
            "cpu_s": round(sum(float(c.get("cpu") or 0) for c in compiles), 1)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", default=",".join(PACKAGES))
    p.add_argument("--routes", default=",".join(ROUTES))
    p.add_argument("--arch", default="9.0")
    p.add_argument("--torch-python", default=str(REPO / ".venv-torch/bin/python"))
    args = p.parse_args()
    kept = json.loads(RESULTS.read_text()) if RESULTS.exists() else {"pairs": []}
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, text=True,
                            capture_output=True, check=True).stdout.strip()
    wanted = args.only.split(",")
    chosen = sorted((p for p in corpus.packages() if p["name"] in wanted),
                    key=lambda p: wanted.index(p["name"]))
    with tempfile.TemporaryDirectory(prefix="wheelcuda-b17-") as tmp:
        work = Path(tmp)
        for pkg in chosen:
            sdist = corpus.fetch(pkg, work / "sdists")
            for route in args.routes.split(","):
                serial = one(pkg, ROUTES[route], True, sdist, args.arch, args.torch_python,
                             work)
                overlap = one(pkg, ROUTES[route], False, sdist, args.arch,
                              args.torch_python, work)
                if serial["files"] != overlap["files"]:
                    raise SystemExit(f"b17: {pkg['name']} {route}: other files compiled: "
                                     f"{serial['files']} vs {overlap['files']}")
                pair = {"package": f"{pkg['name']} {pkg['version']}", "route": route,
                        "date": time.strftime("%Y-%m-%d"), "commit": commit,
                        "arch": args.arch, "compiles": len(serial["files"]),
                        "serial": {k: v for k, v in serial.items() if k != "files"},
                        "overlap": {k: v for k, v in overlap.items() if k != "files"}}
                print(json.dumps(pair), flush=True)
                kept["pairs"] = [q for q in kept["pairs"] if (q["package"], q["route"])
                                 != (pair["package"], route)] + [pair]
                RESULTS.write_text(json.dumps(kept, indent=1) + "\n")


def b17_rows() -> list[tuple[str, str, str, str, str]]:
    """The table's rows of the kept pairs."""
    if not RESULTS.exists():
        return []
    rows = []
    for q in json.loads(RESULTS.read_text())["pairs"]:
        s, o = q["serial"]["wall_s"], q["overlap"]["wall_s"]
        route = "`install`" if q["route"] == "install" else "uv-config + `uv pip install`"
        rows.append(("B17", f"{q['package']} by {route}, its {q['compiles']} compiles side by "
                            f"side vs one at a time (`{SERIAL}=1`), the same files, 2 cores, "
                            f"torch 2.14.1+cu130, --arch {q['arch']}, no system toolkit "
                            f"({q['date']}, {q['commit']})",
                     f"{o} s / {s} s", f"{o / s:.2f}", q.get("goal", "<= 0.6")))
        if q.get("note"):
            rows[-1] = (*rows[-1][:1], f"{rows[-1][1]}; {q['note']}", *rows[-1][2:])
    return rows


if __name__ == "__main__":
    main()
