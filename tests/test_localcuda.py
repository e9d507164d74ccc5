"""The local toolkit source: candidates on the machine, their versions, which one fits
torch, and the shim that presents one as wheels (laid out for locate and the tree).

Fake toolkits are laid out as NVIDIA's installers and conda's cuda-nvcc lay them out,
with the fake nvcc of tests/fakes.py (it answers --version and --list-gpu-code)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from tests import fakes
from wheelcuda import _pipeline as pipeline
from wheelcuda._context import Context
from wheelcuda._data import catalog
from wheelcuda._probe import locate
from wheelcuda._rules import tree as plan_rules
from wheelcuda._sources.local import probe as localcuda
from wheelcuda._sources.local import rules as localfit
from wheelcuda._sources.local import source as local
from wheelcuda._sources.local import store as shims
from wheelcuda._sources.local.rules import Candidate
from wheelcuda._store import prune, trees
from wheelcuda._store.layout import Layout
from wheelcuda._values import Target, Torch
from wheelcuda.errors import ComponentError

TD = catalog.target_dir()


def _file(path: Path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def toolkit(root: Path, version: str = "12.8.93", *, version_json: bool = True,
            cuda: str | None = None, skip: tuple[str, ...] = (), conda: bool = False) -> Path:
    """A CUDA toolkit as NVIDIA's installer lays it out (headers and libraries under
    targets/<arch>-linux, include and lib64 links to them), or as conda's cuda-nvcc
    does (``conda``: bin and nvvm at the prefix, no include/lib64 links, conda-meta/)."""
    major = int(version.split(".", 1)[0])
    release = ".".join(version.split(".")[:2])
    tgt = root / "targets" / TD
    files = {
        "bin/nvcc.profile": "TOP = $(_HERE_)/../$(_TARGET_DIR_)\n" if conda else "stock\n",
        "bin/ptxas": "", "bin/cudafe++": "", "bin/fatbinary": "", "bin/nvlink": "",
        "bin/bin2c": "", "bin/crt/link.stub": "", "bin/cuda-gdb": "",
        "nvvm/bin/cicc": "", "nvvm/libdevice/libdevice.10.bc": "",
        f"{tgt.relative_to(root)}/include/crt/host_config.h": fakes.HOST_CONFIG,
        f"{tgt.relative_to(root)}/include/cuda_runtime.h": "",
        f"{tgt.relative_to(root)}/include/cuda.h": fakes.CUDA_H,
        f"{tgt.relative_to(root)}/include/cublas_v2.h": "",
        f"{tgt.relative_to(root)}/lib/libcudart.so.{major}": "",
        f"{tgt.relative_to(root)}/lib/libcudart_static.a": "",
        f"{tgt.relative_to(root)}/lib/libcudadevrt.a": "",
        f"{tgt.relative_to(root)}/lib/stubs/libcuda.so": "the toolkit's own stub",
    }
    cccl = ["cccl/cub/cub.cuh", "cccl/thrust/version.h"] if major >= 13 else [
        "cub/cub.cuh", "thrust/version.h", "cuda/std/version", "nv/target"]
    files.update({f"{tgt.relative_to(root)}/include/{f}": "" for f in cccl})
    if conda:
        files.update({"bin/python3": "", "conda-meta/cuda-nvcc.json": "{}"})
    for rel, text in files.items():
        if rel not in skip and not any(rel.endswith(s) for s in skip):
            _file(root / rel, text)
    if "bin/nvcc" not in skip:
        (root / "bin/nvcc").write_text(fakes.FAKE_NVCC.format(release=release, version=version))
        (root / "bin/nvcc").chmod(0o755)
    if not conda:
        (root / "include").symlink_to(f"targets/{TD}/include")
        (root / "lib64").symlink_to(f"targets/{TD}/lib")
    if version_json:
        data = {"cuda": {"name": "CUDA SDK", "version": cuda or f"{release}.1"},
                "cuda_nvcc": {"name": "CUDA NVCC", "version": version},
                "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": f"{release}.90"}}
        (root / "version.json").write_text(json.dumps(data))
    return root


def _ctx(**env: str) -> Context:
    return Context.of({"PATH": "/usr/bin:/bin", **env})


def _layout(tmp: Path) -> Layout:
    return Layout(tmp / "cache")


# -- candidates ------------------------------------------------------------------------


def test_candidates_in_order_each_once(tmp_path: Path) -> None:
    usr = tmp_path / "usr_local"
    for v in ("12.4.131", "12.8.93", "13.0.88"):
        toolkit(usr / f"cuda-{'.'.join(v.split('.')[:2])}", v)
    (usr / "cuda").symlink_to("cuda-12.8")  # the same toolkit as cuda-12.8: listed once
    home = toolkit(tmp_path / "opt/cuda-home", "12.6.85")
    other = toolkit(tmp_path / "opt/on-path", "12.9.86")
    conda = toolkit(tmp_path / "conda", "12.8.93", conda=True)
    ctx = _ctx(CUDA_HOME=str(home), CUDA_PATH=str(usr / "cuda-13.0"),
               PATH=f"{other}/bin:/usr/bin", CONDA_PREFIX=str(conda))
    pairs = localcuda.candidate_paths(ctx, usr_local=str(usr))
    assert pairs == [("CUDA_HOME", str(home)), ("CUDA_PATH", str(usr / "cuda-13.0")),
                     ("/usr/local/cuda", str(usr / "cuda")),
                     ("/usr/local/cuda-X.Y", str(usr / "cuda-12.4")),  # 13.0, 12.8: above
                     ("nvcc on PATH", str(other)), ("CONDA_PREFIX", str(conda))]
    found = localcuda.find(ctx, usr_local=str(usr))
    assert [c.version for c in found] == ["12.6.85", "13.0.88", "12.8.93", "12.4.131",
                                          "12.9.86", "12.8.93"]
    assert found[2].real == str(usr / "cuda-12.8") and found[2].path == str(usr / "cuda")
    assert all(c.complete for c in found), [c.missing for c in found]
    assert [c.conda for c in found] == [False] * 5 + [True]


def test_versioned_folders_newest_first(tmp_path: Path) -> None:
    usr = tmp_path / "usr_local"
    for name in ("cuda-12.10", "cuda-12.9", "cuda-13.0", "cuda-11.8", "cuda-x", "cuda"):
        (usr / name).mkdir(parents=True)
    pairs = localcuda.candidate_paths(_ctx(), usr_local=str(usr))
    assert [os.path.basename(p) for _, p in pairs] == [
        "cuda", "cuda-13.0", "cuda-12.10", "cuda-12.9", "cuda-11.8"]


def test_wheelcuda_trees_are_not_candidates(tmp_path: Path) -> None:
    """CUDA_HOME/CUDA_PATH and the nvcc on PATH point at wheelcuda's own tree after
    `eval "$(wheelcuda env)"`: that is no local toolkit."""
    cache = tmp_path / "cache"
    tree = toolkit(cache / "homes/cu12.8-0123456789abcdef", "12.8.93")
    ctx = _ctx(CUDA_HOME=str(tree), CUDA_PATH=str(tree), PATH=f"{tree}/bin:/usr/bin")
    assert localcuda.candidate_paths(ctx, skip=[str(cache)], usr_local=str(tmp_path)) == []
    assert localcuda.candidate_paths(ctx, usr_local=str(tmp_path))[0] == ("CUDA_HOME",
                                                                           str(tree))


def test_a_chosen_folder_is_listed_even_without_nvcc(tmp_path: Path) -> None:
    """What a person set is said to be wrong; what a search met without nvcc is not
    a toolkit at all."""
    empty = tmp_path / "empty"
    (empty / "bin").mkdir(parents=True)
    usr = tmp_path / "usr_local"
    (usr / "cuda/bin").mkdir(parents=True)
    found = localcuda.find(_ctx(CUDA_HOME=str(empty)), usr_local=str(usr))
    assert [(c.origin, c.complete) for c in found] == [("CUDA_HOME", False)]
    assert "bin/nvcc" in found[0].missing and found[0].version is None


# -- versions and completeness -----------------------------------------------------------


def test_version_from_version_json_without_running_nvcc(tmp_path: Path) -> None:
    tk = toolkit(tmp_path / "cuda-12.8", "12.8.93", cuda="12.8.1")
    calls: list[str] = []
    c = localcuda.probe(str(tk), "CUDA_HOME", _ctx(),
                        nvcc_version=lambda p, _ctx: calls.append(p) or None)
    assert (c.version, c.version_from, c.cuda, c.release, c.major) == (
        "12.8.93", "version.json", "12.8.1", "12.8", 12)
    assert calls == [] and c.complete
    assert c.component_version("cuda_cudart") == "12.8.90"  # its own, same release
    assert c.component_version("cuda_crt") == "12.8.93"  # not in version.json: nvcc's


def test_version_from_nvcc_when_no_version_json(tmp_path: Path) -> None:
    """This machine's /usr/local/cuda-13.0 has no version.json: nvcc says it."""
    tk = toolkit(tmp_path / "cuda-13.0", "13.0.88", version_json=False)
    c = localcuda.probe(str(tk), "/usr/local/cuda", _ctx())
    assert (c.version, c.version_from, c.cuda, c.complete) == (
        "13.0.88", "nvcc --version", None, True)


