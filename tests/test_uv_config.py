"""`wheelcuda uv-config` and `wheelcuda constraints` as a person meets them, over fake
trees (the real uv and pip runs are in tests/integration/test_uv_routes.py), and the
pure rules behind them: the TOML merge and the uv.lock reader."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import tomlkit

from tests import fakes
from wheelcuda._probe import uvlock
from wheelcuda._rules import uvconfig, uvtorch
from wheelcuda._store import named, toolkits
from wheelcuda._store.layout import Layout
from wheelcuda.errors import ConfigError

FAKE_UV = "import sys\nprint('uv {version} (fake)')\n"


@pytest.fixture(autouse=True)
def sdists(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The index uv-config reads the packages' metadata from: a find-links folder of
    fake sdists in the forms seen on PyPI (no network in unit tests)."""
    folder = tmp_path_factory.mktemp("sdists")
    fakes.sdist(folder, "causal-conv1d", "1.7.0", metadata_version="2.2",
                requires=["torch", "packaging"])
    fakes.sdist(folder, "torch-scatter", "2.1.2")  # 2.1, no torch requirement
    fakes.sdist(folder, "flash-attn", "2.8.3", metadata_version="2.4", requires=["torch"],
                dynamic=["requires-dist"])
    empty = tmp_path_factory.mktemp("no-index")  # in place of PyPI
    monkeypatch.setenv("UV_DEFAULT_INDEX", empty.as_uri())
    monkeypatch.setenv("UV_FIND_LINKS", str(folder))
    return folder


def run(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None
        ) -> subprocess.CompletedProcess[str]:
    full = fakes.pythonpath_env()
    full["WHEELCUDA_CACHE_DIR"] = os.environ["WHEELCUDA_CACHE_DIR"]
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "wheelcuda", *args], capture_output=True,
                          text=True, env=full, check=False, cwd=cwd)


