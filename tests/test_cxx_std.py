"""A build's C++ standard raised to the one torch's headers need (_cxx_std.py,
_rules/cxxstd.py): torch 2.14's headers stop on ``-std=c++17`` (chamferdist 1.0.3,
spatial-correlation-sampler 0.5.0 failed under every route). The real build:
tests/integration/test_install.py."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from wheelcuda._rules import cxxstd, environ
from wheelcuda._standalone import _cxx_std


@pytest.mark.parametrize(("given", "wanted", "raised"), [
    (["-std=c++17", "-O3"], ["-std=c++20", "-O3"], ["c++17"]),
    (["--std=gnu++14", "-c", "a.cpp"], ["--std=gnu++20", "-c", "a.cpp"], ["gnu++14"]),
    (["-std", "c++1z", "x.cu"], ["-std", "c++20", "x.cu"], ["c++1z"]),
    (["-Xcompiler", "-fPIC,-std=c++17"], ["-Xcompiler", "-fPIC,-std=c++20"], ["c++17"]),
    (["-Xcompiler=-std=c++11"], ["-Xcompiler=-std=c++20"], ["c++11"]),
    (["-std=c++20", "-std=c++17"], ["-std=c++20"], ["c++17"]),  # nvcc refuses two
    (["-std=c++23", "-std=c99"], ["-std=c++23", "-std=c99"], []),  # newer, and C: kept
    (["-std=c++98"], ["-std=c++20"], ["c++98"]),
])
def test_each_spelling_is_raised(given: list[str], wanted: list[str], raised: list[str]) -> None:
    assert _cxx_std.raise_args(given, 20) == (wanted, raised)


def test_the_standard_torch_needs() -> None:
    assert cxxstd.from_header("#if !defined(_MSC_VER) && __cplusplus < 202002L\n#error") == 20
    assert cxxstd.from_header("#if !defined(_MSC_VER) && __cplusplus < 201703L") == 17
    assert cxxstd.from_header("nothing here") is None
    assert cxxstd.from_version("2.14.1+cu130") == 20 and cxxstd.from_version("2.13.0") == 17
    assert cxxstd.wanted(20, {}) == 20 and cxxstd.wanted(20, {cxxstd.VAR: "keep"}) is None
    assert cxxstd.wanted(17, {cxxstd.VAR: "23"}) == 23


def test_real_torch_headers(torch_header: str) -> None:
    assert cxxstd.from_header(torch_header) in (17, 20)


@pytest.fixture
def torch_header() -> str:
    """torch 2.13.0's ATen.h from the wheel on this machine's disk, when it is there."""
    wheel = next(Path("/opt/wheels").glob("torch-2.13.0*.whl"), None)
    if wheel is None:
        pytest.skip("no torch 2.13.0 wheel on this machine")
    with zipfile.ZipFile(wheel) as z:
        return io.TextIOWrapper(z.open("torch/include/ATen/ATen.h")).read()


def test_the_variables_a_build_gets() -> None:
    got = environ.build_environ("/h", (), {"PATH": "/usr/bin"}, "/homes", cxx_std=20)
    assert got[cxxstd.VAR] == "20" and got["CXX"] == "/h/bin/wheelcuda-c++"
    assert got[cxxstd.REAL_CXX_VAR] == "c++"
    mine = environ.build_environ("/h", (), {"CXX": "g++-12"}, "/homes", cxx_std=20)
    assert mine[cxxstd.REAL_CXX_VAR] == "g++-12"
    # run twice (eval "$(wheelcuda env)" again): the real one stays the user's
    again = environ.build_environ("/h", (), {**mine}, "/homes", cxx_std=20)
    assert again[cxxstd.REAL_CXX_VAR] == "g++-12"
    # no standard to raise (WHEELCUDA_CXX_STD=keep): the shim still runs every host
    # compile, so that it waits for its turn in the compile pool and is told
    kept = environ.build_environ("/h", (), {}, "/homes")
    assert kept["CXX"] == "/h/bin/wheelcuda-c++" and cxxstd.VAR not in kept
    # a tree at a path with a space: no shim (CXX is split on whitespace)
    assert "CXX" not in environ.build_environ("/h h", (), {}, "/homes", cxx_std=20)


@pytest.mark.parametrize(("cxx", "real"), [
    ("/other/homes/cu13-x/bin/wheelcuda-c++", "c++"),      # another tree's shim
    ("ccache /h/bin/wheelcuda-c++", "ccache c++"),          # CXX="ccache $CXX" after env
    ("ccache /other/bin/wheelcuda-c++ -m64", "ccache c++ -m64"),
    ("ccache g++-12", "ccache g++-12"),                     # a launcher of the user's own
])
def test_a_shim_in_the_users_cxx_is_never_what_the_shim_runs(cxx: str, real: str) -> None:
    """The shim runs WHEELCUDA_REAL_CXX: a shim there would run itself for ever (ccache in
    front of this tree's), or another tree's compilers, and the key would name it."""
    got = environ.build_environ("/h", (), {"CXX": cxx}, "/homes", cxx_std=20)
    assert got["CXX"] == "/h/bin/wheelcuda-c++" and got[cxxstd.REAL_CXX_VAR] == real


def test_the_names_agree() -> None:
    """The standalone module and the rules name the same variables (neither imports the
    other: the module runs inside builds on the standard library alone)."""
    assert (cxxstd.VAR, cxxstd.REAL_CXX_VAR, cxxstd.LOG_MARK) == (
        _cxx_std.VAR, _cxx_std.REAL_VAR, _cxx_std.LOG_MARK)
    line = f"{_cxx_std.LOG_MARK} c++17 -> c++20 (nvcc)"
    assert cxxstd.raised([line, "nvcc -c a.cu", line]) == (2, {"c++17"})


def test_the_key_holds_the_compiler_the_shim_runs() -> None:
    """After `eval "$(wheelcuda env)"` CXX is a tree's shim, a path of this machine: the
    key holds the compiler it runs instead, so the same build keeps its key."""
    from wheelcuda._rules import buildkey  # noqa: PLC0415

    shimmed = {"CXX": "/home/u/.cache/wheelcuda/homes/cu13-abc/bin/wheelcuda-c++",
               cxxstd.REAL_CXX_VAR: "g++-12"}
    assert buildkey.build_variables({}, shimmed)["CXX"] == "g++-12"
    assert buildkey.build_variables({}, {"CXX": "g++-12"})["CXX"] == "g++-12"
    # a shim with no compiler named runs c++, what a build with no CXX runs: one key
    assert "CXX" not in buildkey.build_variables({}, {"CXX": shimmed["CXX"]})
    assert buildkey.build_variables({}, {"CXX": shimmed["CXX"]}) == buildkey.build_variables(
        {}, {})


def test_the_shim_runs_a_compiler_given_with_words(tmp_path: Path) -> None:
    """CXX="ccache g++" is a command torch's ninja rule and CMake take: the shim runs it,
    the standard raised."""
    import os  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    fake = tmp_path / "cc"
    fake.write_text("#!/bin/sh\necho \"$@\"\n")
    fake.chmod(0o755)
    env = {"PATH": os.environ["PATH"], _cxx_std.REAL_VAR: f"{fake} --wrapped",
           _cxx_std.VAR: "20", "WHEELCUDA_NVCC_LOG": str(tmp_path / "log")}
    done = subprocess.run([sys.executable, "-IS", _cxx_std.__file__, "-std=c++17", "-c", "a.cpp"],
                          env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["--wrapped", "-std=c++20", "-c", "a.cpp"]
    assert (tmp_path / "log").read_text() == f"{_cxx_std.LOG_MARK} c++17 -> c++20 (host)\n"
    keep = subprocess.run([sys.executable, "-IS", _cxx_std.__file__, "-std=c++17"],
                          env={**env, _cxx_std.VAR: "keep"}, capture_output=True, text=True,
                          check=True)
    assert keep.stdout.split() == ["--wrapped", "-std=c++17"]
    assert cxxstd.wanted(20, {cxxstd.VAR: "0"}) is None
    assert cxxstd.variables(20, "/a path/with space", {}) == {}  # CXX is split on spaces


@pytest.mark.parametrize(("value", "refused"), [
    ("", False), ("keep", False), ("KEEP", False), ("0", False), ("17", False), ("20", False),
    ("23", False), ("banana", True), ("c++20", True), ("21", True), ("-1", True)])
def test_a_cxx_std_that_is_no_standard_is_refused(value: str, refused: bool) -> None:
    """A typo (``c++20``) used to keep each build's own standard without a word."""
    found = cxxstd.problems({"WHEELCUDA_CXX_STD": value})
    assert bool(found) == refused
    if refused:
        assert found[0].is_error and "export WHEELCUDA_CXX_STD=20" in (found[0].fix or "")
