"""The PEP 517 backend's decisions, on fake environments: config settings, the wrapped
backend, the compiler set it asks for, its errors, the placeholder CUDA_HOME, and the
variables it sets for a build and puts back after (tests/integration/test_build_meta.py
builds the example for real with pip, uv and build)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import fakes
from wheelcuda import _pipeline as pipeline
from wheelcuda import build_meta
from wheelcuda._backend import plan as backend_plan
from wheelcuda._backend.config import (
    Config,
    Project,
    backend_name,
    load_backend,
    parse_config,
    read_project,
)
from wheelcuda._context import Context, patched_environ
from wheelcuda._probe import frontend
from wheelcuda._sources.redist import store_archives as archives
from wheelcuda._store import toolkits
from wheelcuda.errors import ArchError, ComponentError, TorchError, WheelcudaError

#: The compiler set torch 2.14.1 (cuda-toolkit==13.0.3) asks for, every part named.
SET_13_0_3 = ['cuda-toolkit[nvcc,cccl]==13.0.3', "nvidia-nvvm==13.0.*",
              "nvidia-cuda-crt==13.0.*", "nvidia-cuda-runtime==13.0.*",
              "nvidia-cuda-cccl==13.0.*", "nvidia-cuda-nvcc==13.0.*"]

FAKE_BACKEND = '''
import json, os

CALLS = os.environ["FAKE_BACKEND_LOG"]
WATCHED = ("CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "WHEELCUDA_ARCHS", "MAX_JOBS",
           "DIST_EXTRA_CONFIG", "FLUX_FORCE_BUILD", "PATH", "CUDACXX")


def _log(hook, settings):
    seen = {k: os.environ.get(k) for k in WATCHED}
    home = seen["CUDA_HOME"]
    seen["home_exists"] = bool(home) and os.path.isdir(home)
    seen["home_entries"] = sorted(os.listdir(home)) if seen["home_exists"] else None
    cfg = seen["DIST_EXTRA_CONFIG"]
    seen["cfg_text"] = None
    if cfg and os.path.isfile(cfg):
        with open(cfg) as f:
            seen["cfg_text"] = f.read()
    with open(CALLS, "a") as f:
        f.write(json.dumps({"hook": hook, "settings": settings, "env": seen}) + "\\n")
    if os.environ.get("FAKE_BACKEND_FAIL"):
        raise RuntimeError("the compile failed")


def get_requires_for_build_wheel(config_settings=None):
    _log("get_requires_for_build_wheel", config_settings)
    return ["setuptools>=77"]


def get_requires_for_build_sdist(config_settings=None):
    _log("get_requires_for_build_sdist", config_settings)
    return []


def build_sdist(sdist_directory, config_settings=None):
    _log("build_sdist", config_settings)
    return "x-1.0.tar.gz"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _log("build_wheel", config_settings)
    return "x-1.0-py3-none-any.whl"
'''

EDITABLE = '''

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _log("build_editable", config_settings)
    return "x-1.0-0.editable-py3-none-any.whl"


def get_requires_for_build_editable(config_settings=None):
    _log("get_requires_for_build_editable", config_settings)
    return ["editables"]
'''


# --- config settings and the wrapped backend -------------------------------------------

def test_our_settings_are_taken_out_and_the_rest_passed_on() -> None:
    config = parse_config({"wheelcuda.arch": "9.0", "--build-option": "--x",
                                      "wheelcuda.all-archs": "true",
                                      "wheelcuda.build-backend": "scikit_build_core.build"})
    assert config == Config(arch="9.0", all_archs=True,
                                       backend="scikit_build_core.build",
                                       inner={"--build-option": "--x"})
    assert parse_config(None).inner is None
    assert parse_config({"wheelcuda.arch": "9.0"}).inner == {}


def test_repeated_settings() -> None:
    """pip hands a setting given twice as a list: archs add up, the rest: last wins."""
    config = parse_config({"wheelcuda.arch": ["8.0", "9.0"],
                                      "wheelcuda.all-archs": ["true", "false"]})
    assert config.arch == "8.0;9.0" and not config.all_archs


@pytest.mark.parametrize(("settings", "said"), [
    ({"wheelcuda.archs": "9.0"}, "unknown config setting wheelcuda.archs"),
    ({"wheelcuda.all-archs": "maybe"}, "-C wheelcuda.all-archs='maybe' is neither true"),
])
def test_bad_settings(settings: dict[str, str], said: str) -> None:
    with pytest.raises(WheelcudaError, match=re.escape(said)) as info:
        parse_config(settings)
    assert "-C wheelcuda." in (info.value.fix or "")


def test_the_project_names_the_wrapped_backend(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""
        [project]
        name = "my-ext"
        [tool.wheelcuda]
        build-backend = "scikit_build_core.build"
        """))
    project = read_project(str(tmp_path))
    assert project == Project("my-ext", "scikit_build_core.build")
    assert backend_name(Config(), project) == "scikit_build_core.build"
    assert backend_name(Config(backend="a.b"), project) == "a.b"
    assert backend_name(Config(), Project()) == \
        "setuptools.build_meta"
    assert read_project(str(tmp_path / "none")) == Project()