def fail(result: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    for needle in needles:
        assert needle in result.stderr, result.stderr


def _uv(tmp: Path, version: str = "0.13.9") -> dict[str, str]:
    return fakes.uv_on_path(tmp, FAKE_UV.format(version=version))


@pytest.fixture
def store(isolated: Path) -> Path:
    """The compiler set in wheelcuda's store, as `wheelcuda fetch` leaves it."""
    folder = isolated / "toolkits" / toolkits.folder_name("==13.0.3")
    fakes.cu13_site(folder)
    (folder / toolkits.MARK).write_text("{}")
    wanted = ["cuda-toolkit[cublas,cusparse,cusolver,curand,cufft,nvrtc,nvtx,cupti]==13.0.3"]
    headers = isolated / "toolkits" / toolkits.folder_name(
        "==13.0.3", kind=toolkits.headers_kind(wanted))
    for comp in fakes.catalog.LIBRARIES:
        if comp.name in fakes.catalog.HEADER_LIBRARIES:
            fakes.component(headers, comp, 13, "13.0.0")
    (headers / toolkits.MARK).write_text("{}")
    return folder


@pytest.fixture
def env_py(tmp_path: Path) -> Path:
    """A user environment with torch and torch's libraries, no compiler."""
    site = tmp_path / "site"
    fakes.torch(site)
    for lib in ("libcublas", "libcusparse"):
        comp = next(c for c in fakes.catalog.LIBRARIES if c.name == lib)
        fakes.component(site, comp, 13, "13.0.0")
    return fakes.python(tmp_path, [site])


def settings_of(text: str) -> dict[str, object]:
    return tomlkit.parse(text).unwrap()


# --- the command ---------------------------------------------------------------------


def test_prints_settings_for_the_store_tree(env_py: Path, store: Path, isolated: Path,
                                            tmp_path: Path) -> None:
    r = run("uv-config", "--python", str(env_py), "--arch", "9.0", "causal-conv1d",
            "torch-scatter", env=_uv(tmp_path))
    assert r.returncode == 0, r.stderr
    data = settings_of(r.stdout)
    deps = data["extra-build-dependencies"]
    # torch's exact version for every package: uv takes it whatever the metadata says
    assert deps["causal-conv1d"] == ["torch==2.14.1"]
    assert deps["torch-scatter"] == ["torch==2.14.1"]
    cc = data["extra-build-variables"]["causal-conv1d"]
    home = Path(cc["CUDA_HOME"])
    assert home.parent == isolated / "homes"
    # the compiler and torch's library headers from the store: no environment needed
    assert os.path.realpath(home / "bin/ptxas").startswith(str(store))
    assert "-headers-" in os.path.realpath(home / "include/cusparse.h")
    assert cc["TORCH_CUDA_ARCH_LIST"] == "9.0" and cc["WHEELCUDA_ARCHS"] == "9.0"
    assert cc["CAUSAL_CONV1D_FORCE_BUILD"] == "TRUE"
    assert cc["MAX_JOBS"].isdigit()
    assert cc[uvconfig.KEY].startswith("torch 2.14.1+cu130 (CUDA 13.0); nvcc 13.0.88; archs 9.0")
    assert data["extra-build-variables"]["torch-scatter"]["FORCE_CUDA"] == "1"
    assert "keep this file out of" in r.stdout


def test_write_is_idempotent_keeps_the_users_entries_and_removes_cleanly(
        env_py: Path, store: Path, tmp_path: Path) -> None:
    del store
    uv_toml = tmp_path / "uv.toml"
    original = ('# my settings\nindex-strategy = "unsafe-best-match"\n\n'
                '[extra-build-variables]\ncausal-conv1d = { MAX_JOBS = "1" }\n')
    uv_toml.write_text(original)
    args = ("uv-config", "--python", str(env_py), "--arch", "9.0", "--write", str(uv_toml),
            "causal-conv1d")
    first = run(*args, env=_uv(tmp_path))
    assert first.returncode == 0, first.stderr
    assert "MAX_JOBS is yours ('1'; wheelcuda's:" in first.stderr
    written = uv_toml.read_text()
    assert written.startswith("# my settings\nindex-strategy")
    data = settings_of(written)
    assert data["extra-build-variables"]["causal-conv1d"]["MAX_JOBS"] == "1"
    second = run(*args, env=_uv(tmp_path))
    assert "nothing changed" in second.stderr
    assert uv_toml.read_text() == written
    removed = run("uv-config", "--remove", "--write", str(uv_toml), env=_uv(tmp_path))
    assert removed.returncode == 0 and "removed wheelcuda's uv settings for causal-conv1d" \
        in removed.stderr
    assert settings_of(uv_toml.read_text()) == settings_of(original)
    assert uv_toml.read_text().startswith("# my settings")


def test_write_into_pyproject_warns_and_keeps_tool_uv(env_py: Path, store: Path,
                                                      tmp_path: Path) -> None:
    del store
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "p"\nversion = "1"\n\n[[tool.uv.index]]\n'
                         'url = "https://example.org/simple"\n\n[tool.uv]\n'
                         'environments = ["sys_platform == \'linux\'"]\n')
    r = run("uv-config", "--python", str(env_py), "--arch", "9.0", "--write", str(pyproject),
            "causal-conv1d", env=_uv(tmp_path))
    assert r.returncode == 0, r.stderr
    assert "before committing it, take them out" in r.stderr and "uv.toml" not in r.stderr
    data = settings_of(pyproject.read_text())["tool"]["uv"]
    assert data["environments"] == ["sys_platform == 'linux'"]
    assert data["index"] == [{"url": "https://example.org/simple"}]
    assert "causal-conv1d" in data["extra-build-variables"]


def test_torch_from_uv_lock_before_the_first_sync(store: Path, tmp_path: Path) -> None:
    del store
    project = tmp_path / "proj"
    project.mkdir()
    (project / "uv.lock").write_text(LOCK_CU13)
    r = run("uv-config", "--arch", "9.0", "causal-conv1d", env=_uv(tmp_path), cwd=project)
    assert r.returncode == 0, r.stderr
    assert "matching torch 2.14.1 (CUDA 13.0)" in r.stderr
    key = settings_of(r.stdout)["extra-build-variables"]["causal-conv1d"][uvconfig.KEY]
    assert key.startswith("torch 2.14.1 (CUDA 13.0)")


