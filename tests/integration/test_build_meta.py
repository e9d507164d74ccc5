"""The PEP 517 backend for real: examples/backend_ext (``build-backend =
"wheelcuda.build_meta"``) built by pip, uv pip, uv build and python -m build, each with
build isolation on, offline, the system toolkit out of reach (sandbox.py), for sm_90.

The four builds start together in one fixture (threads waiting on sandbox.shell) and
each test waits for its own: a build is mostly one core compiling binding.cpp, so four
side by side take about as long as two one after the other on this 2-core machine.
Shared by all: the wheelcuda wheel (built once from this checkout), uv's cache (torch
is unpacked once), and the find-links folders.

Offline sources: the machine's wheel folders (/opt/pypi/files, /opt/pypi-more/files)
hold torch 2.14.1 and every requirement of it but cuda-bindings; the copy installed in
the torch environment is packed back into a wheel (its own files, its RECORD) so that
the build environments can install torch without the network.
"""

from __future__ import annotations

import base64
import concurrent.futures
import csv
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests import newer_release
from tests.integration import sandbox
from tests.integration.conftest import REPO

pytestmark = pytest.mark.integration

EXAMPLE = REPO / "examples/backend_ext"
OFFLINE = [f for f in ("/opt/pypi/files", "/opt/pypi-more/files") if Path(f).is_dir()]
TOOLS = Path(sys.executable).parent  # .venv/bin: uv, and the python that has build and pip
UV = str(TOOLS / "uv")
ARCH = "-C wheelcuda.arch=9.0"
IMPORT = ('import wheelcuda_backend_ext._C as c; '
          'print("IMPORTED", c.__file__, c.compiled_archs())')
STARTED = "wheelcuda: building for 9.0 (from -C wheelcuda.arch) with nvcc 13.0.88 in "


