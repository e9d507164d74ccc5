"""The first user's path, offline: a cu128 torch, NVIDIA's archives out of reach (a
closed port on 127.0.0.1), a clang that serves (a fake: it answers what is asked of it),
and an installer that lays out the CUDA 12 wheels as PyPI's are (tests/layouts.py).

doctor, ``install --explain`` and install read one decision (_pipeline/fetchplan.py):
doctor names clang as the source and what the archives would have brought,
``--explain``'s cache key is the key install keeps, and ``fetch`` says it fetches. The
real path (the real clang, wheels and uv): tests/integration/test_clang.py and `make
live`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests import fakes
from tests.test_clang_source import fake_clang
from tests.test_redist_pipeline import run

#: What uv would fetch into the store for the clang toolkit and the library headers,
#: laid out as the real wheels are; every other call succeeds and installs nothing.
FAKE_UV = """import json, os, sys
sys.path[:0] = [{repo!r}]
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\\n")
if "--target" in args:
    from pathlib import Path
    from tests import fakes
    target = Path(args[args.index("--target") + 1])
    wanted = " ".join(args)
    for wheel in ("nvidia-cuda-nvcc-cu12", "nvidia-cuda-runtime-cu12",
                  "nvidia-cuda-cccl-cu12", "nvidia-nvfatbin-cu12", "nvidia-curand-cu12",
                  "nvidia-cublas-cu12", "nvidia-cusparse-cu12", "nvidia-cusolver-cu12"):
        if wheel in wanted:
            fakes.cu12_wheel(target, wheel)
sys.exit(0)
"""
CLOSED = "http://127.0.0.1:9/"  # the discard port: nothing listens there


@pytest.fixture
def first_user(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """torch 2.9.1+cu128 with its CUDA 12 wheels (no compiler), and the environment."""
    site = fakes.build_needs(fakes.cu12_site(tmp_path / "site"))
    fakes.torch(site, version="2.9.1+cu128", cuda="12.8", pin=None)
    folder = tmp_path / "llvm"
    folder.mkdir()
    env = {**fakes.uv_on_path(tmp_path, FAKE_UV.format(
               repo=str(Path(__file__).resolve().parents[1]), log=str(tmp_path / "uv-calls"))),
           "WHEELCUDA_CLANG": str(fake_clang(folder, "22.1.8")),
           "WHEELCUDA_REDIST_URL": CLOSED, "WHEELCUDA_TOOLKIT": "auto"}
    return fakes.python(tmp_path, [site]), env


def test_doctor_names_the_source_install_uses(first_user: tuple[Path, dict[str, str]]
                                              ) -> None:
    py, env = first_user
    r = run("doctor", "--json", "--python", str(py), "--arch", "12.0", env=env)
    report = json.loads(r.stdout)
    assert report["ok"], report["problems"]
    toolkit = report["toolkit"]
    assert toolkit["source"] == "clang" and not toolkit["fetched"]
    assert toolkit["description"].startswith("to fetch: the CUDA 12.8 wheels for clang 22.1.8")
    assert toolkit["unreachable"].startswith(
        f"could not read {CLOSED}redistrib_12.8.1.json: could not connect")
    assert toolkit["instead"].startswith("NVIDIA's nvcc from their archives (release 12.8.1")
    text = run("doctor", "--python", str(py), "--arch", "12.0", env=env).stdout
    assert "  source         clang: to fetch: the CUDA 12.8 wheels" in text
    assert "were they reachable, install would take them" in text
    # what the environment lacks is said as what it is, not as what stops the build
    assert "MISSING" not in text and "  not here   nvidia-cuda-nvcc-cu12" in text
    assert "WARNING: torch 2.9.1+cu128 needs a CUDA 12.8 compiler; NVIDIA's archives do " \
           "not answer" in " ".join(text.split())
    assert text.rstrip().endswith("OK: a build would work")


def test_explain_names_the_key_install_keeps(first_user: tuple[Path, dict[str, str]],
                                             tmp_path: Path) -> None:
    py, env = first_user
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "setup.py").write_text("from setuptools import setup\nsetup(name='ext')\n")
    explained = run("install", "--explain", "--python", str(py), "--arch", "12.0", str(ext),
                    env=env)
    assert explained.returncode == 0, explained.stdout + explained.stderr
    [key] = re.findall(r"(?m)^cache key  (\S+)$", explained.stdout)
    assert "compiler   would fetch the CUDA 12.8 wheels for clang 22.1.8" in explained.stdout
    assert "not used   NVIDIA's nvcc from their archives" in explained.stdout
    assert not (tmp_path / "uv-calls").exists()  # explain fetched nothing

    installed = run("install", "--python", str(py), "--arch", "12.0", str(ext), env=env)
    assert installed.returncode == 0, installed.stderr
    said = " ".join(installed.stderr.split())
    assert f"could not read {CLOSED}redistrib_12.8.1.json: could not connect" in said
    assert "; building with clang 22.1.8 (" in said and \
        "over NVIDIA's CUDA 12.8 wheels instead" in said
    assert f"cache key {key}" in said, (key, said)
    # and the next explain, with the clang toolkit in the store, names the same key
    again = run("install", "--explain", "--python", str(py), "--arch", "12.0", str(ext),
                env=env)
    assert re.findall(r"(?m)^cache key  (\S+)$", again.stdout) == [key]


def test_fetch_says_it_fetches(first_user: tuple[Path, dict[str, str]]) -> None:
    py, env = first_user
    r = run("fetch", "--python", str(py), env=env)
    assert r.returncode == 0, r.stderr
    assert "fetching for clang 22.1.8" in r.stderr and "building" not in r.stderr, r.stderr


def test_no_fetch_names_both_ways(first_user: tuple[Path, dict[str, str]]) -> None:
    py, env = first_user
    r = run("install", "--no-fetch", "--python", str(py), "--arch", "12.0", "causal-conv1d",
            env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    said = " ".join(r.stderr.split())
    assert "the clang toolkit needs the CUDA 12.8 wheels for clang 22.1.8" in said
    assert "NVIDIA's archives do not answer" in said and "--no-fetch forbids" in said
    assert "or bring NVIDIA's archives: the CUDA 12.8 compiler from NVIDIA's archives" in said
    assert f"{CLOSED}cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.8.93-archive.tar.xz" \
        in said


def test_the_answer_names_no_credentials() -> None:
    from wheelcuda._store import transfer  # noqa: PLC0415

    said = transfer.answers("http://alice:s3cr3t@127.0.0.1:9/redistrib_12.8.1.json")
    assert said is not None and "s3cr3t" not in said and "alice" not in said
    assert said.startswith("could not read http://127.0.0.1:9/redistrib_12.8.1.json: ")
