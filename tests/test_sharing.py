"""Where a team's index is configured: the command line, then the
environment, then the project's [tool.wheelcuda], then the user's file."""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.version import Version

from wheelcuda._context import Context
from wheelcuda._probe import source, wheeltags
from wheelcuda._rules.settings_read import Files
from wheelcuda._team import probe as shareconf
from wheelcuda._team import rules as sharing
from wheelcuda._team import rules_key as sharekey
from wheelcuda._team import rules_prebuilt as prebuilt
from wheelcuda.errors import ConfigError

A, B, C = "https://a.example/simple/", "https://b.example/simple/", "http://127.0.0.1:1/"


def test_first_place_that_says_wins() -> None:
    files = Files(("pyproject.toml", {"index": [C], "publish": C}), ("user", {"index": B}))
    s = sharing.choose([A], None, False, {sharing.PUBLISH_VAR: B}, files)
    assert s.indexes == (A,) and s.index_origin == "--index"
    assert s.publish == B and s.publish_origin == sharing.PUBLISH_VAR
    s = sharing.choose([], None, False, {sharing.INDEX_VAR: f"{A} {B}"}, files)
    assert s.indexes == (A, B) and s.publish == C and s.publish_origin == "pyproject.toml"
    s = sharing.choose([], None, False, {},
                       Files(("pyproject.toml", None), ("user", {"index": B})))
    assert s.indexes == (B,) and s.index_origin == "user" and s.publish is None
    assert sharing.choose([A], None, True, {}, files).indexes == ()


@pytest.mark.parametrize(("table", "said"), [
    ({"index": 3}, "index must be a URL or a list of URLs"),
    ({"publish": ["x"]}, "publish must be a URL"),
    ({"index": ["ftp://x"]}, "is not a URL for --index"),
    ({"index": ["file:///srv/wheels"]}, "is not a URL for --index"),  # lists no sha256
    ({"publish": "http://team:s3cret@host:99999/"}, "is not a URL for --publish"),
    ({"prebuilt": 7}, "prebuilt must be a URL"),
])
def test_bad_settings_say_the_fix(table: dict[str, object], said: str) -> None:
    with pytest.raises(ConfigError, match=said) as info:
        sharing.choose([], None, False, {}, Files(("pyproject.toml", table)))
    assert info.value.fix


