"""Locating components and torch in fake environments of both layouts, and the checks."""

from __future__ import annotations

from pathlib import Path

from tests import fakes
from wheelcuda._data import catalog
from wheelcuda._probe import locate
from wheelcuda._probe import torch as torchinfo
from wheelcuda._rules import checks


def test_cu13_set_found_with_versions(tmp_path: Path) -> None:
    site = fakes.cu13_site(tmp_path / "site")
    inv = locate.locate([str(site)])
    nvcc = inv.get("cuda_nvcc", 13)
    assert nvcc is not None and nvcc.version == "13.0.88" and nvcc.complete
    assert inv.majors() == (13,)
    assert checks.component_problems(inv, 13, None, "/py") == []


def test_first_root_wins(tmp_path: Path) -> None:
    a = fakes.cu13_site(tmp_path / "a", version="13.0.88")
    b = fakes.cu13_site(tmp_path / "b", version="13.1.80")
    inv = locate.locate([str(b), str(a)])
    found = inv.get("cuda_nvcc", 13)
    assert found is not None and found.root == str(b)


def test_shared_cu13_folder_of_other_wheels_is_not_a_component(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "nvidia/cu13/lib").mkdir(parents=True)  # e.g. only cuBLAS installed
    inv = locate.locate([str(site)])
    assert inv.get("cuda_nvcc", 13) is None
    problems = checks.component_problems(inv, 13, None, "/py")
    assert "missing CUDA 13 wheels: nvidia-cuda-nvcc" in problems[0].message
    assert str(site) in problems[0].message  # where it looked
    assert 'cuda-toolkit[nvcc,cccl]' in (problems[0].fix or "")


def test_cu12_only_says_no_wheel_has_the_compiler(tmp_path: Path) -> None:
    site = fakes.cu12_site(tmp_path / "site")
    inv = locate.locate([str(site)])
    assert inv.majors() == (12,)
    nvcc = inv.get("cuda_nvcc", 12)
    assert nvcc is not None and "bin/nvcc" in nvcc.missing
    cu12_torch = torchinfo.Torch("2.7.1+cu128", "12.8", "/t", None)
    (problem,) = checks.component_problems(inv, 12, cu12_torch, "/py")
    assert "hold no compiler" in problem.message and "bin/nvcc" in problem.message
    assert "nvvm/bin/cicc" in problem.message and "fatbinary" in problem.message
    assert "no PyPI wheel holds the CUDA 12 compiler" in (problem.fix or "")


def test_cu12_wheels_with_cu13_torch_point_at_cu13_wheels(tmp_path: Path) -> None:
    site = fakes.cu12_site(tmp_path / "site")
    inv = locate.locate([str(site)])
    t = torchinfo.Torch("2.14.1+cu130", "13.0", "/t", "==13.0.3")
    major = checks.choose_major(inv, t)
    assert major == 13
    (problem,) = checks.component_problems(inv, major, t, "/py")
    assert (problem.fix or "").startswith("wheelcuda fetch --python /py ")
    assert 'uv pip install --python /py "cuda-toolkit[nvcc,cccl]==13.0.3" ' in (problem.fix or "")


def test_mixed_set_is_refused(tmp_path: Path) -> None:
    site = fakes.cu13_site(tmp_path / "site", cuda_nvcc="13.3.20", libnvvm="13.3.20")
    problems = checks.component_problems(locate.locate([str(site)]), 13, None, "/py")
    assert len(problems) == 1
    assert "different CUDA releases" in problems[0].message
    assert "nvidia-cuda-nvcc 13.3.20" in problems[0].message
    assert "nvidia-cuda-runtime 13.0.88" in problems[0].message


def test_incomplete_component_names_missing_files(tmp_path: Path) -> None:
    site = tmp_path / "site"
    fakes.cu13_site(site)
    (site / "nvidia/cu13/nvvm/bin/cicc").unlink()
    problems = checks.component_problems(locate.locate([str(site)]), 13, None, "/py")
    assert "nvidia-nvvm 13.0.88" in problems[0].message
    assert "nvvm/bin/cicc missing" in problems[0].message
    assert "--reinstall" in (problems[0].fix or "")