def _wheel_from_installed(site: Path, dist: str, out: Path) -> Path:
    """An installed distribution packed back into a wheel: the files its RECORD lists
    (less the installer's own), with a new RECORD."""
    info = next(site.glob(f"{dist}-*.dist-info"))
    version = info.name[len(dist) + 1:-len(".dist-info")]
    tag = [line.split(": ", 1)[1] for line in (info / "WHEEL").read_text().splitlines()
           if line.startswith("Tag: ")][-1]
    wheel = out / f"{dist}-{version}-{tag}.whl"
    rows = []
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as z:
        for row in csv.reader(io.StringIO((info / "RECORD").read_text())):
            rel = row[0]
            if (rel.startswith(("..", "/")) or "__pycache__" in rel
                    or rel.rsplit("/", 1)[-1] in ("RECORD", "INSTALLER", "REQUESTED",
                                                  "direct_url.json")):
                continue
            data = (site / rel).read_bytes()
            z.writestr(rel, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.append(f"{rel},sha256={digest.decode()},{len(data)}")
        z.writestr(f"{info.name}/RECORD", "\n".join([*rows, f"{info.name}/RECORD,,"]) + "\n")
    return wheel


@dataclass(frozen=True)
class Env:
    """What every build shares."""

    links: list[str]  # find-links folders: the offline ones and the wheelhouse
    base: Path  # a work folder for the module
    torch_python: str  # Python 3.11 with torch (.venv-torch's)
    torch_purelib: str
    user_cache: Path  # WHEELCUDA_CACHE_DIR: must stay empty

    def extra(self) -> dict[str, str]:
        return {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": " ".join(self.links),
                # uv 0.13 has no UV_NO_INDEX: offline, it takes find-links alone
                "UV_OFFLINE": "1", "UV_FIND_LINKS": ",".join(self.links),
                "UV_CACHE_DIR": str(self.base / "uv-cache"), "UV_PYTHON_DOWNLOADS": "never",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                # here, not read from os.environ: the tests' own fixture changes that
                "WHEELCUDA_CACHE_DIR": str(self.user_cache)}


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory, torch_venv: Path) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("backend")
    house = base / "wheelhouse"
    house.mkdir()
    # wheelcuda as the build environments get it: a wheel of this checkout (its files
    # copied first, so that no build/ folder is written into the checkout)
    src = base / "wheelcuda-src"
    src.mkdir()
    shutil.copytree(REPO / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(REPO / name, src / name)
    subprocess.run([UV, "build", "--wheel", "-q", "-o", str(house), str(src)], check=True,
                   env={**os.environ, "UV_OFFLINE": "1", "UV_FIND_LINKS": ",".join(OFFLINE),
                        "UV_CACHE_DIR": str(base / "uv-cache")})
    site = next(torch_venv.glob("lib/python*/site-packages"))
    if not any(list(Path(f).glob("cuda_bindings-*.whl")) for f in OFFLINE):
        _wheel_from_installed(site, "cuda_bindings", house)
    user_cache = base / "user-cache"
    # What PyPI serves today beside 13.0: runtime, nvvm and crt 13.5.37, from 127.0.0.1.
    # pip's second prefix resolves nvcc's unbounded runtime to it (docs/facts.md).
    newer_release.make(OFFLINE, base / "newer")
    with pytest.MonkeyPatch.context() as mp, newer_release.served(base / "newer") as newer:
        mp.setenv("WHEELCUDA_CACHE_DIR", str(user_cache))  # sandbox.scrubbed_env passes it on
        yield Env([*OFFLINE, str(house), newer], base, str(torch_venv / "bin/python"),
                  str(site), user_cache)


@dataclass(frozen=True)
class Built:
    result: subprocess.CompletedProcess[str]
    seconds: float
    folder: Path


Steps = list[tuple[str, str]]  # (what, shell command)


def _pip(e: Env, w: Path) -> Steps:
    """Into a fresh venv that sees the torch environment's packages through a .pth file
    (pip counts those as installed), with pip 26 (the test environment's) --python."""
    return [("venv", f"{e.torch_python} -m venv {w}/venv && echo {e.torch_purelib} > "
                     f"{w}/venv/lib/python3.11/site-packages/torch-venv.pth"),
            ("build+install", f"{TOOLS}/python -m pip --python {w}/venv/bin/python install -v "
                              f"{ARCH} {w}/src")]


def _uv_pip(e: Env, w: Path) -> Steps:
    """uv counts no .pth packages: it installs torch into the venv (links from its cache)."""
    return [("venv", f"{UV} venv -q --python {e.torch_python} {w}/venv"),
            ("build+install", f"{UV} pip install -v --python {w}/venv {ARCH} {w}/src")]


def _install_wheel(e: Env, w: Path) -> Steps:
    return [("venv", f"{UV} venv -q --python {e.torch_python} {w}/venv"),
            ("install", f"{UV} pip install -q --python {w}/venv {w}/dist/*.whl")]


def _uv_build(e: Env, w: Path) -> Steps:
    return [("build", f"{UV} build -v --wheel --python {e.torch_python} -o {w}/dist {ARCH} "
                      f"{w}/src"), *_install_wheel(e, w)]


def _build(e: Env, w: Path) -> Steps:
    """pypa/build with uv as its installer: pip would unpack torch's 3 GB anew."""
    return [("build", f"{TOOLS}/python -m build -v --wheel --installer uv -o {w}/dist {ARCH} "
                      f"{w}/src"), *_install_wheel(e, w)]


#: A uv project is resolved for every platform and Python unless told: this machine's only.
THIS_MACHINE = """
[tool.uv]
environments = ["sys_platform == 'linux' and platform_machine == 'x86_64'"]
"""


def _uv_sync(e: Env, w: Path) -> Steps:
    """The example as a uv project: plain `uv sync` installs it editable (PEP 660)."""
    pyproject = w / "src/pyproject.toml"
    pyproject.write_text(re.sub(r"(?m)^requires-python = .*$", 'requires-python = "~=3.11.0"',
                                pyproject.read_text()) + THIS_MACHINE)
    return [("sync", f"cd {w}/src && UV_PROJECT_ENVIRONMENT={w}/venv {UV} sync -v "
                     f"--python {e.torch_python} {ARCH}")]


ROUTES = {"pip": _pip, "uv-pip": _uv_pip, "uv-build": _uv_build, "build": _build,
          "uv-sync": _uv_sync}


def _run(e: Env, name: str) -> Built:
    """A route's steps, then the import, in the sandbox; each step's time is printed
    (``TIMING step seconds``)."""
    w = e.base / name
    w.mkdir()
    shutil.copytree(EXAMPLE, w / "src")
    steps = [*ROUTES[name](e, w), ("import", f"cd / && {w}/venv/bin/python -c '{IMPORT}'")]
    script = "set -e\n" + "".join(
        f"t=$(date +%s)\n{command}\necho TIMING {what} $(( $(date +%s) - t ))\n"
        for what, command in steps)
    start = time.monotonic()
    result = sandbox.shell(script, w, extra_env=e.extra(), timeout=1800)
    return Built(result, time.monotonic() - start, w)


@pytest.fixture(scope="module")
def builds(env: Env) -> Iterator[dict[str, concurrent.futures.Future[Built]]]:
    sandbox.can_hide()  # asked once, before the threads
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(ROUTES)) as pool:
        yield {name: pool.submit(_run, env, name) for name in ROUTES}