def test_incomplete_toolkit_says_what_is_missing(tmp_path: Path) -> None:
    tk = toolkit(tmp_path / "cuda-12.8", skip=("nvvm/bin/cicc", "libcudart_static.a"))
    c = localcuda.probe(str(tk), "CUDA_HOME", _ctx())
    assert not c.complete
    assert "nvvm/bin/cicc" in c.missing
    assert any(m.endswith("lib/libcudart_static.a") for m in c.missing)
    # no version.json and nothing to run: no process, and it says why
    bare = toolkit(tmp_path / "bare", version_json=False, skip=("bin/nvcc",))
    calls: list[str] = []
    b = localcuda.probe(str(bare), "CUDA_HOME", _ctx(),
                        nvcc_version=lambda p, _ctx: calls.append(p) or None)
    assert calls == [] and b.missing == ("bin/nvcc",)


def test_conda_layout(tmp_path: Path) -> None:
    """conda's cuda-nvcc: bin and nvvm at the prefix, headers and libraries only under
    targets/<arch>-linux (the prefix's include and lib belong to everything else)."""
    prefix = toolkit(tmp_path / "env", "12.8.93", conda=True, version_json=False)
    (prefix / "include").mkdir()
    (prefix / "lib").mkdir()
    c = localcuda.probe(str(prefix), "CONDA_PREFIX", _ctx())
    assert c.complete and c.conda, c.missing
    assert c.include == str(prefix / "targets" / TD / "include")
    assert c.lib == str(prefix / "targets" / TD / "lib")