@pytest.mark.parametrize(("text", "said"), [
    ("[tool.wheelcuda]\nbuild-backend = 3\n", "build-backend in .* is not a string"),
    ("[project\nname = 1", "cannot read .*pyproject.toml"),
])
def test_bad_pyproject(tmp_path: Path, text: str, said: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(WheelcudaError, match=said):
        read_project(str(tmp_path))


def test_loading_the_wrapped_backend() -> None:
    assert load_backend("setuptools.build_meta").__name__ == "setuptools.build_meta"
    assert load_backend("os:path") is os.path
    with pytest.raises(WheelcudaError, match=r"cannot import the build backend "
                                             r"no_such_backend\.build") as info:
        load_backend("no_such_backend.build")
    assert "add the package that provides no_such_backend to [build-system] requires" in \
        (info.value.fix or "")
    with pytest.raises(WheelcudaError, match="not a build backend name"):
        load_backend("setuptools build_meta")
    with pytest.raises(WheelcudaError, match="cannot wrap itself"):
        load_backend("wheelcuda.build_meta")


# --- archs, torch, the compiler set ----------------------------------------------------

#: A PATH without ninja (this machine has one in /usr/bin).
NO_NINJA = "/nonexistent"


def _ctx(**env: str) -> Context:
    # the wheels: this machine's system CUDA 13.0 would serve `auto` (see the test of it)
    return Context.of({"PATH": NO_NINJA, "WHEELCUDA_NO_GPU_PROBE": "1",
                       "WHEELCUDA_TOOLKIT": "wheels", "CC": shutil.which("gcc") or "gcc",
                       **env})


#: The settings of a build for sm_90.
SM90 = Config(arch="9.0")


def _archs(tmp_path: Path, config: Config, ctx: Context) -> pipeline.Resolved:
    """The backend's request through the pipeline (one arch choice for it and install)."""
    py = str(fakes.python(tmp_path, [_site(tmp_path)]))
    return pipeline.resolve(ctx, backend_plan._request(py, config, tree=False))


def test_archs_from_the_setting_then_the_environment(tmp_path: Path) -> None:
    r = _archs(tmp_path, Config(arch="9.0;12.0"), _ctx(TORCH_CUDA_ARCH_LIST="8.0"))
    assert [str(a) for a in r.archs] == ["9.0", "12.0"]
    assert r.arch_source == "-C wheelcuda.arch"
    r = _archs(tmp_path, Config(), _ctx(TORCH_CUDA_ARCH_LIST="8.0"))
    assert [str(a) for a in r.archs] == ["8.0"] and r.arch_source == "TORCH_CUDA_ARCH_LIST"


@pytest.mark.parametrize(("config", "env", "said"), [
    (Config(arch="banana"), {}, "-C wheelcuda.arch='banana': "),
    (Config(arch=""), {}, "-C wheelcuda.arch='': the GPU architecture list is empty"),
    (Config(), {"TORCH_CUDA_ARCH_LIST": "x"}, "TORCH_CUDA_ARCH_LIST='x' in your"),
    (Config(), {}, "no GPU architecture given and no GPU seen"),
])
def test_arch_errors_say_how_to_pass_them(config: Config, env: dict[str, str],
                                          said: str, tmp_path: Path) -> None:
    py = str(fakes.python(tmp_path, [_site(tmp_path)]))
    with pytest.raises(ArchError) as info:
        backend_plan.compiler_requirements(_ctx(**env), py, config)
    assert said in info.value.message
    fix = build_meta.for_backend(info.value.fix or "")  # as the hooks' frame shows it
    assert "-C wheelcuda.arch=" in fix or "TORCH_CUDA_ARCH_LIST" in fix, fix


def test_compiler_set_names_every_part() -> None:
    """pip counts cuda-toolkit[nvcc,cccl]==13.0.3 as met by the cuda-toolkit torch brought
    (extras are not looked at), so each part is named too."""
    assert backend_plan.compiler_set("==13.0.3", 13) == SET_13_0_3


def _site(tmp_path: Path, **torch: Any) -> Path:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    if torch.get("version") != "none":
        fakes.torch(site, **torch)
    return site


def test_requirements_for_a_bare_build_environment(tmp_path: Path) -> None:
    py = fakes.python(tmp_path, [_site(tmp_path)])
    assert backend_plan.compiler_requirements(_ctx(), str(py), SM90) == [*SET_13_0_3, "ninja"]


def test_nothing_when_the_environment_has_the_set(tmp_path: Path) -> None:
    site = fakes.build_needs(fakes.cu13_site(_site(tmp_path)))
    py = str(fakes.python(tmp_path, [site]))
    assert backend_plan.compiler_requirements(_ctx(), py, SM90) == []


def test_a_set_of_another_cuda_is_not_a_match(tmp_path: Path) -> None:
    site = fakes.build_needs(fakes.cu13_site(_site(tmp_path), version="12.9.86"))
    wanted = backend_plan.compiler_requirements(_ctx(), str(fakes.python(tmp_path, [site])),
                                              SM90)
    assert wanted == SET_13_0_3


def test_torch_without_a_pin_gets_its_release(tmp_path: Path) -> None:
    site = fakes.build_needs(_site(tmp_path, pin=None))
    wanted = backend_plan.compiler_requirements(_ctx(), str(fakes.python(tmp_path, [site])),
                                              SM90)
    assert wanted[0] == "cuda-toolkit[nvcc,cccl]==13.0.*"


def test_torch_missing(tmp_path: Path) -> None:
    py = fakes.python(tmp_path, [_site(tmp_path, version="none")])
    with pytest.raises(TorchError, match="torch is not installed in the build environment") \
            as info:
        backend_plan.compiler_requirements(_ctx(), str(py), SM90)
    assert 'add "torch" to [build-system] requires' in (info.value.fix or "")


def test_cpu_only_torch(tmp_path: Path) -> None:
    py = fakes.python(tmp_path, [_site(tmp_path, version="2.14.1+cpu", cuda=None, pin=None)])
    with pytest.raises(TorchError, match=r"torch 2\.14\.1\+cpu in the build environment .* "
                                         "is a CPU-only build"):
        backend_plan.compiler_requirements(_ctx(), str(py), SM90)


def test_cuda_12_torch_asks_for_no_wheel(tmp_path: Path) -> None:
    """No PyPI wheel holds a CUDA 12 compiler: the frontend is asked for none; the build
    takes it from NVIDIA's archives or a local toolkit (the pipeline's sources)."""
    site = fakes.build_needs(_site(tmp_path, version="2.9.1+cu128", cuda="12.8", pin=None))
    py = str(fakes.python(tmp_path, [site]))
    mirror = tmp_path / "mirror"  # the archives answer (NVIDIA is out of reach here)
    mirror.mkdir()
    (mirror / "redistrib_12.8.1.json").write_text("{}")
    ctx = _ctx(WHEELCUDA_TOOLKIT="auto", WHEELCUDA_REDIST_URL=mirror.as_uri())
    assert backend_plan.compiler_requirements(ctx, py, SM90) == []


def test_a_complete_source_needs_no_wheels(tmp_path: Path, isolated: Path) -> None:
    """auto: a compiler set already in wheelcuda's store (or a local toolkit) serves; the
    frontend is not asked for 270 MB of wheels again."""
    py = str(fakes.python(tmp_path, [fakes.build_needs(_site(tmp_path))]))
    ctx = _ctx(WHEELCUDA_TOOLKIT="auto", WHEELCUDA_CACHE_DIR=str(isolated), HOME=str(tmp_path))
    store = isolated / "toolkits" / toolkits.folder_name("==13.0.3")
    fakes.cu13_site(store)
    (store / toolkits.MARK).write_text("{}")
    for toolkit in ("auto", "wheels"):
        assert backend_plan.compiler_requirements(ctx.with_env(WHEELCUDA_TOOLKIT=toolkit),
                                                py, SM90) == []
    (store / toolkits.MARK).unlink()
    assert backend_plan.compiler_requirements(ctx.with_env(WHEELCUDA_TOOLKIT="wheels"), py,
                                            SM90)[0] \
        == "cuda-toolkit[nvcc,cccl]==13.0.3"


def test_archs_below_the_floor_stop_before_the_download(tmp_path: Path) -> None:
    py = fakes.python(tmp_path, [_site(tmp_path)])
    with pytest.raises(ArchError, match="CUDA 13 dropped sm_70"):
        backend_plan.compiler_requirements(_ctx(), str(py), Config(arch="7.0"))


def test_messages_for_the_command_line_are_translated() -> None:
    text = ("pass --arch with your GPU's compute capability, e.g. --arch 12.0 (RTX) or "
            "--arch 9.0 (H100); several: --arch '8.0;9.0'; or drop them from --arch; "
            "--all-archs keeps them")
    assert build_meta.for_backend(text) == (
        "pass the GPU archs to the build (pip, uv pip, uv build and python -m build all "
        "take -C): -C wheelcuda.arch with your GPU's compute capability, e.g. -C "
        "wheelcuda.arch=12.0 (RTX) or -C wheelcuda.arch=9.0 (H100); several: -C "
        "'wheelcuda.arch=8.0;9.0'; or drop them from -C wheelcuda.arch; "
        "-C wheelcuda.all-archs=true keeps them")


# --- os.environ, set and put back -------------------------------------------------------

def test_patched_environ_puts_everything_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WC_KEEP", "old")
    monkeypatch.setenv("WC_GONE", "there")
    monkeypatch.delenv("WC_NEW", raising=False)
    before = dict(os.environ)
    with pytest.raises(RuntimeError), \
            patched_environ({"WC_KEEP": "new", "WC_NEW": "1", "WC_GONE": None}):
        assert (os.environ["WC_KEEP"], os.environ["WC_NEW"]) == ("new", "1")
        assert "WC_GONE" not in os.environ
        raise RuntimeError
    assert dict(os.environ) == before


# --- the hooks, around a fake wrapped backend -------------------------------------------

@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A project whose pyproject.toml wraps ``fake_backend`` (it logs what it saw), built
    by a fake interpreter whose site folder holds torch 2.14.1+cu130 and nothing else."""
    mods = tmp_path / "mods"
    mods.mkdir()
    (mods / "fake_backend.py").write_text(FAKE_BACKEND)
    monkeypatch.syspath_prepend(str(mods))
    sys.modules.pop("fake_backend", None)
    src = tmp_path / "project"
    src.mkdir()
    (src / "pyproject.toml").write_text('[project]\nname = "my-ext"\n'
                                        '[tool.wheelcuda]\nbuild-backend = "fake_backend"\n')
    (src / "setup.py").write_text("import os\nFORCE = os.getenv('FLUX_FORCE_BUILD', 'FALSE') "
                                  "== 'TRUE'\n")
    monkeypatch.chdir(src)
    monkeypatch.setenv("FAKE_BACKEND_LOG", str(tmp_path / "calls.jsonl"))
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.delenv("MAX_JOBS", raising=False)
    monkeypatch.delenv("DIST_EXTRA_CONFIG", raising=False)
    monkeypatch.delenv(build_meta.DEBUG_VAR, raising=False)
    env = tmp_path / "env"
    env.mkdir()
    site = fakes.torch(env / "site")
    monkeypatch.setattr(build_meta, "_python", lambda ctx: str(fakes.python(env, [site])))
    yield src
    sys.modules.pop("fake_backend", None)


def _calls(tmp_path: Path) -> list[dict[str, Any]]:
    log = tmp_path / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _with_compiler(project: Path) -> None:
    """The fake build environment now holds the compiler set (as after get_requires)."""
    fakes.build_needs(fakes.cu13_site(project.parent / "env/site"))


def test_get_requires_adds_the_set_and_runs_setup_py_with_a_placeholder(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", shutil.which("gcc") or "gcc")  # the host compiler, off PATH
    monkeypatch.setenv("PATH", NO_NINJA)
    before = dict(os.environ)
    wanted = build_meta.get_requires_for_build_wheel({"wheelcuda.arch": "9.0", "other": "1"})
    assert wanted == ["setuptools>=77", *SET_13_0_3, "ninja"]
    [call] = _calls(tmp_path)
    assert call["settings"] == {"other": "1"}
    home = call["env"]["CUDA_HOME"]
    assert os.path.basename(home) == build_meta.PLACEHOLDER
    assert call["env"]["home_entries"] == []  # there, and empty
    assert not os.path.exists(home) and dict(os.environ) == before


def test_the_sdist_hooks_get_the_placeholder_too(project: Path, tmp_path: Path) -> None:
    assert build_meta.get_requires_for_build_sdist({"wheelcuda.arch": "9.0"}) == []
    assert build_meta.build_sdist(str(tmp_path), None) == "x-1.0.tar.gz"
    calls = _calls(tmp_path)
    assert [c["hook"] for c in calls] == ["get_requires_for_build_sdist", "build_sdist"]
    assert all(os.path.basename(c["env"]["CUDA_HOME"]) == build_meta.PLACEHOLDER for c in calls)
    assert calls[0]["settings"] == {} and calls[1]["settings"] is None


def test_no_placeholder_over_the_users_toolkit(project: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_PATH", "/opt/cuda")
    build_meta.build_sdist(str(tmp_path), None)
    assert _calls(tmp_path)[0]["env"]["CUDA_HOME"] is None


def test_build_wheel_sets_the_build_environment_and_puts_it_back(
        project: Path, tmp_path: Path, isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _with_compiler(project)
    before = dict(os.environ)
    name = build_meta.build_wheel(str(tmp_path), {"wheelcuda.arch": "9.0"})
    assert name == "x-1.0-py3-none-any.whl"
    [call] = _calls(tmp_path)
    env = call["env"]
    home = env["CUDA_HOME"]
    assert call["settings"] == {}
    assert "/cache/homes/cu13.0-" in home and env["CUDA_PATH"] == home
    assert env["CUDACXX"] == f"{home}/bin/nvcc" and env["PATH"].startswith(f"{home}/bin:")
    assert (env["TORCH_CUDA_ARCH_LIST"], env["WHEELCUDA_ARCHS"]) == ("9.0", "9.0")
    assert env["MAX_JOBS"].isdigit() and env["FLUX_FORCE_BUILD"] == "TRUE"  # its setup.py's
    assert env["cfg_text"].startswith("[build]\nbuild_base = ")
    # The tree lived in a temporary cache, now gone; the user's cache got nothing.
    assert not os.path.exists(home) and not os.path.exists(env["DIST_EXTRA_CONFIG"])
    assert not (isolated / "homes").exists()
    assert dict(os.environ) == before
    err = capsys.readouterr().err
    assert err.startswith("wheelcuda: building for 9.0 (from -C wheelcuda.arch) with nvcc "
                          "13.0.88 in ")
    assert "MAX_JOBS=" in err


def test_the_users_own_values_win(project: Path, tmp_path: Path,
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _with_compiler(project)
    for name, value in (("MAX_JOBS", "1"), ("FLUX_FORCE_BUILD", "NO"),
                        ("DIST_EXTRA_CONFIG", "/mine.cfg"), ("TORCH_CUDA_ARCH_LIST", "8.0")):
        monkeypatch.setenv(name, value)
    build_meta.build_wheel(str(tmp_path), None)
    env = _calls(tmp_path)[0]["env"]
    assert (env["MAX_JOBS"], env["FLUX_FORCE_BUILD"], env["DIST_EXTRA_CONFIG"]) == \
        ("1", "NO", "/mine.cfg")
    assert env["TORCH_CUDA_ARCH_LIST"] == "8.0"  # no -C: TORCH_CUDA_ARCH_LIST chose


def test_the_environment_comes_back_when_the_build_fails(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _with_compiler(project)
    monkeypatch.setenv("FAKE_BACKEND_FAIL", "1")
    before = dict(os.environ)
    with pytest.raises(RuntimeError, match="the compile failed"):  # theirs, left as it is
        build_meta.build_wheel(str(tmp_path), {"wheelcuda.arch": "9.0"})
    assert dict(os.environ) == before


def _exit_message(capsys: pytest.CaptureFixture[str], call: Any) -> str:
    with pytest.raises(SystemExit) as info:
        call()
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


def test_errors_are_messages_with_their_fix(project: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    err = _exit_message(capsys, lambda: build_meta.get_requires_for_build_wheel(
        {"wheelcuda.arch": "banana"}))
    assert err.startswith("wheelcuda: error: -C wheelcuda.arch='banana': not a GPU "
                          "architecture: 'banana'\n  fix: pass the GPU archs to the build (pip, "
                          "uv pip, uv build and python -m build all take -C): -C "
                          "wheelcuda.arch with your GPU's compute capability, e.g. -C "
                          "wheelcuda.arch=12.0"), err
    err = _exit_message(capsys, lambda: build_meta.build_wheel(str(tmp_path), None))
    assert "wheelcuda: error: no GPU architecture given and no GPU seen" in err
    err = _exit_message(capsys, lambda: build_meta.build_wheel(
        str(tmp_path), {"wheelcuda.arch": "9.0", "wheelcuda.build-backend": "nope.backend"}))
    assert "wheelcuda: error: cannot import the build backend nope.backend" in err
    assert _calls(tmp_path) == []  # nothing reached the wrapped backend


def test_errors_of_the_build_environment(project: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # torch is there but no compiler (a frontend that skipped get_requires, or pip that
    # would not replace a part of another release): the set of torch's pin is fetched
    # into the store, as install does; here the fetch fails and says so
    asked: list[str] = []

    def offline(layout: object, ctx: object, tool: object, spec: str, **kw: object) -> Path:
        asked.append(spec)
        raise ComponentError("could not fetch cuda-toolkit[nvcc,cccl]==13.0.3: offline",
                             "bring the wheels")

    monkeypatch.setattr(toolkits, "fetch", offline)
    err = _exit_message(capsys, lambda: build_meta.build_wheel(
        str(tmp_path), {"wheelcuda.arch": "9.0"}))
    assert asked == ["==13.0.3"]
    assert "wheelcuda: error: could not fetch cuda-toolkit[nvcc,cccl]==13.0.3: offline" in err
    (project.parent / "env/site/torch/version.py").unlink()
    err = _exit_message(capsys, lambda: build_meta.build_wheel(
        str(tmp_path), {"wheelcuda.arch": "9.0"}))
    assert "wheelcuda: error: torch is not installed in the build environment" in err
    assert 'fix: add "torch" to [build-system] requires' in err


def test_a_bug_of_ours_is_one_line(project: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kw: object) -> None:
        raise KeyError("oops")

    monkeypatch.setattr(build_meta, "plan_build", broken)
    err = _exit_message(capsys, lambda: build_meta.build_wheel(str(tmp_path),
                                                               {"wheelcuda.arch": "9.0"}))
    assert err.startswith("wheelcuda: internal error: KeyError: 'oops'\n")


def test_optional_hooks_follow_the_wrapped_backend(project: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A frontend looks a hook up before it calls it, and falls back when it is missing."""
    monkeypatch.setenv("CC", shutil.which("gcc") or "gcc")  # the host compiler, off PATH
    monkeypatch.setenv("PATH", NO_NINJA)
    assert not hasattr(build_meta, "build_editable")
    assert not hasattr(build_meta, "get_requires_for_build_editable")
    assert not hasattr(build_meta, "prepare_metadata_for_build_wheel")
    with (Path(sys.modules["fake_backend"].__file__ or "")).open("a") as f:
        f.write(EDITABLE)
    sys.modules.pop("fake_backend")
    assert hasattr(build_meta, "build_editable")
    assert build_meta.get_requires_for_build_editable({"wheelcuda.arch": "9.0"}) == \
        ["editables", *SET_13_0_3, "ninja"]
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # setuptools'
    assert hasattr(build_meta, "prepare_metadata_for_build_wheel")
    assert "build_wheel" in dir(build_meta) and "build_editable" in dir(build_meta)


def test_metadata_from_the_wheel_when_the_backend_has_no_hook(tmp_path: Path) -> None:
    def build(folder: str, settings: object) -> str:
        with zipfile.ZipFile(os.path.join(folder, "x-1.0-py3-none-any.whl"), "w") as whl:
            whl.writestr("x/__init__.py", "")
            whl.writestr("x-1.0.dist-info/METADATA", "Name: x\n")
        return "x-1.0-py3-none-any.whl"

    out = tmp_path / "meta"
    assert build_meta._metadata_from_wheel(build, str(out), None) == "x-1.0.dist-info"
    assert (out / "x-1.0.dist-info/METADATA").read_text() == "Name: x\n"
    assert not (out / "x").exists()


def test_cuda_12_torch_builds_from_the_pipelines_sources(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A CUDA 12 torch: no wheel serves; --toolkit local with none on the machine says
    so and names the other ways (the archive and local routes are tested for real in
    tests/integration)."""
    fakes.torch(project.parent / "env/site", "2.9.1+cu128", cuda="12.8", pin=None)
    err = _exit_message(capsys, lambda: build_meta.build_wheel(
        str(tmp_path), {"wheelcuda.arch": "8.0", "wheelcuda.toolkit": "local"}))
    assert "wheelcuda: error: -C wheelcuda.toolkit=local: no local CUDA toolkit" in err
    assert "fix: -C wheelcuda.toolkit=auto" in err and "--toolkit" not in err


def test_pip_is_not_asked_for_what_it_would_refuse(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """torch 2.15's dependencies put CCCL 13.3 into the build environment; pip refuses a
    requirement the environment holds at another version ("conflict with the backend
    dependencies"), so the part is left to the build's fetch; uv takes the pins."""
    site = _site(tmp_path)
    comp = next(c for c in fakes.catalog.COMPILER if c.name == "cuda_cccl")
    fakes.component(site, comp, 13, "13.3.5.0.6")
    py = str(fakes.python(tmp_path, [fakes.build_needs(site)]))
    monkeypatch.setattr(frontend, "target_of_build",
                        lambda ctx: frontend.Target("pip"))
    wanted = backend_plan.compiler_requirements(_ctx(), py, SM90)
    assert "nvidia-cuda-cccl==13.0.*" not in wanted and "nvidia-cuda-nvcc==13.0.*" in wanted
    assert "not asking pip for nvidia-cuda-cccl==13.0.*: the build environment holds " \
           "nvidia-cuda-cccl 13.3.5.0.6" in capsys.readouterr().err
    monkeypatch.setattr(frontend, "target_of_build",
                        lambda ctx: frontend.Target("uv"))
    assert "nvidia-cuda-cccl==13.0.*" in backend_plan.compiler_requirements(_ctx(), py, SM90)


def test_cuda_12_torch_builds_with_nvidias_archives(
        project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A CUDA 12 torch in the build environment: NVIDIA's archives (a mirror on
    127.0.0.1 here) are fetched into the user's store once, the tree is temporary."""
    from tests import redist_server as rs  # noqa: PLC0415

    fakes.torch(project.parent / "env/site", "2.9.1+cu128", cuda="12.8", pin=None)
    rs.cu12_mirror(tmp_path / "mirror")
    with rs.serve(tmp_path / "mirror") as server:
        monkeypatch.setenv("WHEELCUDA_REDIST_MANIFEST", f"{server.url}redistrib_12.8.1.json")
        monkeypatch.setenv("WHEELCUDA_TOOLKIT", "auto")
        build_meta.build_wheel(str(tmp_path), {"wheelcuda.arch": "9.0"})
    env = _calls(tmp_path)[0]["env"]
    home = Path(env["CUDA_HOME"])
    assert "wheelcuda-build-" in str(home) and env["WHEELCUDA_ARCHS"] == "9.0"
    err = capsys.readouterr().err
    assert "with nvcc 12.8.93" in err and "(redist)" in err
    store = next((isolated / "toolkits").glob("cuda-redist-12.8.1-*"))
    assert (store / "nvidia/cuda_nvcc/bin/ptxas").exists()  # kept for the next build


def test_metadata_downloads_nothing(project: Path, tmp_path: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """`uv lock` or `pip install --dry-run` ask for metadata only: a CUDA 12 torch's
    archives are not fetched for it; setup.py runs over the placeholder."""
    fakes.torch(project.parent / "env/site", "2.9.1+cu128", cuda="12.8", pin=None)
    (project.parent / "mods/fake_backend.py").write_text(FAKE_BACKEND + '''

def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    _log("prepare_metadata_for_build_wheel", config_settings)
    return "x-1.0.dist-info"
''')
    sys.modules.pop("fake_backend", None)

    def no_fetch(*args: object, **kw: object) -> Path:
        raise AssertionError("fetched for metadata")

    monkeypatch.setattr(archives, "fetch", no_fetch)
    monkeypatch.setenv("WHEELCUDA_TOOLKIT", "auto")
    hook = build_meta.__getattr__("prepare_metadata_for_build_wheel")
    assert hook(str(tmp_path / "meta"), {"wheelcuda.arch": "9.0"}) == "x-1.0.dist-info"
    env = _calls(tmp_path)[-1]["env"]
    assert env["home_exists"] and env["home_entries"] == []  # the placeholder
