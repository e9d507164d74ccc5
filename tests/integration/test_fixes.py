"""Every fix wheelcuda prints works when pasted: each is run as printed,
by a shell, with no environment active, then doctor runs again and the problem is gone.

Fixes not run here, and why: installing torch (`uv pip install --python X torch`) would
download a CUDA build of torch of several GB; a host compiler (`apt-get install g++-N`)
changes the machine. Their commands are checked for the target's --python instead
(tests/test_cli.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import fakes

pytestmark = pytest.mark.integration


def _venv(tmp: Path, sees: Path | None = None) -> tuple[Path, Path]:
    """A real venv (no pip), seeing ``sees``'s site-packages through a .pth file."""
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    if sees is not None:
        (site / "sees.pth").write_text(f"{next(sees.glob('lib/python*/site-packages'))}\n")
    return venv, site


def _shell_env(wheelcuda_cmd: str, extra: dict[str, str]) -> dict[str, str]:
    """A user's shell with wheelcuda and uv on PATH and no venv active."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = f"{Path(wheelcuda_cmd).parent}:/usr/bin:/bin"
    return {**env, **extra}


def _doctor(wheelcuda_cmd: str, venv: Path, env: dict[str, str]) -> dict[str, object]:
    r = subprocess.run([wheelcuda_cmd, "doctor", "--json", "--arch", "9.0", "--python",
                        str(venv)], capture_output=True, text=True, env=env, check=False)
    assert "Traceback" not in r.stderr, r.stderr
    report: dict[str, object] = json.loads(r.stdout)
    return report


def _fix_of(report: dict[str, object], kind: str) -> str:
    problems = report["problems"]
    assert isinstance(problems, list)
    (fix,) = [p["fix"] for p in problems if p["kind"] == kind]
    return str(fix).split("   (", 1)[0]  # the command; what follows is a comment


def _paste(fix: str, env: dict[str, str], tmp: Path) -> None:
    r = subprocess.run(["sh", "-c", fix], capture_output=True, text=True, env=env, cwd=tmp,
                       check=False, timeout=1200)
    assert r.returncode == 0, f"{fix}\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}"


def test_missing_compiler_fix_is_wheelcuda_fetch(wheelcuda_cmd: str, torch_venv: Path,
                                                 tmp_path: Path,
                                                 local_wheels: dict[str, str]) -> None:
    venv, _ = _venv(tmp_path, sees=torch_venv)
    env = _shell_env(wheelcuda_cmd, local_wheels)
    report = _doctor(wheelcuda_cmd, venv, env)
    fix = _fix_of(report, "missing")
    assert fix == f"wheelcuda fetch --python {venv / 'bin/python'}"
    assert report["ok"]  # install and env fetch it by themselves; env --no-fetch does not
    env_before = subprocess.run([wheelcuda_cmd, "env", "--no-fetch", "--python", str(venv),
                                 "--arch", "9.0"],
                                capture_output=True, text=True, env=env, check=False)
    assert env_before.returncode == 1 and "wheelcuda fetch" in env_before.stderr
    _paste(fix, env, tmp_path)
    after = _doctor(wheelcuda_cmd, venv, env)
    assert after["ok"] and not after["problems"], after["problems"]
    env_after = subprocess.run([wheelcuda_cmd, "env", "--python", str(venv), "--arch", "9.0"],
                               capture_output=True, text=True, env=env, check=False)
    assert env_after.returncode == 0, env_after.stderr
    assert not list(venv.glob("lib/python*/site-packages/nvidia*"))  # nothing installed there


def test_missing_build_needs_fix(wheelcuda_cmd: str, tmp_path: Path,
                                 local_wheels: dict[str, str]) -> None:
    venv, site = _venv(tmp_path)
    fakes.torch(fakes.cu13_site(site))  # the fake compiler answers doctor's questions
    env = _shell_env(wheelcuda_cmd, local_wheels)
    report = _doctor(wheelcuda_cmd, venv, env)
    assert report["ok"]  # install installs them itself; the fix still clears the warning
    fix = _fix_of(report, "build-needs")
    assert fix.startswith(f"uv pip install --python {venv / 'bin/python'} setuptools")
    _paste(fix, env, tmp_path)
    after = _doctor(wheelcuda_cmd, venv, env)
    assert after["ok"], after["problems"]
