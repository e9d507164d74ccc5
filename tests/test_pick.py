"""A requirement without an exact version is pinned to the release the installer would
take (probe/pick.py; pip's indexes: probe/pipconf.py), so that the wheel cache serves the
command people type twice: `wheelcuda install causal-conv1d` into a second venv with the
same torch rebuilt for 4.5 minutes under the same key, as only ``name==version`` was
served from the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import fakes
from wheelcuda.context import Context
from wheelcuda.probe import pick, pipconf
from wheelcuda.probe.uvforms import Place

PY311 = (3, 11, 7)


def _links(folder: Path, *names: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(f"the file {name}".encode())
    return folder


def test_the_newest_final_release_with_its_sdist(tmp_path: Path) -> None:
    links = _links(tmp_path / "links", "demo_ext-1.0.tar.gz", "demo_ext-1.2.tar.gz",
                   "demo_ext-2.0rc1.tar.gz", "demo_ext-1.1.tar.gz", "other-9.0.tar.gz")
    found = pick.newest("demo-ext", [Place(str(links), flat=True)], PY311, first_index=True)
    assert found is not None and found.spec == "demo-ext==1.2" and not found.wheel
    assert found.sdist is not None and found.sdist.filename == "demo_ext-1.2.tar.gz"
    # a specifier, extras and a pre-release asked for by name
    ranged = pick.newest("demo-ext[cuda]>=1.0,<1.2", [Place(str(links), flat=True)], PY311,
                         first_index=True)
    assert ranged is not None and ranged.spec == "demo-ext[cuda]==1.1"
    pre = pick.newest("demo-ext>=2.0rc1", [Place(str(links), flat=True)], PY311,
                      first_index=True)
    assert pre is not None and pre.version == "2.0rc1"
    # exact pins, URLs and markers are not this module's
    for spec in ("demo-ext==1.0", "demo-ext @ https://x.invalid/a.tar.gz",
                 "demo-ext; python_version < '3'", "not a requirement!"):
        assert pick.newest(spec, [Place(str(links), flat=True)], PY311,
                           first_index=True) is None


def test_yanked_and_other_pythons_are_passed_over(tmp_path: Path) -> None:
    """PEP 592 and Requires-Python, from a PEP 503 page."""
    project = tmp_path / "simple" / "demo-ext"
    project.mkdir(parents=True)
    (project / "index.html").write_text(
        '<a href="demo_ext-1.3.tar.gz" data-yanked="">demo_ext-1.3.tar.gz</a>\n'
        '<a href="demo_ext-1.2.tar.gz" data-requires-python="&gt;=3.12">demo_ext-1.2.tar.gz</a>\n'
        '<a href="demo_ext-1.1.tar.gz#sha256=ab12" data-requires-python="&gt;=3.8">'
        'demo_ext-1.1.tar.gz</a>\n')
    index = (tmp_path / "simple").as_uri()
    found = pick.newest("demo-ext", [Place(index)], PY311, first_index=True)
    assert found is not None and found.version == "1.1"
    assert found.sdist is not None and found.sdist.sha256 == "ab12"
    assert pick.newest("demo-ext", [Place(index)], (3, 12, 1), first_index=True).version == "1.2"


def test_a_wheel_for_this_machine_is_taken_as_it_is(tmp_path: Path) -> None:
    links = _links(tmp_path / "links", "demo_ext-1.0.tar.gz", "demo_ext-1.0-py3-none-any.whl")
    found = pick.newest("demo-ext", [Place(str(links), flat=True)], PY311, first_index=True)
    assert found is not None and found.wheel  # the installer takes it: nothing to key
    other = _links(tmp_path / "other", "demo_ext-1.0.tar.gz",
                   "demo_ext-1.0-cp311-cp311-win_amd64.whl")
    found = pick.newest("demo-ext", [Place(str(other), flat=True)], PY311, first_index=True)
    assert found is not None and not found.wheel


def test_uv_takes_the_first_index_pip_the_best(tmp_path: Path) -> None:
    first = tmp_path / "first"
    _links(first / "demo-ext", "demo_ext-1.0.tar.gz")
    second = tmp_path / "second"
    _links(second / "demo-ext", "demo_ext-2.0.tar.gz")
    places = [Place(first.as_uri()), Place(second.as_uri())]
    assert pick.newest("demo-ext", places, PY311, first_index=True).version == "1.0"
    assert pick.newest("demo-ext", places, PY311, first_index=False).version == "2.0"


def test_a_name_no_index_has_is_said(tmp_path: Path) -> None:
    links = _links(tmp_path / "links", "other-1.0.tar.gz")
    with pytest.raises(pick.NotOnIndex, match="no project named demo-ext on the indexes uv "
                                               "would search"):
        pick.newest("demo-ext", [Place(str(links), flat=True)], PY311, first_index=True)
    with pytest.raises(pick.NotOnIndex, match="no release of demo-ext that demo-ext>=5 admits"):
        pick.newest("demo-ext>=5", [Place(str(_links(tmp_path / "l2", "demo_ext-1.0.tar.gz")),
                                          flat=True)], PY311, first_index=True)
    # nothing answered (offline): unknown, not an error
    assert pick.newest("demo-ext", [Place("http://127.0.0.1:9/simple")], PY311,
                       first_index=True) is None


def test_pips_indexes_as_pip_reads_them(tmp_path: Path) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://mirror.invalid/simple\n"
                    "extra-index-url = https://extra.invalid/simple\n"
                    "[install]\nfind-links = /opt/wheels\n")
    prefix = tmp_path / "venv"
    prefix.mkdir()
    ctx = Context.of({"PIP_CONFIG_FILE": str(conf), "HOME": str(tmp_path),
                      "XDG_CONFIG_DIRS": str(tmp_path / "none")}, str(tmp_path))
    assert pipconf.indexes(ctx, str(prefix)) == [
        Place("https://mirror.invalid/simple"), Place("https://extra.invalid/simple"),
        Place("/opt/wheels", flat=True)]
    (prefix / "pip.conf").write_text("[global]\nno-index = true\n")  # the venv's own
    only = Context.of({"HOME": str(tmp_path), "XDG_CONFIG_DIRS": str(tmp_path / "none"),
                       "PIP_FIND_LINKS": "/a /b"}, str(tmp_path))
    assert pipconf.indexes(only, str(prefix)) == [Place("/a", flat=True), Place("/b", flat=True)]
    none = Context.of({"PIP_CONFIG_FILE": os.devnull, "HOME": str(tmp_path)}, str(tmp_path))
    assert pipconf.indexes(none, str(prefix)) == [Place("https://pypi.org/simple")]
    (tmp_path / "bad.conf").write_text("not ini at all [")
    bad = Context.of({"PIP_CONFIG_FILE": str(tmp_path / "bad.conf"), "HOME": str(tmp_path),
                      "XDG_CONFIG_DIRS": str(tmp_path / "none")}, str(tmp_path))
    # unreadable: skipped, never a crash; the venv's own file still says no-index
    assert pipconf.indexes(bad, str(prefix)) == []


BUILDING_UV = """#!/bin/sh
case "$*" in
  "cache prune"*) ;;
  *.whl*) echo "WHEEL $*" >> "$LOG" ;;
  *) echo "BUILD $*" >> "$LOG"; mkdir -p "$UV_CACHE_DIR/built";
     touch "$UV_CACHE_DIR/built/causal_conv1d-1.7.0-cp311-cp311-linux_x86_64.whl" ;;
