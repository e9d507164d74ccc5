"""One way of speaking: notes, warnings and errors through one logger with
-v/-q, and one error frame for the command line and the backend."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests import fakes
from tests.test_cli import run
from wheelcuda import _report as report
from wheelcuda import build_meta
from wheelcuda._context import Context
from wheelcuda.errors import ArchError


def test_quiet_and_verbose(tmp_path: Path) -> None:
    py = str(fakes.user_env(tmp_path))
    plain = run("fetch", "--python", py)
    assert plain.returncode == 0, plain.stderr
    assert "wheelcuda: " in plain.stderr  # a note: nothing to fetch, and why
    quiet = run("fetch", "-q", "--python", py)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout == plain.stdout
    loud = run("-v", "env", "--python", py, "--arch", "9.0")
    assert loud.returncode == 0, loud.stderr
    assert "wheelcuda: compiler: wheels:" in loud.stderr
    assert "wheelcuda: acquire: nothing" in loud.stderr
    assert "wheelcuda: tree: " in loud.stderr


def test_errors_are_not_hidden_by_quiet(tmp_path: Path) -> None:
    r = run("env", "-q", "--python", str(fakes.user_env(tmp_path)), "--arch", "banana")
    assert r.returncode == 1 and "wheelcuda: error: " in r.stderr


def test_one_frame_for_the_cli_and_the_backend(capsys: pytest.CaptureFixture[str]) -> None:
    ctx = Context.of({})
    assert report.failure(ArchError("no GPU given", "--arch 9.0"), ctx) == 1
    cli = capsys.readouterr().err
    assert cli == "wheelcuda: error: no GPU given\n  fix: --arch 9.0\n"
    assert report.failure(ArchError("no GPU given", "--arch 9.0"), ctx,
                          build_meta.for_backend) == 1
    assert capsys.readouterr().err == \
        "wheelcuda: error: no GPU given\n  fix: -C wheelcuda.arch=9.0\n"
    assert report.failure(KeyboardInterrupt(), ctx) == 130
    assert report.failure(ValueError("boom"), ctx) == 1
    bug = capsys.readouterr().err
    assert bug.startswith("wheelcuda: internal error: ValueError: boom\n")
    assert "Traceback" not in bug
    try:
        raise ValueError("boom")
    except ValueError as exc:
        assert report.failure(exc, Context.of({report.DEBUG_VAR: "1"})) == 1
    assert "Traceback" in capsys.readouterr().err