# -- which one fits torch (pure) --------------------------------------------------------


def _cand(version: str, path: str | None = None, missing: tuple[str, ...] = ()) -> Candidate:
    p = path or f"/opt/cuda-{version}"
    return Candidate(p, p, "test", version, "version.json", None, (), f"{p}/bin",
                     f"{p}/include", f"{p}/lib64", f"{p}/nvvm", False, missing)


def test_fit_exact_release() -> None:
    fit = localfit.fit([_cand("13.0.88"), _cand("12.8.93")], "12.8")
    assert fit.chosen is not None and fit.chosen.version == "12.8.93"
    assert fit.warning is None
    assert "another major" in {c.version: r for c, r in fit.passed}["13.0.88"]


def test_fit_prefers_exact_over_newer_and_order() -> None:
    cands = [_cand("12.4.131"), _cand("12.9.86"), _cand("12.8.93")]
    assert localfit.fit(cands, "12.8").chosen == cands[2]


def test_fit_newest_of_the_major_when_none_exact() -> None:
    """12.4 and 12.6 for a cu128 torch: 12.6, with torch's minor-version warning."""
    cands = [_cand("12.4.131"), _cand("12.6.85")]
    fit = localfit.fit(cands, "12.8")
    assert fit.chosen == cands[1]
    assert fit.warning and "12.8" in fit.warning and "12.6" in fit.warning


