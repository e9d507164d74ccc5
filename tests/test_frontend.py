"""Which environment a wheel under build is for (_probe/frontend.py): read from the
frontend's command line and environment, as /proc shows the backend's parent."""

from __future__ import annotations

from pathlib import Path

from tests import fakes
from wheelcuda._context import Context
from wheelcuda._probe import frontend


def _venv(path: Path, torch: str | None = None) -> Path:
    (path / "bin").mkdir(parents=True)
    (path / "pyvenv.cfg").write_text("home = /usr/bin\n")
    site = path / "lib/python3.11/site-packages"
    site.mkdir(parents=True)
    if torch:
        fakes.torch(site, torch, pin=None)
        (site / f"torch-{torch.split('+')[0]}.dist-info/METADATA").write_text(
            f"Metadata-Version: 2.1\nName: torch\nVersion: {torch}\n")
    return path


def test_uv_pip_python_then_virtual_env_then_dot_venv(tmp_path: Path) -> None:
    given = _venv(tmp_path / "given", "2.9.1+cu128")
    active = _venv(tmp_path / "active", "2.14.1")
    _venv(tmp_path / "work/.venv", "2.13.0")
    (tmp_path / "work/sub").mkdir()
    argv = ["/usr/bin/uv", "pip", "install", "--python", f"{given}/bin/python", "./ext"]
    t = frontend._uv(argv, {}, str(tmp_path))
    assert _torch(t) == ("2.9.1+cu128", f"uv pip's environment {given}")
    t = frontend._uv(["uv", "pip", "install", "./ext"], {"VIRTUAL_ENV": str(active)}, "/")
    assert _torch(t)[0] == "2.14.1"
    t = frontend._uv(["uv", "pip", "install", "x"], {}, str(tmp_path / "work/sub"))
    assert _torch(t)[0] == "2.13.0"


def _torch(target: frontend.Target) -> tuple[str, str]:
    found = frontend.target_torch(target, Context.of({}))
    assert found is not None
    return found.version, found.where


def test_uv_project_commands_read_the_lock(tmp_path: Path) -> None:
    (tmp_path / "uv.lock").write_text('version = 1\n[[package]]\nname = "torch"\n'
                                      'version = "2.14.1"\n')
    _venv(tmp_path / ".venv", "2.13.0")  # stale: uv add torch==2.14.1 builds before syncing
    t = frontend._uv(["uv", "sync", "-v"], {}, str(tmp_path))
    assert t.lock == str(tmp_path / "uv.lock")
    assert _torch(t) == ("2.14.1", str(tmp_path / "uv.lock"))
    # uv build installs nowhere: nothing to compare
    assert frontend.target_torch(frontend._uv(["uv", "build", "."], {}, str(tmp_path)),
                                 Context.of({})) is None


def test_pip_target_prefix_and_its_own_interpreter(tmp_path: Path) -> None:
    target = tmp_path / "t"
    fakes.torch(target, "2.9.1", cuda="12.8", pin=None)
    ctx = Context.of({})
    t = frontend._pip(["python", "-m", "pip", "install", "--target", str(target), "."],
                      "/", ctx)
    assert _torch(t) == ("2.9.1", f"pip --target {target}")
    assert frontend._pip(["pip", "wheel", "."], "/", ctx).site_dirs == ()


def test_unknown_frontends_pass() -> None:
    assert frontend.target_torch(frontend.Target("", why="x"), Context.of({})) is None


def test_one_torch_build_whatever_its_label() -> None:
    assert frontend.same_torch("2.14.1", "13.0", "2.14.1+cu130", "13.0")
    assert not frontend.same_torch("2.14.1", "13.0", "2.15.0", "13.2")
    assert not frontend.same_torch("2.9.1+cu128", "12.8", "2.9.1", "13.0")


def test_pip_is_told_by_its_command_line() -> None:
    assert frontend._is_pip(["/v/bin/pip", "install", "."])
    # a console script, as /proc shows it: the interpreter, then the script
    assert frontend._is_pip(["/v/bin/python3", "/v/bin/pip", "install", "."])
    assert not frontend._is_pip(["/v/bin/python3", "/v/bin/build", "."])
    assert frontend._is_pip(["/v/bin/pip3.11", "install", "."])
    assert frontend._is_pip(["/usr/bin/python3", "-m", "pip", "install", "."])
    assert frontend._is_pip(["/t/bin/python", "/x/site-packages/pip/__pip-runner__.py",
                             "--python", "/t/bin/python", "install", "."])
    assert not frontend._is_pip(["/usr/bin/python3", "-m", "build", "."])
    assert not frontend._is_pip(["/usr/bin/uv", "pip", "install"])
