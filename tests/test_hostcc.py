"""Host compiler: nvcc's limits from host_config.h, the compiler nvcc will run, the verdict."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import NoReturn

import pytest

from wheelcuda._context import Context
from wheelcuda._probe import hostcc as hostcc_probe
from wheelcuda._rules import hostcc
from wheelcuda._rules.checks import Problem
from wheelcuda._rules.hostcc import HostLimits
from wheelcuda._values import HostCompiler

#: The environment `make wheels-venv` makes with NVIDIA's CUDA 13 wheels (the path make
#: exports, else the repository's default; as tests/integration/conftest.py finds it).
WHEELS_VENV = Path(os.environ.get("WHEELCUDA_TEST_WHEELS_VENV",
                                  Path(__file__).resolve().parents[1] / ".venv-wheels"))


def real_headers(name: str) -> list[Path]:
    """``include/<name>`` in that environment's CUDA 13 wheels, then in the system
    toolkit: those on this machine, found at run time."""
    wheels = sorted(WHEELS_VENV.glob(f"lib/python*/site-packages/nvidia/cu13/include/{name}"))
    return [p for p in [*wheels, Path("/usr/local/cuda/include", name)] if p.is_file()]


def no_real_header(name: str) -> NoReturn:
    """Fail under `make test` (WHEELCUDA_REQUIRE_INTEGRATION=1), else skip: the
    integration tests' policy, so CI can never pass by skipping."""
    message = f"no real {name} on this machine: run `make wheels-venv`"
    if os.environ.get("WHEELCUDA_REQUIRE_INTEGRATION"):
        pytest.fail(message)
    pytest.skip(message)


def cuda_major(header: Path) -> int:
    """The toolkit's major version, from the cuda.h next to its crt/ folder."""
    found = re.search(r"#define CUDA_VERSION (\d+)", (header.parents[1] / "cuda.h").read_text())
    assert found is not None, f"no CUDA_VERSION in {header.parents[1] / 'cuda.h'}"
    return int(found.group(1)) // 1000


#: Every real host_config.h here; [None] when there is none, so the test still runs
#: (and fails or skips saying why) instead of vanishing from the run.
REAL_HEADERS: list[Path | None] = [*real_headers("crt/host_config.h")] or [None]

# From CUDA 13.0's crt/host_config.h, error texts and conditions shortened. Grace clang
# and HOS clang have checks of their own, before the plain clang one.
EXCERPT_13_0 = """\
#if defined(__GRCO_CLANG_COMPILER__)
#if (__GRCO_CLANG_COMPILER__ == 1) && ((__clang_major__ < 16) || (__clang_major__ > 20))
#error -- unsupported Grace clang version! The version must be 16.x to 20.x.
#endif  /* (__GRCO_CLANG_COMPILER__ == 1) && ... */
#endif /* __GRCO_CLANG_COMPILER__  */
#if defined(__GNUC__)

#if __GNUC__ > 15

#error -- unsupported GNU version! gcc versions later than 15 are not supported!

#endif /* __GNUC__ > 15 */

#if defined(__HORIZON__)
#if (__clang_major__ >= 21) || (__clang_major__ < 3) || ((__clang_major__ == 3) && ...
#error -- unsupported HOS clang version! The version must be must be less than 21 ...
#endif  /* (__clang_major__ >= 21) || (__clang_major__ < 3) */
#endif /* __HORIZON__  */

#if defined(__clang__) && !defined(__ibmxl_vrm__) && !defined(__ICC) && \\
    !defined(__HORIZON__) && !defined(__APPLE__) && !defined(__GRCO_CLANG_COMPILER__)

#if (__clang_major__ >= 21) || (__clang_major__ < 3) || ((__clang_major__ == 3) && ...
#error -- unsupported clang version! clang version must be less than 21 and greater ...
#endif  /* (__clang_major__ >=  21) || (__clang_major__ < 3) */
#endif
#endif /* __GNUC__ */
"""


def probe(command: str) -> HostCompiler:
    """The probe as a build under CC=command sees it (CC is what nvcc gets as -ccbin)."""
    return hostcc_probe.probe_host_compiler(Context.current().with_env(CC=command))


def text(problem: Problem | None) -> str:
    return str(problem.error()) if problem else ""


