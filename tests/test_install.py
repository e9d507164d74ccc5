"""`wheelcuda install` and `run` on fake environments: every preflight failure gives its
message and the fix within seconds, and no build starts (a fake uv records any call)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import fakes
from tests.test_cli import fail, run
from wheelcuda._commands.install import failure, summary
from wheelcuda._probe import source
from wheelcuda._standalone import _progress


@pytest.fixture
def fake_uv(tmp_path: Path) -> dict[str, str]:
    """A `uv` first on PATH that records that it ran: a build would have started. Asked
    which release it would take (a read), it cannot say, as offline."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_text(f"#!/bin/sh\ncase \"$*\" in \"pip compile\"*) exit 2 ;; esac\n"
                  f"echo \"$@\" >> {tmp_path}/uv-called\nexit 0\n")
    uv.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "WHEELCUDA_INSTALLER": "uv"}


def no_build(tmp_path: Path) -> None:
    assert not (tmp_path / "uv-called").exists()


def test_explain_shows_what_would_run(tmp_path: Path, fake_uv: dict[str, str]) -> None:
    py = fakes.user_env(tmp_path)
    r = run("install", "--python", str(py), "--arch", "12.0", "--explain",
            "causal-conv1d==1.7.0", "--", "-v", env=fake_uv)
    assert r.returncode == 0, r.stderr
    assert "set        CAUSAL_CONV1D_FORCE_BUILD=TRUE" in r.stdout
    assert "set        TORCH_CUDA_ARCH_LIST=12.0" in r.stdout
    assert "set        MAX_JOBS=" in r.stdout
    assert f"--no-build-isolation --python {py} causal-conv1d==1.7.0 -v" in r.stdout
    no_build(tmp_path)


def test_user_settings_win(tmp_path: Path, fake_uv: dict[str, str]) -> None:
    py = fakes.user_env(tmp_path)
    env = {**fake_uv, "CAUSAL_CONV1D_FORCE_BUILD": "FALSE", "MAX_JOBS": "1"}
    r = run("install", "--python", str(py), "--arch", "9.0", "--explain", "causal-conv1d",
            env=env)
    assert "set        CAUSAL_CONV1D_FORCE_BUILD" not in r.stdout and "MAX_JOBS" not in r.stdout
    assert "keep       CAUSAL_CONV1D_FORCE_BUILD=FALSE   (yours)" in r.stdout


def test_unknown_package_variables_are_read_from_its_setup_py(
        tmp_path: Path, fake_uv: dict[str, str]) -> None:
    """A package outside the recipe table whose setup.py downloads a
    prebuilt wheel unless FLUX_FORCE_BUILD=TRUE (a name unlike the distribution's) gets
    the build-from-source values, with where they came from; the user's still win."""
    py = fakes.user_env(tmp_path)
    src = tmp_path / "bytedance-thing"
    src.mkdir()
    (src / "setup.py").write_text(
        "import os\nfrom setuptools import setup\n"
        "FORCE_BUILD = os.getenv('FLUX_FORCE_BUILD', 'FALSE') == 'TRUE'\n"
        "SKIP = os.getenv('FLUX_SKIP_CUDA_BUILD', 'FALSE') == 'TRUE'\n"
        "archs = os.environ.get('FLUX_CUDA_ARCHS', '80;90')\n"
        "setup(name='bytedance-thing')\n")
    r = run("install", "--python", str(py), "--arch", "9.0", "--explain", str(src), env=fake_uv)
    assert r.returncode == 0, r.stderr
    where = f"(read from {src}/setup.py)"
    assert f"set        FLUX_FORCE_BUILD=TRUE   {where}" in r.stdout
    assert f"set        FLUX_SKIP_CUDA_BUILD=FALSE   {where}" in r.stdout
    assert f"set        FLUX_CUDA_ARCHS=90   {where}" in r.stdout
    mine = run("install", "--python", str(py), "--arch", "9.0", "--explain", str(src),
               env={**fake_uv, "FLUX_FORCE_BUILD": "NO"})
    assert "keep       FLUX_FORCE_BUILD=NO   (yours)" in mine.stdout
    key = [line for line in r.stdout.splitlines() if line.startswith("cache key")]
    assert key != [line for line in mine.stdout.splitlines() if line.startswith("cache key")]


