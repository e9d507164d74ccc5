"""Arch lists: every spelling users and torch use, the choice order, nvcc's limits."""

from __future__ import annotations

import pytest

from wheelcuda.errors import ArchError
from wheelcuda.rules import arch


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


def test_archs_cuda13_dropped() -> None:
    with pytest.raises(ArchError) as err:
        arch.check(arch.parse("6.1;9.0"), ["sm_75", "sm_90"], "13.0.88")
    assert "CUDA 13 dropped sm_61" in str(err.value) and "CUDA 12" in str(err.value)
