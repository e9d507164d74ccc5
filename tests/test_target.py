"""Which environment is the target when --python is not given.

Found as ``uv pip install`` finds it: VIRTUAL_ENV, else an activated conda environment
other than conda's base, else the environment the working folder is in or the nearest
``.venv`` up from it (a ``.venv`` that is not an environment stops the search, as it
stops uv), else conda's base; last wheelcuda's own environment, but never a tool
environment uv or pipx made for wheelcuda (``uv tool install``, ``uvx``, ``pipx``)
unless asked for by --python or VIRTUAL_ENV. Every answer says why.

The unit tests build the folders and hand a :class:`Context` whose working folder and
running interpreter are the test's own, so /work/main/.venv (the repository's own, the
folder the tests run from) never takes part. The last test installs the checkout as a
real uv tool and runs it in a real project folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import fakes
from wheelcuda import _pipeline as pipeline
from wheelcuda import _proc as proc
from wheelcuda._context import Context
from wheelcuda._probe import interpreter
from wheelcuda._probe.interpreter import Choice
from wheelcuda._store.layout import Layout
from wheelcuda._values import Target
from wheelcuda.errors import InterpreterError

REPO = Path(__file__).resolve().parents[1]


def env_folder(folder: Path, *marks: str) -> Path:
    """An environment as the search sees one: pyvenv.cfg and a bin/python that answers
    the probe (a script: fast), plus tool marks such as uv-receipt.toml."""
    (folder / "bin").mkdir(parents=True)
    (folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
    site = folder / "lib" / "site-packages"
    site.mkdir(parents=True)
    fakes.python(folder / "bin", [site])
    for mark in marks:
        (folder / mark).write_text("")
    return folder


def ctx_for(cwd: Path, env: dict[str, str] | None = None,
            executable: str | None = None) -> Context:
    """A context in ``cwd`` with only ``env`` set, run by ``executable`` (default: a
    Python that is no environment, as a system Python)."""
    base = Context.of(env or {}, cwd=str(cwd))
    return Context(base.items, base.cwd, executable or "/usr/bin/python3", base.sys_path)


def choose(cwd: Path, env: dict[str, str] | None = None, executable: str | None = None,
           python: str | None = None) -> Choice:
    return interpreter.choose_python(python, ctx_for(cwd, env, executable))


def resolve(ctx: Context, python: str | None = None) -> Target:
    return pipeline.resolve_target(ctx, Layout.for_environ(os.environ), python)


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    """/…/proj with a .venv, and proj/a/b to run from."""
    root = tmp_path / "proj"
    env_folder(root / ".venv")
    (root / "a" / "b").mkdir(parents=True)
    return root


@pytest.fixture
def tool(tmp_path: Path) -> Path:
    """wheelcuda's own environment as `uv tool install` makes it."""
    return env_folder(tmp_path / "tools" / "wheelcuda", "uv-receipt.toml")


# -- the order ---------------------------------------------------------------------------


def test_dot_venv_in_the_working_folder(proj: Path) -> None:
    assert choose(proj) == Choice(str(proj / ".venv"), f"found .venv in {proj}")


def test_dot_venv_in_a_parent(proj: Path) -> None:
    got = choose(proj / "a" / "b")
    assert (got.python, got.why) == (str(proj / ".venv"), f"found .venv in {proj}")
    # what appearing would change the answer: a .venv in each folder below proj
    assert got.watch == (str(proj / "a" / "b" / ".venv"), str(proj / "a" / ".venv"))


def test_the_nearest_dot_venv_wins(proj: Path) -> None:
    env_folder(proj / "a" / ".venv")
    assert choose(proj / "a" / "b").python == str(proj / "a" / ".venv")


def test_inside_an_environment(proj: Path) -> None:
    """uv: a working folder inside an environment means that environment."""
    got = choose(proj / ".venv" / "lib")
    assert (got.python, got.why) == (
        str(proj / ".venv"), f"the working folder is inside the environment {proj / '.venv'}")


def test_virtual_env_wins(proj: Path, tmp_path: Path) -> None:
    other = env_folder(tmp_path / "other")
    conda = env_folder(tmp_path / "conda")
    got = choose(proj, {"VIRTUAL_ENV": str(other), "CONDA_PREFIX": str(conda)})
    assert got == Choice(str(other), f"VIRTUAL_ENV={other}")


