"""The package table, MAX_JOBS and installer argv: pure decisions."""

from __future__ import annotations

from pathlib import Path

import pytest

from wheelcuda._context import Context
from wheelcuda._probe import installer as installer_probe
from wheelcuda._probe import source
from wheelcuda._rules import arch, installer, jobs, packages
from wheelcuda.errors import ConfigError

GB = 1024**3


@pytest.mark.parametrize(("spec", "name"), [
    ("causal-conv1d==1.7.0", "causal-conv1d"),
    ("Causal_Conv1d>=1.5", "causal-conv1d"),
    ("causal_conv1d-1.7.0.tar.gz", "causal-conv1d"),
    ("/tmp/dl/flash_attn-2.8.3.tar.gz", "flash-attn"),
    ("mamba-ssm[causal-conv1d]", "mamba-ssm"),
    ("git+https://example.invalid/x.git", None),
])
def test_distribution_names(spec: str, name: str | None) -> None:
    assert source.distribution_name(spec) == name


def test_folder_name_from_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[build-system]\nrequires=[]\n[project]\n'
                                             'name = "Wheelcuda_Demo-Ext"\nversion="1"\n')
    assert source.distribution_name(str(tmp_path)) == "wheelcuda-demo-ext"
    assert source.distribution_name(str(tmp_path / "nothing")) is None


def test_recipes() -> None:
    archs = arch.parse("12.0;9.0")
    env = packages.recipe_env(["causal-conv1d", "flash-attn", None, "numpy"], archs, True)
    assert env == {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE", "FLASH_ATTENTION_FORCE_BUILD": "TRUE",
                   "FLASH_ATTN_CUDA_ARCHS": "90;120"}
    assert packages.recipe_env(["torch-scatter"], archs, True) == {}
    assert packages.recipe_env(["torch-scatter"], archs, False) == {"FORCE_CUDA": "1"}


def test_user_environment_wins() -> None:
    wanted = {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE", "MAX_JOBS": "2"}
    assert packages.user_wins(wanted, {"CAUSAL_CONV1D_FORCE_BUILD": "FALSE"}) == {"MAX_JOBS": "2"}


def test_job_counts_that_are_not_counts_are_problems() -> None:
    assert jobs.problems({"MAX_JOBS": "4", "WHEELCUDA_SPLIT_COMPILE": ""}) == []
    (bad,) = jobs.problems({"MAX_JOBS": "abc"})
    assert "MAX_JOBS: 'abc' is not a whole number" in bad.message and bad.fix
    (bad,) = jobs.problems({"WHEELCUDA_MEMORY": "half"})
    assert "is not a size" in bad.message and "WHEELCUDA_MEMORY=64G" in bad.fix


def test_the_recipes_arch_variables() -> None:
    assert packages.arch_variables() == {"FLASH_ATTN_CUDA_ARCHS"}


def test_installer_argv() -> None:
    uv = installer.Uv(("/bin/uv",))
    pip = installer.Pip()
    assert uv.install_argv("/v/bin/python", ["a==1"], ["-v"]) == [
        "/bin/uv", "pip", "install", "--no-build-isolation", "--python", "/v/bin/python",
        "a==1", "-v"]
    assert pip.install_argv("/v/bin/python", ["./x"], []) == [
        "/v/bin/python", "-m", "pip", "install", "--no-build-isolation", "./x"]
    assert "--target" in uv.target_argv(["cuda-toolkit==1"], "/s", "/v/bin/python")
    # a compiler fetch never runs a build backend from an index (an sdist runs its code)
    for tool in (uv, pip):
        argv = tool.target_argv(["cuda-toolkit==1"], "/s", "/v/bin/python")
        assert argv[argv.index("--only-binary") + 1] == ":all:"


def test_installer_choice() -> None:
    ctx = Context.of({"WHEELCUDA_INSTALLER": "pip"})
    assert installer_probe.choose(ctx).name == "pip"
    with pytest.raises(ConfigError, match="is not uv or pip"):  # a setting, read by its row
        installer_probe.choose(ctx.with_env(WHEELCUDA_INSTALLER="conda"))
