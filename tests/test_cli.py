"""The command line as a person meets it: data on stdout, messages with a fix on stderr,
exit 1 for problems (never a traceback), 2 for usage errors, nothing half-written."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests import fakes


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = fakes.pythonpath_env()
    full["WHEELCUDA_CACHE_DIR"] = os.environ["WHEELCUDA_CACHE_DIR"]
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "wheelcuda", *args], capture_output=True,
                          text=True, env=full, check=False)


def fail(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    for needle in needles:
        assert needle in result.stderr


@pytest.fixture
def good(tmp_path: Path) -> Path:
    site = fakes.build_needs(fakes.torch(fakes.cu13_site(tmp_path / "site")))
    return fakes.python(tmp_path, [site])


def test_env_exports_a_tree(good: Path, isolated: Path) -> None:
    r = run("env", "--python", str(good), "--arch", "12.0")
    assert r.returncode == 0, r.stderr
    assert "export CUDA_HOME='" + str(isolated / "homes") in r.stdout
    assert "export TORCH_CUDA_ARCH_LIST='12.0'" in r.stdout
    assert "export CUDAARCHS='120-real'" in r.stdout


def test_env_twice_does_not_grow_path(good: Path) -> None:
    script = (f'eval "$({sys.executable} -m wheelcuda env --python {good} --arch 9.0)" && '
              f'A="$PATH" && eval "$({sys.executable} -m wheelcuda env --python {good} '
              '--arch 9.0)" && [ "$A" = "$PATH" ] && printf %s "$PATH"')
    env = fakes.pythonpath_env()
    env["WHEELCUDA_CACHE_DIR"] = os.environ["WHEELCUDA_CACHE_DIR"]
    r = subprocess.run(["sh", "-c", script], capture_output=True, text=True, env=env,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split(":").count(r.stdout.split(":")[0]) == 1


def test_env_json_and_fish(good: Path) -> None:
    data = json.loads(run("env", "--python", str(good), "--arch", "9.0", "--shell", "json").stdout)
    assert data["schema"] == 1 and data["variables"]["TORCH_CUDA_ARCH_LIST"] == "9.0"
    assert "set -gx CUDA_HOME" in run("env", "--python", str(good), "--arch", "9.0",
                                      "--shell", "fish").stdout


def test_home_and_doctor(good: Path) -> None:
    home = run("home", "--python", str(good))
    assert home.returncode == 0 and Path(home.stdout.strip(), "bin/nvcc").exists()
    doc = run("doctor", "--python", str(good), "--arch", "12.0")
    assert doc.returncode == 0, doc.stdout + doc.stderr
    assert "OK: a build would work" in doc.stdout
    report = json.loads(run("doctor", "--python", str(good), "--arch", "9.0", "--json").stdout)
    assert report["ok"] is True and report["torch"]["cuda"] == "13.0"
    assert report["arch"] == {"list": "9.0", "source": "--arch"}


def test_foreign_cuda_home_is_named(good: Path) -> None:
    r = run("env", "--python", str(good), "--arch", "9.0", env={"CUDA_HOME": "/opt/cuda-12.4"})
    assert r.returncode == 0
    assert "CUDA_HOME=/opt/cuda-12.4 was set; wheelcuda's tree wins" in r.stderr
    doc = run("doctor", "--python", str(good), "--arch", "9.0",
              env={"CUDA_HOME": "/opt/cuda-12.4"})
    assert "WARNING: CUDA_HOME=/opt/cuda-12.4 is set" in doc.stdout


# --- bad input: each gives exit 1, a message with the fix, and no traceback ---------

def test_python_missing(tmp_path: Path) -> None:
    fail(run("env", "--python", str(tmp_path / "nope")), "no Python at", "fix:")


def test_python_folder_without_interpreter(tmp_path: Path) -> None:
    fail(run("home", "--python", str(tmp_path)), "holds no bin/python", "uv venv")


def test_python_that_is_not_python(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    fail(run("home", "--python", str(fake)), "did not answer as a Python interpreter")
    plain = tmp_path / "data"
    plain.write_text("")
    fail(run("home", "--python", str(plain)), "is not executable")


def test_active_venv_that_vanished(tmp_path: Path) -> None:
    fail(run("home", env={"VIRTUAL_ENV": str(tmp_path / "gone")}), "no Python at")


def test_no_nvidia_wheels(tmp_path: Path) -> None:
    site = fakes.torch(tmp_path / "site")
    py = fakes.python(tmp_path, [site])
    fail(run("env", "--python", str(py), "--arch", "9.0", "--no-fetch"), "missing CUDA 13 wheels",
         f"wheelcuda fetch --python {py} ",
         f'uv pip install --python {py} "cuda-toolkit[nvcc,cccl]==13.0.3"')


def test_cu12_wheels_only(tmp_path: Path) -> None:
    site = fakes.torch(fakes.cu12_site(tmp_path / "site"), "2.7.1+cu128", "12.8", None)
    py = fakes.python(tmp_path, [site])
    wheels = {"WHEELCUDA_TOOLKIT": "wheels"}  # auto fetches NVIDIA's archives instead
    r = run("env", "--python", str(py), "--arch", "9.0", env=wheels)
    fail(r, "hold no compiler", "bin/nvcc", "no PyPI wheel holds the CUDA 12 compiler")
    doc = run("doctor", "--python", str(py), "--arch", "9.0", env=wheels)
    assert doc.returncode == 1 and "INCOMPLETE" in doc.stdout


def test_mixed_set(tmp_path: Path) -> None:
    site = fakes.torch(fakes.cu13_site(tmp_path / "site", cuda_nvcc="13.3.20"))
    fail(run("home", "--python", str(fakes.python(tmp_path, [site]))), "different CUDA releases")


def test_cpu_only_torch(tmp_path: Path) -> None:
    site = fakes.torch(fakes.cu13_site(tmp_path / "site"), "2.14.1+cpu", None, None)
    py = fakes.python(tmp_path, [site])
    fail(run("env", "--python", str(py), "--arch", "9.0"), "CPU-only build")
    assert run("doctor", "--python", str(py), "--arch", "9.0").returncode == 1


def test_torch_missing_env_works_doctor_fails(tmp_path: Path) -> None:
    py = fakes.python(tmp_path, [fakes.cu13_site(tmp_path / "site")])
    r = run("env", "--python", str(py), "--arch", "9.0")
    assert r.returncode == 0 and "torch is not installed" in r.stderr
    doc = run("doctor", "--python", str(py), "--arch", "9.0")
    assert doc.returncode == 1 and "torch is not installed" in doc.stdout


def test_torch_cu13_with_compiler_cu12_named(tmp_path: Path) -> None:
    site = fakes.torch(tmp_path / "site", "2.14.1+cu130", "13.0", "==13.0.3")
    fakes.cu13_site(site, version="12.9.86")
    fail(run("env", "--python", str(fakes.python(tmp_path, [site])), "--arch", "9.0"),
         "built with CUDA 13.0 but the compiler is CUDA 12.9")


def test_arch_nvcc_cannot_build(good: Path) -> None:
    fail(run("env", "--python", str(good), "--arch", "12.1"), "cannot build sm_121")


def test_arch_cuda13_dropped_says_cuda12(good: Path) -> None:
    """CUDA 13 dropped archs below 7.5: sm_61 is not 'install a newer compiler' but 'CUDA 12'."""
    r = run("env", "--python", str(good), "--arch", "6.1")
    fail(r, "CUDA 13 dropped sm_61", "compiler from NVIDIA's CUDA 12 archives")
    assert "newer compiler" not in r.stderr
    doctor = run("doctor", "--python", str(good), "--arch", "6.1")
    assert doctor.stdout.count("dropped sm_61") == 1  # checked before the fetch, once


def test_arch_list_variable_is_named(good: Path) -> None:
    fail(run("env", "--python", str(good), env={"TORCH_CUDA_ARCH_LIST": "garbage"}),
         "TORCH_CUDA_ARCH_LIST='garbage'", "unset TORCH_CUDA_ARCH_LIST")


def test_torch_arch_names_are_accepted(good: Path) -> None:
    r = run("env", "--python", str(good), env={"TORCH_CUDA_ARCH_LIST": "Hopper"})
    assert r.returncode == 0, r.stderr
    assert "export TORCH_CUDA_ARCH_LIST='9.0+PTX'" in r.stdout


def test_arch_unknown_without_gpu(good: Path) -> None:
    fail(run("env", "--python", str(good)), "no GPU architecture given and no GPU seen",
         "--arch 12.0")


def test_arch_malformed(good: Path) -> None:
    fail(run("env", "--python", str(good), "--arch", "ampere"), "not a GPU architecture")


def test_host_compiler_too_new(good: Path, tmp_path: Path) -> None:
    gcc = tmp_path / "gcc-16"
    gcc.write_text("#!/bin/sh\ncase \"$1\" in -dumpfullversion) echo 16.1.0;; "
                   "*) echo 'gcc (GCC) 16.1.0';; esac\n")
    gcc.chmod(0o755)
    fail(run("env", "--python", str(good), "--arch", "9.0", env={"NVCC_CCBIN": str(gcc)}),
         "gcc 16.1.0", "allows gcc up to 15", "NVCC_CCBIN=g++-15")


def test_cache_not_writable(good: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    fail(run("home", "--python", str(good), env={"WHEELCUDA_CACHE_DIR": str(blocker / "c")}),
         "cannot create the cache folder", "WHEELCUDA_CACHE_DIR")


def test_failure_leaves_nothing_half_written(tmp_path: Path, isolated: Path) -> None:
    site = fakes.torch(fakes.cu13_site(tmp_path / "site"))
    broken = site / "nvidia/cu13/bin/nvcc"
    broken.write_text("#!/bin/sh\nexit 7\n")  # nvcc that fails its --version
    r = run("home", "--python", str(fakes.python(tmp_path, [site])))
    fail(r, "failed with exit code 7")
    homes = isolated / "homes"
    assert [p.name for p in homes.iterdir() if not p.name.endswith(".lock")] == []


@pytest.mark.parametrize("args", [[], ["env", "--shell", "tcsh"], ["frobnicate"],
                                  ["doctor", "--bogus"]])
def test_usage_errors_exit_2(args: list[str]) -> None:
    r = run(*args)
    assert r.returncode == 2 and "usage:" in r.stderr
