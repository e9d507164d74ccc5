"""Plain uv and pip with build isolation ON, after `wheelcuda uv-config` or after
`eval "$(wheelcuda env)"` alone: real uv, real pip, the example
extension built for sm_90 only, the system toolkit hidden (sandbox.py).

torch comes from this machine's disk: the local simple indexes (/opt/pypi*/simple) hold
torch 2.14.1 and its NVIDIA libraries, and uv takes a package from the first index that
has it, so nothing downloads another torch. (uv's find-links do not do for a project:
a find-links folder recorded in the lock is not searched again when the build environment
resolves.)
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from tests import fakes
from tests.integration import sandbox
from tests.integration.conftest import REPO
from wheelcuda._data import catalog

pytestmark = pytest.mark.integration

LINUX_ONLY = """
[tool.uv]
environments = ["sys_platform == 'linux' and platform_machine == 'x86_64'"]
"""
INDEXES = [i for i in ("/opt/pypi-more/simple", "/opt/pypi/simple") if Path(i).is_dir()]


@pytest.fixture(scope="session")
def uv_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One uv cache for the session: torch is unpacked into it once."""
    return tmp_path_factory.mktemp("uv-cache")


@pytest.fixture
def uv_env(uv_cache: Path, local_wheels: dict[str, str]) -> dict[str, str]:
    env = {"UV_CACHE_DIR": str(uv_cache), "UV_PYTHON_DOWNLOADS": "never",
           "DEMO_GENCODE": "75;80;90"}
    if "SSL_CERT_FILE" in local_wheels:
        env["SSL_CERT_FILE"] = local_wheels["SSL_CERT_FILE"]
    if INDEXES:
        env["UV_INDEX"] = " ".join(f"file://{i}" for i in INDEXES)
    return env


def _uv() -> str:
    found = Path(sys.executable).parent / "uv"
    if not found.exists():
        pytest.fail("uv is not installed in the test environment: run `make dev`")
    return str(found)


def _archs(cuobjdump: str, so: Path) -> list[str]:
    out = subprocess.run([cuobjdump, "--list-elf", str(so)], capture_output=True, text=True,
                         check=True).stdout
    return [line.rsplit(".", 2)[-2] for line in out.splitlines()]


def _ext(tmp_path: Path) -> Path:
    src = tmp_path / "ext"
    shutil.copytree(REPO / "examples/torch_ext", src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info"))
    return src


def _so(venv: Path) -> Path:
    return next(venv.glob("lib/python*/site-packages/wheelcuda_demo/_C*.so"))


def _uv_pip_after_uv_config(wheelcuda_cmd: str, tmp_path: Path, uv_env: dict[str, str],
                            spec: Path, *, twice: bool = False
                            ) -> tuple[subprocess.CompletedProcess[str], str]:
    """A venv with torch 2.14.1, uv-config into work/uv.toml for ``spec`` (twice: the
    second write changes nothing), an unchanged `uv pip install spec`, the import."""
    uv, venv, work = _uv(), tmp_path / "venv", tmp_path / "work"
    work.mkdir()
    config = f"{wheelcuda_cmd} uv-config --python {venv} --arch 9.0 --write uv.toml {spec}\n"
    script = f"""set -e
cd {work}
{uv} venv -q -p 3.11 {venv}
{uv} pip install -q --python {venv}/bin/python torch==2.14.1
{config * (2 if twice else 1)}{uv} pip install --python {venv}/bin/python {spec}
cd /
{venv}/bin/python -c "import torch, wheelcuda_demo._C; print('IMPORTED')"
"""
    r = sandbox.shell(script, tmp_path, extra_env=uv_env, timeout=1800)
    return r, sandbox.assert_ok(r)


def test_uv_pip_install_with_isolation_after_uv_config(
        wheelcuda_cmd: str, tmp_path: Path, uv_env: dict[str, str], cuobjdump: str,
        isolated: Path) -> None:
    """An unchanged `uv pip install ./ext` (isolation on) in a folder with the uv.toml
    that uv-config wrote: torch in the build environment is the venv's, the tree's nvcc
    builds sm_90 only although the package hard-codes three targets."""
    src, venv, work = _ext(tmp_path), tmp_path / "venv", tmp_path / "work"
    r, out = _uv_pip_after_uv_config(wheelcuda_cmd, tmp_path, uv_env, src, twice=True)
    assert "IMPORTED" in out
    assert "already holds these settings: nothing changed" in r.stderr  # idempotent
    text = (work / "uv.toml").read_text()
    assert 'wheelcuda-demo-ext = ["torch==2.14.1"]' in text
    assert "--no-build-isolation" not in r.stderr
    # the headers of every library torch brings, as its build environment holds them:
    # nerfacc's curand.h was missing from this tree and found through `install`
    home = Path(tomllib.loads(text)["extra-build-variables"]["wheelcuda-demo-ext"]["CUDA_HOME"])
    assert [c.name for c in catalog.HEADER_COMPONENTS
            if not (home / c.files[13][0]).is_file()] == []
    assert _archs(cuobjdump, _so(venv)) == ["sm_90"]
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
    # uv's build, which wheelcuda did not start, is one `wheelcuda builds` sees (its events
    # in the tree's cache) and one the compile pool sized: its lone pruned compile got
    # --split-compile (uv-config once wrote a thread pool with no split tokens, so
    # causal-conv1d's long file compiled on one thread through uv: 474 s against 182 s)
    ends = [e for f in isolated.glob("logs/tree-*.jsonl")
            for e in map(json.loads, f.read_text().splitlines()) if e["event"] == "end"]
    [kernel] = [e for e in ends if e["file"].endswith("scaled_add.cu")]
    assert kernel["build"] == "wheelcuda-demo-ext 0.1.0" and kernel["archs"] == ["sm_90"]
    assert kernel["split"] is not None and kernel["split"] >= 2, kernel


def _old_style_sdist(tmp_path: Path) -> Path:
    """The example as most CUDA sdists on PyPI were published before 2024: PKG-INFO
    Metadata-Version 2.1, setup.py only, torch neither a build requirement nor a run-time
    one (torch-scatter, apex)."""
    base = "wheelcuda_demo_old-0.1.0"
    src = tmp_path / base
    shutil.copytree(REPO / "examples/torch_ext", src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "pyproject.toml",
                                                  "tests"))
    setup = (src / "setup.py").read_text()
    (src / "setup.py").write_text(setup.replace(
        "setup(\n", 'setup(\n    name="wheelcuda-demo-old",\n    version="0.1.0",\n', 1))
    return _tarred(src, "wheelcuda-demo-old")