def test_virtual_env_relative_to_the_working_folder(proj: Path, tmp_path: Path) -> None:
    env_folder(tmp_path / "other")
    ctx = ctx_for(proj / "a", {"VIRTUAL_ENV": "../../other"})
    target = resolve(ctx)
    assert target.python == str(tmp_path / "other" / "bin" / "python")
    assert target.why == "VIRTUAL_ENV=../../other"


def test_conda_environment_wins_over_dot_venv(proj: Path, tmp_path: Path) -> None:
    """uv prefers an activated conda environment (not the base) to a .venv."""
    conda = env_folder(tmp_path / "miniforge" / "envs" / "work")
    got = choose(proj, {"CONDA_PREFIX": str(conda), "CONDA_DEFAULT_ENV": "work"})
    assert got == Choice(str(conda), f"CONDA_PREFIX={conda}")


@pytest.mark.parametrize("names", [
    {"CONDA_DEFAULT_ENV": "base"},  # the base's folder is not named base
    {"CONDA_DEFAULT_ENV": "whatever", "_CONDA_ROOT": "{conda}"},
])
def test_conda_base_comes_after_dot_venv(proj: Path, tmp_path: Path,
                                         names: dict[str, str]) -> None:
    conda = env_folder(tmp_path / "miniforge")
    env = {"CONDA_PREFIX": str(conda), **{k: v.format(conda=conda) for k, v in names.items()}}
    assert choose(proj, env).python == str(proj / ".venv")
    got = choose(tmp_path, env)  # no .venv here or above
    assert got.python == str(conda)
    assert got.why == f"CONDA_PREFIX={conda} (conda's base environment)"


def test_pixi_environment_is_never_a_base(proj: Path, tmp_path: Path) -> None:
    pixi = env_folder(tmp_path / "pixi-default")
    (pixi / "conda-meta").mkdir()
    (pixi / "conda-meta" / "pixi").write_text("")
    got = choose(proj, {"CONDA_PREFIX": str(pixi), "CONDA_DEFAULT_ENV": "default"})
    assert got.python == str(pixi)


# -- what is not an environment ---------------------------------------------------------


def test_dot_venv_without_pyvenv_cfg_stops_the_search(proj: Path) -> None:
    """As in uv (`Broken virtual environment`): the good .venv above is not taken."""
    (proj / "a" / ".venv" / "bin").mkdir(parents=True)
    with pytest.raises(InterpreterError, match=r"holds no pyvenv\.cfg") as caught:
        choose(proj / "a" / "b")
    assert f"uv venv --clear {proj / 'a' / '.venv'}" in (caught.value.fix or "")


def test_dot_venv_link_to_nothing_stops_the_search(proj: Path, tmp_path: Path) -> None:
    (proj / "a" / ".venv").symlink_to(tmp_path / "gone")
    with pytest.raises(InterpreterError, match=r"links to .*gone, which holds no pyvenv\.cfg"):
        choose(proj / "a" / "b")


def test_dot_venv_file_is_passed_over(proj: Path) -> None:
    """A .venv file (uv's experimental redirect) is no environment; newer uv skips it."""
    (proj / "a" / ".venv").write_text("/somewhere\n")
    assert choose(proj / "a" / "b").python == str(proj / ".venv")


def test_dot_venv_without_a_python(tmp_path: Path) -> None:
    """pyvenv.cfg but no bin/python: the error says which .venv and what chose it."""
    (tmp_path / ".venv").mkdir()
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    with pytest.raises(InterpreterError, match=r"holds no bin/python.*found \.venv in"):
        resolve(ctx_for(tmp_path))


def test_stale_virtual_env_is_an_error_not_a_fallback(proj: Path, tmp_path: Path) -> None:
    """uv quietly goes on to the .venv; an install must not land elsewhere unseen."""
    with pytest.raises(InterpreterError, match=r"no Python at .*\(the target: VIRTUAL_ENV=") \
            as caught:
        resolve(ctx_for(proj, {"VIRTUAL_ENV": str(tmp_path / "gone")}))
    assert "unset VIRTUAL_ENV" in (caught.value.fix or "")


# -- wheelcuda's own environment --------------------------------------------------------


def test_own_tool_environment_is_never_chosen(tool: Path, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InterpreterError) as caught:
        choose(tmp_path / "empty", executable=str(tool / "bin" / "python"))
    message = str(caught.value.message)
    assert message.startswith("no Python environment found: no VIRTUAL_ENV, no .venv in "
                              f"{tmp_path / 'empty'} or its parents, no CONDA_PREFIX")
    assert "uv tool environment" in message
    assert (caught.value.fix or "").startswith("uv venv && uv pip install torch")


