"""B16: the first user's world on this machine, every route side by side in one run.

torch 2.10.0 from PyPI (its newest cu128 build) in a uv project, no CUDA toolkit (the
system's is hidden: ``unshare -m`` with an empty folder over /usr/local/cuda-*), no clang
of the machine's (``WHEELCUDA_CLANG=index``: the package index's), NVIDIA's archives out
of reach, ``--arch 12.0`` (the RTX PRO 6000 Blackwell). causal-conv1d 1.7.0 is built by:

- ``install``: ``wheelcuda install`` into the project's venv;
- ``uv-add``: ``wheelcuda uv-config --write pyproject.toml``, then ``uv add`` (isolation on);
- ``env-uv``: ``eval "$(wheelcuda env)"``, then ``uv pip install`` (isolation on);
- ``env-pip``: ``eval "$(wheelcuda env)"``, then ``pip install`` (isolation on).

Each route: its wall time, the seconds from the build's first compile to the start of
``causal_conv1d_bwd.cu`` (the critical path, about 4.5 min here), the compiles' own CPU
seconds, and whether the extension imports with sm_120 alone. The compiler is fetched
before the first route (not timed), each route starts from an empty wheel cache of
wheelcuda's and with no built wheel in uv's cache, and between routes the package is
uninstalled. The ratios: each route against install (goal 1.10).

Run: ``python benchmarks/b16_first_user.py [--routes install,uv-add] [--keep DIR]``
(about 30 minutes on 2 cores; downloads torch 2.10.0+cu128 and its CUDA 12 wheels, about
3 GB, once per --keep folder). Writes benchmarks/b16.json.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from wheelcuda._standalone import _events

REPO = Path(__file__).resolve().parents[1]
TOOLS = Path(sys.executable).parent
UV, WHEELCUDA = str(TOOLS / "uv"), str(TOOLS / "wheelcuda")
TORCH, ARCH, PACKAGE = "2.10.0", "12.0", "causal-conv1d==1.7.0"
CRITICAL = "causal_conv1d_bwd.cu"
PYPI = "https://pypi.org/simple"
ROUTES = ("install", "uv-add", "env-uv", "env-pip")


def environ(work: Path) -> dict[str, str]:
    """A user's: PyPI only (none of this machine's pip settings), wheelcuda's cache and
    uv's in the work folder, the clang of the package index."""
    cert = os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
    return {"PATH": f"{TOOLS}:/usr/local/bin:/usr/bin:/bin", "HOME": str(work / "home"),
            "TMPDIR": str(work / "tmp"), "PIP_CONFIG_FILE": os.devnull,
            "PIP_INDEX_URL": PYPI, "UV_DEFAULT_INDEX": PYPI, "SSL_CERT_FILE": cert,
            "PIP_CERT": cert, "UV_CACHE_DIR": str(work / "uv-cache"),
            "PIP_CACHE_DIR": str(work / "pip-cache"), "UV_PYTHON_DOWNLOADS": "never",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "WHEELCUDA_CACHE_DIR": str(work / "wc"),
            "WHEELCUDA_CLANG": "index", "WHEELCUDA_REDIST_URL": "http://127.0.0.1:9/",
            "WHEELCUDA_NO_GPU_PROBE": "1", "WHEELCUDA_NO_PROGRESS": "1"}


def hidden(script: str) -> list[str]:
    """``script`` under sh with every /usr/local/cuda-* folder hidden (root: unshare -m)."""
    toolkits = [str(p) for p in Path("/usr/local").glob("cuda-*") if p.is_dir()]
    if not toolkits or os.geteuid() != 0:
        return ["sh", "-ec", script]
    mounts = " && ".join(f"mount -t tmpfs none {t}" for t in toolkits)
    return ["unshare", "-m", "sh", "-ec", f"{mounts}\n{script}"]