def _tarred(src: Path, name: str) -> Path:
    """``src`` (a folder named ``NAME-VERSION``) as an sdist: PKG-INFO, then a tar.gz in
    ``sdists`` beside it, so that uv and pip unpack it into folders of their own."""
    version = src.name.rsplit("-", 1)[1]
    (src / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    out = src.parent / "sdists"
    out.mkdir()
    subprocess.run(["tar", "czf", str(out / f"{src.name}.tar.gz"), "-C", str(src.parent),
                    src.name], check=True)
    return out / f"{src.name}.tar.gz"


def test_uv_pip_install_of_an_old_style_sdist(
        wheelcuda_cmd: str, tmp_path: Path, uv_env: dict[str, str], cuobjdump: str) -> None:
    """uv-config writes torch's exact version for it, as for any package (uv refuses
    match-runtime without static metadata or with torch outside the resolution); `uv
    pip install` of the sdist, isolation on, builds."""
    venv, work = tmp_path / "venv", tmp_path / "work"
    r, out = _uv_pip_after_uv_config(wheelcuda_cmd, tmp_path, uv_env,
                                     _old_style_sdist(tmp_path))
    assert "IMPORTED" in out
    assert 'wheelcuda-demo-old = ["torch==2.14.1"]' in (work / "uv.toml").read_text()
    assert _archs(cuobjdump, _so(venv)) == ["sm_90"]
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)