def test_torch_read_without_import(tmp_path: Path) -> None:
    site = fakes.torch(tmp_path / "site")
    t = torchinfo.find_torch([str(site)])
    assert t is not None
    assert (t.version, t.cuda, t.cuda_major, t.toolkit_pin) == ("2.14.1+cu130", "13.0", 13,
                                                               "==13.0.3")
    assert torchinfo.cxx11_abi(t) is None  # no libc10.so in a fake


def test_torch_problems() -> None:
    cpu = torchinfo.Torch("2.14.1+cpu", None, "/t", None)
    cu12 = torchinfo.Torch("2.7.1+cu128", "12.8", "/t", None)
    cu130 = torchinfo.Torch("2.14.1", "13.0", "/t", "==13.0.3")
    assert "not installed" in checks.torch_problems(None, "13.0", "/py")[0].message
    assert "CPU-only" in checks.torch_problems(cpu, "13.0", "/py")[0].message
    (major,) = checks.torch_problems(cu12, "13.0", "/py")
    assert major.is_error and "CUDA 12.8" in major.message
    (minor,) = checks.torch_problems(cu130, "13.1", "/py")
    assert not minor.is_error
    assert checks.torch_problems(cu130, "13.0", "/py") == []


def test_release_parsing() -> None:
    assert checks.release("13.0.88") == "13.0"
    assert checks.release("12.8.93") == "12.8"
    assert checks.release("junk") is None
    assert catalog.install_command("==13.0.3", "/v/bin/python") == (
        'uv pip install --python /v/bin/python "cuda-toolkit[nvcc,cccl]==13.0.3" '
        '"nvidia-nvvm==13.0.*" "nvidia-cuda-crt==13.0.*" "nvidia-cuda-runtime==13.0.*" '
        '"nvidia-cuda-cccl==13.0.*"')


def test_toolkit_requirements_hold_the_parts_to_one_release() -> None:
    # cuda-toolkit[nvcc,cccl]==13.0.2 alone resolves nvcc 13.0.88 with nvvm, crt and
    # runtime 13.5.37 (seen with pip download): the parts must be pinned too; and torch
    # 2.15's dependencies bring CCCL 13.3 beside CUDA 13.2 (make live, 2026-12-01).
    assert catalog.toolkit_requirements("==13.0.2") == [
        "cuda-toolkit[nvcc,cccl]==13.0.2", "nvidia-nvvm==13.0.*", "nvidia-cuda-crt==13.0.*",
        "nvidia-cuda-runtime==13.0.*", "nvidia-cuda-cccl==13.0.*"]
    assert catalog.toolkit_requirements("==13.*") == ["cuda-toolkit[nvcc,cccl]==13.*"]
    assert catalog.release_of("==12.8.1") == "12.8"


def test_a_part_of_nvccs_release_wins_and_the_other_is_shadowed(tmp_path: Path) -> None:
    """pip's two prefixes, or torch 2.15's own CCCL 13.3 beside its CUDA 13.2: the part of
    nvcc's release is taken from a later root, the other copy is named (its files are
    kept out of the tree); with no copy of nvcc's release it is MISSING, which a fetch of
    torch's set fixes."""
    first = fakes.cu13_site(tmp_path / "normal", cuda_cccl="13.3.5.0.6",
                            cuda_cudart="13.5.37")
    second = fakes.cu13_site(tmp_path / "overlay")
    inv = locate.locate([str(first), str(second)], catalog.COMPILER)
    assert inv.get("cuda_cudart", 13).version == "13.0.88"  # type: ignore[union-attr]
    assert inv.get("cuda_cccl", 13).root == str(second)  # type: ignore[union-attr]
    assert {(f.component.name, f.version) for f in inv.shadowed} == {
        ("cuda_cudart", "13.5.37"), ("cuda_cccl", "13.3.5.0.6")}
    problems = checks.component_problems(inv, 13, None, "/py")
    assert [p.severity.value for p in problems] == ["warning", "warning"]
    assert "nvidia-cuda-cccl 13.3.5.0.6 in" in problems[1].message
    alone = checks.component_problems(locate.locate([str(first)], catalog.COMPILER), 13,
                                      None, "/py")
    assert [p.kind for p in alone] == [checks.Kind.MISSING]
    assert "no nvidia-cuda-runtime, nvidia-cuda-cccl of nvcc's CUDA 13.0" in alone[0].message