def test_the_files_are_found(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    (project / "sub").mkdir(parents=True)
    (project / "pyproject.toml").write_text(f'[tool.wheelcuda]\nindex = "{A}"\n')
    config = tmp_path / "config" / "wheelcuda"
    config.mkdir(parents=True)
    (config / "wheelcuda.toml").write_text(f'publish = "{C}"\nindex = ["{B}"]\n')
    ctx = Context(tuple({"XDG_CONFIG_HOME": str(tmp_path / "config")}.items()),
                  str(project / "sub"), "/usr/bin/python3")
    s = shareconf.read(ctx)
    assert s.indexes == (A,) and s.index_origin.endswith("proj/pyproject.toml")
    assert s.publish == C and s.publish_origin.endswith("wheelcuda.toml")


@pytest.mark.parametrize(("label", "cuda", "torch", "abi"), [
    ("cu128", "12.8", None, None),
    ("cu128torch2.8", "12.8", "2.8", None),
    ("cu.12.8.torch.2.11", "12.8", "2.11", None),
    ("cu130torch2.14cxx11abiTRUE", "13.0", "2.14", True),
    ("cu12torch2.8cxx11abiFALSE", None, "2.8", False),  # a major alone does not say 12.8
    (None, None, None, None),
])
def test_prebuilt_labels(label: str | None, cuda: str | None, torch: str | None,
                         abi: bool | None) -> None:
    assert prebuilt.parse_label(label) == prebuilt.Label(cuda, torch, abi)


def test_prebuilt_candidates() -> None:
    """The version asked for, torch's and CUDA's labels, and the tags the target installs
    (packaging.tags for CPython 3.11 here: a suffix match took musllinux, a manylinux newer
    than this glibc, and macOS)."""
    kw = {"torch": "2.14.1+cu130", "cuda": "13.0", "cxx11_abi": True,
          "supported": wheeltags.supported((3, 11))}
    want = Version("2.8.3")
    for good in ("flash_attn-2.8.3+cu130torch2.14-cp311-cp311-linux_x86_64.whl",
                 "flash_attn-2.8.3+cu130torch2.14-cp311-cp311-manylinux_2_17_x86_64.whl"):
        assert prebuilt.candidate(good, "flash-attn", want, **kw), good  # type: ignore[arg-type]
    for bad in ("flash_attn-2.8.3+cu128torch2.14-cp311-cp311-linux_x86_64.whl",
                "flash_attn-2.8.3+cu130torch2.13-cp311-cp311-linux_x86_64.whl",
                "flash_attn-2.8.3+cu130torch2.14cxx11abiFALSE-cp311-cp311-linux_x86_64.whl",
                "flash_attn-2.8.3+cu130torch2.14-cp312-cp312-linux_x86_64.whl",
                "flash_attn-2.8.3+cu130torch2.14-cp311-cp311-linux_aarch64.whl",
                "flash_attn-2.8.3+cu130torch2.14-cp311-cp311-musllinux_1_2_x86_64.whl",
                "flash_attn-2.8.3+cu130torch2.14-cp311-cp311-manylinux_2_99_x86_64.whl",
                "flash_attn-2.8.3+cu130torch2.14-cp311-cp311-macosx_11_0_x86_64.whl",
                "flash_attn-2.8.4+cu130torch2.14-cp311-cp311-linux_x86_64.whl",
                "flash_attn-2.8.2+cu130torch2.14-cp311-cp311-linux_x86_64.whl",
                "flash_attn-2.8.3-cp311-cp311-linux_x86_64.whl", "not a wheel"):
        assert not prebuilt.candidate(bad, "flash-attn", want, **kw), bad  # type: ignore[arg-type]


@pytest.mark.parametrize(("spec", "version"), [
    ("causal-conv1d==1.7.0", "1.7.0"), ("causal_conv1d[x]==1.7.0", "1.7.0"),
    ("causal-conv1d>=1.7", None), ("causal-conv1d==1.*", None), ("causal-conv1d", None),
    ("dist/causal_conv1d-1.7.0.tar.gz", "1.7.0"),
    ("flash_attn-2.8.3+cu130torch2.14-cp311-cp311-linux_x86_64.whl", "2.8.3+cu130torch2.14"),
    ("not a requirement[", None),
])
def test_the_version_a_source_builds(spec: str, version: str | None) -> None:
    got = source.distribution_version(spec)
    assert (str(got) if got else None) == version


def test_a_folder_s_version(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1.2"\n')
    assert source.distribution_version(str(tmp_path)) == Version("1.2")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndynamic = ["version"]\n')
    assert source.distribution_version(str(tmp_path)) is None
    (tmp_path / "setup.py").write_text('setup(name="x", version="0.3.1")\n')
    assert source.distribution_version(str(tmp_path)) == Version("0.3.1")
    (tmp_path / "setup.py").write_text('setup(name="x", version=get_version())\n')
    assert source.distribution_version(str(tmp_path)) is None
    (tmp_path / "pyproject.toml").unlink()
    (tmp_path / "setup.py").write_text('setup(name="x", version="not a version")\n')
    assert source.distribution_version(str(tmp_path)) is None


def test_no_secret_in_a_message() -> None:
    with pytest.raises(ConfigError) as info:
        sharing.choose([], "team:s3cret@host/simple", False, {})
    assert "s3cret" not in str(info.value)


def test_the_travelling_key_leaves_out_secrets_and_gpu_only_settings() -> None:
    base = {"packages": ["dir:1"], "torch": "2.14.1+cu130", "torch_cuda": "13.0",
            "compiler": "13.0.88", "archs": "9.0", "prune": True, "python": "cp311",
            "cxx11_abi": True, "machine": "x86_64", "host_compiler": "gcc 12.2.0",
            "variables": {"TORCH_SCATTER_CUDA_ARCH": "90"}, "installer_args": []}
    no_gpu = {**base, "variables": {**base["variables"], "FORCE_CUDA": "1"},
              "installer_args": ["--index-url=https://user:tok@h.example/simple"]}
    shared = sharekey.share_fields(no_gpu)
    assert "tok" not in str(shared) and shared["installer_args"] == [
        "--index-url=https://h.example/simple"]
    assert "FORCE_CUDA" not in shared["variables"]
    gpu = {**base, "installer_args": ["--index-url=https://h.example/simple"]}
    assert sharekey.share_id(no_gpu) == sharekey.share_id(gpu)
    assert sharekey.share_id({**gpu, "host_compiler": "gcc 13.1.0"}) == sharekey.share_id(gpu)
    assert sharekey.share_id({**gpu, "archs": "12.0"}) != sharekey.share_id(gpu)
