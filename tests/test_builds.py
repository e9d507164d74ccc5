"""The wheel cache key: it changes when torch, arch, compiler, Python, ABI, pruning or a
build variable changes, and only then; listing and clearing."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli import run
from wheelcuda._probe import source
from wheelcuda._rules import buildkey
from wheelcuda._store import wheels
from wheelcuda._store.layout import Layout
from wheelcuda.errors import CacheError

BASE: dict[str, Any] = {
    "packages": ["causal-conv1d==1.7.0"], "torch": "2.14.1+cu130", "torch_cuda": "13.0",
    "compiler": "13.0.88", "archs": "9.0", "prune": True, "python": "cp311",
    "cxx11_abi": True, "variables": {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE"}}


def key(**changes: Any) -> str:
    return buildkey.BuildKey(**{**BASE, **changes}).id


def test_same_inputs_same_key() -> None:
    assert key() == key()
    assert key().startswith("causal-conv1d_1.7.0-")


@pytest.mark.parametrize("change", [
    {"torch": "2.14.2+cu130"}, {"torch_cuda": "13.1"}, {"compiler": "13.0.89"},
    {"archs": "12.0"}, {"prune": False}, {"python": "cp312"}, {"cxx11_abi": False},
    {"variables": {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE", "NVCC_APPEND_FLAGS": "-G"}},
    {"packages": ["causal-conv1d==1.6.0"]}, {"installer_args": ["-C", "--build-option=-j1"]},
    {"machine": "aarch64"}, {"host_compiler": "gcc 13.1.0"},
])
def test_any_input_that_changes_the_binary_changes_the_key(change: dict[str, Any]) -> None:
    assert key(**change) != key()


def test_the_id_is_derived_from_every_field() -> None:
    """A field added to the key is in its id without a second list to update; the ones
    that only travel with a shared wheel say so, and stay out."""
    wider = dataclasses.make_dataclass("Wider", [("extra", str, dataclasses.field(default=""))],
                                       bases=(buildkey.BuildKey,), frozen=True)
    assert wider(**BASE, extra="a").id != wider(**BASE, extra="b").id
    travels = {"libc": "glibc 2.41", "release": "13.0.88", "torch_dist": "2.14.1"}
    assert key(**travels) == key()
    # the same id as before it was derived: a user's kept wheels stay found
    assert key() == "causal-conv1d_1.7.0-818a28cafb4fa371"
    assert key(cxx_std=20, names=("causal-conv1d",)) == "causal-conv1d-69de8c5dc379d813"


def test_the_label_for_uv_changes_with_the_binary_not_the_package() -> None:
    label = buildkey.BuildKey(**BASE).label()
    assert label.startswith("torch 2.14.1+cu130 (CUDA 13.0); nvcc 13.0.88; archs 9.0; ")
    assert buildkey.BuildKey(**{**BASE, "packages": ["other==1"]}).label() == label
    assert buildkey.BuildKey(**{**BASE, "cxx_std": 20}).label() != label


def test_installer_flags_that_change_no_binary_stay_out_of_the_key() -> None:
    assert key(installer_args=["--no-deps", "-v"]) == key()
    assert key(installer_args=["--no-deps", "-C", "--build-option=-j1"]) == \
        key(installer_args=["-C", "--build-option=-j1"])


def test_variables_in_the_key() -> None:
    recipe = {"CAUSAL_CONV1D_FORCE_BUILD": "TRUE", "MAX_JOBS": "2"}
    env = {"CAUSAL_CONV1D_FORCE_BUILD": "FALSE", "NVCC_APPEND_FLAGS": "-lineinfo", "HOME": "/x",
           "MAX_JOBS": "16", "CAUSAL_CONV1D_SKIP_CUDA_BUILD": "TRUE", "TORCH_NVCC_FLAGS": "-G"}
    assert buildkey.build_variables(recipe, env, ["CAUSAL_CONV1D_"]) == {
        "CAUSAL_CONV1D_FORCE_BUILD": "FALSE", "CAUSAL_CONV1D_SKIP_CUDA_BUILD": "TRUE",
        "NVCC_APPEND_FLAGS": "-lineinfo", "TORCH_NVCC_FLAGS": "-G"}


def test_source_identity(tmp_path: Path) -> None:
    src = tmp_path / "ext"
    (src / "csrc").mkdir(parents=True)
    (src / "csrc/k.cu").write_text("__global__ void k() {}")
    first = source.source_id(str(src))
    (src / "build").mkdir()  # what a build writes into its own tree
    (src / "build/x.o").write_text("obj")
    (src / "ext.egg-info").mkdir()
    (src / "dangling").symlink_to(tmp_path / "nowhere")
    assert source.source_id(str(src)).startswith("dir:")
    assert source.source_id(str(src)) != first  # the dangling link is a new entry
    (src / "dangling").unlink()
    assert source.source_id(str(src)) == first
    (src / "csrc/k.cu").write_text("__global__ void k2() {}")
    assert source.source_id(str(src)) != first
    assert source.source_id("causal-conv1d==1.7.0") == "causal-conv1d==1.7.0"
    assert buildkey.exact("causal-conv1d==1.7.0") and buildkey.exact(str(src))
    assert not buildkey.exact("causal-conv1d") and not buildkey.exact("causal-conv1d==1.*")


def record(layout: Layout, key: str, fields: dict[str, Any], installed: list[str]) -> None:
    """What a successful install leaves: its record, under the key's lock."""
    with wheels.building(layout, key) as build:
        build.done(fields, installed, 50.0, "uv", [])