def test_fit_skips_incomplete_ones() -> None:
    cands = [_cand("12.8.93", "/a", missing=("nvvm/bin/cicc",)), _cand("12.8.93", "/b")]
    fit = localfit.fit(cands, "12.8")
    assert fit.chosen == cands[1]
    assert "nvvm/bin/cicc" in fit.passed[0][1]


def test_fit_refuses_another_major_with_a_message() -> None:
    fit = localfit.fit([_cand("13.0.88", "/usr/local/cuda-13.0")], "12.8")
    assert fit.chosen is None
    assert "12.8" in fit.why and "/usr/local/cuda-13.0" in fit.why
    assert "refuses another major" in fit.why


def test_fit_without_torch_takes_the_first_whole_one() -> None:
    cands = [_cand("12.4.131", missing=("x",)), _cand("12.8.93"), _cand("13.0.88")]
    assert localfit.fit(cands, None).chosen == cands[1]
    assert "no local CUDA toolkit" in localfit.fit([], "12.8").why


# -- the shim -------------------------------------------------------------------------


def _shim(tmp_path: Path, tk: Path, origin: str = "CUDA_HOME") -> tuple[Candidate, Path]:
    c = localcuda.probe(str(tk), origin, _ctx())
    return c, shims.ensure(_layout(tmp_path), c)


def test_cuda13_shim_is_found_whole_by_locate(tmp_path: Path) -> None:
    tk = toolkit(tmp_path / "cuda-13.0", "13.0.88", version_json=False)
    c, root = _shim(tmp_path, tk)
    assert root.parent == _layout(tmp_path).local
    assert root.name.startswith("cuda13.0-")
    cu13 = root / "nvidia/cu13"
    assert os.readlink(cu13 / "include") == str(tk / "targets" / TD / "include")
    assert os.readlink(cu13 / "nvvm") == str(tk / "nvvm")
    assert os.readlink(cu13 / "bin/nvcc") == str(tk / "bin/nvcc")
    assert (cu13 / "bin/crt").is_dir() and (cu13 / "lib").is_dir()
    assert not os.path.lexists(cu13 / "lib/stubs")
    inventory = locate.locate([str(root)], catalog.COMPILER)
    for comp in catalog.COMPILER:
        found = inventory.get(comp.name, 13)
        assert found is not None and found.complete, (comp.name, found)
        assert found.version == "13.0.88"
    assert inventory.majors() == (13,)
    assert locate.dist_version(str(root), catalog.METAPACKAGE) is None  # no version.json
    manifest = json.loads((root / shims.MARK).read_text())
    assert manifest["toolkit"] == str(tk) and manifest["version_from"] == "nvcc --version"
    assert c.complete


def test_cuda12_shim_splits_include_between_the_wheel_folders(tmp_path: Path) -> None:
    tk = toolkit(tmp_path / "cuda-12.8", "12.8.93", cuda="12.8.1")
    _, root = _shim(tmp_path, tk)
    n = root / "nvidia"
    assert sorted(os.listdir(n)) == ["cuda_cccl", "cuda_nvcc", "cuda_runtime"]
    assert sorted(os.listdir(n / "cuda_nvcc")) == ["bin", "include", "nvvm"]
    assert sorted(os.listdir(n / "cuda_nvcc/include")) == ["crt"]
    assert sorted(os.listdir(n / "cuda_cccl/include")) == ["cub", "cuda", "nv", "thrust"]
    assert sorted(os.listdir(n / "cuda_runtime/include")) == ["cublas_v2.h", "cuda.h",
                                                               "cuda_runtime.h"]
    assert sorted(os.listdir(n / "cuda_runtime/lib")) == [
        "libcudadevrt.a", "libcudart.so.12", "libcudart_static.a"]
    inventory = locate.locate([str(root)], catalog.COMPILER)
    versions = {c.name: inventory.get(c.name, 12) for c in catalog.COMPILER}
    assert all(f is not None and f.complete for f in versions.values()), versions
    assert {n: f.version for n, f in versions.items() if f} == {
        "cuda_nvcc": "12.8.93", "libnvvm": "12.8.93", "cuda_crt": "12.8.93",
        "cuda_cudart": "12.8.90", "cuda_cccl": "12.8.93"}
    assert locate.dist_version(str(root), catalog.METAPACKAGE) == "12.8.1"


