"""NVIDIA's archives through the commands: a torch built for CUDA 12 (no compiler wheel
exists) gets its compiler from a mirror served on 127.0.0.1 (tests/redist_server.py),
with fake archives laid out as NVIDIA's; `auto` then picks them over the environment's
incomplete CUDA 12 wheels."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import fakes, layouts
from tests import redist_server as rs
from tests.test_localcuda import toolkit
from wheelcuda import _pipeline as pipeline
from wheelcuda._context import Context
from wheelcuda._data import catalog
from wheelcuda._rules import checks, pins
from wheelcuda._values import Torch


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = fakes.pythonpath_env()
    full["WHEELCUDA_CACHE_DIR"] = os.environ["WHEELCUDA_CACHE_DIR"]
    full.update(env)
    return subprocess.run([sys.executable, "-m", "wheelcuda", *args], capture_output=True,
                          text=True, env=full, check=False)


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("mirror12")
    rs.cu12_mirror(folder)
    return folder


@pytest.fixture
def server(mirror: Path) -> Iterator[rs.Server]:
    with rs.serve(mirror) as running:
        yield running


@pytest.fixture
def cu128(tmp_path: Path) -> Path:
    """torch 2.9.1+cu128 and the CUDA 12 wheels it brings (ptxas only: no compiler)."""
    site = fakes.build_needs(fakes.cu12_site(tmp_path / "site"))
    fakes.torch(site, version="2.9.1+cu128", cuda="12.8", pin=None)
    return fakes.python(tmp_path, [site])


def test_a_cu12_torch_gets_its_compiler_from_the_archives(
        cu128: Path, server: rs.Server, isolated: Path) -> None:
    env = {"WHEELCUDA_TOOLKIT": "auto",
           "WHEELCUDA_REDIST_MANIFEST": f"{server.url}redistrib_12.8.1.json"}
    fetched = run("fetch", "--python", str(cu128), env=env)
    assert fetched.returncode == 0, fetched.stderr
    assert "Traceback" not in fetched.stderr
    root = next((isolated / "toolkits").glob("cuda-redist-12.8.1-*"))
    assert fetched.stdout.strip().startswith(str(root))
    out = run("env", "--python", str(cu128), "--arch", "9.0", env=env)
    assert out.returncode == 0, out.stderr
    home = next(line.split("'")[1] for line in out.stdout.splitlines() if "CUDA_HOME=" in line)
    assert os.path.realpath(Path(home, "bin/ptxas")).startswith(str(root))
    # CUDA 12's layout: libraries under lib/ (not lib64/), nvvm/ inside cuda_nvcc; the
    # tree lays them out as /usr/local/cuda does
    nvcc, runtime, cccl = (root / "nvidia" / n for n in ("cuda_nvcc", "cuda_runtime",
                                                          "cuda_cccl"))
    for link, into in {"bin/.nvcc-real": nvcc / "bin/nvcc", "bin/ptxas": nvcc / "bin/ptxas",
                       "nvvm/bin/cicc": nvcc / "nvvm/bin/cicc",
                       "nvvm/libdevice/libdevice.10.bc": nvcc / "nvvm/libdevice/libdevice.10.bc",
                       "nvvm/lib64/libnvvm.so.4": nvcc / "nvvm/lib64/libnvvm.so.4.0.0",
                       "include/crt/host_config.h": nvcc / "include/crt/host_config.h",
                       "include/cuda_runtime.h": runtime / "include/cuda_runtime.h",
                       "lib64/libcudart.so": runtime / "lib/libcudart.so.12.8.90",
                       "lib64/libcudadevrt.a": runtime / "lib/libcudadevrt.a",
                       "lib64/stubs/libcuda.so": runtime / "lib/stubs/libcuda.so",
                       "include/thrust/version.h": cccl / "include/thrust/version.h",
                       }.items():
        assert Path(home, link).resolve() == into.resolve(), link
    assert (Path(home, "bin/nvcc").is_file() and not Path(home, "bin/nvcc").is_symlink())
    assert json.loads(Path(home, "version.json").read_text())["cuda"]["version"].startswith(
        "12.8")
    doctor = run("doctor", "--json", "--python", str(cu128), "--arch", "9.0", env=env)
    report = json.loads(doctor.stdout)
    assert report["toolkit"]["source"] == "redist", report["toolkit"]
    assert report["toolkit"]["others"][0].startswith("wheels:")


def test_wheels_only_names_the_gap(cu128: Path, server: rs.Server) -> None:
    env = {"WHEELCUDA_TOOLKIT": "wheels",
           "WHEELCUDA_REDIST_MANIFEST": f"{server.url}redistrib_12.8.1.json"}
    r = run("fetch", "--python", str(cu128), env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert server.count("redistrib_12.8.1.json") == 0  # wheels only: no archive fetched


def test_a_bad_toolkit_word_is_refused(cu128: Path) -> None:
    r = run("env", "--python", str(cu128), "--toolkit", "banana", "--arch", "9.0", env={})
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert ("--toolkit 'banana' is neither auto, wheels, local, redist, clang nor a folder"
            in r.stderr)


def test_explain_shows_the_real_cu128_plan_offline(cu128: Path) -> None:
    """torch 2.9.1+cu128, NVIDIA out of reach (as here) and no clang: --explain says
    install would stop, and why; --no-fetch lists release 12.8.1's archives as NVIDIA's
    manifest lists them (docs/facts.md), without the network."""
    # out of reach for sure: a closed port (whatever this machine reaches)
    env = {"WHEELCUDA_TOOLKIT": "auto", "WHEELCUDA_REDIST_URL": "http://127.0.0.1:9/"}
    r = run("install", "--explain", "--python", str(cu128), "--arch", "12.0", "causal-conv1d",
            env=env)
    assert r.returncode == 1 and "NOT OK: install would stop here" in r.stdout, r.stdout
    said = " ".join(r.stdout.split())
    assert "ERROR: torch 2.9.1+cu128 needs a CUDA 12.8 compiler from NVIDIA's archives " \
           "(release 12.8.1, linux-x86_64, 81 MB" in said
    assert "and they do not answer: could not read http://127.0.0.1:9/redistrib_12.8.1.json: " \
           "could not connect" in said
    offline = run("install", "--no-fetch", "--python", str(cu128), "--arch", "12.0",
                  "causal-conv1d", env=env)
    assert offline.returncode == 1 and "Traceback" not in offline.stderr
    base = "http://127.0.0.1:9/"
    assert f"{base}redistrib_12.8.1.json  sha256 249e28a83008d711d5f72880541c8be6253f6d616084" \
        "61de4fcb715554a6cf17" in offline.stderr, offline.stderr
    assert (f"{base}cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.8.93-archive.tar.xz  "
            "79015464 bytes  sha256 9961b3484b6b71314063709a4f9529654f96782ad39e72bf1e00f070d"
            "b8210d3") in offline.stderr
    assert "release 12.8.1, linux-x86_64, 81 MB" in offline.stderr


def test_explain_shows_the_plan_when_the_archives_answer(cu128: Path, server: rs.Server
                                                         ) -> None:
    """A mirror that answers (WHEELCUDA_REDIST_URL): the archives are the plan, listed
    with release 12.8.1's known sizes and sha256 under the mirror's URL."""
    r = run("install", "--explain", "--python", str(cu128), "--arch", "12.0", "causal-conv1d",
            env={"WHEELCUDA_TOOLKIT": "auto", "WHEELCUDA_REDIST_URL": server.url})
    assert r.returncode == 0, r.stdout + r.stderr
    assert (f"{server.url}cuda_nvcc/linux-x86_64/cuda_nvcc-linux-x86_64-12.8.93-archive.tar.xz  "
            "79015464 bytes  sha256 9961b3484b6b71314063709a4f9529654f96782ad39e72bf1e00f070d"
            "b8210d3") in r.stdout
    assert "release 12.8.1, linux-x86_64, 81 MB" in r.stdout
    assert "(its compiler's exact version is known after" not in r.stdout  # 12.8.93, known


def _smi(folder: Path, driver_cuda: str) -> str:
    """A fake nvidia-smi (NVML is absent here): one RTX PRO 6000 whose driver runs
    ``driver_cuda``; returns the PATH with it first."""
    folder.mkdir()
    script = folder / "nvidia-smi"
    script.write_text("#!/bin/sh\n"
                      'case "$1" in --query-gpu=*) echo "0, NVIDIA RTX PRO 6000 Blackwell, '
                      '12.0, 580.95.05"; exit 0;; esac\n'
                      f"echo '| NVIDIA-SMI 580.95.05  Driver Version: 580.95.05  CUDA Version: "
                      f"{driver_cuda} |'\n")
    script.chmod(0o755)
    return f"{folder}{os.pathsep}{os.environ['PATH']}"


@pytest.mark.parametrize("driver", ["13.0", "12.8"])
def test_doctor_says_what_it_fetches_and_the_cu130_way(cu128: Path, tmp_path: Path,
                                                       driver: str, server: rs.Server) -> None:
    fakes.dist_info(tmp_path / "site", "torchvision", "0.24.1+cu128")
    env = {"WHEELCUDA_TOOLKIT": "auto", "WHEELCUDA_NO_GPU_PROBE": "0",
           "PATH": _smi(tmp_path / "smi", driver), "WHEELCUDA_REDIST_URL": server.url}
    r = run("doctor", "--python", str(cu128), env=env)
    assert r.returncode == 0, r.stdout + r.stderr  # install would fetch: not an error
    text = " ".join(r.stdout.split())
    assert "source redist: to fetch: release 12.8.1, linux-x86_64, 81 MB, from " \
           f"{server.url}" in text
    assert "WARNING: torch 2.9.1+cu128 needs a CUDA 12.8 compiler; `wheelcuda install`, " \
           "`env` and `uv-config` fetch it from NVIDIA's archives (release 12.8.1" in text
    assert f"fix: wheelcuda fetch --python {cu128} " in text
    assert "list 12.0 (from visible GPUs)" in text
    move = (f"uv pip install --python {cu128} --reinstall torch==2.9.1 torchvision==0.24.1 "
            "--index-url https://download.pytorch.org/whl/cu130")
    if driver == "13.0":
        assert "the driver runs CUDA 13.0: the other way is torch's cu130 build" in text
        assert f"fix: {move}" in text
    else:
        assert "cu130" not in text
    assert "Traceback" not in r.stderr


def test_the_cu130_way_is_a_pure_rule() -> None:
    old = Torch("2.7.1+cu126", "12.6", "/site/torch", None)
    move = checks.cu130_move(old, "/v/bin/python", {"torchaudio": "2.7.1+cu126"}, "13.1")
    assert move is not None and not move.is_error
    assert move.fix == ("uv pip install --python /v/bin/python --reinstall 'torch>=2.9.0' "
                        "torchaudio --index-url https://download.pytorch.org/whl/cu130")
    assert checks.cu130_move(old, "/p", {}, "12.9") is None
    cu13 = Torch("2.14.1+cu130", "13.0", "/site/torch", None)
    assert checks.cu130_move(cu13, "/p", {}, "13.0") is None


def test_each_toolkit_word_says_what_it_lacks(cu128: Path) -> None:
    """--toolkit local with no CUDA 12 toolkit, --toolkit wheels with no CUDA 12 compiler
    wheel: each names what it would need and the other ways, exit 1, no traceback."""
    local = run("env", "--python", str(cu128), "--arch", "9.0", "--toolkit", "local", env={})
    assert local.returncode == 1 and "Traceback" not in local.stderr
    text = " ".join(local.stderr.split())
    assert "error: --toolkit local: no local CUDA toolkit" in text, text
    assert "fix: --toolkit auto (the wheels, NVIDIA's archives), or --toolkit " \
           "/path/to/cuda-12.8 (the folder holding bin/nvcc)" in text
    wheels = run("env", "--python", str(cu128), "--arch", "9.0", "--toolkit", "wheels", env={})
    assert wheels.returncode == 1 and "Traceback" not in wheels.stderr
    text = " ".join(wheels.stderr.split())
    assert "hold no compiler" in text and "--toolkit auto or redist" in text
    assert (f"move torch to its cu130 build: uv pip install --python {cu128} --reinstall "
            "torch==2.9.1 --index-url https://download.pytorch.org/whl/cu130") in text


def test_explain_names_the_source_and_the_others(tmp_path: Path, isolated: Path) -> None:
    """install --explain says where the compiler comes from and what the others have."""
    site = fakes.build_needs(fakes.cu13_site(tmp_path / "site"))
    fakes.torch(site)
    py = fakes.python(tmp_path, [site])
    r = run("install", "--explain", "--python", str(py), "--arch", "9.0", "somepkg",
            env={"WHEELCUDA_TOOLKIT": "auto", "UV_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr
    assert f"compiler   wheels: the wheels in {py}'s site folders\n" in r.stdout
    assert "also       redist: nothing fetched for CUDA 13.0 yet" in r.stdout


def test_auto_prefers_torchs_release_to_an_older_local_toolkit(
        cu128: Path, server: rs.Server, tmp_path: Path, isolated: Path) -> None:
    """A local CUDA 12.4 for a cu128 torch: `auto` fetches NVIDIA's 12.8.1 (12.4 cannot
    build sm_120); `--toolkit local` takes the 12.4 it was asked for, with torch's warning."""
    old = toolkit(tmp_path / "cuda-12.4", "12.4.131")
    env = {"WHEELCUDA_TOOLKIT": "auto", "CUDA_HOME": str(old),
           "WHEELCUDA_REDIST_MANIFEST": f"{server.url}redistrib_12.8.1.json"}
    doctor = run("doctor", "--json", "--python", str(cu128), "--arch", "12.0", env=env)
    report = json.loads(doctor.stdout)
    assert report["toolkit"]["source"] == "redist", report["toolkit"]
    assert any("CUDA 12.4 is older than torch's 12.8: NVIDIA's archives of 12.8 fit better"
               in o for o in report["toolkit"]["others"]), report["toolkit"]["others"]
    fetched = run("fetch", "--python", str(cu128), env=env)
    assert fetched.returncode == 0, fetched.stderr
    assert fetched.stdout.startswith(str(isolated / "toolkits/cuda-redist-12.8.1-"))
    local = run("doctor", "--json", "--python", str(cu128), "--arch", "9.0", "--toolkit",
                "local", env=env)
    report = json.loads(local.stdout)
    assert report["toolkit"]["source"] == "local", report["toolkit"]
    assert report["toolkit"]["description"].startswith(f"CUDA 12.4.131 in {old}")


