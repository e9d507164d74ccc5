"""Arch lists: every spelling users and torch use, the choice order, nvcc's limits."""

from __future__ import annotations

import pytest

from wheelcuda._rules import arch
from wheelcuda.errors import ArchError


@pytest.mark.parametrize(("text", "torch_form", "cmake_form"), [
    ("12.0", "12.0", "120-real"),
    ("9.0", "9.0", "90-real"),
    ("8.0;9.0", "8.0;9.0", "80-real;90-real"),
    ("9.0 8.0", "8.0;9.0", "80-real;90-real"),
    ("8.0,9.0+PTX", "8.0;9.0+PTX", "80-real;90"),
    ("9.0;9.0+PTX", "9.0+PTX", "90"),
    ("sm_120", "12.0", "120-real"),
    ("90a", "9.0a", "90a-real"),
    ("12.0f", "12.0f", "120f-real"),
    (" 10.0 ", "10.0", "100-real"),
])
def test_parse_forms(text: str, torch_form: str, cmake_form: str) -> None:
    archs = arch.parse(text)
    assert arch.to_torch(archs) == torch_form
    assert arch.to_cmake(archs) == cmake_form


@pytest.mark.parametrize("bad", ["", "  ", "ampere", "9.x", "1", "9.0+SASS", "sm_"])
def test_bad_lists_say_how_to_fix(bad: str) -> None:
    with pytest.raises(ArchError) as err:
        arch.parse(bad)
    assert "--arch" in str(err.value)


def test_choice_order() -> None:
    assert arch.choose("9.0", "8.0", ["12.0"], None)[1] == "--arch"
    assert arch.choose(None, "8.0", ["12.0"], None)[1] == "TORCH_CUDA_ARCH_LIST"
    archs, source = arch.choose(None, None, ["12.0"] * 8, None)
    assert (arch.to_torch(archs), source) == ("12.0", "visible GPUs")


def test_no_arch_and_no_gpu_is_a_clear_error() -> None:
    with pytest.raises(ArchError) as err:
        arch.choose(None, "", [], "nvidia-smi not found")
    assert "nvidia-smi not found" in str(err.value)
    assert "--arch 12.0" in str(err.value)


def test_nvcc_limits() -> None:
    codes = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_120"]
    arch.check(arch.parse("9.0a;12.0+PTX"), codes, "13.0.88")
    with pytest.raises(ArchError) as err:
        arch.check(arch.parse("12.0;7.0"), ["sm_75", "sm_90"], "12.4.131")
    assert "sm_70" in str(err.value) and "sm_120" in str(err.value)
    assert "12.4.131" in str(err.value)


@pytest.mark.parametrize(("text", "want"), [
    ("Ampere", "8.0;8.6+PTX"),
    ("Hopper;Ada", "8.9+PTX;9.0+PTX"),
    ("Ampere+Tegra", "8.7"),  # the combined name first, as torch replaces them
    ("Blackwell", "10.0;10.3;12.0;12.1+PTX"),
    ("Blackwell+Tegra 8.0", "8.0;11.0"),
])
def test_torch_arch_names(text: str, want: str) -> None:
    assert arch.to_torch(arch.parse(text)) == want


def test_native_means_the_visible_gpus() -> None:
    assert arch.choose("native", None, ["12.0"], None) == (arch.parse("12.0"), "visible GPUs")
    assert arch.choose(None, "native", ["9.0"], None)[1] == "visible GPUs"


def test_bad_list_in_the_environment_names_the_variable() -> None:
    with pytest.raises(ArchError) as err:
        arch.choose(None, "sm_banana", (), None)
    assert "TORCH_CUDA_ARCH_LIST='sm_banana'" in str(err.value)
    assert "unset TORCH_CUDA_ARCH_LIST" in str(err.value)


def test_an_arch_no_release_knows_and_the_clang_route_are_said_as_they_are() -> None:
    """`--arch 99.9` on the clang route said "nvcc 12.8.93 cannot build sm_999" and sent
    people to --toolkit redist, which it had just found unreachable."""
    codes = ["sm_75", "sm_80", "sm_90", "sm_100", "sm_120"]
    clang = "clang 22.1.8 + ptxas 12.8.93 (0123456789ab)"
    with pytest.raises(ArchError) as err:
        arch.check(arch.parse("99.9"), codes, "12.8.93", clang)
    said = str(err.value)
    assert "sm_999: no CUDA release builds for a GPU of that compute capability" in said
    assert "clang 22.1.8 + ptxas 12.8.93 builds" in said and "nvcc" not in said
    assert "redist" not in said and "--arch with your GPU's compute capability" in said
    with pytest.raises(ArchError) as err:  # a real arch the clang toolkit lacks
        arch.check(arch.parse("12.1"), codes, "12.8.93", clang)
    said = str(err.value)
    assert said.startswith("clang 22.1.8 + ptxas 12.8.93 cannot build sm_121")
    # the index's clang is the one running: not sent to fetch it again
    assert "WHEELCUDA_CLANG=index" not in said and "redist" not in said
    assert "a CUDA 12 toolkit whose ptxas builds it" in said
    with pytest.raises(ArchError) as err:  # an older clang: the index's is newer
        arch.check(arch.parse("12.1"), codes, "12.8.93", "clang 19.1.7 + ptxas 12.8.93 (ab)")
    assert "WHEELCUDA_CLANG=index: clang 22" in str(err.value)


def test_archs_cuda13_dropped() -> None:
    with pytest.raises(ArchError) as err:
        arch.check(arch.parse("6.1;9.0"), ["sm_75", "sm_90"], "13.0.88")
    assert "CUDA 13 dropped sm_61" in str(err.value) and "CUDA 12" in str(err.value)