@pytest.mark.parametrize("route", list(ROUTES))
def test_the_example_builds_for_sm_90_only(
        route: str, builds: dict[str, concurrent.futures.Future[Built]], env: Env,
        cuobjdump: str) -> None:
    built = builds[route].result()
    out = sandbox.assert_ok(built.result)
    text = out + built.result.stderr
    steps = ", ".join(f"{m[0]} {m[1]} s" for m in re.findall(r"^TIMING (\S+) (\d+)$", out, re.M))
    print(f"{route}: {built.seconds:.0f} s ({steps})")
    assert STARTED in text, text[-3000:]
    # the tree lived in a temporary cache, made from the build environment's compiler
    assert re.search(r"through the tree /tmp/wheelcuda-build-\w+/cache/homes/cu13\.0-", text)
    sandbox.assert_no_system_toolkit(text)
    so, archs = out.split("IMPORTED ")[1].split()[:2]
    assert archs == "900"  # nvcc's __CUDA_ARCH_LIST__ for the kernel's file
    # uv sync installs the project editable: its extension stays in the source folder
    place = "src/wheelcuda_backend_ext/" if route == "uv-sync" else \
        "venv/lib/python3.11/site-packages/"
    assert so.startswith(str(built.folder / place))
    elves = subprocess.run([cuobjdump, "--list-elf", so], capture_output=True, text=True,
                           check=True).stdout
    assert [line.rsplit(".", 2)[-2] for line in elves.splitlines()] == ["sm_90"]
    assert not (env.user_cache / "homes").exists()  # nothing piled up in the user's cache
    # 13.5.37 was on offer: where it came in (pip's second prefix), its files stayed out
    assert "headers are incompatible" not in text
    if route == "pip":
        assert re.search(r"nvidia-cuda-runtime 13\.5\.37 in \S+ is not of nvcc's CUDA "
                         r"release: its files are left out, the tree takes 13\.0\.96", text), \
            text[-3000:]


def test_the_sdist_is_made_without_a_compiler(env: Env) -> None:
    """setup.py runs for the sdist with no compiler anywhere (torch's CUDAExtension
    wants a CUDA_HOME): wheelcuda's placeholder. Run after the builds, uv's cache is warm."""
    w = env.base / "sdist"
    shutil.copytree(EXAMPLE, w / "src")
    r = sandbox.shell(f"{UV} build --sdist --python {env.torch_python} -o {w}/dist {ARCH} "
                      f"{w}/src && tar tzf {w}/dist/*.tar.gz", w, extra_env=env.extra(),
                      timeout=600)
    out = sandbox.assert_ok(r)
    assert "wheelcuda_backend_ext-0.1.0/csrc/scaled_add.cu" in out.splitlines()
    assert "CUDA_HOME environment variable is not set" not in r.stderr