def test_review_bad_inputs(cu128: Path, tmp_path: Path, isolated: Path) -> None:
    """Each ends in a message with its fix, exit 1, no traceback, nothing half-written."""
    cases = [
        (("fetch", "--from", str(tmp_path / "nowhere")), {},
         f"error: --from {tmp_path / 'nowhere'}: no such folder"),
        (("fetch",), {"WHEELCUDA_REDIST_URL": "http://[bad"}, "not a URL"),
        (("fetch", "--redist-manifest", "http://[bad/redistrib_12.8.1.json"), {}, "not a URL"),
        (("env", "--arch", "9.0", "--toolkit", "redist", "--no-fetch"), {},
         f"fix: wheelcuda fetch --toolkit redist --python {cu128} (install and env fetch by "
         "themselves unless --no-fetch)"),
    ]
    for args, env, wanted in cases:
        r = run(*args, "--python", str(cu128), env={"WHEELCUDA_TOOLKIT": "auto", **env})
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and "internal error" not in r.stderr
        assert wanted in " ".join(r.stderr.split()), (args, r.stderr)
    kits = isolated / "toolkits"
    assert not kits.exists() or all(p.name.startswith(".") for p in kits.iterdir())
    # an empty --toolkit is `auto`, not the current folder
    blank = run("doctor", "--json", "--python", str(cu128), "--arch", "9.0", "--toolkit", " ",
                env={})
    assert json.loads(blank.stdout)["toolkit"]["source"] == "redist"


