"""Which environment a wheel under build is for (probe/frontend.py): read from the
frontend's command line and environment, as /proc shows the backend's parent."""

from __future__ import annotations

from pathlib import Path

from tests import fakes
from wheelcuda.context import Context
from wheelcuda.probe import frontend


def _venv(path: Path, torch: str | None = None) -> Path:
    (path / "bin").mkdir(parents=True)
    (path / "pyvenv.cfg").write_text("home = /usr/bin\n")
    site = path / "lib/python3.11/site-packages"
    site.mkdir(parents=True)
    if torch:
        fakes.dist_info(site, "torch", torch)
    return path


def test_uv_pip_python_then_virtual_env_then_dot_venv(tmp_path: Path) -> None:
    given = _venv(tmp_path / "given", "2.9.1+cu128")
    active = _venv(tmp_path / "active", "2.14.1")
    _venv(tmp_path / "work/.venv", "2.13.0")
    (tmp_path / "work/sub").mkdir()
    argv = ["/usr/bin/uv", "pip", "install", "--python", f"{given}/bin/python", "./ext"]
    t = frontend._uv(argv, {}, str(tmp_path))
    assert frontend.torch_version(t) == ("2.9.1+cu128", f"uv pip's environment {given}")
    t = frontend._uv(["uv", "pip", "install", "./ext"], {"VIRTUAL_ENV": str(active)}, "/")
    assert frontend.torch_version(t) is not None
    assert frontend.torch_version(t)[0] == "2.14.1"  # type: ignore[index]
    t = frontend._uv(["uv", "pip", "install", "x"], {}, str(tmp_path / "work/sub"))
    assert frontend.torch_version(t)[0] == "2.13.0"  # type: ignore[index]


def test_uv_project_commands_read_the_lock(tmp_path: Path) -> None:
    (tmp_path / "uv.lock").write_text('version = 1\n[[package]]\nname = "torch"\n'
                                      'version = "2.14.1"\n')
    t = frontend._uv(["uv", "sync", "-v"], {}, str(tmp_path))
    assert t.lock == str(tmp_path / "uv.lock")
    assert frontend.torch_version(t) == ("2.14.1", str(tmp_path / "uv.lock"))
    # uv build installs nowhere: nothing to compare
    assert frontend.torch_version(frontend._uv(["uv", "build", "."], {}, str(tmp_path))) is None


def test_pip_target_prefix_and_its_own_interpreter(tmp_path: Path) -> None:
    target = tmp_path / "t"
    fakes.dist_info(target, "torch", "2.9.1")
    ctx = Context.of({})
    t = frontend._pip(["python", "-m", "pip", "install", "--target", str(target), "."],
                      "/", ctx)
    assert frontend.torch_version(t) == ("2.9.1", f"pip --target {target}")
    assert frontend._pip(["pip", "wheel", "."], "/", ctx).site_dirs == ()


def test_unknown_frontends_pass() -> None:
    assert frontend.torch_version(frontend.Target("", why="x")) is None


def test_pip_is_told_by_its_command_line() -> None:
    assert frontend._is_pip(["/v/bin/pip", "install", "."])
    assert frontend._is_pip(["/v/bin/pip3.11", "install", "."])
    assert frontend._is_pip(["/usr/bin/python3", "-m", "pip", "install", "."])
    assert frontend._is_pip(["/t/bin/python", "/x/site-packages/pip/__pip-runner__.py",
                             "--python", "/t/bin/python", "install", "."])
    assert not frontend._is_pip(["/usr/bin/python3", "-m", "build", "."])
    assert not frontend._is_pip(["/usr/bin/uv", "pip", "install"])