def _bare_example(e: Env, name: str) -> Path:
    """The example without torch in its build requirements: pip's build environment is
    then made in seconds, and the error under test comes before torch is looked for
    (the arch), or is that torch is missing."""
    src = e.base / name
    shutil.copytree(EXAMPLE, src)
    text = (src / "pyproject.toml").read_text()
    (src / "pyproject.toml").write_text(text.replace(', "torch"]', "]", 1))
    return src


@pytest.mark.parametrize(("case", "setting", "said"), [
    pytest.param("banana", "-C wheelcuda.arch=banana", "wheelcuda: error: -C wheelcuda.arch="
                 "'banana': not a GPU architecture: 'banana'", id="banana"),
    pytest.param("no-torch", ARCH, "wheelcuda: error: torch is not installed in the build "
                 "environment", id="no-torch"),
])
def test_a_bad_build_says_why_through_pip(env: Env, case: str, setting: str,
                                          said: str) -> None:
    src = _bare_example(env, f"bad-{case}")
    r = sandbox.shell(f"{TOOLS}/python -m pip install --no-deps --target {src}/t {setting} "
                      f"{src}", src, extra_env=env.extra(), timeout=600)
    text = r.stdout + r.stderr
    assert r.returncode != 0, text
    assert said in text and "  fix: " in text, text[-3000:]
    assert "Traceback" not in text, text


@pytest.mark.parametrize("frontend", ["pip", "uv"])
def test_another_torch_in_the_target_stops_the_build(env: Env, cu128_venv: Path,
                                                     frontend: str) -> None:
    """The target holds torch 2.9.1 (CUDA 12.8) and the isolated build environment gets
    the index's torch (2.14.1 here, 2.15.0 on PyPI today): the backend stops before
    building a binary that would not load, and names the constraint that pins torch."""
    src = env.base / f"mismatch-{frontend}"
    shutil.copytree(EXAMPLE, src)
    # a venv of its own that sees the cu128 torch through a .pth file (nothing is ever
    # installed into the shared .venv-cu128)
    venv = src / "venv"
    cu128_site = next(cu128_venv.glob("lib/python*/site-packages"))
    python = venv / "bin/python"
    command = (f"{e_python(cu128_venv)} -m venv {venv} && echo {cu128_site} > "
               f"{venv}/lib/python3.11/site-packages/cu128.pth && ")
    command += (f"{TOOLS}/python -m pip --python {python} install --no-deps {ARCH} {src}"
                if frontend == "pip" else
                f"{UV} pip install --python {venv} --no-deps {ARCH} {src}")
    r = sandbox.shell(command, src, extra_env=env.extra(), timeout=900)
    text = r.stdout + r.stderr
    assert r.returncode != 0, text[-3000:]
    assert "wheelcuda: error: the build environment holds torch 2.14.1 (CUDA 13.0), but the " \
           "environment this wheel is for" in text, text[-3000:]
    assert "holds torch 2.9.1" in text and "wheelcuda constraints -o build-constraints.txt" \
        in text and "--build-constraint build-constraints.txt" in text
    assert "Traceback" not in text
    assert not list(venv.glob("lib/python*/site-packages/wheelcuda_backend_ext*"))


def e_python(venv: Path) -> str:
    """The base interpreter behind a venv (its pyvenv.cfg's ``home``)."""
    home = next(line.split("=", 1)[1].strip() for line in
                (venv / "pyvenv.cfg").read_text().splitlines() if line.startswith("home"))
    return f"{home}/python3.11"