def test_uv_add_then_sync_into_a_fresh_venv(
        wheelcuda_cmd: str, tmp_path: Path, uv_env: dict[str, str], cuobjdump: str) -> None:
    """A uv project before its first sync: `uv add --no-sync torch` (a lock, no .venv),
    uv-config into pyproject.toml (torch from uv.lock; compiler and torch's library
    headers from wheelcuda's store), `uv add ./ext` (built with isolation), then `uv sync`
    into a fresh .venv takes the wheel from uv's cache. A changed torch gives a new build
    key: uv rebuilds rather than reuse."""
    uv, src, proj = _uv(), _ext(tmp_path), tmp_path / "proj"
    proj.mkdir()
    sandbox.assert_ok(sandbox.shell(f"cd {proj} && {uv} init -q --name proj --no-workspace "
                                    "-p 3.11 .", tmp_path, extra_env=uv_env))
    # Only this machine's Python and platform: the local indexes hold no other wheels.
    pyproject = proj / "pyproject.toml"
    pyproject.write_text(re.sub(r"(?m)^requires-python = .*$", 'requires-python = "~=3.11.0"',
                                pyproject.read_text()) + LINUX_ONLY)
    script = f"""set -e
cd {proj}
{uv} add -q --no-sync torch==2.14.1
test ! -e .venv
{wheelcuda_cmd} uv-config --arch 9.0 --write pyproject.toml wheelcuda-demo-ext
{uv} add {src}
echo SYNC-FRESH
rm -rf .venv
{uv} sync
cd /
{proj}/.venv/bin/python -c "import wheelcuda_demo._C; print('IMPORTED')"
"""
    r = sandbox.shell(script, tmp_path, extra_env=uv_env, timeout=1800)
    out = sandbox.assert_ok(r)
    assert "IMPORTED" in out
    assert f"matching torch 2.14.1 (CUDA 13.0) as {proj}/uv.lock pins it" in r.stderr
    first, fresh = r.stderr.split("SYNC-FRESH") if "SYNC-FRESH" in r.stderr else (r.stderr, "")
    assert "Building wheelcuda-demo-ext" in first + out
    assert "Building wheelcuda-demo-ext" not in fresh  # from uv's cache
    assert _archs(cuobjdump, _so(proj / ".venv")) == ["sm_90"]
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
    pyproject = (proj / "pyproject.toml").read_text()
    assert "WHEELCUDA_BUILD_KEY" in pyproject and 'environments = ["sys_platform' in pyproject

    # torch "changes" (its version.py, as the wheel-cache test does); uv-config again
    # writes a new key, and uv builds again instead of reusing the cached wheel.
    version_py = next(proj.glob(".venv/lib/python*/site-packages/torch/version.py"))
    text = version_py.read_text()
    version_py.unlink()
    version_py.write_text(text.replace("__version__ = '2.14.1+cu130'",
                                       "__version__ = '2.14.1+cu130.changed'"))
    again = f"""set -e
cd {proj}
{wheelcuda_cmd} uv-config --arch 9.0 --write pyproject.toml wheelcuda-demo-ext
{uv} sync --reinstall-package wheelcuda-demo-ext
"""
    r2 = sandbox.shell(again, tmp_path, extra_env=uv_env, timeout=1800)
    sandbox.assert_ok(r2)
    assert "torch 2.14.1+cu130.changed" in (proj / "pyproject.toml").read_text()
    assert "Building wheelcuda-demo-ext" in r2.stderr


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_after_env_alone_the_seeds_own_command_builds_isolated(
        wheelcuda_cmd: str, tmp_path: Path, uv_env: dict[str, str], cuobjdump: str,
        local_wheels: dict[str, str], installer: str) -> None:
    """`eval "$(wheelcuda env)"`, then the seed's own `uv pip install ./ext` or `pip install
    ./ext`, isolation on, no flag added: the build environment takes the venv's torch, not
    the newest the indexes hold (a stand-in torch 2.99.0 beside 2.14.1 here, as PyPI's
    2.15.0+cu132 was beside a cu128 venv's 2.10.0), because env exports build constraints
    that uv and pip read (UV_BUILD_CONSTRAINT, PIP_BUILD_CONSTRAINT; pip >= 25.3). The
    stand-in has no cpp_extension: a build environment that took it fails at once."""
    uv, venv, src = _uv(), tmp_path / "venv", _ext(tmp_path)
    newer = tmp_path / "newer"
    fakes.wheel(newer, "torch", "2.99.0", {"torch/__init__.py": "__version__ = '2.99.0'\n"})
    install = (f"{uv} pip install --python {venv}/bin/python {src}" if installer == "uv" else
               f"{venv}/bin/python -m pip install {src}")
    script = f"""set -e
{uv} venv -q -p 3.11 --seed {venv}
{uv} pip install -q --python {venv}/bin/python torch==2.14.1 'pip>=25.3'
eval "$({wheelcuda_cmd} env --python {venv} --arch 9.0)"
{install}
cd /
{venv}/bin/python -c "import torch, wheelcuda_demo._C; print('IMPORTED', torch.__version__)"
"""
    # both installers see the stand-in; pip's own settings here cap torch (pip.conf), so
    # they are left out, as on a user's machine
    env = {**uv_env, "UV_FIND_LINKS": str(newer), "PIP_CONFIG_FILE": os.devnull,
           "PIP_FIND_LINKS": f"{newer} {local_wheels.get('PIP_FIND_LINKS', '')}".strip(),
           "PIP_EXTRA_INDEX_URL": " ".join(f"file://{i}" for i in INDEXES),
           "PIP_CERT": local_wheels.get("SSL_CERT_FILE", ""), "PIP_NO_CACHE_DIR": "1"}
    r = sandbox.shell(script, tmp_path, extra_env=env, timeout=1800)
    out = sandbox.assert_ok(r)
    assert "IMPORTED 2.14.1" in out
    assert "2.99.0" not in r.stdout + r.stderr
    assert _archs(cuobjdump, _so(venv)) == ["sm_90"]
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)