def test_bad_toml_is_refused_and_left_untouched(env_py: Path, tmp_path: Path) -> None:
    bad = tmp_path / "pyproject.toml"
    bad.write_text("[project\nname = 'x'\n")
    r = run("uv-config", "--python", str(env_py), "--arch", "9.0", "--write", str(bad),
            env=_uv(tmp_path))
    fail(r, "is not valid TOML", "it was not changed", "fix:")
    assert bad.read_text() == "[project\nname = 'x'\n"


def test_read_only_file_is_refused(env_py: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """os.access says no for a file without write bits (to anyone but root, who runs
    these tests here: so the answer is given; the refusal is what is tested)."""
    from wheelcuda._store import userfiles  # noqa: PLC0415

    del env_py
    ro = tmp_path / "uv.toml"
    ro.write_text("# mine\n")
    monkeypatch.setattr(userfiles.os, "access", lambda *_a, **_k: False)
    with pytest.raises(ConfigError, match="is read-only; it was not changed"):
        userfiles.replace_text(ro, "new")
    assert ro.read_text() == "# mine\n"


def test_old_uv_is_named_with_the_version_needed(env_py: Path, tmp_path: Path) -> None:
    fail(run("uv-config", "--python", str(env_py), "--arch", "9.0",
             env=_uv(tmp_path, "0.9.2")), "uv 0.9.2", "too old", "uv>=0.10.0")


@pytest.mark.parametrize(("args", "needles"), [
    (("--remove",), ("--remove needs the file",)),
    (("not a name!",), ("is neither a package name (or name==version) nor a project",)),
    (("--cuda", "banana"), ("--cuda 'banana' is not a CUDA version", "--cuda 13.0")),
])
def test_bad_arguments(env_py: Path, tmp_path: Path, args: tuple[str, ...],
                       needles: tuple[str, ...]) -> None:
    fail(run("uv-config", "--python", str(env_py), *args, env=_uv(tmp_path)), *needles)


def test_folder_without_static_name_is_explained(env_py: Path, tmp_path: Path) -> None:
    folder = tmp_path / "dyn"
    folder.mkdir()
    (folder / "setup.py").write_text("from setuptools import setup\nsetup(name='dyn')\n")
    (folder / "pyproject.toml").write_text('[build-system]\nrequires = ["setuptools"]\n')
    fail(run("uv-config", "--python", str(env_py), str(folder), env=_uv(tmp_path)),
         "no static [project] name", "uv applies per-package settings only to", "wheelcuda install")


def test_torch_index_is_written_for_build_environments(env_py: Path, store: Path,
                                                      tmp_path: Path) -> None:
    """--torch-index (a mirror of PyTorch's index) is written as the wheelcuda-torch
    index; torch from PyPI (2.14.1 here) needs none."""
    plain = settings_of(run("uv-config", "--python", str(env_py), "--arch", "9.0",
                            "torch-scatter", env=_uv(tmp_path)).stdout)
    assert "index" not in plain
    r = run("uv-config", "--python", str(env_py), "--arch", "9.0", "--torch-index",
            "https://mirror.example/whl/cu130", "torch-scatter", env=_uv(tmp_path))
    assert r.returncode == 0, r.stderr
    assert settings_of(r.stdout)["index"] == [{"name": "wheelcuda-torch",
                                               "url": "https://mirror.example/whl/cu130"}]


def test_no_torch_anywhere(tmp_path: Path) -> None:
    empty = fakes.python(tmp_path, [tmp_path / "empty-site"])
    fail(run("uv-config", "--python", str(empty), "--arch", "9.0", env=_uv(tmp_path),
             cwd=tmp_path), "no torch to match", "--cuda 13.0")


# --- constraints ---------------------------------------------------------------------


def test_constraints_pin_torch_exactly(env_py: Path, tmp_path: Path) -> None:
    r = run("constraints", "--python", str(env_py))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "torch==2.14.1"
    assert "--build-constraint" in r.stdout
    out = tmp_path / "c.txt"
    assert run("constraints", "--python", str(env_py), "-o", str(out)).returncode == 0
    assert out.read_text() == r.stdout


def test_constraints_name_pytorchs_index_for_a_local_version(tmp_path: Path) -> None:
    site = tmp_path / "site"
    fakes.torch(site, version="2.9.1+cu128", cuda="12.8", pin=None)
    fakes.dist_info(site, "torch", "2.9.1+cu128")
    py = fakes.python(tmp_path, [site])
    r = run("constraints", "--python", str(py))
    assert r.returncode == 0, r.stderr
    assert "torch==2.9.1+cu128" in r.stdout
    assert "https://download.pytorch.org/whl/cu128" in r.stderr


def test_constraints_without_torch_and_old_pip(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    fail(run("constraints", "--python", str(fakes.python(tmp_path, [site]))),
         "torch is not installed")
    fakes.torch(site)
    fakes.dist_info(site, "pip", "24.0")
    r = run("constraints", "--python", str(fakes.python(tmp_path, [site])))
    assert r.returncode == 0 and "pip 24.0" in r.stderr and "pip>=25.3" in r.stderr


# --- the rules -----------------------------------------------------------------------


OURS = uvconfig.Settings("causal-conv1d", uvtorch.match_runtime(),
                         {"CUDA_HOME": "/c/h", uvconfig.KEY: "torch 2.14.1"})


def test_merge_updates_its_own_pin_in_place_and_keeps_a_users_torch() -> None:
    doc = tomlkit.parse('[extra-build-dependencies]\nmamba-ssm = ["torch==2.3.0"]\n')
    pinned = uvconfig.Settings("mamba-ssm", "torch==2.14.1", {"A": "1"})
    conflicts = uvconfig.merge(doc, [pinned], pyproject=False)
    assert conflicts == ["extra-build-dependencies.mamba-ssm has your torch entry "
                         "('torch==2.3.0'; wheelcuda's: 'torch==2.14.1'): kept"]
    doc = tomlkit.document()
    uvconfig.merge(doc, [pinned], pyproject=False)
    newer = uvconfig.Settings("mamba-ssm", "torch==2.15.0", {"A": "2"})
    assert uvconfig.merge(doc, [newer], pyproject=False) == []
    data = doc.unwrap()
    assert data["extra-build-dependencies"]["mamba-ssm"] == ["torch==2.15.0"]
    assert data["extra-build-variables"]["mamba-ssm"]["A"] == "2"


def test_merge_refuses_a_tool_uv_that_is_not_a_table() -> None:
    doc = tomlkit.parse('tool = "x"\n')
    with pytest.raises(ConfigError, match="not a table"):
        uvconfig.merge(doc, [OURS], pyproject=True)


def test_remove_leaves_a_pyproject_as_it_was() -> None:
    text = '[project]\nname = "p"\n'
    doc = tomlkit.parse(text)
    uvconfig.merge(doc, [OURS], pyproject=True)
    assert "tool" in doc
    assert uvconfig.remove(doc, pyproject=True) == ["causal-conv1d"]
    assert doc.unwrap() == {"project": {"name": "p"}}


def test_render_is_valid_toml_with_the_header() -> None:
    text = uvconfig.render([OURS], ["hello"])
    assert text.startswith("# hello\n")
    assert settings_of(text)["extra-build-variables"]["causal-conv1d"]["CUDA_HOME"] == "/c/h"


LOCK_CU13 = """version = 1
requires-python = ">=3.11"

[[package]]
name = "cuda-toolkit"
version = "13.0.3"
source = { registry = "https://pypi.org/simple" }

[[package]]
name = "torch"
version = "2.14.1"
source = { registry = "https://pypi.org/simple" }
dependencies = [
    { name = "cuda-toolkit", extra = ["cublas"], marker = "sys_platform == 'linux'" },
    { name = "filelock" },
]
"""


def test_lock_reader_cuda_from_each_kind_of_torch() -> None:
    cu13 = uvlock.parse_lock(tomlkit.parse(LOCK_CU13).unwrap()["package"])
    assert cu13 is not None
    assert (cu13.version, cu13.cuda, cu13.toolkit_pin) == ("2.14.1", "13.0", "==13.0.3")
    local = uvlock.parse_lock([{"name": "torch", "version": "2.9.1+cu128"}])
    assert local is not None and local.cuda == "12.8"
    cu12 = uvlock.parse_lock([
        {"name": "torch", "version": "2.9.1",
         "dependencies": [{"name": "nvidia-cuda-runtime-cu12"}]},
        {"name": "nvidia-cuda-runtime-cu12", "version": "12.8.90"}])
    assert cu12 is not None and cu12.cuda == "12.8"
    assert uvlock.parse_lock([{"name": "numpy", "version": "2.0"}]) is None
    cpu = uvlock.parse_lock([{"name": "torch", "version": "2.9.1"}])
    assert cpu is not None and cpu.cuda is None


def test_lock_reader_errors(tmp_path: Path) -> None:
    bad = tmp_path / "uv.lock"
    bad.write_text("[[package]\n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        uvlock.torch_from_lock(str(bad))
    (tmp_path / "a/b").mkdir(parents=True)
    assert uvlock.find_lock(str(tmp_path / "a/b")) == str(bad)


# --- review findings ------------------------------------------------------------------


def test_dotted_keys_are_refused_not_mangled(env_py: Path, store: Path, tmp_path: Path) -> None:
    del store
    pyproject = tmp_path / "pyproject.toml"
    text = '[project]\nname = "p"\n\n[tool]\nuv.package = true\nruff.line-length = 99\n'
    pyproject.write_text(text)
    fail(run("uv-config", "--python", str(env_py), "--arch", "9.0", "--write", str(pyproject),
             "causal-conv1d", env=_uv(tmp_path)), "without changing yours", "not changed")
    assert pyproject.read_text() == text


def test_a_linked_file_stays_a_link(env_py: Path, store: Path, tmp_path: Path) -> None:
    del store
    real = tmp_path / "dotfiles" / "uv.toml"
    real.parent.mkdir()
    real.write_text("# mine\n")
    link = tmp_path / "uv.toml"
    link.symlink_to(real)
    r = run("uv-config", "--python", str(env_py), "--arch", "9.0", "--write", str(link),
            "causal-conv1d", env=_uv(tmp_path))
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and "WHEELCUDA_BUILD_KEY" in real.read_text()


def test_a_value_the_user_changed_is_theirs(env_py: Path, store: Path, tmp_path: Path) -> None:
    """Ownership kept by name is not enough. A `MAX_JOBS = "1"  # 16 OOMs`
    the user edited was set back on the next --write, and --remove deleted it."""
    del store
    uv_toml = tmp_path / "uv.toml"
    args = ("uv-config", "--python", str(env_py), "--arch", "9.0", "--write", str(uv_toml),
            "causal-conv1d")
    assert run(*args, env=_uv(tmp_path)).returncode == 0
    ours = settings_of(uv_toml.read_text())["extra-build-variables"]["causal-conv1d"]
    assert ours["MAX_JOBS"] != "1"
    doc = tomlkit.parse(uv_toml.read_text())
    table = doc["extra-build-variables"]["causal-conv1d"]
    table["MAX_JOBS"] = "1"
    table["MAX_JOBS"].comment("16 OOMs")
    uv_toml.write_text(tomlkit.dumps(doc))
    copy = tmp_path / "copy" / "uv.toml"  # --remove right after the edit: kept, and said
    copy.parent.mkdir()
    copy.write_text(uv_toml.read_text())
    removed = run("uv-config", "--remove", "--write", str(copy), env=_uv(tmp_path))
    assert removed.returncode == 0, removed.stderr
    assert "kept extra-build-variables.causal-conv1d.MAX_JOBS = '1' (changed by you)" \
        in removed.stderr
    assert settings_of(copy.read_text())["extra-build-variables"]["causal-conv1d"] == {
        "MAX_JOBS": "1"}
    again = run(*args, env=_uv(tmp_path))
    assert again.returncode == 0, again.stderr
    assert "MAX_JOBS is changed by you ('1'; wheelcuda's:" in again.stderr
    assert 'MAX_JOBS = "1" # 16 OOMs' in uv_toml.read_text()
    removed = run("uv-config", "--remove", "--write", str(uv_toml), env=_uv(tmp_path))
    assert removed.returncode == 0, removed.stderr  # the user's since the last --write
    left = settings_of(uv_toml.read_text())["extra-build-variables"]["causal-conv1d"]
    assert left == {"MAX_JOBS": "1"}


def test_crlf_stays_crlf_and_a_hard_link_stays_a_link(env_py: Path, store: Path,
                                                      tmp_path: Path) -> None:
    del store
    uv_toml = tmp_path / "uv.toml"
    uv_toml.write_bytes(b'# mine\r\nindex-strategy = "unsafe-best-match"\r\n')
    other = tmp_path / "elsewhere.toml"
    os.link(uv_toml, other)
    r = run("uv-config", "--python", str(env_py), "--arch", "9.0", "--write", str(uv_toml),
            "causal-conv1d", env=_uv(tmp_path))
    assert r.returncode == 0, r.stderr
    data = uv_toml.read_bytes()
    assert b"WHEELCUDA_BUILD_KEY" in data and data.startswith(b"# mine\r\n")
    assert data.count(b"\n") == data.count(b"\r\n")  # every line
    assert os.path.samefile(uv_toml, other) and other.read_bytes() == data


def test_path_is_the_trees_bin_only(env_py: Path, store: Path, tmp_path: Path) -> None:
    """It is in uv's cache key: the shell's PATH must not make every run a new key."""
    del store
    r = run("uv-config", "--python", str(env_py), "--arch", "9.0", "causal-conv1d",
            env=_uv(tmp_path))
    cc = settings_of(r.stdout)["extra-build-variables"]["causal-conv1d"]
    assert cc["PATH"] == f"{cc['CUDA_HOME']}/bin"


def test_remove_keeps_the_comments_of_the_users_list() -> None:
    text = ('[extra-build-dependencies]\ncausal-conv1d = [\n  "ninja",  # needed for speed\n]\n')
    doc = tomlkit.parse(text)
    uvconfig.merge(doc, [OURS], pyproject=False)
    uvconfig.remove(doc, pyproject=False)
    assert "# needed for speed" in tomlkit.dumps(doc)
    assert doc.unwrap()["extra-build-dependencies"]["causal-conv1d"] == ["ninja"]


def test_a_list_of_tables_and_other_spellings() -> None:
    aot = tomlkit.parse('[[extra-build-dependencies.causal-conv1d]]\nrequirement = "ninja"\n')
    conflicts = uvconfig.merge(aot, [OURS], pyproject=False)
    assert "is not a plain list" in conflicts[0]
    spelled = tomlkit.parse('[extra-build-dependencies]\ncausal_conv1d = ["torch==2.5.0"]\n')
    conflicts = uvconfig.merge(spelled, [OURS], pyproject=False)
    assert "causal_conv1d has your torch entry" in conflicts[0]
    assert "causal-conv1d" not in spelled.unwrap()["extra-build-dependencies"]
    with pytest.raises(ConfigError, match="not a table"):
        uvconfig.merge(tomlkit.parse("extra-build-variables = []\n"), [OURS], pyproject=False)


def test_a_torch_entry_the_user_edited_is_theirs() -> None:
    """uv-config wrote `torch==2.14.1`; the user made it `torch==2.14.1+cu130`. A later
    run for another torch keeps their entry (and says so), and remove leaves it, as an
    edited variable is kept; an older mark without a digest still replaces and removes."""
    pinned = uvconfig.Settings("mamba-ssm", "torch==2.14.1", {"A": "1"})
    newer = uvconfig.Settings("mamba-ssm", "torch==2.15.0", {"A": "2"})
    doc = tomlkit.document()
    uvconfig.merge(doc, [pinned], pyproject=False)
    doc["extra-build-dependencies"]["mamba-ssm"][0] = "torch==2.14.1+cu130"
    conflicts = uvconfig.merge(doc, [newer], pyproject=False)
    assert conflicts == ["extra-build-dependencies.mamba-ssm has the torch entry you "
                         "changed ('torch==2.14.1+cu130'; wheelcuda's: 'torch==2.15.0'): kept"]
    assert doc["extra-build-dependencies"]["mamba-ssm"] == ["torch==2.14.1+cu130"]
    uvconfig.remove(doc, pyproject=False)  # theirs now: not in wheelcuda's mark
    assert doc["extra-build-dependencies"]["mamba-ssm"] == ["torch==2.14.1+cu130"]
    # edited, then removed at once: kept, and named
    doc = tomlkit.document()
    uvconfig.merge(doc, [pinned], pyproject=False)
    doc["extra-build-dependencies"]["mamba-ssm"][0] = "torch==2.14.1+cu130"
    kept: list[str] = []
    uvconfig.remove(doc, pyproject=False, kept=kept)
    assert doc["extra-build-dependencies"]["mamba-ssm"] == ["torch==2.14.1+cu130"]
    assert kept == ["extra-build-dependencies.mamba-ssm entry 'torch==2.14.1+cu130' "
                    "(changed by you)"]
    # a mark an older wheelcuda wrote (no digest): its entry is still its own
    old = tomlkit.parse('[extra-build-dependencies]\nmamba-ssm = ["torch==2.14.1"]\n'
                        '[extra-build-variables.mamba-ssm]\nA = "1"\n'
                        'WHEELCUDA_SET = "A extra-build-dependencies:torch"\n')
    assert uvconfig.merge(old, [newer], pyproject=False) == []
    assert old["extra-build-dependencies"]["mamba-ssm"] == ["torch==2.15.0"]
    uvconfig.remove(old, pyproject=False)
    assert "extra-build-dependencies" not in old


def test_the_settings_written_name_their_tree_for_prune(env_py: Path, store: Path,
                                                        isolated: Path, tmp_path: Path) -> None:
    """``cache prune`` keeps a tree while uv settings hold its path (_store/named.py):
    --write records its file; printed settings record the files uv reads here."""
    del store
    uv_toml = tmp_path / "uv.toml"
    r = run("uv-config", "--python", str(env_py), "--arch", "9.0", "--write", str(uv_toml),
            "causal-conv1d", env=_uv(tmp_path))
    assert r.returncode == 0, r.stderr
    home = Path(settings_of(uv_toml.read_text())["extra-build-variables"]["causal-conv1d"]
                ["CUDA_HOME"])
    layout = Layout(isolated)
    assert named.naming(layout, home) == f"the uv settings in {uv_toml} name it"
    uv_toml.unlink()
    project = tmp_path / "project"
    project.mkdir()
    printed = run("uv-config", "--python", str(env_py), "--arch", "9.0", "causal-conv1d",
                  env=_uv(tmp_path), cwd=project)
    assert printed.returncode == 0, printed.stderr
    assert named.naming(layout, home) is None  # nothing holds the path yet
    (project / "uv.toml").write_text(printed.stdout)  # saved as the note says
    assert named.naming(layout, home) == f"the uv settings in {project / 'uv.toml'} name it"


def test_a_sources_own_switches_reach_uvs_settings(env_py: Path, store: Path,
                                                   tmp_path: Path) -> None:
    """chamferdist builds its CUDA code only with FORCE_CUDA=1 when torch sees no GPU:
    install read it from the sdist's setup.py and set it, uv-config took the recipe table
    alone, and the same sdist built CPU-only through uv (no GPU code in the wheel). Both
    take the same variables now."""
    del store
    setup = ('import os\nfrom setuptools import setup\n'
             'force_cuda = os.getenv("FORCE_CUDA", "0") == "1"\nsetup()\n')
    sdist = fakes.tarball(tmp_path / "pointops-1.0.tar.gz",
                          {"PKG-INFO": "Metadata-Version: 2.1\nName: pointops\nVersion: 1.0\n",
                           "setup.py": setup})
    r = run("uv-config", "--python", str(env_py), "--arch", "9.0", str(sdist),
            env=_uv(tmp_path))
    assert r.returncode == 0, r.stderr
    assert settings_of(r.stdout)["extra-build-variables"]["pointops"]["FORCE_CUDA"] == "1"


#: Files a user may hold, as --write then --remove must give them back, byte for byte:
#: settings after theirs, between theirs, last, after a comment or a blank line, beside
#: their own index and their own package's variables, in a pyproject.toml and a uv.toml.
ROUND_TRIPS = {
    "content before and after": (True, '[project]\nname = "p"\nversion = "0.1"\n\n'
                                       '[tool.ruff]\nline-length = 99\n'),
    "the table last": (True, '[project]\nname = "p"\nversion = "0.1"\n'),
    "a blank line last": (True, '[project]\nname = "p"\n\n'),
    "a comment last": (True, '[project]\nname = "p"\n# the end\n'),
    "tool.uv between": (True, '[project]\nname = "p"\n\n[tool.uv]\npackage = true\n\n'
                              '[tool.ruff]\nx = 1\n'),
    "tool.uv last": (True, '[project]\nname = "p"\n\n[tool.uv]\npackage = true\n'),
    "their index": (True, '[project]\nname = "p"\n\n[[tool.uv.index]]\n'
                          'url = "https://example.org/simple"\n\n[tool.ruff]\nx = 1\n'),
    "their variables": (True, '[project]\nname = "p"\n\n[tool.uv.extra-build-variables.mine]\n'
                              'A = "1"\n'),
    "CRLF": (True, '[project]\r\nname = "p"\r\n'),
    "uv.toml": (False, '# mine\nindex-url = "https://example.org/simple"\n'),
    "uv.toml with their list": (False, '[extra-build-dependencies]\nmine = ["ninja"]\n\n'
                                       '[extra-build-variables.mine]\nA = "1"\n'),
    "an empty uv.toml": (False, ""),
}


@pytest.mark.parametrize("case", list(ROUND_TRIPS))
@pytest.mark.parametrize("index", [None, "https://download.pytorch.org/whl/cu128"])
def test_write_then_remove_gives_the_file_back_byte_for_byte(case: str,
                                                             index: str | None) -> None:
    """A blank line tomlkit put before the first table wheelcuda wrote was read back as
    the end of the user's table above it, and --remove left it there."""
    pyproject, text = ROUND_TRIPS[case]
    other = uvconfig.Settings("flash-attn", "torch==2.14.1", {"CUDA_HOME": "/c/h"})
    doc = tomlkit.parse(text)
    uvconfig.merge(doc, [OURS, other], pyproject=pyproject, index=index)
    written = tomlkit.dumps(doc)  # a second run, in another process, reads the file
    doc = tomlkit.parse(written)
    assert uvconfig.merge(doc, [OURS, other], pyproject=pyproject, index=index) == []
    assert tomlkit.dumps(doc) == written
    whole = tomlkit.parse(written)
    uvconfig.remove(whole, pyproject=pyproject)
    assert tomlkit.dumps(whole) == text
    one = tomlkit.parse(written)  # one package, then the other
    uvconfig.remove(one, pyproject=pyproject, packages=["flash-attn"])
    one = tomlkit.parse(tomlkit.dumps(one))
    uvconfig.remove(one, pyproject=pyproject)
    assert tomlkit.dumps(one) == text


def test_uv_config_remove_gives_the_pyproject_back(env_py: Path, store: Path,
                                                  tmp_path: Path) -> None:
    """The command, as the README tells it: --write into pyproject.toml, then --remove
    before committing, leaves the file as the user had it."""
    del store
    pyproject = tmp_path / "pyproject.toml"
    for text in ROUND_TRIPS["content before and after"][1], ROUND_TRIPS["the table last"][1]:
        pyproject.write_text(text)
        r = run("uv-config", "--python", str(env_py), "--arch", "9.0", "--write",
                str(pyproject), "causal-conv1d", env=_uv(tmp_path))
        assert r.returncode == 0, r.stderr
        assert "extra-build-variables" in pyproject.read_text()
        r = run("uv-config", "--remove", "--write", str(pyproject), env=_uv(tmp_path))
        assert r.returncode == 0, r.stderr
        assert pyproject.read_bytes() == text.encode()