esac
"""


def test_a_bare_name_typed_twice_is_served_from_the_cache(tmp_path: Path) -> None:
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(BUILDING_UV)
    (bin_dir / "uv").chmod(0o755)
    links = _links(tmp_path / "links", "causal_conv1d-1.6.0.tar.gz", "causal_conv1d-1.7.0.tar.gz")
    log = tmp_path / "log"
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": os.environ["WHEELCUDA_CACHE_DIR"],
           "PATH": f"{bin_dir}:{os.environ['PATH']}", "WHEELCUDA_INSTALLER": "uv",
           "LOG": str(log), "UV_NO_INDEX": "1", "UV_FIND_LINKS": str(links)}
    outs = []
    for n in ("a", "b"):
        py = fakes.user_env(tmp_path / n)
        done = subprocess.run([sys.executable, "-m", "wheelcuda", "install", "--python",
                               str(py), "--arch", "9.0", "causal-conv1d"], env=env,
                              capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        outs.append(done.stderr)
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and calls[0].startswith("BUILD") and calls[1].startswith("WHEEL")
    assert calls[0].endswith(" causal-conv1d==1.7.0"), calls  # what was keyed is installed
    assert "causal-conv1d: the newest release on" in outs[0] and "is 1.7.0" in outs[0]
    assert "from wheelcuda's wheel cache (nothing compiled)" in outs[1]


def _one_sdist(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A user environment, a uv that logs its calls, and an index of causal-conv1d 1.7.0."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(BUILDING_UV)
    (bin_dir / "uv").chmod(0o755)
    links = _links(tmp_path / "links", "causal_conv1d-1.7.0.tar.gz")
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": os.environ["WHEELCUDA_CACHE_DIR"],
           "PATH": f"{bin_dir}:{os.environ['PATH']}", "WHEELCUDA_INSTALLER": "uv",
           "LOG": str(tmp_path / "log"), "UV_NO_INDEX": "1", "UV_FIND_LINKS": str(links)}
    return fakes.user_env(tmp_path / "a"), env


def test_a_name_that_does_not_exist_stops_before_the_installer(tmp_path: Path) -> None:
    py, env = _one_sdist(tmp_path)
    done = subprocess.run([sys.executable, "-m", "wheelcuda", "install", "--python", str(py),
                           "--arch", "9.0", "causal-conv1dd"], env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "no project named causal-conv1dd on the indexes uv would search" in done.stderr
    assert "fix: check the name" in done.stderr
    assert "building with" not in done.stderr and not (tmp_path / "log").exists()


def test_a_place_that_does_not_answer_may_hold_it(tmp_path: Path) -> None:
    """A private index that asks for credentials wheelcuda does not have (uv may take
    them from keyring): not "no such project", but unknown."""
    links = _links(tmp_path / "links", "other-1.0.tar.gz")
    places = [Place("http://127.0.0.1:9/simple"), Place(str(links), flat=True)]
    assert pick.newest("demo-ext", places, PY311, first_index=True) is None
    assert pick.newest("demo-ext", [], PY311, first_index=True) is None  # UV_OFFLINE


def test_a_release_whose_wheels_fit_nothing_here_is_passed_over(tmp_path: Path) -> None:
    """2.0 comes only as a cp313 wheel: a cp311 target takes 1.0's sdist, as uv does."""
    links = _links(tmp_path / "links", "demo_ext-1.0.tar.gz",
                   "demo_ext-2.0-cp313-cp313-manylinux_2_17_x86_64.whl")
    found = pick.newest("demo-ext", [Place(str(links), flat=True)], PY311, first_index=True)
    assert found is not None and found.spec == "demo-ext==1.0" and not found.wheel