def test_install_runs_the_installer_and_passes_its_code(tmp_path: Path,
                                                       fake_uv: dict[str, str]) -> None:
    py = fakes.user_env(tmp_path)
    somewhere, x = tmp_path / "somewhere", tmp_path / "x"
    for folder in (somewhere, x):
        folder.mkdir()
        (folder / "setup.py").write_text("from setuptools import setup\nsetup()\n")
    r = run("install", "--python", str(py), "--arch", "9.0", str(somewhere), env=fake_uv)
    assert r.returncode == 0, r.stderr
    called = (tmp_path / "uv-called").read_text()
    assert called.startswith(f"pip install --no-build-isolation --python {py} {somewhere}")
    assert f"installed {somewhere} with uv in" in r.stderr and "cache key dir_" in r.stderr
    failing = {**fake_uv, "PATH": fake_uv["PATH"]}
    (Path(fake_uv["PATH"].split(":")[0]) / "uv").write_text("#!/bin/sh\nexit 42\n")
    r = run("install", "--python", str(py), "--arch", "9.0", str(x), env=failing)
    assert r.returncode == 42 and "uv exited with 42" in r.stderr


def test_torch_missing(tmp_path: Path, fake_uv: dict[str, str]) -> None:
    site = fakes.build_needs(fakes.cu13_site(tmp_path / "site"))
    fail(run("install", "--python", str(fakes.python(tmp_path, [site])), "--arch", "9.0", "x",
             env=fake_uv), "torch is not installed", "uv pip install --python")
    no_build(tmp_path)


def test_cpu_only_torch(tmp_path: Path, fake_uv: dict[str, str]) -> None:
    site = fakes.build_needs(fakes.torch(fakes.cu13_site(tmp_path / "site"), "2.14.1+cpu",
                                         None, None))
    fail(run("install", "--python", str(fakes.python(tmp_path, [site])), "--arch", "9.0", "x",
             env=fake_uv), "CPU-only build")
    no_build(tmp_path)


def test_torch_major_differs_from_compiler(tmp_path: Path, fake_uv: dict[str, str]) -> None:
    site = fakes.build_needs(fakes.torch(tmp_path / "site"))
    fakes.cu13_site(site, version="12.9.86")
    fail(run("install", "--python", str(fakes.python(tmp_path, [site])), "--arch", "9.0", "x",
             env=fake_uv), "built with CUDA 13.0 but the compiler is CUDA 12.9")
    no_build(tmp_path)


#: A fake uv that builds: each call logged with what the key's installer cache held
#: when it started; an install (not of the build needs: --only-binary) leaves a wheel of
#: each project folder it names in that cache, holding the call's arguments; the build
#: needs' install fails when asked to. Asked which release it takes, it cannot say.
FAKE_BUILDER = """import json, os, sys
args = sys.argv[1:]
if args[:2] == ["pip", "compile"]:
    sys.exit(2)
cache = os.environ.get("UV_CACHE_DIR", "")
held = sorted(os.listdir(cache)) if cache and os.path.isdir(cache) else []
with open({log!r}, "a") as f:
    f.write(json.dumps({{"args": args, "cache_held": held}}) + "\\n")
if "--only-binary" in args and {fail_bring!r}:
    print("error: no index answers for wheel", file=sys.stderr)
    sys.exit(2)
if args[:2] == ["pip", "install"] and "--only-binary" not in args and cache:
    os.makedirs(os.path.join(cache, "built"), exist_ok=True)
    for arg in args:
        if os.path.isfile(os.path.join(arg, "pyproject.toml")):
            name = os.path.basename(arg.rstrip("/")).replace("-", "_")
            with open(os.path.join(cache, "built", name + "-1.0-py3-none-any.whl"), "w") as f:
                f.write(" ".join(args))
"""


def builder(tmp: Path, *, fail_bring: bool = False, ninja: bool = True) -> dict[str, str]:
    """:data:`FAKE_BUILDER` first on PATH; without ``ninja``, a PATH with the host
    compiler but no ninja."""
    env = fakes.uv_on_path(tmp, FAKE_BUILDER.format(log=str(tmp / "calls"),
                                                    fail_bring=fail_bring))
    if not ninja:  # /usr/bin less ninja: gcc finds its assembler on PATH
        tools = tmp / "tools"
        tools.mkdir()
        for found in Path("/usr/bin").iterdir():
            if found.name != "ninja":
                (tools / found.name).symlink_to(found)
        env["PATH"] = f"{tmp / 'fakebin'}:{tools}"
    return env


