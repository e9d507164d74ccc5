"""A build that uv or pip runs, watched from the terminal of the person who started it.

uv and pip show nothing of a build's output without ``-v`` (uv printed one line,
``Building causal-conv1d==1.7.0``, for 17 minutes). The tree's compilers write each
compile's start and end to the controlling terminal instead, and their events to the tree
cache, where ``wheelcuda builds`` finds the build with nothing set in uv's settings. Here
the real uv and the real pip run under a real pty (util-linux ``script``), isolation on,
after ``eval "$(wheelcuda env)"``, and the screen is read back through a terminal
emulator. The package is host-only (its setup.py runs ``$CXX``, the tree's host compiler
shim, three times), so the test takes seconds, not a CUDA build.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
import textwrap
from pathlib import Path

import pyte
import pytest

from tests.integration import sandbox

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(shutil.which("script") is None, reason="no util-linux script")]

UV = str(Path(sys.executable).parent / "uv")
SETUP = textwrap.dedent('''\
    import os, subprocess
    from setuptools import setup
    with open("x.cpp", "w") as f:
        f.write("int x() { return 1; }\\n")
    for i in range(3):  # each in a process group of its own, as ninja starts them
        subprocess.run([os.environ["CXX"], "-c", "x.cpp", "-o", "x.o"], check=True,
                       process_group=0)
        if i == 0 and os.environ.get("WATCH_BUILDS"):  # seen from another shell, mid-build
            with open(os.environ["WATCH_BUILDS"], "a") as out:
                subprocess.run([os.environ["WHEELCUDA_CMD"], "builds", "--json"], stdout=out,
                               check=True)
    setup()
    ''')
PYPROJECT = textwrap.dedent('''\
    [build-system]
    requires = ["setuptools"]
    build-backend = "setuptools.build_meta"
    [project]
    name = "host-only"
    version = "0.3"
    ''')


def _package(folder: Path) -> Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text(PYPROJECT)
    (folder / "setup.py").write_text(SETUP)
    return folder


def _screen(typescript: bytes, columns: int) -> list[str]:
    """The lines a terminal of ``columns`` shows after ``typescript`` was drawn on it,
    scrolled-off ones included: what a person reads once the installer is done."""
    screen = pyte.HistoryScreen(columns, 40, history=10000)
    screen.set_mode(pyte.modes.LNM)
    pyte.ByteStream(screen).feed(typescript)
    rows = ["".join(c.data for c in row.values()) for row in screen.history.top]
    return [line.rstrip() for line in [*rows, *screen.display] if line.strip()]


def _on_a_terminal(command: str, tmp_path: Path, env: dict[str, str], *,
                   columns: int | None = None, tostop: bool = False) -> list[str]:
    """The screen after ``command`` ran on a pty (``columns`` wide; else one nobody sized,
    which says 0 columns and is shown 80 wide; ``tostop``: a write from a background
    process group stops it, unless it ignores SIGTTOU)."""
    typescript = tmp_path / "typescript"
    size = (f"stty cols {columns} rows 40; " if columns else "") + \
        ("stty tostop; " if tostop else "")
    r = sandbox.shell(f"script -qec {shlex.quote(size + command)} {typescript} >/dev/null",
                      tmp_path, extra_env=env, timeout=900)
    sandbox.assert_ok(r)
    data = typescript.read_bytes()
    body = data.split(b"\n", 1)[1].rsplit(b"\nScript done", 1)[0]  # script's own lines
    return _screen(body, columns or 80)


def _ours(screen: list[str]) -> list[str]:
    return [line for line in screen if line.startswith("wheelcuda [")]


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_a_build_the_installer_runs_is_told_on_the_terminal(
        wheelcuda_cmd: str, torch_venv: Path, tmp_path: Path, local_wheels: dict[str, str],
        installer: str) -> None:
    pkg = _package(tmp_path / "pkg")
    venv = tmp_path / "venv"
    env = {**local_wheels, "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache"),
           "UV_CACHE_DIR": str(tmp_path / "uv"), "PIP_NO_CACHE_DIR": "1",
           "WATCH_BUILDS": str(tmp_path / "builds.json"), "WHEELCUDA_CMD": wheelcuda_cmd}
    setup = (f"{UV} venv -q --seed --python {sys.executable} {venv}\n"
             f"{wheelcuda_cmd} fetch --python {torch_venv} >/dev/null\n")
    sandbox.assert_ok(sandbox.shell(setup, tmp_path, extra_env=env, timeout=600))

    def build(before: str = "") -> str:
        install = (f"{UV} pip install --reinstall --no-cache --python {venv} {pkg}"
                   if installer == "uv" else
                   f"{venv}/bin/python -m pip install --force-reinstall {pkg}")
        return f'{before}eval "$({wheelcuda_cmd} env --python {torch_venv} --arch 9.0)"; {install}'

    screen = _on_a_terminal(build(), tmp_path, env)
    shown = "\n".join(_ours(screen))
    # the package's name and version, each compile's start and end, counted; whole lines
    # (a pty nobody sized, 0 columns, gets lines of 80), and the installer's own last
    # lines still there below them: neither drawing erased the other
    # what matters first (the count, the time so far, the file), whole values only
    assert re.search(r"(?m)^wheelcuda \[0 done\] [\d.]+s · started x\.cpp · host-only 0\.3$",
                     shown), screen
    assert re.search(r"(?m)^wheelcuda \[3 done\] [\d.]+s · compiled x\.cpp in [\d.]+s · "
                     r"host-only 0\.3$", shown), screen
    after = screen[max(i for i, line in enumerate(screen) if line in shown) + 1:]
    assert any(line.startswith((" + host-only==0.3", "Successfully installed host-only-0.3"))
               for line in after), screen

    # `wheelcuda builds` from elsewhere, while it ran: found by its events in the tree's
    # cache, by the package it builds, with nothing set in the installer's settings
    seen = [json.loads(text)["builds"] for text in
            (tmp_path / "builds.json").read_text().replace("}\n{", "}\n\x00{").split("\x00")]
    assert any(row["name"] == "host-only 0.3" and row["done"] >= 1 and
               row["by"] == installer and "key" not in row for rows in seen for row in rows), seen

    # a narrow terminal: each line is cut to fit, so that the installer's redraw (which
    # counts lines) never leaves half of one; and `stty tostop`, under which the compiles'
    # process groups (not the terminal's foreground one) are stopped by a write, unless
    # they ignore SIGTTOU: the build would hang
    narrow = _ours(_on_a_terminal(build(), tmp_path, env, columns=50, tostop=True))
    assert narrow and all(len(line) <= 49 for line in narrow), narrow

    # the second build of the package knows its files from the first (their events in
    # the tree's cache), so it says the time left, on the uv and pip routes alike
    again = _ours(_on_a_terminal(build(), tmp_path, env, columns=120))
    assert any(re.search(r"^wheelcuda \[\d/\d\] .* · under a minute left", line)
               for line in again), again

    # turned off
    quiet = _on_a_terminal(build("export WHEELCUDA_NO_PROGRESS=1; "), tmp_path, env)
    assert _ours(quiet) == [], quiet


def test_no_terminal_no_lines(wheelcuda_cmd: str, torch_venv: Path, tmp_path: Path,
                              local_wheels: dict[str, str]) -> None:
    """Off a terminal (CI, a service) the compile's line goes to the build's stderr alone,
    which `uv -v` shows."""
    pkg = _package(tmp_path / "pkg")
    env = {**local_wheels, "WHEELCUDA_CACHE_DIR": str(tmp_path / "cache"),
           "UV_CACHE_DIR": str(tmp_path / "uv")}
    script = (f"{UV} venv -q --python {sys.executable} {tmp_path}/venv\n"
              f"{wheelcuda_cmd} fetch --python {torch_venv} >/dev/null\n"
              f'eval "$({wheelcuda_cmd} env --python {torch_venv} --arch 9.0)"\n'
              f"setsid {UV} pip install -v --python {tmp_path}/venv {pkg} </dev/null")
    r = sandbox.shell(script, tmp_path, extra_env=env, timeout=600)
    sandbox.assert_ok(r)
    assert "wheelcuda: compiled x.cpp in " in r.stderr, r.stderr
    assert "started x.cpp" not in r.stdout + r.stderr
