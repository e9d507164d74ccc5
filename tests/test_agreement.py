"""doctor, install and the backend agree: over a matrix of
environments, ``doctor`` says "a build would work" exactly when ``install --explain``
(install's whole preflight, nothing built or fetched) succeeds, and when they refuse they
name the same errors; the PEP 517 backend, asked for the same build, refuses exactly then
too (less what its frontend brings: the build needs).

Before, doctor said OK for a torch 2.14.1 venv without wheel and packaging while install
refused it: doctor ran its own checks. All three now read one pipeline."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests import fakes
from tests import redist_server as rs
from tests.test_clang_source import fake_clang
from tests.test_cli import run
from tests.test_install import fake_uv  # noqa: F401 (a fixture)
from wheelcuda._backend import plan as backend_plan
from wheelcuda._backend.config import Config, Project
from wheelcuda._context import Context
from wheelcuda.errors import WheelcudaError

GCC16 = ("#!/bin/sh\ncase \"$1\" in -dumpfullversion) echo 16.1.0;; "
         "*) echo 'gcc (GCC) 16.1.0';; esac\n")


def _good(tmp: Path) -> tuple[Path, dict[str, str]]:
    return fakes.user_env(tmp), {}


def _no_build_needs(tmp: Path) -> tuple[Path, dict[str, str]]:
    return fakes.python(tmp, [fakes.torch(fakes.cu13_site(tmp / "site"))]), {}


def _no_torch(tmp: Path) -> tuple[Path, dict[str, str]]:
    return fakes.python(tmp, [fakes.build_needs(fakes.cu13_site(tmp / "site"))]), {}


def _cpu_torch(tmp: Path) -> tuple[Path, dict[str, str]]:
    site = fakes.build_needs(fakes.torch(fakes.cu13_site(tmp / "site"), "2.14.1+cpu", None, None))
    return fakes.python(tmp, [site]), {}


def _no_compiler(tmp: Path) -> tuple[Path, dict[str, str]]:
    return fakes.python(tmp, [fakes.build_needs(fakes.torch(tmp / "site"))]), {}


def _mixed(tmp: Path) -> tuple[Path, dict[str, str]]:
    site = fakes.cu13_site(tmp / "site", cuda_nvcc="13.3.20")
    return fakes.python(tmp, [fakes.build_needs(fakes.torch(site))]), {}


def _cu12_torch(tmp: Path) -> tuple[Path, dict[str, str]]:
    site = fakes.torch(fakes.cu12_site(tmp / "site"), "2.9.1+cu128", "12.8", None)
    return fakes.python(tmp, [fakes.build_needs(site)]), {}


def _bad_max_jobs(tmp: Path) -> tuple[Path, dict[str, str]]:
    return fakes.user_env(tmp), {"MAX_JOBS": "abc"}


def _bad_arch_list(tmp: Path) -> tuple[Path, dict[str, str]]:
    return fakes.user_env(tmp), {"TORCH_CUDA_ARCH_LIST": "garbage"}


def _host_too_new(tmp: Path) -> tuple[Path, dict[str, str]]:
    gcc = tmp / "gcc-16"
    gcc.write_text(GCC16)
    gcc.chmod(0o755)
    return fakes.user_env(tmp), {"NVCC_CCBIN": str(gcc)}


def _fetch_then_old_arch(tmp: Path) -> tuple[Path, dict[str, str]]:
    """A compiler to fetch and sm_70: known before the fetch, so no fetch (review)."""
    return _no_compiler(tmp)[0], {"TORCH_CUDA_ARCH_LIST": "7.0"}


def _fetch_then_no_host_compiler(tmp: Path) -> tuple[Path, dict[str, str]]:
    return _no_compiler(tmp)[0], {"CC": str(tmp / "no-such-gcc")}


def _bad_cxx_std(tmp: Path) -> tuple[Path, dict[str, str]]:
    return fakes.user_env(tmp), {"WHEELCUDA_CXX_STD": "c++20"}


def _foreign_cuda_home(tmp: Path) -> tuple[Path, dict[str, str]]:
    return fakes.user_env(tmp), {"CUDA_HOME": "/opt/cuda-elsewhere"}  # a warning only


MATRIX: dict[str, Callable[[Path], tuple[Path, dict[str, str]]]] = {
    "good": _good, "no build needs": _no_build_needs, "no torch": _no_torch,
    "CPU-only torch": _cpu_torch, "compiler to fetch": _no_compiler, "mixed compiler": _mixed,
    "cu12 torch": _cu12_torch, "MAX_JOBS=abc": _bad_max_jobs,
    "TORCH_CUDA_ARCH_LIST=garbage": _bad_arch_list, "WHEELCUDA_CXX_STD=c++20": _bad_cxx_std,
    "host compiler too new": _host_too_new,
    "someone else's CUDA_HOME": _foreign_cuda_home,
    "compiler to fetch, sm_70": _fetch_then_old_arch,
    "compiler to fetch, no host compiler": _fetch_then_no_host_compiler,
}


#: Cases where the backend rightly answers otherwise: its frontend installs the build
#: needs (setuptools, wheel) into the build environment.
BACKEND_DIFFERS = {"no build needs"}


def _errors(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("ERROR: ")]


def _backend(py: Path, arch: str | None, env: dict[str, str]) -> str | None:
    """The backend's answer for the same build: None when it would build, else its error
    (get_requires' checks, then the build hook's plan; nothing fetched)."""
    ctx = Context.of({**os.environ, **env})
    config = Config(arch=arch)
    try:
        backend_plan.compiler_requirements(ctx, str(py), config)
        backend_plan.plan_build(ctx, config, Project("somepkg"), str(py), fetch=False)
    except WheelcudaError as exc:
        return exc.message
    return None


@pytest.mark.parametrize("case", list(MATRIX))
@pytest.mark.parametrize("arch", ["9.0", None])
def test_doctor_agrees_with_install(case: str, arch: str | None, tmp_path: Path,
                                    fake_uv: dict[str, str]) -> None:  # noqa: F811
    py, extra = MATRIX[case](tmp_path)
    # UV_OFFLINE: "somepkg" is not looked up on PyPI (the tests reach no index)
    env = {**fake_uv, "UV_OFFLINE": "1", **extra}
    args = ["--arch", arch] if arch else []
    doctor = run("doctor", "--python", str(py), *args, env=env)
    install = run("install", "--python", str(py), *args, "--explain", "somepkg", env=env)
    assert "Traceback" not in doctor.stderr + install.stderr
    assert (doctor.returncode == 0) == (install.returncode == 0), (doctor.stdout, install.stdout)
    if install.returncode:  # the whole plan and every error, as doctor names them
        assert "NOT OK" in install.stdout and _errors(install.stdout), install.stdout
        assert set(_errors(install.stdout)) <= set(_errors(doctor.stdout)), (
            install.stdout, doctor.stdout)
    assert not (tmp_path / "uv-called").exists()
    if case in BACKEND_DIFFERS:
        return
    backend = _backend(py, arch, env)
    assert (backend is None) == (doctor.returncode == 0), (backend, doctor.stdout)
    if backend is not None and "build environment" not in backend:  # its torch wording
        assert backend in doctor.stdout, (backend, doctor.stdout)


# --- the fetch plan: source, size, reachability --------------------------------------

#: A port nothing listens on: NVIDIA's archives "do not answer" for sure.
CLOSED = "http://127.0.0.1:9/"


def _cu128(tmp: Path) -> Path:
    site = fakes.torch(fakes.cu12_site(tmp / "site"), "2.9.1+cu128", "12.8", None)
    return fakes.python(tmp, [fakes.build_needs(site)])


def _clang(tmp: Path) -> str:
    folder = tmp / "clang-bin"
    folder.mkdir()
    return str(fake_clang(folder, "22.1.8"))


#: case -> (the environment, its variables, the source doctor and install name, whether
#: NVIDIA's archives were asked and did not answer, whether install would go on)
FETCH_MATRIX: dict[str, tuple[Callable[[Path], Path], Callable[[Path, str], dict[str, str]],
                              str, bool, bool]] = {
    "cu13 set missing": (lambda t: _no_compiler(t)[0], lambda t, url: {}, "store", False, True),
    "cu12, NVIDIA answers": (_cu128, lambda t, url: {"WHEELCUDA_REDIST_URL": url,
                                                     "WHEELCUDA_CLANG": "none"},
                             "redist", False, True),
    "cu12, NVIDIA silent, no clang": (_cu128, lambda t, url: {"WHEELCUDA_REDIST_URL": CLOSED,
                                                              "WHEELCUDA_CLANG": "none"},
                                      "redist", True, False),
    "cu12, NVIDIA silent, a clang serves": (
        _cu128, lambda t, url: {"WHEELCUDA_REDIST_URL": CLOSED, "WHEELCUDA_CLANG": _clang(t)},
        "clang", True, True),
    "cu12, --toolkit clang": (
        _cu128, lambda t, url: {"WHEELCUDA_TOOLKIT": "clang", "WHEELCUDA_CLANG": _clang(t)},
        "clang", False, True),
}


@pytest.fixture(scope="module")
def redist_mirror(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("mirror12")
    rs.cu12_mirror(folder)
    with rs.serve(folder) as running:
        yield running.url


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("case", list(FETCH_MATRIX))
def test_the_fetch_plan_is_one(case: str, tmp_path: Path, redist_mirror: str,
                               fake_uv: dict[str, str]) -> None:  # noqa: F811
    """doctor, ``install --explain`` and the backend read one fetch plan: the same
    source, the same size and origin, the same answer from NVIDIA's archives; doctor's
    verdict and install's agree, and the backend (metadata hooks: no download) builds
    exactly when they do."""
    make, variables, source, silent, goes_on = FETCH_MATRIX[case]
    py = make(tmp_path)
    env = {**fake_uv, "UV_OFFLINE": "1", **variables(tmp_path, redist_mirror)}
    doctor = run("doctor", "--json", "--python", str(py), "--arch", "9.0", env=env)
    found = json.loads(doctor.stdout)
    toolkit = found["toolkit"]
    assert toolkit["source"] == source, toolkit
    assert toolkit["fetched"] is False and toolkit["description"].startswith("to fetch: ")
    summary = toolkit["description"].removeprefix("to fetch: ")
    assert re.search(r"\d+ MB", summary), summary  # the size is said
    assert (toolkit["unreachable"] is not None) == silent, toolkit
    if silent:
        assert "could not connect" in toolkit["unreachable"]
    install = run("install", "--python", str(py), "--arch", "9.0", "--explain", "somepkg",
                  env=env)
    assert "Traceback" not in doctor.stderr + install.stderr
    assert (install.returncode == 0) == goes_on == (doctor.returncode == 0), (
        install.stdout, doctor.stdout)
    said = _flat(install.stdout)
    # what, how big, from where (NVIDIA's archives: listed file by file, from their URL)
    what, _, origin = summary.partition(", from ")
    assert _flat(what) in said and origin.rstrip(")") in said, (summary, install.stdout)
    if silent:
        assert "do not answer" in said
    backend = _backend(py, "9.0", env)
    assert (backend is None) == goes_on, backend
    if backend is not None:
        assert _flat(what) in _flat(backend) and "do not answer" in backend