def script(path: Path, version_banner: str, full_version: str = "", code: int = 0) -> Path:
    """A fake compiler answering ``--version`` and ``-dumpfullversion``."""
    path.write_text(
        "#!/bin/sh\n"
        f"if [ \"$1\" = --version ]; then printf '%s\\n' '{version_banner}'; exit {code}; fi\n"
        f"if [ \"$1\" = -dumpfullversion ]; then printf '%s\\n' '{full_version}'; exit {code}; fi\n"
        "exit 1\n"
    )
    path.chmod(0o755)
    return path


# crt/host_config.h -----------------------------------------------------------------


def test_parse_excerpt_of_cuda_13_0() -> None:
    assert hostcc.parse_host_config(EXCERPT_13_0) == HostLimits(15, 20)


def test_parse_reads_plain_clang_not_grace_or_hos_clang() -> None:
    text = EXCERPT_13_0.replace("__clang_major__ > 20", "__clang_major__ > 30")
    text = text.replace(
        "__HORIZON__)\n#if (__clang_major__ >= 21)", "__HORIZON__)\n#if (__clang_major__ >= 40)"
    )
    assert "__clang_major__ >= 40" in text
    assert hostcc.parse_host_config(text) == HostLimits(15, 20)


def test_parse_cuda_12_style() -> None:
    text = (
        "#if __GNUC__ > 13\n#error -- unsupported GNU version!\n#endif\n"
        "#if defined(__clang__) && !defined(__ibmxl_vrm__) && !defined(__ICC)\n"
        "#if (__clang_major__ >= 18) || (__clang_major__ < 3)\n#error\n#endif\n#endif\n"
    )
    assert hostcc.parse_host_config(text) == HostLimits(13, 17)


def test_parse_unknown_text() -> None:
    assert hostcc.parse_host_config("/* nothing here */") == HostLimits(None, None)


@pytest.mark.parametrize("header", REAL_HEADERS, ids=str)
def test_parse_real_header(header: Path | None) -> None:
    if header is None:
        no_real_header("crt/host_config.h")
    limits = hostcc.parse_host_config(header.read_text(errors="replace"))
    assert limits.gcc_max_major is not None
    assert limits.clang_max_major is not None
    if cuda_major(header) >= 13:  # 13.0 allows gcc 15 and clang 20; later ones never fewer
        assert limits.gcc_max_major >= 15
        assert limits.clang_max_major >= 20


# Which compiler nvcc runs -----------------------------------------------------------


@pytest.mark.parametrize(
    ("environ", "command"),
    [
        ({}, "gcc"),
        ({"CXX": "g++-13"}, "gcc"),  # neither torch nor nvcc reads CXX
        ({"NVCC_CCBIN": "g++-12"}, "g++-12"),
        ({"NVCC_CCBIN": "g++-12", "CC": "gcc-11"}, "gcc-11"),  # torch: -ccbin $CC wins
        ({"NVCC_CCBIN": "g++-12", "CC": ""}, "g++-12"),
        ({"NVCC_PREPEND_FLAGS": "-O2 -ccbin=/opt/c++", "CC": "gcc-11"}, "gcc-11"),
        ({"NVCC_PREPEND_FLAGS": "-ccbin /opt/c++", "NVCC_CCBIN": "g++-12"}, "/opt/c++"),
        ({"NVCC_APPEND_FLAGS": "--compiler-bindir /usr/bin", "CC": "gcc-11"}, "/usr/bin"),
        ({"NVCC_APPEND_FLAGS": "--compiler-bindir=/opt/bin"}, "/opt/bin"),
        ({"NVCC_APPEND_FLAGS": "-ccbin"}, "gcc"),  # no value: nvcc itself will complain
    ],
)
def test_host_compiler_command(environ: dict[str, str], command: str) -> None:
    assert hostcc.host_compiler_command(environ) == command


# Probing ---------------------------------------------------------------------------


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no gcc on PATH")
def test_probe_real_gcc() -> None:
    cc = probe("gcc")
    assert (cc.command, cc.path, cc.family, cc.reason) == ("gcc", shutil.which("gcc"), "gcc", None)
    assert re.fullmatch(r"\d+\.\d+\.\d+", cc.version or "")
    assert probe("gcc") is cc  # cached per process


def test_probe_fake_clang(tmp_path: Path) -> None:
    banner = "Ubuntu clang version 18.1.3 (1ubuntu1)\nTarget: x86_64-pc-linux-gnu"
    fake = script(tmp_path / "clang++-18", banner)
    assert probe(str(fake)) == HostCompiler(
        str(fake), str(fake), "clang", "18.1.3", None
    )


