"""The package table, MAX_JOBS and installer argv: pure decisions."""

from __future__ import annotations

from pathlib import Path

import pytest

from wheelcuda.context import Context
from wheelcuda.data import recipes
from wheelcuda.errors import ToolError
from wheelcuda.probe import installer as installer_probe
from wheelcuda.probe import source
from wheelcuda.rules import arch, installer, jobs, packages

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


def test_job_memory_is_the_heaviest() -> None:
    assert packages.job_gb(["causal-conv1d"]) == recipes.DEFAULT_JOB_GB
    heavy = recipes.RECIPES["flash-attn"].job_gb
    assert packages.job_gb(["causal-conv1d", "flash-attn"]) == heavy > recipes.DEFAULT_JOB_GB


@pytest.mark.parametrize(("cores", "memory", "job", "want"), [
    (16, 125 * GB, 4.0, 16),   # the GPU machine: cores bound
    (2, 24 * GB, 4.0, 2),      # this machine
    (64, 32 * GB, 8.0, 4),     # flash-attn on a big box with little memory: memory bound
    (8, 1 * GB, 4.0, 1),       # never zero
    (8, None, 4.0, 8),         # memory unknown: cores
])
def test_max_jobs(cores: int, memory: int | None, job: float, want: int) -> None:
    assert jobs.max_jobs(cores, memory, job) == want


@pytest.mark.parametrize(("cores", "memory", "job", "jobs_", "want"), [
    (2, 24 * GB, 4.0, 2, (4, 2, 2)),        # this machine: both calls may split, 2 each
    (16, 125 * GB, 4.0, 16, (32, 15, 16)),  # the GPU machine: 15 of 16 calls may split
    (16, 125 * GB, 4.0, 4, (32, 4, 16)),    # the user's MAX_JOBS=4: all of them
    (64, 32 * GB, 8.0, 4, (128, 0, 64)),    # memory holds the jobs only: no split
    (8, None, 4.0, 8, (16, 0, 8)),          # memory unknown: no split
])
def test_pool(cores: int, memory: int | None, job: float, jobs_: int,
              want: tuple[int, int, int]) -> None:
    assert jobs.pool(cores, memory, job, jobs_) == want


def test_for_build_keeps_the_users_values() -> None:
    machine = (2, 24 * GB)
    assert jobs.for_build(4.0, {"MAX_JOBS": "3", "WHEELCUDA_SPLIT_COMPILE": "1"}, *machine) == {}
    chosen = jobs.for_build(4.0, {"MAX_JOBS": "1"}, *machine)
    assert chosen == {"WHEELCUDA_JOBSERVER": ":4:1:2"}  # sized for the user's one job
    assert set(jobs.for_build(4.0, {"MAX_JOBS": ""}, *machine)) == {"MAX_JOBS",
                                                                     "WHEELCUDA_JOBSERVER"}
    assert set(jobs.for_build(4.0, {}, *machine, split=False)) == {"MAX_JOBS"}
    assert jobs.for_build(4.0, {"WHEELCUDA_JOBSERVER": "/p:1:1:1"}, *machine) == {
        "MAX_JOBS": "2"}


def test_for_build_names_the_pool_folder_it_is_given() -> None:
    chosen = jobs.for_build(4.0, {}, 16, 125 * GB, pool_dir="/tmp/jobs-0-ab:c")
    assert chosen == {"MAX_JOBS": "16", "WHEELCUDA_JOBSERVER": "/tmp/jobs-0-ab:c:32:15:16"}


def test_job_counts_that_are_not_counts_are_problems() -> None:
    assert jobs.problems({"MAX_JOBS": "4", "WHEELCUDA_SPLIT_COMPILE": ""}) == []
    (bad,) = jobs.problems({"MAX_JOBS": "abc"})
    assert "MAX_JOBS='abc'" in bad.message and bad.fix
    assert jobs.problems({"WHEELCUDA_JOBSERVER": "/tmp/a:b:32:15:16"}) == []
    (bad,) = jobs.problems({"WHEELCUDA_JOBSERVER": "/tmp/a:8"})
    assert "FOLDER:THREADS:SPLITS:CAP" in bad.message


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
    with pytest.raises(ToolError):
        installer_probe.choose(ctx.with_env(WHEELCUDA_INSTALLER="conda"))