def calls(tmp: Path) -> list[dict[str, list[str]]]:
    """The installs the fake uv ran (not its cache prune)."""
    log = tmp / "calls"
    rows = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [r for r in rows if r["args"][:2] == ["pip", "install"]]


def project(tmp: Path, name: str = "two-kernels") -> Path:
    folder = tmp / name
    folder.mkdir()
    (folder / "pyproject.toml").write_text(
        f'[build-system]\nrequires = ["setuptools>=64", "wheel"]\n'
        f'build-backend = "setuptools.build_meta"\n\n[project]\nname = "{name}"\n'
        'version = "1.0"\n')
    return folder


def test_build_needs_a_uv_venv_lacks_are_installed_before_the_build(tmp_path: Path) -> None:
    """Before: a venv made by `uv venv` (no setuptools, wheel, ninja or packaging) made
    install stop at once, asking for them; and doctor said NOT OK. install now installs
    what the target lacks into it, with the same installer, before the build."""
    site = fakes.torch(fakes.cu13_site(tmp_path / "site"))
    fakes.dist_info(site, "setuptools", "80.0")  # torch 2.14.1 brings it
    py = fakes.python(tmp_path, [site])
    env = builder(tmp_path, ninja=False)
    src = project(tmp_path)
    explained = run("install", "--python", str(py), "--arch", "9.0", "--explain", str(src),
                    env=env)
    assert explained.returncode == 0, explained.stderr
    assert (f"bring      wheel, ninja, packaging, missing in {py} (--no-build-isolation builds "
            "use the environment's own), first: ") in explained.stdout
    assert calls(tmp_path) == []  # --explain ran nothing
    r = run("install", "--python", str(py), "--arch", "9.0", str(src), env=env)
    assert r.returncode == 0, r.stderr
    first, build = calls(tmp_path)
    assert first["args"] == ["pip", "install", "--no-build-isolation", "--python", str(py),
                             "wheel", "ninja", "packaging", "--only-binary", ":all:"]
    assert build["args"][:5] == ["pip", "install", "--no-build-isolation", "--python", str(py)]
    assert f"installing wheel, ninja, packaging into {py} first" in r.stderr
    doctor = run("doctor", "--python", str(py), "--arch", "9.0", env=env)
    assert doctor.returncode == 0, doctor.stdout
    assert f"WARNING: wheel, ninja, packaging missing in {py}" in doctor.stdout
    assert f"fix: uv pip install --python {py} wheel ninja packaging" in doctor.stdout
    # from wheelcuda's wheel cache: nothing is built, so nothing is brought
    again = run("install", "--python", str(py), "--arch", "9.0", str(src), env=env)
    assert again.returncode == 0, again.stderr
    assert len(calls(tmp_path)) == 3 and "first" not in again.stderr


def test_nothing_to_build_needs_no_build_needs(tmp_path: Path) -> None:
    """Before: an install of what the target holds already stopped for setuptools and
    wheel, though the installer would build nothing. It now runs the installer, and
    installs no build need."""
    site = fakes.torch(fakes.cu13_site(tmp_path / "site"))
    fakes.dist_info(site, "causal-conv1d", "1.7.0")
    py = fakes.python(tmp_path, [site])
    env = builder(tmp_path, ninja=False)
    r = run("install", "--python", str(py), "--arch", "9.0", "causal-conv1d==1.7.0", env=env)
    assert r.returncode == 0, r.stderr
    assert [c["args"][-1] for c in calls(tmp_path)] == ["causal-conv1d==1.7.0"]
    assert "first" not in r.stderr and "missing" not in r.stderr


