"""What a person reads from the command line itself: usage lines, help texts, the list
of commands, the names they type (--shell bash, install -e/-r), and messages that say
something where there was nothing to show or a Python repr."""

from __future__ import annotations

import argparse
import json
import os
import shlex
from pathlib import Path

import pytest

from tests import fakes
from tests.test_cli import fail, run
from wheelcuda import _cli as cli
from wheelcuda._commands import COMMANDS
from wheelcuda._context import Context
from wheelcuda._probe.given import read_package_args
from wheelcuda._rules import installer
from wheelcuda.errors import WheelcudaError

WIDE = {"COLUMNS": "80"}  # argparse wraps to the terminal; tests read 80 columns


def flat(text: str) -> str:
    """Help text with argparse's line wrapping undone."""
    return " ".join(text.split())


def parsers(parser: argparse.ArgumentParser, prog: str = "wheelcuda"
            ) -> list[tuple[str, argparse.ArgumentParser]]:
    """Every parser under ``parser``, subcommands of subcommands too."""
    found = [(prog, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found += parsers(child, f"{prog} {name}")
    return found


# --- 1. run and install show what goes after -- --------------------------------------

def test_run_and_install_usage_show_the_rest(good: Path) -> None:
    assert run("run", "-h").stdout.startswith(
        "usage: wheelcuda run [options] -- CMD [ARGS...]\n")
    assert run("install", "-h").stdout.startswith(
        "usage: wheelcuda install [options] (PKG | -e DIR | -r FILE)... [-- ARGS...]\n")
    # and the usage line of a usage error
    missing = run("run", "--python", str(good), "--arch", "9.0")
    assert missing.returncode == 2
    assert missing.stderr.startswith("usage: wheelcuda run [options] -- CMD [ARGS...]\n")
    assert "give the command after --" in missing.stderr
    nothing = run("install", "--arch", "9.0")
    assert nothing.returncode == 2
    assert "usage: wheelcuda install [options] (PKG | -e DIR | -r FILE)... [-- ARGS...]" \
        in nothing.stderr
    assert "give what to install" in nothing.stderr


# --- 2. every option and positional says what it is -----------------------------------

def test_every_action_has_help() -> None:
    seen = 0
    for prog, parser in parsers(cli._parser()):
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            name = "/".join(action.option_strings) or action.metavar or action.dest
            assert action.help and str(action.help).strip(), f"{prog} {name} has no help"
            seen += 1
        for sub in (a for a in parser._actions if isinstance(a, argparse._SubParsersAction)):
            for choice in sub._choices_actions:
                assert choice.help, f"{prog} {choice.dest} has no help"
    assert seen > 40
    # those that had none
    by_prog = dict(parsers(cli._parser()))
    for prog, words in (("wheelcuda env", "--shell SHELL the form of the output: sh (also bash"),
                        ("wheelcuda cache list", "--json print the list as JSON"),
                        ("wheelcuda cache clear", "PKG remove only the builds of this package"),
                        ("wheelcuda home", "--json print"),
                        ("wheelcuda doctor", "--json print the answer as JSON")):
        assert words in flat(by_prog[prog].format_help()), prog


# --- 3. bare wheelcuda lists the commands ----------------------------------------------

def test_bare_wheelcuda_lists_the_commands_one_line_each() -> None:
    """As uv does: the help, on stderr (stdout is data only), exit 2 (a usage error)."""
    r = run(env=WIDE)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("usage: wheelcuda")
    lines = r.stderr.split("\ncommands:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    listed = [line.split()[0] for line in lines if line.startswith("    ")]
    assert listed == [c.NAME for c in COMMANDS]
    for line in lines:  # each command's summary on its own line: none wrapped
        assert len(line.split()) > 2 and not line.startswith(" " * 6), line
    assert "COMMAND -h" in r.stderr
    # and the full help says the same
    assert run("-h", env=WIDE).stdout == r.stderr


# --- 4. --shell takes the names people type ---------------------------------------------

@pytest.mark.parametrize("shell", ["bash", "zsh", "dash", "ksh", "/bin/bash"])
def test_shell_names_are_sh(good: Path, shell: str) -> None:
    sh = run("env", "--python", str(good), "--arch", "9.0", "--shell", "sh")
    named = run("env", "--python", str(good), "--arch", "9.0", "--shell", shell)
    assert named.returncode == 0, named.stderr
    assert named.stdout == sh.stdout and "export CUDA_HOME=" in named.stdout


def test_shell_unknown_names_the_choices() -> None:
    r = run("env", "--shell", "tcsh")
    assert r.returncode == 2
    assert "invalid choice" in r.stderr and "tcsh" in r.stderr and "bash" in r.stderr


# --- 5. --no-fetch covers both kinds of compiler ----------------------------------------

@pytest.mark.parametrize("command", ["install", "env", "uv-config"])
def test_no_fetch_help_names_wheels_and_archives(command: str) -> None:
    text = flat(run(command, "-h").stdout)
    assert "(the CUDA 13 compiler wheels, or NVIDIA's archives for a CUDA 12 torch)" in text


# --- 6. a cache path with a backslash is shown as it is ---------------------------------

def test_cache_path_with_a_backslash_is_shown_plainly(tmp_path: Path) -> None:
    cache = str(tmp_path / "a\\b")
    r = run("cache", "list", env={"WHEELCUDA_CACHE_DIR": cache})
    fail(r, f"the cache folder {shlex.quote(cache)} (from WHEELCUDA_CACHE_DIR) holds "
            "a backslash (\\): nvcc runs", "export WHEELCUDA_CACHE_DIR=")
    assert "\\\\" not in r.stderr  # one backslash, not a repr's two
    both = run("cache", "list", env={"WHEELCUDA_CACHE_DIR": str(tmp_path / "a$b\\c")})
    fail(both, "holds a dollar sign ($) and a backslash (\\)")


# --- 7. an interpreter that fails without a word ----------------------------------------

def test_silent_failing_python_says_how_to_see_why(tmp_path: Path) -> None:
    py = tmp_path / "python"
    py.write_text("#!/bin/sh\nexit 3\n")
    py.chmod(0o755)
    r = run("home", "--python", str(py))
    fail(r, f"{py} did not answer as a Python interpreter: failed with exit code 3 and "
            "printed nothing", f"fix: run `{py} -c 'import sys'` to see why it fails")
    assert "exit code 3:" not in r.stderr


# --- 8. install -e DIR and -r FILE -------------------------------------------------------

@pytest.fixture
def good(tmp_path: Path) -> Path:
    return fakes.user_env(tmp_path)


@pytest.fixture
def fake_uv(tmp_path: Path) -> dict[str, str]:
    """A `uv` that records its arguments and leaves a built wheel in its cache (the
    key's UV_CACHE_DIR), as a real build would."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/uv-called\n'
                  'if [ "$1 $2" = "pip install" ]; then mkdir -p "$UV_CACHE_DIR/built" && '
                  ': > "$UV_CACHE_DIR/built/demo_ext-1.0-cp311-cp311-linux_x86_64.whl"; fi\n')
    uv.chmod(0o755)
    return {"PATH": f"{bin_dir}:{os.environ['PATH']}", "WHEELCUDA_INSTALLER": "uv"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    src = tmp_path / "demo"
    src.mkdir()
    (src / "setup.py").write_text("from setuptools import setup\nsetup(name='demo-ext')\n")
    return src


def key_of(stdout: str) -> str:
    return next(line.split()[2] for line in stdout.splitlines()
                if line.startswith("cache key"))


def test_install_editable_goes_to_the_installer_as_e_and_is_never_cached(
        tmp_path: Path, good: Path, fake_uv: dict[str, str], project: Path,
        isolated: Path) -> None:
    """An editable install leads back into its folder: its wheel is neither kept in nor
    taken from the wheel cache, and its key is not the plain folder's."""
    r = run("install", "--python", str(good), "--arch", "9.0", "-e", str(project), env=fake_uv)
    assert r.returncode == 0, r.stderr
    called = (tmp_path / "uv-called").read_text().splitlines()
    assert called[0] == f"pip install --no-build-isolation --python {good} -e {project}"
    assert "installed demo-ext (editable) with uv" in r.stderr
    builds = isolated / "builds"
    assert not list(builds.glob("*/wheels/*.whl"))
    again = run("install", "--python", str(good), "--arch", "9.0", "-e", str(project),
                env=fake_uv)
    assert "wheel cache" not in again.stderr and again.returncode == 0
    assert (tmp_path / "uv-called").read_text().splitlines()[-2].endswith(f"-e {project}")
    # the plain folder keeps its wheel, under another key
    plain = run("install", "--python", str(good), "--arch", "9.0", str(project), env=fake_uv)
    assert plain.returncode == 0, plain.stderr
    assert len(list(builds.glob("*/wheels/*.whl"))) == 1
    explained = [run("install", "--python", str(good), "--arch", "9.0", "--explain", *how,
                     env=fake_uv).stdout for how in (["-e", str(project)], [str(project)])]
    assert key_of(explained[0]) != key_of(explained[1])
    assert "wheels     not taken from or kept in the wheel cache" in explained[0]
    assert f"--python {good} -e {project}\n" in explained[0]


def test_install_requirements_file(tmp_path: Path, good: Path, fake_uv: dict[str, str],
                                   project: Path) -> None:
    """-r reaches the installer as -r; the packages it names (nested files too) get the
    package table's variables."""
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("# ours\ncausal-conv1d==1.7.0 --hash=sha256:00\n-r more/extra.txt\n")
    (tmp_path / "more").mkdir()
    (tmp_path / "more/extra.txt").write_text("flash-attn\n")
    r = run("install", "--python", str(good), "--arch", "9.0", "--explain", "-r", str(reqs),
            env=fake_uv)
    assert r.returncode == 0, r.stderr
    assert "set        CAUSAL_CONV1D_FORCE_BUILD=TRUE" in r.stdout
    assert "set        FLASH_ATTENTION_FORCE_BUILD=TRUE" in r.stdout
    assert r.stdout.endswith(f"--python {good} -r {reqs}\n")
    before = key_of(r.stdout)
    (tmp_path / "more/extra.txt").write_text("flash-attn==2.8.3\n")  # a nested file counts
    assert key_of(run("install", "--python", str(good), "--arch", "9.0", "--explain",
                      "-r", str(reqs), env=fake_uv).stdout) != before
    real = run("install", "--python", str(good), "--arch", "9.0", "-r", str(reqs),
               str(project), env=fake_uv)
    assert real.returncode == 0, real.stderr
    assert (tmp_path / "uv-called").read_text().startswith(
        f"pip install --no-build-isolation --python {good} {project} -r {reqs}\n")
    assert "installed demo-ext, causal-conv1d, flash-attn with uv" in real.stderr


@pytest.mark.parametrize(("option", "name", "needles"), [
    ("-e", "nope", ["-e {}: there is no such folder", "fix: give the folder of a Python"]),
    ("-r", "nope.txt", ["-r {}: there is no such file",
                        "fix: give the path of a requirements file"]),
    ("-r", "folder", ["-r {}: that is a folder", "fix: give the file inside it"]),
    ("-e", "file.tar.gz", ["-e {}: that is a file; -e takes a project folder",
                           "wheelcuda install {}"]),
    ("-e", "folder", ["-e {}: that folder holds no pyproject.toml, setup.py or setup.cfg"]),
])
def test_install_e_and_r_bad_inputs(tmp_path: Path, good: Path, fake_uv: dict[str, str],
                                    option: str, name: str, needles: list[str]) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "file.tar.gz").write_text("")
    path = str(tmp_path / name)
    fail(run("install", "--python", str(good), "--arch", "9.0", option, path, env=fake_uv),
         *(n.format(path) for n in needles))
    assert not (tmp_path / "uv-called").exists()


def test_nested_requirements_file_missing_is_named(tmp_path: Path) -> None:
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("-r gone.txt\n")
    with pytest.raises(WheelcudaError, match=r"-r gone.txt \(named in .*requirements.txt\): "
                                             "there is no such file"):
        read_package_args(Context.of(os.environ, str(tmp_path)), [], [], [str(reqs)])


@pytest.mark.parametrize("rest", [["-e"], ["-e", "./x"], ["--editable=./x"], ["-r", "r.txt"]])
def test_e_and_r_after_the_separator_are_refused(project: Path, rest: list[str]) -> None:
    """`install DIR -- -e` reached uv as `DIR -e`: they are install's own options now."""
    r = run("install", "--arch", "9.0", str(project), "--", *rest)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"give {rest[0]} before --, as install's own option" in r.stderr


def test_editable_folder_gets_a_dot_slash(tmp_path: Path, project: Path) -> None:
    """uv reads `-e demo` as a package name: a bare relative folder goes as ./demo."""
    given = read_package_args(Context.of(os.environ, str(tmp_path)), [], ["demo"], [])
    assert given.editable == ("./demo",) and not given.cacheable
    assert project.name == "demo"


def test_installer_argv_and_requirement_lines() -> None:
    uv = installer.Uv(("/bin/uv",))
    pip = installer.Pip()
    assert uv.install_argv("/v/py", ["a==1"], ["-v"], editable=["./x"],
                                  requirements=["r.txt"]) == [
        "/bin/uv", "pip", "install", "--no-build-isolation", "--python", "/v/py", "a==1",
        "-e", "./x", "-r", "r.txt", "-v"]
    assert pip.install_argv("/v/py", [], [], editable=["./x"]) == [
        "/v/py", "-m", "pip", "install", "--no-build-isolation", "-e", "./x"]
    text = ("# a comment\nfoo==1 --hash=sha256:ab \\\n    --hash=sha256:cd\n"
            "-e ./ext  # mine\n-e./y\n--editable=../z\n-r more.txt\n--requirement other.txt\n"
            "-c constraints.txt\n--index-url https://example.org/simple\n"
            'bar ; python_version > "3.8"\n')
    assert installer.requirement_lines(text) == [
        ("", "foo==1"), ("-e", "./ext"), ("-e", "./y"), ("-e", "../z"), ("-r", "more.txt"),
        ("-r", "other.txt"), ("", 'bar ; python_version > "3.8"')]


def test_json_of_env_is_still_json(good: Path) -> None:
    """--shell json is unchanged by the names mapped to sh."""
    data = json.loads(run("env", "--python", str(good), "--arch", "9.0", "--shell",
                          "json").stdout)
    assert data["variables"]["TORCH_CUDA_ARCH_LIST"] == "9.0"


def test_the_help_says_how_to_build_again() -> None:
    """The only way to build a kept wheel again was to uninstall it and `cache clear
    PKG`, and neither help said so: install has --rebuild, and `cache clear -h` names it."""
    install = flat(run("install", "-h", env=WIDE).stdout)
    assert "--rebuild build again even when wheelcuda's wheel cache (or a team's index) has " \
           "this build's wheel, and reinstall the packages named" in install
    clear = flat(run("cache", "clear", "-h", env=WIDE).stdout)
    assert "To build a package again and reinstall it, the cached wheel replaced: wheelcuda " \
           "install --rebuild PKG" in clear