def run(script: str, env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(hidden(script), env=env, cwd=cwd, text=True, capture_output=True,
                          check=False)
    if done.returncode:
        raise SystemExit(f"b16: failed ({done.returncode}):\n{script}\n"
                         f"{(done.stdout + done.stderr)[-4000:]}")
    return time.perf_counter() - start


def project(work: Path, env: dict[str, str]) -> Path:
    """A uv project with torch 2.10.0 (cu128) from PyPI in its .venv."""
    proj = work / "proj"
    if (proj / ".venv/bin/python").exists():
        return proj
    proj.mkdir(parents=True, exist_ok=True)
    run(f"{UV} init -q --name proj --no-workspace -p 3.11 . && "
        "sed -i 's/^requires-python = .*/requires-python = \"~=3.11.0\"/' pyproject.toml && "
        "printf '\\n[tool.uv]\\nenvironments = [\"sys_platform == '\"'\"'linux'\"'\"' and "
        "platform_machine == '\"'\"'x86_64'\"'\"'\"]\\n' >> pyproject.toml && "
        f"{UV} add -q torch=={TORCH} numpy", env, proj)
    return proj


def _profiles(data: object) -> list[dict[str, object]]:
    """The compile profiles kept in a build record (install keeps its build's there and
    lets its events go)."""
    if isinstance(data, dict):
        found = data.get("profile")
        rows = [r for r in found if isinstance(r, dict)] if isinstance(found, list) else []
        return rows + [r for v in data.values() if isinstance(v, (dict, list))
                       for r in _profiles(v)]
    if isinstance(data, list):
        return [r for v in data for r in _profiles(v)]
    return []


def compiles(cache: Path) -> list[tuple[str, float, float, float]]:
    """(file, start, cpu seconds, end) of every compile wheelcuda's cache knows: the
    tree's events (uv's and pip's builds) and install's kept profiles (times are the
    clock's, seconds since the epoch)."""
    state = _events.State()
    for path in cache.rglob("*.jsonl"):
        _events.read_events(path.read_text(errors="replace").splitlines(), state)
    out = [(c.file.rsplit("/", 1)[-1], c.start, c.cpu, c.start + c.wall) for c in state.done]
    out += [(str(e.get("file")).rsplit("/", 1)[-1], _events.number(e.get("t")), 0.0,
             _events.number(e.get("t"))) for e in state.running.values()]  # never ended
    for path in cache.rglob("build.json"):
        with contextlib.suppress(OSError, ValueError):
            out += [(str(r["file"]).rsplit("/", 1)[-1], float(r["start"]),  # type: ignore[arg-type]
                     float(r.get("cpu") or 0),  # type: ignore[arg-type]
                     float(r["start"]) + float(r.get("wall") or 0))  # type: ignore[arg-type]
                    for r in _profiles(json.loads(path.read_text()))]
    return out


def measure(seen: list[tuple[str, float, float, float]], began: float,
            ended: float) -> dict[str, float]:
    """Where a route's wall time went: before its first compile (resolving, fetching,
    the build environment, torch's import), from the first compile to the end of the
    last, and after it (linking, the wheel, installing it); and when the critical file
    started, counted from the first compile."""
    starts = {f: t for f, t, _, _ in seen}
    first = min(starts.values()) if starts else float("nan")
    last = max((e for *_, e in seen), default=float("nan"))
    return {"before_compiles_s": round(first - began, 1),
            "compiling_s": round(last - first, 1), "after_compiles_s": round(ended - last, 1),
            "critical_start_s": round(starts.get(CRITICAL, float("nan")) - first, 1),
            "compiles": len(seen), "compile_cpu_s": round(sum(c for _, _, c, _ in seen), 1)}


def route(name: str, proj: Path, env: dict[str, str]) -> dict[str, float]:
    py, venv = proj / ".venv/bin/python", proj / ".venv"
    wc = WHEELCUDA
    cache = Path(env["WHEELCUDA_CACHE_DIR"])
    for p in cache.iterdir() if cache.exists() else ():
        if p.name not in ("toolkits", "local") and p.is_dir():  # the compiler stays
            shutil.rmtree(p)
    kept = Path(env["HOME"]).parent / "kept" / name  # each route's events and profiles
    shutil.rmtree(kept, ignore_errors=True)
    run(f"{UV} pip uninstall -q --python {py} causal-conv1d || true; "
        f"{UV} cache clean -q causal-conv1d", env, proj)
    env_line = f'eval "$({wc} env --python {venv} --arch {ARCH})"'
    script = {
        "install": f"{wc} install --python {venv} --arch {ARCH} {PACKAGE}",
        "uv-add": (f"cp pyproject.toml pyproject.toml.bak && cp uv.lock uv.lock.bak && "
                   f"{wc} uv-config --arch {ARCH} --write pyproject.toml causal-conv1d && "
                   f"{UV} add {PACKAGE}; code=$?; mv pyproject.toml.bak pyproject.toml; "
                   "mv uv.lock.bak uv.lock; exit $code"),
        "env-uv": f"{env_line}\n{UV} pip install --python {py} {PACKAGE}",
        "env-pip": (f"{UV} pip install -q --python {py} 'pip>=26.2'\n{env_line}\n"
                    f"{py} -m pip install -q {PACKAGE}"),
    }[name]
    began = time.time()
    wall = run(script, env, proj)
    ended = time.time()
    check = subprocess.run(
        [str(py), "-c", "import torch, causal_conv1d_cuda as m; print(m.__file__)"],
        env=env, cwd="/", text=True, capture_output=True, check=False)
    so = check.stdout.strip()
    archs = ""
    if so:
        cuobjdump = next(TOOLS.parent.glob("lib/python*/site-packages/nvidia/cu*/bin/cuobjdump"),
                         None)
        if cuobjdump:
            elves = subprocess.run([str(cuobjdump), "--list-elf", so], text=True,
                                   capture_output=True, check=False).stdout
            archs = ",".join(sorted({w.rsplit(".", 2)[-2] for w in elves.split()
                                     if w.endswith(".cubin")}))
    for sub in ("builds", "logs"):
        if (cache / sub).is_dir():
            shutil.copytree(cache / sub, kept / sub)
    return {"wall_s": round(wall, 1), "imports": bool(so), "archs": archs,  # type: ignore[dict-item]
            **measure(compiles(cache), began, ended)}


#: the last run, quoted in every table (benchmarks/run.py)
RESULTS = REPO / "benchmarks" / "b16.json"


def b16_rows() -> list[tuple[str, str, str, str, str]]:
    """The table's rows of the kept run: each route against install, and where its wall
    time went."""
    if not RESULTS.exists():
        return []
    r = json.loads(RESULTS.read_text())
    base = r.get("install")
    if not isinstance(base, dict):
        return []
    rows = []
    for name in ROUTES:
        got = r.get(name)
        if not isinstance(got, dict):
            continue
        parts = (f"; before the first compile {got['before_compiles_s']} s, compiling "
                 f"{got['compiling_s']} s, after {got['after_compiles_s']} s"
                 if "compiling_s" in got else "")
        what = (f"causal-conv1d 1.7.0, the first user's world ({r['cores']} cores, torch "
                f"{TORCH}+cu128 from PyPI, the clang route, --arch {ARCH}, no toolkit; "
                f"{r['date']}, {r['commit']}): `{name}`"
                f"{' vs `install`' if name != 'install' else ''}; {got['archs'] or 'no'} "
                f"kernels, bwd started {got['critical_start_s']} s after the first "
                f"compile{parts}")
        if name == "install":
            rows.append(("B16", what, f"{got['wall_s']} s", "-", "reported"))
        else:
            rows.append(("B16", what, f"{got['wall_s']} s / {base['wall_s']} s",
                         f"{got['wall_s'] / base['wall_s']:.2f}",
                         # pip fills its own isolated build environment (torch and the
                         # CUDA wheels, from PyPI) where uv links its cache: pip's cost
                         "reported (pip's build environment)" if name == "env-pip"
                         else "<= 1.10"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routes", default=",".join(ROUTES))
    parser.add_argument("--keep", type=Path, help="a folder kept between runs (torch, caches)")
    args = parser.parse_args()
    work = (args.keep or Path(tempfile.mkdtemp(prefix="wheelcuda-b16-"))).absolute()
    for sub in ("home", "tmp"):
        (work / sub).mkdir(parents=True, exist_ok=True)
    env = environ(work)
    try:
        proj = project(work, env)
        run(f"{WHEELCUDA} fetch --python {proj / '.venv'}", env, proj)
        out = RESULTS
        # a run of some routes adds to the day's run of the others
        earlier = json.loads(out.read_text()) if out.exists() else {}
        results = {**earlier, "date": time.strftime("%Y-%m-%d"), "cores": os.cpu_count(),
                   "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                            text=True, capture_output=True,
                                            check=False).stdout.strip()}
        for name in args.routes.split(","):
            results[name] = route(name, proj, env)
            print(name, json.dumps(results[name]), flush=True)
        base = results.get("install")
        if isinstance(base, dict):
            for name in ROUTES:
                got = results.get(name)
                if isinstance(got, dict) and name != "install":
                    got["vs_install"] = round(got["wall_s"] / base["wall_s"], 3)
        out.write_text(json.dumps(results, indent=1) + "\n")
        print(json.dumps(results, indent=1))
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