def test_build_needs_that_cannot_be_installed_stop_before_the_build(tmp_path: Path) -> None:
    site = fakes.torch(fakes.cu13_site(tmp_path / "site"))
    py = fakes.python(tmp_path, [site])
    env = builder(tmp_path, fail_bring=True, ninja=False)
    r = run("install", "--python", str(py), "--arch", "9.0", str(project(tmp_path)), "--",
            "--index-url", "https://example.org/simple", "--no-deps", env=env)
    fail(r, f"could not install the build needs setuptools, wheel, ninja, packaging into {py}",
         "no index answers for wheel", "fix: install them yourself, then install again: ")
    # from the index given after --, and no build after it
    assert [c["args"][-5:] for c in calls(tmp_path)] == [
        ["packaging", "--index-url", "https://example.org/simple", "--only-binary", ":all:"]]


def test_arch_unknown(tmp_path: Path, fake_uv: dict[str, str]) -> None:
    fail(run("install", "--python", str(fakes.user_env(tmp_path)), "x", env=fake_uv),
         "no GPU architecture given", "--arch 12.0")
    no_build(tmp_path)


def test_arch_unbuildable(tmp_path: Path, fake_uv: dict[str, str]) -> None:
    fail(run("install", "--python", str(fakes.user_env(tmp_path)), "--arch", "6.1", "x",
             env=fake_uv), "CUDA 13 dropped sm_61")
    no_build(tmp_path)


def test_host_compiler_not_accepted(tmp_path: Path, fake_uv: dict[str, str]) -> None:
    gcc = tmp_path / "gcc-16"
    gcc.write_text("#!/bin/sh\ncase \"$1\" in -dumpfullversion) echo 16.1.0;; "
                   "*) echo 'gcc (GCC) 16.1.0';; esac\n")
    gcc.chmod(0o755)
    fail(run("install", "--python", str(fakes.user_env(tmp_path)), "--arch", "9.0", "x",
             env={**fake_uv, "NVCC_CCBIN": str(gcc)}), "allows gcc up to 15")
    no_build(tmp_path)


def test_no_fetch(tmp_path: Path, fake_uv: dict[str, str]) -> None:
    site = fakes.build_needs(fakes.torch(tmp_path / "site"))
    fail(run("install", "--python", str(fakes.python(tmp_path, [site])), "--arch", "9.0",
             "--no-fetch", "x", env=fake_uv), "missing CUDA 13 wheels", "--no-fetch forbids",
         'cuda-toolkit[nvcc,cccl]==13.0.3')
    no_build(tmp_path)