def test_installer_arguments_that_choose_the_release_leave_it_unpinned(tmp_path: Path) -> None:
    py, env = _one_sdist(tmp_path)
    done = subprocess.run([sys.executable, "-m", "wheelcuda", "install", "--python", str(py),
                           "--arch", "9.0", "causal-conv1d", "--", "--index-url",
                           "https://mirror.invalid/simple"], env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "causal-conv1d: not pinned (--index-url after -- tells the installer" in done.stderr
    assert (tmp_path / "log").read_text().split()[-3:] == [
        "causal-conv1d", "--index-url", "https://mirror.invalid/simple"]


@pytest.mark.parametrize(("spec", "says"), [
    ("causal-conv1d[", "causal-conv1d[: not a requirement (Expected matching RIGHT_BRACKET"),
    ("./nothing", "./nothing: there is no such folder or file"),
    ("dist/nothing-1.0.tar.gz", "dist/nothing-1.0.tar.gz: there is no such folder or file"),
])
def test_what_is_neither_a_requirement_nor_a_file_is_refused(tmp_path: Path, spec: str,
                                                             says: str) -> None:
    py = fakes.user_env(tmp_path)
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": os.environ["WHEELCUDA_CACHE_DIR"],
           "UV_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-m", "wheelcuda", "install", "--explain",
                           "--python", str(py), "--arch", "9.0", spec], env=env,
                          capture_output=True, text=True, check=False, cwd=tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert says in done.stderr and "\n  fix: " in done.stderr, done.stderr