def _sdist(tmp_path: Path) -> Path:
    """The example as an sdist."""
    base = "wheelcuda_demo_ext-0.1.0"
    src = tmp_path / base
    shutil.copytree(REPO / "examples/torch_ext", src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "tests"))
    return _tarred(src, "wheelcuda-demo-ext")


def test_each_route_hits_what_install_compiled_in_its_random_build_folders(
        wheelcuda_cmd: str, tmp_path: Path, uv_env: dict[str, str], cuobjdump: str,
        cache_env: dict[str, str]) -> None:
    """The compile cache on, one sdist built three ways on one machine, as the issue of
    "never the same kernel twice" put it: `wheelcuda install`, then `uv add` in a fresh
    project after uv-config, then `uv pip install` after env. uv and pip unpack the sdist
    into new random folders and build against torch in new random environments; the
    second and third builds hit every compile of the first (sccache's own counts: nvcc's
    steps and the host's C++ compiles), and each wheel holds sm_90 alone."""
    uv, sdist = _uv(), _sdist(tmp_path)
    venv, proj = tmp_path / "venv", tmp_path / "proj"
    proj.mkdir()
    stats = f"{cache_env['WHEELCUDA_COMPILE_CACHE']} --show-stats --stats-format json"
    zero = f"{cache_env['WHEELCUDA_COMPILE_CACHE']} --zero-stats > /dev/null"
    script = f"""set -e
{uv} venv -q -p 3.11 {venv}
{uv} pip install -q --python {venv}/bin/python torch==2.14.1
{zero}
{wheelcuda_cmd} install --python {venv} --arch 9.0 {sdist}
cat {tmp_path}/*/logs/*.log 2>/dev/null | head -0
echo "INSTALL $({stats})"
{zero}
cd {proj}
{uv} init -q --name proj --no-workspace -p 3.11 .
sed -i 's/^requires-python = .*$/requires-python = "~=3.11.0"/' pyproject.toml
cat >> pyproject.toml <<'TOML'
{LINUX_ONLY}
TOML
{uv} add -q --no-sync torch==2.14.1
{wheelcuda_cmd} uv-config --arch 9.0 --write pyproject.toml {sdist}
export WHEELCUDA_NVCC_LOG={tmp_path}/uvadd.log
{uv} add {sdist}
unset WHEELCUDA_NVCC_LOG
echo "UVADD $({stats})"
{zero}
cd {tmp_path}
eval "$({wheelcuda_cmd} env --python {venv} --arch 9.0)"
{uv} pip install --python {venv}/bin/python --reinstall-package wheelcuda-demo-ext \\
    --refresh-package wheelcuda-demo-ext {sdist}
echo "UVPIP $({stats})"
cd /
{proj}/.venv/bin/python -c "import wheelcuda_demo._C; print('IMPORTED')"
"""
    r = sandbox.shell(script, tmp_path, extra_env={**uv_env, **cache_env}, timeout=2400)
    out = sandbox.assert_ok(r)
    assert "IMPORTED" in out
    counts = {}
    for line in out.splitlines():
        route, _, text = line.partition(" ")
        if route in ("INSTALL", "UVADD", "UVPIP"):
            s = json.loads(text)["stats"]
            counts[route] = (s["cache_hits"]["adv_counts"], s["cache_misses"]["adv_counts"])
    first_hits, first_misses = counts["INSTALL"]
    assert first_misses.get("ptx [cicc]") == 1 and first_misses.get("c++ [gcc]") == 1, counts
    for route in ("UVADD", "UVPIP"):
        hits, misses = counts[route]
        assert misses == {}, (route, counts)
        assert hits == {**first_misses, **first_hits}, (route, counts)
    assert "compile cache: 0 of" in r.stderr  # install's summary
    assert _archs(cuobjdump, _so(venv)) == ["sm_90"]
    assert _archs(cuobjdump, _so(proj / ".venv")) == ["sm_90"]
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