def test_shim_is_reused_and_rebuilt_when_stale(tmp_path: Path) -> None:
    tk = toolkit(tmp_path / "cuda-12.8", "12.8.93")
    c, root = _shim(tmp_path, tk)
    inode = (root / shims.MARK).stat().st_ino
    assert shims.ensure(_layout(tmp_path), c) == root
    assert (root / shims.MARK).stat().st_ino == inode  # nothing rewritten
    assert shims.existing(_layout(tmp_path), c) == root
    # a library added to the toolkit (cuDNN into lib64): the shim follows
    _file(tk / "targets" / TD / "lib/libcudnn.so.9")
    assert shims.existing(_layout(tmp_path), c) is None
    assert shims.ensure(_layout(tmp_path), c) == root
    assert (root / "nvidia/cuda_runtime/lib/libcudnn.so.9").exists()
    # a link gone stale
    (tk / "targets" / TD / "lib/libcudnn.so.9").unlink()
    assert shims.ensure(_layout(tmp_path), c) == root
    assert not os.path.lexists(root / "nvidia/cuda_runtime/lib/libcudnn.so.9")
    leftovers = [p for p in root.parent.iterdir() if p.name.startswith(".build")]
    assert leftovers == []


def test_new_version_gets_a_new_shim(tmp_path: Path) -> None:
    tk = toolkit(tmp_path / "cuda", "12.8.93")
    _, old = _shim(tmp_path, tk)
    (tk / "version.json").unlink()
    (tk / "bin/nvcc").write_text(fakes.FAKE_NVCC.format(release="12.9", version="12.9.86"))
    c, new = _shim(tmp_path, tk)
    assert c.version == "12.9.86" and new != old and new.name.startswith("cuda12.9-")
    assert locate.dist_version(str(new), "nvidia-cuda-nvcc-cu12") == "12.9.86"


def test_incomplete_toolkit_gets_no_shim(tmp_path: Path) -> None:
    tk = toolkit(tmp_path / "cuda-12.8", skip=("nvvm/bin/cicc",))
    c = localcuda.probe(str(tk), "CUDA_HOME", _ctx())
    with pytest.raises(ComponentError, match="cicc"):
        shims.ensure(_layout(tmp_path), c)


def test_conda_shim_takes_cuda_tools_only_and_the_stock_profile(tmp_path: Path) -> None:
    prefix = toolkit(tmp_path / "env", "12.8.93", conda=True, version_json=False)
    _, root = _shim(tmp_path, prefix, "CONDA_PREFIX")
    bin_dir = root / "nvidia/cuda_nvcc/bin"
    assert "python3" not in os.listdir(bin_dir) and "cuda-gdb" not in os.listdir(bin_dir)
    assert os.readlink(bin_dir / "nvcc") == str(prefix / "bin/nvcc")
    profile = bin_dir / "nvcc.profile"
    assert not profile.is_symlink() and profile.read_text() == shims.STOCK_PROFILES[12]
    assert "TOP              = $(_HERE_)/..\n" in profile.read_text()
    assert os.readlink(root / "nvidia/cuda_nvcc/nvvm") == str(prefix / "nvvm")


def test_the_tree_over_a_shim_never_writes_into_the_toolkit(tmp_path: Path) -> None:
    """The tree writes its driver stub at lib64/stubs/libcuda.so: through a link to the
    toolkit's stubs/ it would overwrite the toolkit's own (as root, it could)."""
    tk = toolkit(tmp_path / "cuda-13.0", "13.0.88")
    _, root = _shim(tmp_path, tk)
    ctx = Context.current()
    inventory = locate.locate([str(root)])
    kit = pipeline.Toolkit(13, inventory, {f.component.name: "local" for f in inventory.found})
    tree = pipeline.tree_for(ctx, _layout(tmp_path), kit)
    assert not any(lk.path.startswith("lib64/stubs") for lk in tree.links)
    home = trees.ensure(_layout(tmp_path), tree, ctx)
    assert (home.path / plan_rules.STUB).is_file() and not (home.path / "lib64/stubs").is_symlink()
    assert (tk / "targets" / TD / "lib/stubs/libcuda.so").read_text() == "the toolkit's own stub"
    assert os.path.realpath(home.path / "bin/.nvcc-real") == str(tk / "bin/nvcc")
    assert os.path.realpath(home.path / "include/crt") == str(tk / "targets" / TD / "include/crt")
    assert home.nvcc_version == "13.0.88"