def test_probe_gcc_trusts_dumpfullversion_over_the_banner(tmp_path: Path) -> None:
    fake = script(tmp_path / "g++", "g++ (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3)", "11.4.1")
    assert probe(str(fake)).version == "11.4.1"


def test_probe_directory_means_its_gcc(tmp_path: Path) -> None:
    fake = script(tmp_path / "gcc", "gcc (Debian 14.2.0-19) 14.2.0", "14.2.0")
    cc = probe(str(tmp_path))
    assert (cc.path, cc.family, cc.version) == (str(fake), "gcc", "14.2.0")


def test_probe_missing_compiler(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert probe("g++-99") == HostCompiler(
        "g++-99", None, "unknown", None, "g++-99 not found on PATH"
    )


def test_probe_failing_compiler(tmp_path: Path) -> None:
    fake = script(tmp_path / "cc", "licence expired", code=3)
    cc = probe(str(fake))
    assert (cc.family, cc.version) == ("unknown", None)
    assert "exit code 3" in (cc.reason or "")
    assert "licence expired" in (cc.reason or "")


def test_probe_unknown_compiler(tmp_path: Path) -> None:
    fake = script(
        tmp_path / "icpx", "Intel(R) oneAPI DPC++/C++ Compiler 2024.0.0 (2024.0.0.20231017)"
    )
    cc = probe(str(fake))
    assert (cc.family, cc.version) == ("unknown", None)
    assert cc.reason == f"no version in the output of `{fake} --version`"


FSF = "Copyright (C) 2023 Free Software Foundation, Inc."


@pytest.mark.parametrize(
    ("banner", "family", "version"),
    [
        (f"gcc (Debian 12.2.0-14+deb12u1) 12.2.0\n{FSF}", "gcc", "12.2.0"),
        (f"c++ (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0\n{FSF}", "gcc", "13.3.0"),
        ("gcc (GCC) 11.4.1 20231218 (Red Hat 11.4.1-3)", "gcc", "11.4.1"),
        ("clang version 20.1.8 (https://github.com/llvm/llvm-project 87f0227)", "clang", "20.1.8"),
        ("Apple clang version 15.0.0 (clang-1500.3.9.4)", "clang", "15.0.0"),
        ("", "unknown", None),
    ],
)
def test_banners(banner: str, family: str, version: str | None) -> None:
    assert hostcc.compiler_family(banner) == family
    assert hostcc.banner_version(banner) == version


# The verdict -----------------------------------------------------------------------

LIMITS = HostLimits(gcc_max_major=15, clang_max_major=20)


def gcc(version: str | None) -> HostCompiler:
    return HostCompiler("gcc", "/usr/bin/gcc", "gcc", version, None if version else "why")


def test_accepts_gcc_12_under_15() -> None:
    assert hostcc.check_host_compiler(gcc("12.2.0"), LIMITS, "13.0") is None
    assert hostcc.check_host_compiler(gcc("15.2.0"), LIMITS, "13.0") is None


def test_rejects_gcc_16_with_the_fix() -> None:
    message = text(hostcc.check_host_compiler(gcc("16.1.0"), LIMITS, "13.0"))
    assert "nvcc 13.0" in message
    assert "gcc 16.1.0 (/usr/bin/gcc)" in message
    assert "up to 15" in message
    assert "fix: apt-get install g++-15 && export NVCC_CCBIN=g++-15" in message


def test_rejects_clang_21_with_a_clang_fix() -> None:
    clang = HostCompiler("clang++", "/usr/bin/clang++", "clang", "21.1.0", None)
    message = text(hostcc.check_host_compiler(clang, LIMITS, "13.0"))
    assert "clang 21.1.0" in message
    assert "up to 20" in message
    assert "apt-get install clang-20 && export NVCC_CCBIN=clang++-20" in message


def test_unknown_is_not_a_rejection() -> None:
    assert hostcc.check_host_compiler(gcc(None), LIMITS, "13.0") is None
    assert hostcc.check_host_compiler(gcc("16.1.0"), HostLimits(None, None), "13.0") is None
    odd = HostCompiler("icpx", "/opt/icpx", "unknown", "2024.0.0", None)
    assert hostcc.check_host_compiler(odd, LIMITS, "13.0") is None


def test_missing_compiler_is_a_rejection() -> None:
    missing = HostCompiler("g++-99", None, "unknown", None, "g++-99 not found on PATH")
    message = text(hostcc.check_host_compiler(missing, LIMITS, "13.0"))
    assert "g++-99 not found" in message
    assert "fix:" in message