def test_own_tool_environment_is_skipped_from_inside_it(tool: Path, proj: Path) -> None:
    """Run from inside the tool's folder: the search goes on past it."""
    with pytest.raises(InterpreterError, match="no Python environment found"):
        choose(tool / "lib", executable=str(tool / "bin" / "python"))
    got = choose(proj, executable=str(tool / "bin" / "python"))
    assert got.python == str(proj / ".venv")


@pytest.mark.parametrize("how", ["--python", "--python folder", "VIRTUAL_ENV"])
def test_own_tool_environment_when_asked(tool: Path, tmp_path: Path, how: str) -> None:
    python = str(tool / "bin" / "python")
    ctx = ctx_for(tmp_path, {"VIRTUAL_ENV": str(tool)} if how == "VIRTUAL_ENV" else None,
                  executable=python)
    asked = {"--python": python, "--python folder": str(tool), "VIRTUAL_ENV": None}[how]
    target = resolve(ctx, asked)
    assert target.python == python
    assert target.why == ("--python" if asked else f"VIRTUAL_ENV={tool}")


@pytest.mark.parametrize("layout", ["pipx", "uvx", "pipx run"])
def test_other_tool_environments(tmp_path: Path, layout: str) -> None:
    if layout == "pipx":
        own = env_folder(tmp_path / "pipx" / "venvs" / "wheelcuda", "pipx_metadata.json")
        says = "a pipx environment"
    else:
        cache = tmp_path / "cache"
        cache.mkdir()
        (cache / "CACHEDIR.TAG").write_text("Signature: 8a477f597d28d172789f06886806bc55\n")
        own = env_folder(cache / ("archive-v0" if layout == "uvx" else "") / "abc123")
        says = "a throwaway environment in a cache"
    (tmp_path / "work").mkdir()
    with pytest.raises(InterpreterError, match=says):
        choose(tmp_path / "work", executable=str(own / "bin" / "python"))


def test_own_plain_environment_is_the_last_resort(tmp_path: Path) -> None:
    """`pip install wheelcuda` into the environment that holds torch: still works."""
    own = env_folder(tmp_path / "env")
    (tmp_path / "work").mkdir()
    python = str(own / "bin" / "python")
    got = choose(tmp_path / "work", executable=python)
    assert got.python == python
    assert got.why == f"wheelcuda's own environment {own} (no VIRTUAL_ENV, .venv or CONDA_PREFIX)"
    target = resolve(ctx_for(tmp_path / "work", executable=python))
    assert (target.python, target.why) == (python, got.why)


def test_own_system_python_is_the_last_resort(tmp_path: Path) -> None:
    """A Python that is no environment (a container's /usr/bin/python3 with torch)."""
    got = choose(tmp_path, executable="/usr/bin/python3")
    assert got.python == "/usr/bin/python3"
    assert got.why.startswith("wheelcuda's own environment /usr ")