# -- the source ----------------------------------------------------------------------


def _target(tmp: Path) -> Target:
    return Target(str(tmp / "python"), str(tmp), (3, 11, 7), ())


def _torch(cuda: str) -> Torch:
    return Torch("2.9.1", cuda, "/x/torch", None)


def test_source_offers_the_shim_of_the_fitting_toolkit(tmp_path: Path) -> None:
    toolkit(tmp_path / "usr/cuda-12.4", "12.4.131")
    tk128 = toolkit(tmp_path / "opt/cuda-12.8", "12.8.93")
    ctx = _ctx(CUDA_HOME=str(tmp_path / "usr/cuda-12.4"), CUDA_PATH=str(tk128))
    source = local.LocalSource()
    offer = source.offer(_target(tmp_path), _torch("12.8"), _layout(tmp_path), ctx)
    assert offer is not None and offer.source == "local" and len(offer.roots) == 1
    assert "12.8.93" in offer.description and str(tk128) in offer.description
    shim = Path(offer.roots[0])
    assert json.loads((shim / shims.MARK).read_text())["toolkit"] == str(tk128)


def test_source_offers_nothing_for_another_major(tmp_path: Path) -> None:
    toolkit(tmp_path / "cuda-13.0", "13.0.88")
    ctx = _ctx(CUDA_HOME=str(tmp_path / "cuda-13.0"))
    layout = _layout(tmp_path)
    offer = local.LocalSource().offer(_target(tmp_path), _torch("12.8"), layout, ctx)
    assert offer is not None and offer.roots == ()  # nothing, and why (doctor shows it)
    assert "refuses another major" in offer.description
    fit = local.choose(ctx, _torch("12.8"), layout)
    assert fit.chosen is None and "refuses another major" in fit.why
    assert not (_layout(tmp_path).local).exists()  # nothing written for it


def test_source_with_a_given_folder_looks_nowhere_else(tmp_path: Path) -> None:
    toolkit(tmp_path / "a", "12.8.93")
    given = toolkit(tmp_path / "b", "12.6.85")
    ctx = _ctx(CUDA_HOME=str(tmp_path / "a"))
    offer = local.LocalSource(given=str(given)).offer(
        _target(tmp_path), _torch("12.8"), _layout(tmp_path), ctx)
    assert offer is not None and str(given) in offer.description
    fit = local.choose(ctx, _torch("12.8"), _layout(tmp_path), str(tmp_path / "nowhere"))
    assert fit.chosen is None and "it is not a folder" in fit.why and "--toolkit" in fit.why


def test_prune_removes_the_links_of_a_toolkit_that_is_gone(tmp_path: Path) -> None:
    """Links to a toolkit still there stay (they cost nothing; trees lead through them);
    those of an uninstalled one, and a half-written one, go."""
    kept = toolkit(tmp_path / "cuda-12.8", "12.8.93")
    gone = toolkit(tmp_path / "cuda-12.9", "12.9.86")
    _, kept_root = _shim(tmp_path, kept)
    _, gone_root = _shim(tmp_path, gone)
    half = _layout(tmp_path).local / "cuda12.6-0123456789abcdef"
    half.mkdir()
    shutil.rmtree(gone)
    assert shims.problem(kept_root) is None
    assert shims.problem(gone_root) == f"the toolkit {gone} is gone"
    removed, busy = prune.prune(_layout(tmp_path))
    assert sorted((r.path, r.why) for r in removed) == sorted([
        (gone_root, f"local toolkit link: the toolkit {gone} is gone"),
        (half, "local toolkit link: never finished")])
    assert busy == [] and kept_root.is_dir() and not gone_root.exists()