def test_fetch_offline_names_the_wheels(tmp_path: Path) -> None:
    """A real uv, offline, with nothing cached: the error says which wheels to bring (and
    only then: a uv that fails for another reason gets its own words and the command)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    fakes.build_needs(fakes.torch(site))
    uv_dir = str(Path(sys.executable).parent)
    env = {"UV_OFFLINE": "1", "UV_CACHE_DIR": str(tmp_path / "uvcache"),
           "UV_FIND_LINKS": "", "PATH": f"{uv_dir}:/usr/bin:/bin", "WHEELCUDA_INSTALLER": "uv"}
    r = run("install", "--python", str(venv), "--arch", "9.0", "x", env=env)
    fail(r, "could not fetch cuda-toolkit[nvcc,cccl]==13.0.3", "nvidia-cuda-nvcc, nvidia-nvvm",
         "pip download -d wheels")
    toolkits = Path(os.environ["WHEELCUDA_CACHE_DIR"]) / "toolkits"
    assert [p.name for p in toolkits.iterdir() if not p.name.endswith(".lock")] == []
    broken = run("install", "--python", str(fakes.python(tmp_path, [site])), "--arch", "9.0",
                 "x", env=env)  # uv cannot use a stand-in interpreter: not an offline problem
    fail(broken, "could not fetch", "run it yourself to see everything:")
    assert "pip download" not in broken.stderr


def test_run_passes_the_environment_and_exit_code(tmp_path: Path) -> None:
    py = fakes.user_env(tmp_path)
    r = run("run", "--python", str(py), "--arch", "9.0", "--", "sh", "-c",
            'echo "$CUDA_HOME|$TORCH_CUDA_ARCH_LIST|$MAX_JOBS"; exit 3')
    assert r.returncode == 3
    home, archs, jobs = r.stdout.strip().split("|")
    assert Path(home, "bin/nvcc").exists() and archs == "9.0" and int(jobs) >= 1


def test_run_without_command_is_a_usage_error() -> None:
    r = run("run", "--arch", "9.0")
    assert r.returncode != 0 and "give the command after --" in r.stderr


def test_compile_summary_counts_compiles_and_split() -> None:
    log = ["-O3 -c a.cu -o a.o -gencode=arch=compute_90,code=sm_90 --split-compile=2",
           "-dc b.cu -o b.o --split-compile=2", "--version", "a.o b.o -o x.so -shared"]
    assert summary.compile_summary(log, "13.0.88") == \
        "2 CUDA compiles by nvcc 13.0.88, split-compile 2"
    assert summary.compile_summary(["-c a.cu -o a.o"], "13.0.88") == \
        "1 CUDA compile by nvcc 13.0.88"
    assert summary.compile_summary(["--version"], "13.0.88") == ""
    # the pool started a compile before one that came earlier: it marks the log
    assert summary.compile_summary([*log, f"{_progress.AHEAD_MARK} b.cu"], "13.0.88") == \
        "2 CUDA compiles by nvcc 13.0.88, split-compile 2, started longest first"
    # the clang toolkit is named as what compiles, never as nvcc
    assert summary.compile_summary(log[:1], "clang 22.1.8 + ptxas 12.8.93 (0123456789ab)") \
        == "1 CUDA compile by clang 22.1.8 + ptxas 12.8.93, split-compile 2"


@pytest.mark.parametrize(("var", "value"), [
    ("MAX_JOBS", "abc"), ("MAX_JOBS", "0"), ("MAX_JOBS", "-2"), ("WHEELCUDA_SPLIT_COMPILE", "2.5"),
    ("WHEELCUDA_SPLIT_COMPILE", "0"),
])
def test_bad_job_counts_stop_before_the_build(tmp_path: Path, fake_uv: dict[str, str],
                                              var: str, value: str) -> None:
    py = fakes.user_env(tmp_path)
    r = run("install", "--python", str(py), "--arch", "9.0", "causal-conv1d",
            env={**fake_uv, var: value})
    fail(r, f"{var}: {value!r} is not a whole number above 0", "fix:")
    no_build(tmp_path)


def test_an_sdist_without_its_headers_is_named_after_the_failed_build(
        tmp_path: Path, fake_uv: dict[str, str]) -> None:
    """Seen in the corpus: gaussian-splatting 2.11.0's sdist leaves out rasterize_points.h;
    the compiler's "No such file" was all a user saw. Now wheelcuda says why."""
    cut = fakes.tarball(tmp_path / "demo_ext-1.0.tar.gz", {
        "setup.py": "from setuptools import setup\nsetup(name='demo-ext')  # 'src/ext.cpp'\n",
        "src/ext.cpp": '#include <torch/extension.h>\n#include "rasterize_points.h"\n'
                       '#include "stdio.h"\n#include "here.h"\n#include "hip/hip_runtime.h"\n',
        "src/here.h": "#pragma once\n"})
    whole = fakes.tarball(tmp_path / "whole_ext-1.0.tar.gz", {"src/ext.cu": '#include "x.cuh"\n',
                                                       "src/x.cuh": ""})
    assert source.missing_sources(str(whole)) == []
    no_csrc = fakes.tarball(tmp_path / "fht-1.0.tar.gz", {
        "setup.py": "sources=['csrc/fht.cpp', 'csrc/fht_cuda.cu']\n"})
    assert source.missing_sources(str(no_csrc)) == [("setup.py", "csrc/fht.cpp"),
                                                    ("setup.py", "csrc/fht_cuda.cu")]
    assert source.missing_sources(str(cut), lambda h: h == "stdio.h") == [
        ("src/ext.cpp", "rasterize_points.h")]
    (Path(fake_uv["PATH"].split(":")[0]) / "uv").write_text("#!/bin/sh\nexit 1\n")
    py = fakes.user_env(tmp_path)
    r = run("install", "--python", str(py), "--arch", "9.0", str(cut), env=fake_uv)
    assert r.returncode == 1
    assert "demo_ext-1.0.tar.gz does not hold rasterize_points.h, which its build needs " \
           "(src/ext.cpp names it)" in r.stderr
    assert "stdio.h" not in r.stderr.split("does not hold")[1]