def test_running_interpreter_found_as_dot_venv_spawns_nothing(
        proj: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the search and the one running: answered without a child, as before."""
    python = str(proj / ".venv" / "bin" / "python")
    monkeypatch.setattr(proc, "capture", lambda *a, **k: pytest.fail("spawned a child"))
    monkeypatch.setattr(interpreter, "_ourselves", lambda ctx: {
        "prefix": str(proj / ".venv"), "site_dirs": [], "version": [3, 11, 7]})
    target = resolve(ctx_for(proj / "a", executable=python))
    assert (target.python, target.why) == (python, f"found .venv in {proj}")


def test_why_is_not_part_of_the_identity(proj: Path) -> None:
    found = resolve(ctx_for(proj))
    asked = resolve(ctx_for(proj), str(proj / ".venv"))
    assert found == asked
    assert (found.why, asked.why) == (f"found .venv in {proj}", "--python")


# -- --python that names nothing, or a Python that does not answer ----------------------


@pytest.mark.parametrize("python", ["", "  "])
def test_empty_python_is_an_error(proj: Path, python: str) -> None:
    with pytest.raises(InterpreterError, match="--python is empty") as caught:
        resolve(ctx_for(proj), python)
    assert "--python PATH" in (caught.value.fix or "")


def test_failing_python_error_leaves_out_the_probe(tmp_path: Path) -> None:
    py = tmp_path / "python"
    py.write_text("#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
                  "echo '  File \"<string>\", line 29, in describe' >&2\n"
                  "echo \"AttributeError: 'module' object has no attribute 'x'\" >&2\n"
                  "exit 1\n")
    py.chmod(0o755)
    with pytest.raises(InterpreterError) as caught:
        resolve(ctx_for(tmp_path), str(py))
    message = caught.value.message
    assert message.startswith(f"{py} did not answer as a Python interpreter: failed with "
                              "exit code 1: Traceback")
    assert message.endswith("AttributeError: 'module' object has no attribute 'x'")
    assert "sysconfig" not in message and "def describe" not in message
    assert "3.8+" in (caught.value.fix or "")


def test_python_2_is_named_by_its_version(tmp_path: Path) -> None:
    """A real Python 2 (when this machine has one) answers the guard the probe starts
    with, and is refused by version instead of by its traceback."""
    python2 = shutil.which("python2.7") or shutil.which("python2")
    if python2 is None or subprocess.run([python2, "-c", "pass"], check=False,
                                         capture_output=True).returncode != 0:
        pytest.skip("no Python 2 on this machine")
    with pytest.raises(InterpreterError, match=r"is Python 2\.7\.\d+: wheelcuda installs"):
        resolve(ctx_for(tmp_path), python2)


# -- a real uv tool ----------------------------------------------------------------------


def _uv_env() -> dict[str, str]:
    """What tests/integration/conftest.py's local_wheels sets: this machine's CA bundle
    and its local wheel folders (elsewhere uv uses PyPI)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH")}
    cert = os.environ.get("SSL_CERT_FILE") or os.environ.get("PIP_CERT")
    if cert:
        env["SSL_CERT_FILE"] = cert
    folders = [f for f in ("/opt/pypi/files", "/opt/pypi-more/files") if Path(f).is_dir()]
    if folders:
        env["UV_FIND_LINKS"] = ",".join(folders)
    env["UV_PYTHON_DOWNLOADS"] = "never"
    return env


@pytest.mark.integration
@pytest.mark.network
def test_uv_tool_targets_the_project_dot_venv(tmp_path: Path, isolated: Path) -> None:
    """As a user met it: `uv tool install` from the checkout, no venv
    activated, run in a project folder holding .venv: the target is that .venv, not the
    tool's own environment."""
    uv = shutil.which("uv", path=f"{Path(sys.executable).parent}{os.pathsep}"
                                 f"{os.environ.get('PATH', '')}")
    assert uv, "uv is not installed: make dev"
    env = _uv_env()
    env.update(UV_TOOL_DIR=str(tmp_path / "tools"), UV_TOOL_BIN_DIR=str(tmp_path / "bin"))
    # a local directory's build is cached on its pyproject.toml: refresh it, so the tool
    # runs this working tree
    subprocess.run([uv, "tool", "install", "-q", "--python", sys.executable,
                    "--reinstall-package", "wheelcuda", "--refresh-package", "wheelcuda",
                    str(REPO)], env=env, check=True, cwd=tmp_path, timeout=300)
    own = tmp_path / "tools" / "wheelcuda"
    assert (own / "uv-receipt.toml").is_file()  # the mark choose_python looks for
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    subprocess.run([uv, "venv", "-q", "--python", sys.executable, str(project / ".venv")],
                   env=env, check=True, timeout=120)
    run_env = {**env, "WHEELCUDA_CACHE_DIR": str(isolated), "WHEELCUDA_NO_GPU_PROBE": "1"}
    r = subprocess.run([str(tmp_path / "bin" / "wheelcuda"), "doctor", "--json",
                        "--arch", "9.0"], cwd=project / "src", env=run_env,
                       capture_output=True, text=True, timeout=120, check=False)
    assert r.stdout, r.stderr
    report = json.loads(r.stdout)
    assert report["environment"]["python"] == str(project / ".venv" / "bin" / "python")
    assert str(own) not in r.stdout
    # and with no environment anywhere: an error that says how to make one
    (tmp_path / "elsewhere").mkdir()
    r = subprocess.run([str(tmp_path / "bin" / "wheelcuda"), "doctor", "--arch", "9.0"],
                       cwd=tmp_path / "elsewhere", env=run_env, capture_output=True,
                       text=True, timeout=120, check=False)
    assert r.returncode == 1
    assert "no Python environment found" in r.stderr
    assert "uv venv && uv pip install torch" in r.stderr
