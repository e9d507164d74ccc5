"""The corpus: real CUDA-extension packages from PyPI, built the ways users build them.

For each package of corpus/packages.toml (its sdist from PyPI, checked against the
pinned sha256) this records what wheelcuda sees before any build (the metadata form uv
judges, whether torch is a requirement, the variables its setup.py reads and the values
wheelcuda sets), then builds it by each route, system toolkit hidden, and checks what
came out: every extension module imports under torch, and cuobjdump lists the archs
its CUDA code was built for.

Routes (--routes):
  install   wheelcuda install --python VENV --arch A SDIST     (no isolation)
  uv-pip    wheelcuda uv-config --write uv.toml SDIST; uv pip install SDIST   (isolation)
  pip       wheelcuda constraints; eval "$(wheelcuda env)"; pip install
            --build-constraint SDIST   (isolation)
  clang     wheelcuda install --toolkit clang --python VENV --arch A SDIST, VENV over
            torch 2.9.1+cu128 (`make cu128-full-venv`), clang-22 (not in the
            default routes: python corpus/run.py --routes clang --only NAME,...)
  uv-add-cu128
            the first user's: a uv project with torch 2.10.0+cu128 from PyPI (PyPI only,
            the package index's clang, NVIDIA's archives out of reach), then
            wheelcuda uv-config --arch 12.0 --write pyproject.toml NAME; uv add
            NAME==VERSION (isolation on; the sdist, where PyPI also has a wheel).
            --arch does not apply: the first user's card is sm_120.

    python corpus/run.py --where here --arch 9.0 --torch-python .venv-torch/bin/python
    python corpus/run.py --table        # docs/compat.md from the results kept

Results go to corpus/results/<where>.json, one entry per package (the last run of each
route wins), and docs/compat.md is written from them and the package list. A cell's
time is its build's: the venv or project it builds into is made before the clock.
--only NAME,NAME runs those packages in that order.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import tomllib

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "src")]

from tests.integration import sandbox

from wheelcuda._probe import setup_vars
from wheelcuda._rules import arch as archmod
from wheelcuda._rules import setup_vars as setup_rules

PACKAGES = REPO / "corpus/packages.toml"
RESULTS = REPO / "corpus/results"
COMPAT = REPO / "docs/compat.md"
ROUTES = ("install", "uv-pip", "pip")
#: The columns of docs/compat.md: the routes, the clang toolkit under a cu128 torch, and
#: the first user's route (a uv project, torch 2.10.0+cu128 from PyPI: PyPI's newest
#: cu128 build; the index's clang; sm_120).
COLUMNS = (*ROUTES, "clang", "uv-add-cu128")
FIRST_USER_TORCH, FIRST_USER_ARCH = "2.10.0", "12.0"
PYPI = "https://pypi.org/simple"
CU128_FULL = REPO / ".venv-cu128-full"
TOOLS = Path(sys.executable).parent
UV = str(TOOLS / "uv")
WHEELCUDA = str(TOOLS / "wheelcuda")
LOCAL_INDEXES = [i for i in ("/opt/pypi-more/simple", "/opt/pypi/simple") if Path(i).is_dir()]
LOCAL_FILES = [f for f in ("/opt/pypi/files", "/opt/pypi-more/files") if Path(f).is_dir()]

#: run inside the built venv (-P: not with corpus/ on sys.path): imports the built
#: package as its users do and lists its .so files for cuobjdump; the GPU machine's
#: script runs the same file
PROBE = Path(__file__).with_name("probe.py")


def packages() -> list[dict[str, Any]]:
    with PACKAGES.open("rb") as f:
        return list(tomllib.load(f)["package"])


def fetch(pkg: dict[str, Any], cache: Path) -> Path:
    """The sdist, downloaded once and checked against its pinned sha256."""
    path = cache / pkg["url"].rsplit("/", 1)[-1]
    if not path.exists():
        cache.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(pkg["url"], timeout=120) as r:
            data = r.read()
        path.write_bytes(data)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != pkg["sha256"]:
        path.unlink()
        raise SystemExit(f"{path.name}: sha256 {digest} is not the pinned {pkg['sha256']}")
    return path


def inspect(sdist: Path, arch: str) -> dict[str, Any]:
    """What wheelcuda reads before building: the variables its setup.py reads, and what
    wheelcuda sets of them."""
    setup = setup_vars.read_setup_sources(str(sdist))
    reads = setup_rules.variables_read(setup.text) if setup and setup.text else []
    sets = setup_vars.wanted(str(sdist), archmod.parse(arch))
    return {"reads": reads, "sets": {w.name: w.value for w in sets}}


def _venv(folder: Path, torch_python: str) -> str:
    """A venv with torch: uv links it from its cache (the local index holds 2.14.1)."""
    version = subprocess.run([torch_python, "-c", "import torch; print(torch.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    version = version.split("+")[0]
    return (f"{UV} venv -q -p 3.11 {folder} && {UV} pip install -q --python {folder} "
            f"torch=={version} setuptools wheel ninja packaging numpy 'pip>=25.3'")


def _cu128_venv(folder: Path) -> str:
    """A venv over the whole cu128 torch (a .pth to its site folder: 7 GB, not copied)."""
    site = next(CU128_FULL.glob("lib/python3*/site-packages"))
    return (f"{UV} venv -q -p {CU128_FULL}/bin/python {folder} && echo {site} > "
            f"$(echo {folder}/lib/python3*/site-packages)/_cu128.pth")


def _first_user(name: str, version: str, w: Path, runtime: list[str],
                built: list[str]) -> tuple[str, str]:
    """The first user's route: set-up (the project, its run-time needs, and the CUDA
    extensions it needs built first, each as the user adds it), then the build."""
    a = f"--arch {FIRST_USER_ARCH}"
    add = "".join(f"\n{WHEELCUDA} uv-config {a} --write pyproject.toml '{d.split('==')[0]}'"
                  f"\n{UV} add -q '{d}'" for d in built)
    setup = (f"mkdir -p {w}/proj && cd {w}/proj\n"
             f"{UV} init -q --name proj --no-workspace -p 3.11 .\n"
             "sed -i 's/^requires-python = .*/requires-python = \"~=3.11.0\"/' pyproject.toml\n"
             "printf '\\n[tool.uv]\\nenvironments = [\"sys_platform == '\"'\"'linux'\"'\"' and "
             "platform_machine == '\"'\"'x86_64'\"'\"'\"]\\n' >> pyproject.toml\n"
             f"{UV} add -q torch=={FIRST_USER_TORCH} numpy "
             + " ".join(f"'{d}'" for d in runtime) + add)
    build = (f"cd {w}/proj\n{WHEELCUDA} uv-config {a} --write pyproject.toml {name}\n"
             f"{UV} add --no-binary-package {name} '{name}=={version}'")
    return setup, build


def script(route: str, sdist: Path, w: Path, arch: str, torch_python: str,
           runtime: list[str] | None = None, built: list[str] | None = None) -> tuple[str, str]:
    """The route's commands: its set-up (made before the clock) and its build.
    ``runtime``: the package's run-time dependencies that its import needs (the builds
    pass --no-deps, so that no other torch comes in); ``built``: those that are CUDA
    extensions themselves, installed by wheelcuda first (torch-sparse imports
    torch-scatter)."""
    venv = w / "venv"
    a = f"--arch {arch}"
    deps = (f"\n{UV} pip install -q --python {venv} " + " ".join(f"'{d}'" for d in runtime)
            if runtime else "")
    deps += "".join(f"\n{WHEELCUDA} install -q --python {venv} {a} '{d}' -- --no-deps"
                    for d in built or [])
    if route == "clang":
        return (f"{_cu128_venv(venv)}{deps}", f"WHEELCUDA_CLANG=/usr/bin/clang++-22 "
                f"{WHEELCUDA} install --toolkit clang --python {venv} {a} {sdist} -- --no-deps")
    make = _venv(venv, torch_python) + deps
    return make, {
        "install": f"{WHEELCUDA} install --python {venv} {a} {sdist} -- --no-deps",
        # torch named beside the package: --no-deps (no other torch in) would leave it out
        # of the resolution that match-runtime matches (the README's troubleshooting)
        "uv-pip": f"cd {w}\n{WHEELCUDA} uv-config --python {venv} {a} --write "
                  f"uv.toml {sdist}\n{UV} pip install --python {venv} --no-deps "
                  f"\"$({venv}/bin/python -c 'import importlib.metadata as m; "
                  f"print(\"torch==\" + m.version(\"torch\"))')\" {sdist}",
        "pip": f"{WHEELCUDA} fetch --python {venv} >/dev/null\n"
               f"{WHEELCUDA} constraints --python {venv} -o {w}/c.txt\n"
               f"eval \"$({WHEELCUDA} env --python {venv} {a})\"\n"
               f"{venv}/bin/python -m pip install --no-deps --build-constraint {w}/c.txt "
               f"{sdist}",
    }[route]


def env(cache: Path, route: str) -> dict[str, str]:
    if route == "uv-add-cu128":  # a user's: PyPI only, the index's clang, no archives
        return {"UV_CACHE_DIR": str(cache / "uv-cache"), "UV_PYTHON_DOWNLOADS": "never",
                "WHEELCUDA_CACHE_DIR": str(cache / "wheelcuda-cache"),
                "UV_DEFAULT_INDEX": PYPI, "PIP_INDEX_URL": PYPI,
                "PIP_CONFIG_FILE": os.devnull, "WHEELCUDA_CLANG": "index",
                "WHEELCUDA_REDIST_URL": "http://127.0.0.1:9/",
                "SSL_CERT_FILE": os.environ.get("SSL_CERT_FILE",
                                                "/etc/ssl/certs/ca-certificates.crt")}
    out = {"UV_CACHE_DIR": str(cache / "uv-cache"), "UV_PYTHON_DOWNLOADS": "never",
           "WHEELCUDA_CACHE_DIR": str(cache / "wheelcuda-cache"),
           "PIP_FIND_LINKS": " ".join(LOCAL_FILES), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "SSL_CERT_FILE": os.environ.get("SSL_CERT_FILE",
                                           "/etc/ssl/certs/ca-certificates.crt")}
    if LOCAL_INDEXES:  # torch from this machine's disk; everything else from PyPI
        out["UV_INDEX"] = " ".join(f"file://{i}" for i in LOCAL_INDEXES)
    return out


def archs(so: str) -> list[str]:
    cuobjdump = next(Path(sys.prefix).glob("lib/python*/site-packages/nvidia/cu*/bin/cuobjdump"))
    done = subprocess.run([str(cuobjdump), "--list-elf", so], capture_output=True, text=True,
                          check=False)
    return sorted({line.rsplit(".", 2)[-2] for line in done.stdout.splitlines()
                   if line.strip()})


#: Why the pip route cannot build a setup.py-only sdist that imports torch.
NO_TORCH = ("its sdist does not ask for torch at build time (No module named 'torch'): "
            "pip's isolated build environment has none, and constraints only constrain")


#: uv's own lines around a failed build, which say that it failed, not why
_UV_WORDS = ("cause: the build backend returned an error", "error: failed to",
             "hint:", "help:")


#: A compiler's own error, with its file and line: the cause, where the lines after it
#: are the build tool's ("command '.../wheelcuda-c++' failed with exit code 1").
_COMPILER_ERROR = re.compile(r"^\S+:\d+(?::\d+)?: (?:fatal )?error: ")


def _why(text: str) -> str:
    """The line that says why a build failed, for the table: the first compiler error,
    else the last line that names an error."""
    stripped = [ln.strip() for ln in text.splitlines()]
    first = next((ln for ln in stripped if _COMPILER_ERROR.match(ln)), None)
    if first:  # the build folder's path is uv's random one: from the sdist's top down
        return re.sub(r"^/\S*?/src/", "", first)[:300]
    # uv's resolver says why in its first "Because ..." line
    because = next((ln for ln in stripped if ln.startswith("cause: Because ")), None)
    if because:
        return because.removeprefix("cause: ")[:300]
    wanted = re.compile(r"error|raise|exception|no module|not found|unsupported", re.I)
    lines = [ln.strip() for ln in text.splitlines() if wanted.search(ln)
             and "warning" not in ln.lower()
             and not ln.strip().lower().startswith(_UV_WORDS)]
    return (lines[-1] if lines else text.strip().splitlines()[-1] if text.strip() else "")[:300]


def run_route(pkg: dict[str, Any], route: str, sdist: Path, arch: str, torch_python: str,
              cache: Path) -> dict[str, Any]:
    w = Path(tempfile.mkdtemp(prefix=f"{route}-", dir=cache))
    name = pkg["name"]
    if route == "uv-add-cu128":  # uv's isolation installs what the build needs
        setup, body = _first_user(name, pkg["version"], w, pkg.get("runtime", []),
                                  pkg.get("built", []))
        python = w / "proj/.venv/bin/python"
    else:
        # what install names as missing for the build (pkg["build"]), installed first as
        # the fix it prints says; the run-time needs of its import
        setup, body = script(route, sdist, w, arch, torch_python,
                             [*pkg.get("build", []), *pkg.get("runtime", [])],
                             pkg.get("built"))
        python = w / "venv/bin/python"
    made = sandbox.shell(f"set -e\n{setup}\n", w, extra_env=env(cache, route), timeout=7200)
    if made.returncode:
        text = made.stdout + made.stderr
        (cache / f"{name}-{route}.log").write_text(text)
        shutil.rmtree(w, ignore_errors=True)
        print(f"{name} {route}: set-up failed {_why(text)}", flush=True)
        return {"status": "set-up failed", "why": _why(text)}
    start = time.monotonic()
    full = f"set -e\n{body}\ncd /\n{python} -P {PROBE} {name}\n"
    r = sandbox.shell(full, w, extra_env=env(cache, route), timeout=7200)
    seconds = round(time.monotonic() - start)
    text = r.stdout + r.stderr
    (cache / f"{name}-{route}.log").write_text(text)
    out: dict[str, Any] = {"seconds": seconds}
    built = f"installed {name}" in text.lower() or "Successfully installed" in text or \
        re.search(rf"(?m)^ \+ {re.escape(name)}==", text, re.I) is not None
    if r.returncode != 0 or "PROBE " not in r.stdout:
        out.update(status="import failed" if built else "build failed", why=_why(text))
        if route == "pip" and "No module named 'torch'" in text:
            out["why"] = NO_TORCH
    else:
        probe = json.loads(r.stdout.split("PROBE ", 1)[1].splitlines()[0])
        found = sorted({a for so in probe["sos"] for a in archs(so)})
        out["archs"] = found
        if probe["errors"]:
            out.update(status="import failed", why=probe["errors"][0])
        elif not found:
            out.update(status="no CUDA code", why="built, but no .so holds GPU code")
        else:
            out["status"] = "ok"
    shutil.rmtree(w, ignore_errors=True)
    print(f"{name} {route}: {out['status']} in {seconds} s {out.get('why', '')}", flush=True)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--where", default="here", help="which packages: here, gpu or skip")
    p.add_argument("--routes", default=",".join(ROUTES))
    p.add_argument("--only", help="comma-separated package names")
    p.add_argument("--arch", default="9.0")
    p.add_argument("--torch-python", default=str(REPO / ".venv-torch/bin/python"))
    p.add_argument("--cache", default="/tmp/wheelcuda-corpus")
    p.add_argument("--table", action="store_true", help="only write docs/compat.md")
    args = p.parse_args()
    if not args.table:
        cache = Path(args.cache)
        cache.mkdir(parents=True, exist_ok=True)
        os.environ["WHEELCUDA_CACHE_DIR"] = str(cache / "wheelcuda-cache")  # the sandbox's
        results_file = RESULTS / f"{args.where}.json"
        results = json.loads(results_file.read_text()) if results_file.exists() else {}
        only = set(args.only.split(",")) if args.only else None
        chosen = [p for p in packages() if p["where"] == args.where
                  and (not only or p["name"] in only)]
        if args.only:  # in the order given
            order = args.only.split(",")
            chosen.sort(key=lambda p: order.index(p["name"]))
        for pkg in chosen:
            sdist = fetch(pkg, cache / "sdists")
            entry = results.setdefault(pkg["name"], {})
            entry["version"] = pkg["version"]
            entry["seen"] = inspect(sdist, args.arch)
            _save(results_file, results)
            for route in filter(None, args.routes.split(",")):  # none: what is seen only
                entry.setdefault("routes", {})[route] = run_route(
                    pkg, route, sdist, args.arch, args.torch_python, cache)
                _save(results_file, results)
    write_table()
    return 0


def _save(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")


def _cell(route: dict[str, Any] | None) -> str:
    if route is None:
        return "not run"
    status = route["status"]
    took = f", {route['seconds']} s" if route.get("seconds") else ""
    if status == "ok":
        return f"ok ({', '.join(route['archs'])}{took})"
    missing = re.search(r"No module named '([\w.]+)'", route.get("why", ""))
    if status == "import failed" and missing:  # built; a runtime dependency left out
        archs = ", ".join(route.get("archs") or []) or "archs not read"
        return f"built ({archs}{took}); import needs {missing.group(1)} (see notes)"
    return f"**{status}**{took}: {route.get('why', '')}".replace("|", "\\|")


def write_table() -> None:
    results: dict[str, Any] = {}
    for f in sorted(RESULTS.glob("*.json")):  # a package's routes may run on both machines
        for name, entry in json.loads(f.read_text()).items():
            kept = results.setdefault(name, {"routes": {}})
            kept.update({k: v for k, v in entry.items() if k != "routes"})
            kept["routes"].update(entry.get("routes", {}))
            kept["where"] = f.stem
    lines = [
        "# Compatibility: real CUDA-extension packages from PyPI",
        "",
        "Written by `python corpus/run.py --table` from corpus/packages.toml and the results",
        "of `make corpus` (this repository's 2-core machine, no GPU, torch 2.14.1+cu130,",
        "`--arch 9.0`, system toolkit hidden) and examples/gpu_corpus.sh (the H200 machine;",
        "the notes say where each of its cells was run).",
        "Each route builds the package's sdist from PyPI (pinned by sha256), then imports",
        "every extension module under torch and lists its archs with cuobjdump.",
        "",
        "- **setup.py**: the variables its setup.py reads, and what wheelcuda sets of them.",
        "",
        "- **install**: `wheelcuda install SDIST -- --no-deps` into a venv with torch.",
        "- **uv-config + uv pip**: `wheelcuda uv-config --write uv.toml SDIST`, then",
        "  `uv pip install --no-deps torch==<the venv's> SDIST` (isolation on).",
        "- **constraints + pip**: `wheelcuda constraints`, `eval \"$(wheelcuda env)\"`, then",
        "  `pip install --no-deps --build-constraint c.txt SDIST` (isolation on).",
        "",
        "- **clang toolkit (cu128)**: `wheelcuda install --toolkit clang` under torch",
        "  2.9.1+cu128 with clang 22 over NVIDIA's CUDA 12.8 wheels (docs/clang.md), on",
        "  this 2-core machine, for the packages where a cell says so (`--routes clang",
        "  --only ...`).",
        "- torch 2.14's headers need C++20: a package whose setup.py asks for C++17",
        "  (chamferdist, spatial-correlation-sampler) is raised to C++20 by wheelcuda;",
        "  one whose code is not C++20-clean (nerfacc) fails with this torch.",
        "",
        "- **uv add, cu128 (the first user's)**: a uv project with torch 2.10.0+cu128",
        "  from PyPI, `wheelcuda uv-config --arch 12.0 --write pyproject.toml NAME`, then",
        "  `uv add NAME==VERSION` (isolation on, the sdist), no system toolkit, the clang",
        "  of the package index (`WHEELCUDA_CLANG=index`), NVIDIA's archives out of reach;",
        "  sm_120 only is ok (`--routes uv-add-cu128`).",
        "",
        "A cell's time is its build's, wall clock. On 2026-12-07 the uv-config + uv pip and",
        "the uv add, cu128 columns ran at the same time on the 2 cores (and beside the",
        "project's tests for a while): their cells of that day took longer than one alone.",
        "torch-sparse's and torch-cluster's uv-config + uv pip cells ran beside each other,",
        "beside torch-cluster's uv add, cu128 cell and beside the project's tests for most",
        "of their time, their compiles taking turns in one compile pool.",
        "",
        "| package | version | family | setup.py: reads / wheelcuda sets | install | "
        "uv-config + uv pip | constraints + pip | clang toolkit (cu128) | "
        "uv add, cu128 (the first user's) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for pkg in packages():
        entry = results.get(pkg["name"], {})
        seen = entry.get("seen")
        routes = entry.get("routes", {})
        if seen:
            sets = ", ".join(f"`{k}={v}`" for k, v in seen["sets"].items()) or "nothing"
            reads = ", ".join(f"`{r}`" for r in seen["reads"]) or "nothing"
            setup = f"{reads} / {sets}"
        else:
            setup = "-"
        cells = [_cell(routes.get(r)) for r in COLUMNS]
        if pkg["where"] == "skip":
            cells = [f"not built: {pkg.get('note', '')}"] * len(COLUMNS)
        lines.append(f"| {pkg['name']} | {pkg['version']} | {pkg['family']} | {setup} | "
                     + " | ".join(cells) + " |")
        if pkg.get("note") and pkg["where"] != "skip":
            notes.append(f"- **{pkg['name']}**: {pkg['note']}")
        notes += [f"- **{pkg['name']}** ({route}): {text}"
                  for route, text in pkg.get("route_notes", {}).items()]
        for route, got in routes.items():
            if got.get("check") or got.get("where"):
                detail = "; ".join(x for x in (got.get("where"), got.get("check")) if x)
                archs = ", ".join(got.get("archs", []))
                notes.append(f"- **{pkg['name']}** ({route}): {got['status']}"
                             f"{', ' + archs if archs else ''}; {detail}")
    header = next(i for i, line in enumerate(lines) if line.startswith("| package |"))
    lines[header:header] = [_tally(results), ""]
    COMPAT.write_text("\n".join([*lines, "", *notes, ""]) if notes else "\n".join(lines) + "\n")


def _tally(results: dict[str, Any]) -> str:
    """How many packages each column builds, of those in the table."""
    names = [p["name"] for p in packages()]
    said = []
    for route, title in zip(COLUMNS, ("install", "uv-config + uv pip", "constraints + pip",
                                      "clang toolkit", "uv add, cu128"), strict=True):
        got = [results.get(n, {}).get("routes", {}).get(route) for n in names]
        ok = sum(1 for g in got if g and g["status"] == "ok")
        ran = sum(1 for g in got if g)
        said.append(f"{title} {ok} of {len(names)} ok ({ran} run)")
    return "Built and imported with GPU code: " + "; ".join(said) + "."


if __name__ == "__main__":
    sys.exit(main())
