"""The README's first steps in a venv made by `uv venv`, which holds no setuptools,
wheel, ninja or packaging (torch 2.14.1 brings setuptools alone): doctor, install, env,
install again from the wheel cache, and `install --rebuild`, with the real uv and the
system toolkit out of reach (sandbox.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from uv import find_uv_bin

from tests.integration import sandbox
from tests.integration.conftest import REPO

pytestmark = pytest.mark.integration

#: What `uv venv` leaves out and .venv-torch holds (`make torch-venv` installs them).
_NOT_IN_A_UV_VENV = ("wheel", "ninja", "packaging", "pip")


def _uv_venv(tmp: Path, torch_venv: Path) -> Path:
    """A `uv venv` that sees torch and its dependencies through a .pth file (a folder of
    links to .venv-torch's site-packages), but none of what `uv venv` leaves out:
    installing torch itself would copy several GB."""
    venv = tmp / "uv-venv"
    subprocess.run([find_uv_bin(), "venv", "-q", "-p", sys.executable, str(venv)], check=True)
    seen = tmp / "torch-only"
    seen.mkdir()
    for entry in next(torch_venv.glob("lib/python*/site-packages")).iterdir():
        if entry.name.split("-", 1)[0].lower() not in _NOT_IN_A_UV_VENV:
            (seen / entry.name).symlink_to(entry)
    site = next(venv.glob("lib/python*/site-packages"))
    (site / "torch-only.pth").write_text(f"{seen}\n")
    return venv


def test_the_first_steps_work_in_a_fresh_uv_venv(
        wheelcuda_cmd: str, torch_venv: Path, tmp_path: Path, local_wheels: dict[str, str]
        ) -> None:
    """Before: doctor said NOT OK and install stopped at once, asking for wheel and
    packaging, whether or not anything was to be built. (--no-deps: uv does not count
    what a .pth file shows as installed, and would install a torch of its own.)"""
    venv = _uv_venv(tmp_path, torch_venv)
    src = tmp_path / "torch_ext"
    shutil.copytree(REPO / "examples/torch_ext", src)
    w = f"{wheelcuda_cmd} {{}} --python {venv} --arch 9.0"
    script = f"""set -e
{w.format('doctor')}
{w.format('install')} {src} -- --no-deps
cd /
{venv}/bin/python -c "import wheelcuda_demo; print('IMPORTED')"
(eval "$({w.format('env')})" && test -x "$CUDA_HOME/bin/nvcc")
{w.format('install')} {src} -- --no-deps
{w.format('install')} --rebuild {src} -- --no-deps
"""
    r = sandbox.shell(script, tmp_path, extra_env={**local_wheels, "WHEELCUDA_INSTALLER": "uv",
                                                   "WHEELCUDA_SPLIT_COMPILE": "1"},
                      timeout=1500)
    out = sandbox.assert_ok(r)
    assert f"WARNING: wheel, packaging missing in {venv}/bin/python" in out
    assert "OK: a build would work" in out and "IMPORTED" in out
    said = r.stderr
    assert f"installing wheel, packaging into {venv}/bin/python first" in said
    assert said.count("installing wheel, packaging into") == 1  # before the first build only
    assert said.count("installed wheelcuda-demo-ext==0.1.0 with uv") == 3
    assert "from wheelcuda's wheel cache (nothing compiled)" in said
    assert "--reinstall-package wheelcuda-demo-ext" in said
    assert said.count("built sm_90 (1 CUDA compile by nvcc 13.0.88") == 2, said[-3000:]
    site = next(venv.glob("lib/python*/site-packages"))
    assert list(site.glob("wheel-*.dist-info")) and list(site.glob("wheelcuda_demo*"))
    sandbox.assert_no_system_toolkit(r.stdout + r.stderr)