def test_list_and_clear(isolated: Path) -> None:
    layout = Layout(isolated)
    built = buildkey.BuildKey(**BASE)
    fields, k = built.fields(), built.id
    record(layout, k, fields, ["causal-conv1d==1.7.0"])
    other = buildkey.BuildKey(**{**BASE, "packages": ["./ext"]}).id
    record(layout, other, fields, ["wheelcuda-demo-ext==0.1.0"])
    scatter = buildkey.BuildKey(**{**BASE, "packages": ["torch-scatter"]}).id
    record(layout, scatter, fields, ["torch-scatter==2.1.2"])
    (layout.build(k) / "uv").mkdir()
    (layout.build(k) / "uv" / "wheel").write_bytes(b"x" * 1000)
    listing = run("cache", "list")
    assert listing.returncode == 0
    assert k in listing.stdout and "causal-conv1d==1.7.0" in listing.stdout
    assert "archs 9.0" in listing.stdout
    assert run("cache", "clear", "causal_conv1d").returncode == 0
    assert not layout.build(k).exists() and layout.build(other).exists()
    assert run("cache", "clear", "torch").returncode == 0  # not a prefix match
    assert layout.build(scatter).exists()
    assert run("cache", "clear").returncode == 0
    assert wheels.entries(layout) == []


def test_a_full_disk_when_the_wheel_is_kept_is_said_and_keeps_no_half_entry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The install is done when its wheel is copied into the cache: a full disk there
    ended in "internal error"; now a CacheError with the fix (install says it as a
    warning), and neither a half-copied wheel nor a record is left."""
    import errno  # noqa: PLC0415
    import shutil  # noqa: PLC0415

    layout = Layout(tmp_path / "cache")
    with wheels.building(layout, "k-0123") as build:
        made = build.folder / "uv" / "built" / "demo-1.0-py3-none-any.whl"
        made.parent.mkdir(parents=True)
        made.write_bytes(b"wheel")

        def full(src: object, dst: object) -> None:
            Path(str(dst)).write_bytes(b"wh")  # part of it, then the disk is full
            raise OSError(errno.ENOSPC, "No space left on device", str(dst))

        monkeypatch.setattr(shutil, "copyfile", full)
        with pytest.raises(CacheError, match="No space left on device") as caught:
            build.done({"packages": ["demo"]}, ["demo==1.0"], 1.0, "uv", ["demo"])
        assert caught.value.fix and "cache prune" in caught.value.fix
        assert not list((build.folder / "wheels").glob(".tmp-*"))
    assert not layout.build("k-0123").exists()  # no entry: the next install builds again


def test_a_build_folder_that_cannot_be_written_is_said_with_its_fix(tmp_path: Path) -> None:
    """A full or read-only disk under the key's folder: the build base and the order
    file ended in "internal error ... this is a bug"; now the path, why, and the fix."""
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")  # what a file system that refuses the write does, as root too
    with pytest.raises(CacheError, match=r"cannot write .*not-a-folder/setuptools\.cfg"):
        wheels.write_build_base(blocked)
    build = wheels.Build(Layout(tmp_path / "cache"), "k-0123")
    build.folder = blocked
    with pytest.raises(CacheError) as caught:
        build.write_order({"a.cu": 3.0})
    assert caught.value.fix and "WHEELCUDA_CACHE_DIR" in caught.value.fix