@pytest.mark.parametrize("unreachable", [None, "could not connect"])
def test_a_failure_on_the_clang_route_names_the_route_and_what_else_builds(
        unreachable: str | None) -> None:
    """A compile error on the clang route says that clang compiled (it takes most of
    what nvcc takes, not all) and which NVIDIA nvcc would build instead: never NVIDIA's
    archives when they were just found unreachable; nothing on NVIDIA's own nvcc."""
    from types import SimpleNamespace  # noqa: PLC0415

    from wheelcuda._values import SourceName  # noqa: PLC0415

    def resolved(source: SourceName) -> object:
        return SimpleNamespace(toolkit=SimpleNamespace(source=source,
                                                      by_clang=source is SourceName.CLANG),
                               compiler="clang 22.1.8 + ptxas 12.8.93 (0123456789ab)",
                               fetch=SimpleNamespace(unreachable=unreachable))

    said = failure._route_note(resolved(SourceName.CLANG))  # type: ignore[arg-type]
    assert said.startswith("these came from the clang toolkit (clang 22.1.8 + ptxas "
                           "12.8.93, CUDA 12 without NVIDIA's nvcc)")
    assert "--toolkit /path/to/cuda-12.x" in said
    assert ("--toolkit redist" in said) is (unreachable is None)
    assert failure._route_note(resolved(SourceName.REDIST)) == ""  # type: ignore[arg-type]


def test_build_requirements_the_source_declares_are_named_before_the_build(
        tmp_path: Path, fake_uv: dict[str, str]) -> None:
    """install builds without isolation, so nothing installs what a source declares for
    its build: inplace-abn 1.1.0's setup_requires=["setuptools_scm"] gave it the version
    0.0.0, and uv refused the wheel ("metadata version `0.0.0` does not match"). Named,
    with the command that installs it, before anything runs; torch is not asked for
    (the environment's is the build's)."""
    py = fakes.user_env(tmp_path)
    src = tmp_path / "inplace-abn"
    src.mkdir()
    (src / "setup.py").write_text(
        "from setuptools import setup\nsetup(name='inplace-abn', use_scm_version=True,\n"
        "      setup_requires=['setuptools_scm', 'torch'])\n")
    (src / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64", "torch", "cython<3", "ninja", '
        '"tomli; python_version < \'3.11\'"]\n')
    bin_dir = Path(fake_uv["PATH"].split(":")[0])
    (bin_dir / "ninja").write_text("#!/bin/sh\n")  # a system ninja serves as the wheel
    (bin_dir / "ninja").chmod(0o755)
    r = run("install", "--python", str(py), "--arch", "9.0", str(src), env=fake_uv)
    fail(r, "the build needs cython<3 (for inplace-abn); setuptools_scm (for inplace-abn), "
            f"missing in {py}", f"uv pip install --python {py} 'cython<3' setuptools_scm")
    assert "torch" not in r.stderr.split("missing in")[0] and "tomli" not in r.stderr
    no_build(tmp_path)


# --- --rebuild ------------------------------------------------------------------------


def test_rebuild_builds_again_and_replaces_the_kept_wheel(tmp_path: Path) -> None:
    """Before: the only way to build a kept wheel again was to uninstall it and run
    `cache clear PKG`; install itself took the kept wheel, and an installer that saw
    the same version installed did nothing. --rebuild passes the wheel cache by, empties
    the key's installer cache (which would hand back its old wheel), has uv reinstall
    the package and keeps the new wheel in place of the old."""
    py = fakes.user_env(tmp_path / "venv")
    env = builder(tmp_path)
    src = project(tmp_path)
    args = ("install", "--python", str(py), "--arch", "9.0", str(src))
    assert run(*args, env=env).returncode == 0
    kept = next((Path(os.environ["WHEELCUDA_CACHE_DIR"]) / "builds").glob(
        "two-kernels-*/wheels/two_kernels-1.0-py3-none-any.whl"))
    assert kept.read_text() == " ".join(calls(tmp_path)[0]["args"])
    cached = run(*args, env=env)
    assert cached.returncode == 0 and "from wheelcuda's wheel cache" in cached.stderr
    assert calls(tmp_path)[-1]["args"][-1] == str(kept)
    explained = run(*args, "--rebuild", "--explain", env=env)
    assert explained.returncode == 0, explained.stderr
    assert "rebuild    not taken from the wheel cache or an index; this key's uv cache " \
           "emptied first" in explained.stdout
    assert f"--python {py} {src} --reinstall-package two-kernels\n" in explained.stdout
    rebuilt = run(*args, "--rebuild", env=env)
    assert rebuilt.returncode == 0, rebuilt.stderr
    last = calls(tmp_path)[-1]
    assert last["args"][-3:] == [str(src), "--reinstall-package", "two-kernels"]
    assert last["cache_held"] == []  # the old build's wheel was not there to take
    assert "building with uv" in rebuilt.stderr
    assert kept.read_text() == " ".join(last["args"])  # the new one
    assert run(*args, env=env).returncode == 0  # and the next install takes it
    assert calls(tmp_path)[-1]["args"][-1] == str(kept)