def test_a_source_that_fails_stops_no_run_another_serves(tmp_path: Path, isolated: Path
                                                         ) -> None:
    """The local source cannot write its links (its cache folder is a file); the wheels
    serve, and the run says why the local source has nothing (doctor shows it)."""
    site = fakes.build_needs(fakes.cu13_site(tmp_path / "site"))
    fakes.torch(site)
    py = fakes.python(tmp_path, [site])
    isolated.mkdir(parents=True, exist_ok=True)
    (isolated / "local").write_text("not a folder")
    cuda = toolkit(tmp_path / "cuda-13.0", "13.0.88")
    ctx = Context.current().with_env(WHEELCUDA_TOOLKIT="auto", CUDA_HOME=str(cuda))
    r = pipeline.resolve(ctx, pipeline.Request(python=str(py), arch="9.0", need_torch=True))
    assert not r.errors() and r.toolkit.source == "wheels", r.problems
    assert any(o.startswith("local: unusable: ") for o in r.toolkit.others), r.toolkit.others


def test_an_older_local_toolkit_names_the_archives_as_the_way(cu128: Path, tmp_path: Path
                                                              ) -> None:
    old = toolkit(tmp_path / "cuda-12.4", "12.4.131")
    r = run("doctor", "--python", str(cu128), "--arch", "12.0", "--toolkit", "local",
            env={"CUDA_HOME": str(old)})
    text = " ".join(r.stdout.split())
    assert "torch is built with CUDA 12.8, the compiler is CUDA 12.4" in text, text
    assert "fix: --toolkit redist (NVIDIA's CUDA 12.8 archives), or --toolkit " \
           "/path/to/cuda-12.8" in text
    assert "cuda-toolkit[" not in text  # no wheel holds a CUDA 12 compiler


