"""`make live` for wheel variants: the newest uv on PyPI still picks a team's build that
`wheelcuda publish --variants` wrote, by the machine's GPU, and still refuses it on an sm_90
machine, under another torch and without its preview feature (tests/test_variants.py holds
the same with uv 0.13.9). uv's variant format is a preview: when it moves, this says so
first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.live.test_pypi import BASE_ENV, PYPI, UV, online_env
from tests.test_variants import EXPECTED, picks, served

__all__ = ["served"]

pytestmark = pytest.mark.live


def test_the_newest_uv_picks_a_variant_by_gpu(tmp_path: Path,
                                              served: tuple[Path, str]) -> None:
    tools = tmp_path / "newest-uv"
    env = {**BASE_ENV, **online_env(tmp_path)}
    for argv in ([UV, "venv", "-q", "--python", sys.executable, str(tools)],
                 [UV, "pip", "install", "-q", "--python", str(tools / "bin" / "python"),
                  "--index-url", PYPI, "--upgrade", "uv"]):
        done = subprocess.run(argv, capture_output=True, text=True, env=env, check=False,
                              timeout=300)
        assert done.returncode == 0, done.stderr
    newest = tools / "bin" / "uv"
    version = subprocess.run([str(newest), "--version"], capture_output=True, text=True,
                             check=True).stdout.strip()
    got = picks(newest, tmp_path, *served)
    assert got == EXPECTED, f"{version}: {got}"
