"""Materializing trees from fake environments: atomic, reused, rebuilt when stale, safe
under concurrency, and never in a folder others can write to."""

from __future__ import annotations

import json
import multiprocessing
import os
from pathlib import Path

import pytest

from tests import fakes
from wheelcuda import _pipeline as pipeline
from wheelcuda import api
from wheelcuda._context import Context
from wheelcuda._rules.checks import Kind
from wheelcuda._store import paths, trees
from wheelcuda._store.trees import Home
from wheelcuda.errors import CacheError


def _setup(tmp_path: Path) -> str:
    site = fakes.cu13_site(tmp_path / "site")
    return str(fakes.python(tmp_path, [site]))


def home_for(python: str) -> Home:
    r = pipeline.resolve(Context.current(), pipeline.Request(python=python, need_archs=False))
    r.raise_first(ignore=(Kind.TORCH,))
    assert r.home is not None
    return r.home


def test_tree_is_built_whole_and_reused(tmp_path: Path, isolated: Path) -> None:
    setup = _setup(tmp_path)
    home = home_for(setup)
    assert home.path.parent == isolated / "homes"
    assert (home.path / "bin/.nvcc-real").resolve() == (tmp_path / "site/nvidia/cu13/bin/nvcc")
    assert os.access(home.path / "bin/nvcc", os.X_OK)  # the arch-pruning wrapper
    assert os.readlink(home.path / "lib64/libcudart.so") == "libcudart.so.13"
    assert (home.path / "lib64/stubs/libcuda.so").is_file()
    assert (home.path / "version.json").is_file()
    assert home.nvcc_version == "13.0.88" and "sm_120" in home.gpu_codes
    assert home.gcc_max_major == 15
    inode = (home.path / "wheelcuda.json").stat().st_ino
    again = home_for(setup)
    assert again.path == home.path and (home.path / "wheelcuda.json").stat().st_ino == inode
    leftovers = [p.name for p in (isolated / "homes").iterdir() if p.name.startswith(".build")]
    assert leftovers == []
    assert (isolated.stat().st_mode & 0o077) == 0  # private


@pytest.mark.parametrize("damage", ["dangling_link", "no_manifest", "foreign_manifest",
                                    "no_wrapper"])
def test_stale_tree_is_rebuilt(tmp_path: Path, damage: str) -> None:
    setup = _setup(tmp_path)
    home = home_for(setup)
    if damage == "dangling_link":  # what `pip install -U` leaves behind
        (home.path / "bin/ptxas").unlink()
        (home.path / "bin/ptxas").symlink_to(tmp_path / "gone/ptxas")
    elif damage == "no_wrapper":
        (home.path / "bin/nvcc").unlink()
    elif damage == "no_manifest":  # a build that died half-way (never renamed, but still)
        (home.path / "wheelcuda.json").unlink()
    else:
        (home.path / "wheelcuda.json").write_text(json.dumps({"key": "other"}))
    rebuilt = home_for(setup)
    assert rebuilt.path == home.path
    assert (rebuilt.path / "bin/ptxas").exists() and (rebuilt.path / "bin/nvcc").exists()
    assert json.loads((rebuilt.path / "wheelcuda.json").read_text())["key"] == home.path.name


def test_upgrade_gives_a_new_tree(tmp_path: Path) -> None:
    first = home_for(_setup(tmp_path))
    site = tmp_path / "site"
    for dist in site.glob("nvidia_cuda_nvcc-*.dist-info"):
        dist.rename(site / "nvidia_cuda_nvcc-13.0.99.dist-info")
        meta = site / "nvidia_cuda_nvcc-13.0.99.dist-info/METADATA"
        meta.write_text(meta.read_text().replace("13.0.88", "13.0.99"))
    second = home_for(str(tmp_path / "python"))
    assert second.path != first.path


def _race(args: tuple[str, str]) -> str:
    python, cache_dir = args
    os.environ["WHEELCUDA_CACHE_DIR"] = cache_dir
    return str(api.cuda_home(python))


def test_eight_processes_get_one_valid_tree(tmp_path: Path, isolated: Path) -> None:
    site = fakes.cu13_site(tmp_path / "site")
    python = fakes.python(tmp_path, [site])
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(8) as pool:
        homes = pool.map(_race, [(str(python), str(isolated))] * 8)
    assert len(set(homes)) == 1
    entries = sorted(p.name for p in (isolated / "homes").iterdir() if not p.name.endswith(".lock"))
    assert entries == [Path(homes[0]).name]
    found = api.inspect(str(python))
    assert found.cuda_home == Path(homes[0]) and found.ok
    tree = pipeline.resolve(Context.current(), pipeline.Request(python=str(python),
                                                               need_archs=False)).tree
    assert tree is not None and trees.read_valid(Path(homes[0]), tree) is not None


def test_cache_others_can_write_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                           ) -> None:
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    monkeypatch.setenv("WHEELCUDA_CACHE_DIR", str(shared))
    with pytest.raises(CacheError) as err:
        home_for(_setup(tmp_path))
    assert "others can write to it" in str(err.value)
    assert "WHEELCUDA_CACHE_DIR" in str(err.value)


def test_cache_that_cannot_be_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("WHEELCUDA_CACHE_DIR", str(blocker / "cache"))
    with pytest.raises(CacheError) as err:
        home_for(_setup(tmp_path))
    assert "cannot create the cache folder" in str(err.value)


def test_unsafe_reason_is_pure() -> None:
    st = os.stat_result((0o40777, 0, 0, 0, 1000, 0, 0, 0, 0, 0))
    assert paths.unsafe_reason(st, 1000) == "others can write to it (mode 777)"
    st = os.stat_result((0o40700, 0, 0, 0, 1001, 0, 0, 0, 0, 0))
    assert "belongs to uid 1001" in (paths.unsafe_reason(st, 1000) or "")
    st = os.stat_result((0o40700, 0, 0, 0, 1000, 0, 0, 0, 0, 0))
    assert paths.unsafe_reason(st, 1000) is None