def test_uv_config_for_a_cu12_torch(cu128: Path, server: rs.Server, isolated: Path,
                                    tmp_path: Path) -> None:
    """The first user's kind of torch through uv-config (a cu128 torch): the compiler
    from NVIDIA's archives, the headers of torch's libraries at the versions torch pins
    (CUDA 12 has no metapackage: one wheel each, here fake ones on a find-links folder),
    torch's exact version with its local label, and PyTorch's cu128 index named."""
    # a real interpreter: the headers are fetched with the real uv, which asks it its tags
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    fakes.build_needs(fakes.cu12_site(site))
    fakes.torch(site, version="2.9.1+cu128", cuda="12.8", pin=None)
    cu128 = venv / "bin/python"
    shutil.rmtree(site / "torch-2.9.1.dist-info")  # PyTorch's index keeps the local label
    # torch 2.9.1+cu128's own pins of its libraries, each of which the store keeps the
    # headers of
    libraries = [p for p in layouts.WHEELS if p.split("==")[0] in pins.header_wheels(12)]
    assert len(libraries) == len(pins.header_wheels(12))
    fakes.dist_info(site, "torch", "2.9.1+cu128",
                    requires=[f"{libraries[0]}; platform_system == 'Linux'", *libraries[1:]])
    links = tmp_path / "links"
    # the real wheels' layout (tests/layouts.py): each installs a plain file
    # nvidia/__init__.py beside its folder, which the header trim once took for a folder
    # the recorded layout leaves out deep headers; the one the store checks for stays
    checked = {c.wheels[12]: f"{c.folders[12]}/{c.files[12][0]}"
               for c in catalog.HEADER_COMPONENTS}
    for pin in libraries:
        name = pin.split("==")[0]
        layouts.wheel(links, name, {checked[name]: ""})
    fakes.sdist(links, "torch-scatter", "2.1.2")
    uv = Path(sys.executable).parent / "uv"
    env = {"WHEELCUDA_TOOLKIT": "auto", "UV_OFFLINE": "1",
           "UV_FIND_LINKS": str(links), "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
           "PATH": f"{uv.parent}:/usr/bin:/bin",
           "WHEELCUDA_REDIST_MANIFEST": f"{server.url}redistrib_12.8.1.json"}
    r = run("uv-config", "--python", str(cu128), "--arch", "12.0", "torch-scatter", env=env)
    assert r.returncode == 0, r.stderr
    data = tomlkit_parse(r.stdout)
    assert data["extra-build-dependencies"]["torch-scatter"] == ["torch==2.9.1+cu128"]
    assert data["index"] == [{"name": "wheelcuda-torch",
                              "url": "https://download.pytorch.org/whl/cu128"}]
    variables = data["extra-build-variables"]["torch-scatter"]
    home = Path(variables["CUDA_HOME"])
    assert os.path.realpath(home / "bin/ptxas").startswith(str(isolated / "toolkits/cuda-redist"))
    header = os.path.realpath(home / "include/cusparse.h")
    assert "-headers-" in header and header.startswith(str(isolated / "toolkits"))
    kept = Path(header).parents[3]  # <store>/nvidia/cusparse/include/cusparse.h
    assert (kept / "nvidia/cublas/include/cublas_v2.h").is_file()
    # packages include torch's other libraries too (nerfacc: curand.h)
    assert (home / "include/curand.h").is_file() and (home / "include/cufft.h").is_file()
    assert not list(kept.glob("nvidia/*/lib/*.so*"))  # the libraries are torch's business
    assert variables["TORCH_CUDA_ARCH_LIST"] == "12.0"
    assert "torch 2.9.1+cu128 (CUDA 12.8); nvcc 12.8" in variables["WHEELCUDA_BUILD_KEY"]