def test_rebuild_asks_each_installer_to_reinstall_only_what_was_named(tmp_path: Path) -> None:
    """uv has a switch per package; pip's --force-reinstall reinstalls every dependency
    too (torch, into an emptied cache), so it goes with --no-deps, and only when every
    package named is installed (their dependencies are there); a mix is refused, as is
    a source whose name is not known before it is built."""
    from wheelcuda._commands.install import needs as install_plan  # noqa: PLC0415
    from wheelcuda._probe.given import PackageArgs  # noqa: PLC0415
    from wheelcuda._rules import installer  # noqa: PLC0415
    from wheelcuda.errors import WheelcudaError  # noqa: PLC0415

    site = tmp_path / "site"
    fakes.dist_info(site, "causal-conv1d", "1.7.0")
    dirs = [str(site)]
    uv, pip = installer.Uv(("uv",)), installer.Pip()

    def again(tool: installer.Tool, *specs: str) -> list[str]:
        names = [source.distribution_name(s) for s in specs]
        return install_plan.reinstall_args(dirs, tool, PackageArgs(specs), specs, names)

    assert again(uv, "causal-conv1d==1.7.0", "mamba-ssm==2.2.4") == [
        "--reinstall-package", "causal-conv1d", "--reinstall-package", "mamba-ssm"]
    assert again(pip, "causal-conv1d==1.7.0") == ["--force-reinstall", "--no-deps"]
    assert again(pip, "causal-conv1d==1.8.0") == []  # pip installs another release anyway
    with pytest.raises(WheelcudaError) as mixed:
        again(pip, "causal-conv1d==1.7.0", "mamba-ssm==2.2.4")
    assert "causal-conv1d==1.7.0 installed, mamba-ssm==2.2.4 not" in mixed.value.message
    assert mixed.value.fix == ("rebuild the installed ones on their own: wheelcuda install "
                               "--rebuild causal-conv1d==1.7.0; then install the others")
    with pytest.raises(WheelcudaError, match="not known before the build") as unnamed:
        again(uv, "git+https://example.org/x.git")
    assert "NAME @ URL" in str(unnamed.value.fix)


def test_what_may_build_decides_whether_build_needs_are_brought(tmp_path: Path) -> None:
    from wheelcuda._commands.install import needs as install_plan  # noqa: PLC0415
    from wheelcuda._probe.given import PackageArgs  # noqa: PLC0415

    site = tmp_path / "site"
    fakes.dist_info(site, "causal-conv1d", "1.7.0")
    dirs = [str(site)]

    def builds(*specs: str, extra: tuple[str, ...] = (), from_cache: bool = False,
               rebuild: bool = False, editable: tuple[str, ...] = ()) -> bool:
        return install_plan.builds(dirs, PackageArgs(specs, editable), specs, extra,
                                   from_cache=from_cache, rebuild=rebuild)

    assert not builds("causal-conv1d==1.7.0") and not builds("causal-conv1d>=1.6")
    assert not builds("causal-conv1d") and not builds("causal-conv1d==2.0", from_cache=True)
    assert builds("causal-conv1d==1.8.0") and builds("mamba-ssm") and builds("./ext")
    assert builds("causal-conv1d==1.7.0", rebuild=True)
    assert builds("causal-conv1d==1.7.0", extra=("-U",))
    assert builds("causal-conv1d==1.7.0", editable=("./ext",))
    assert builds("causal-conv1d @ https://example.org/c.tar.gz")