def tomlkit_parse(text: str) -> dict[str, object]:
    import tomlkit  # noqa: PLC0415

    return tomlkit.parse(text).unwrap()


def test_doctor_names_the_archives_with_or_without_archs(cu128: Path) -> None:
    """Before: without --arch, doctor said `source wheels`, then that the CUDA 12 wheels
    hold no compiler, with `--toolkit auto` (the default) as the fix, and listed the nvcc
    wheel three times. The source does not depend on whether archs were given."""
    env = {"WHEELCUDA_TOOLKIT": "auto"}
    sources = []
    for args in (["--arch", "12.0"], []):
        r = run("doctor", "--python", str(cu128), *args, env=env)
        assert "Traceback" not in r.stderr
        sources.append(next(line for line in r.stdout.splitlines() if "source " in line))
        assert r.stdout.count("nvidia-cuda-nvcc-cu12") == 1, r.stdout
        assert "hold no compiler" not in r.stdout and "--toolkit auto or" not in r.stdout
    assert sources[0] == sources[1] and "redist: to fetch: release 12.8.1" in sources[0]
    without = run("doctor", "--python", str(cu128), env=env)
    assert without.returncode == 1 and "no GPU architecture given" in without.stdout


def test_fetch_from_a_folder_names_what_it_lacks(cu128: Path, tmp_path: Path,
                                                 isolated: Path) -> None:
    """Before: `fetch --from DIR` with an empty or incomplete DIR went to the network,
    and its fix ended with the command just run. It now names the files DIR lacks, and
    reads nothing else."""
    folder = tmp_path / "bring"
    folder.mkdir()
    env = {"WHEELCUDA_TOOLKIT": "auto", "WHEELCUDA_REDIST_URL": "http://127.0.0.1:9/"}
    r = run("fetch", "--python", str(cu128), "--from", str(folder), env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    said = " ".join(r.stderr.split())
    assert f"--from {folder}: it lacks 4 of the files" in said and "it is empty" in said
    assert "redistrib_12.8.1.json" in said and "cuda_nvcc-linux-x86_64-12.8.93" in said
    assert "could not read" not in said and "127.0.0.1:9" not in said.split("fix:")[0]
    (folder / "redistrib_12.8.1.json").write_text("{}")
    r = run("fetch", "--python", str(cu128), "--from", str(folder), env=env)
    said = " ".join(r.stderr.split())
    assert "it lacks 3 of the files" in said and "it holds redistrib_12.8.1.json" in said
    kits = isolated / "toolkits"
    assert not kits.exists() or all(p.name.startswith(".") for p in kits.iterdir())
