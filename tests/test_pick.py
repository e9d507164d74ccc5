"""A requirement without an exact version is pinned to the release the installer would
take (_probe/pick.py; pip's indexes: _probe/pipconf.py), so that the wheel cache serves the
command people type twice: `wheelcuda install causal-conv1d` into a second venv with the
same torch rebuilt for 4.5 minutes under the same key, as only ``name==version`` was
served from the cache."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from uv import find_uv_bin

from tests import fakes
from wheelcuda._context import Context
from wheelcuda._probe import pick, pipconf, release
from wheelcuda._probe.given import PackageArgs
from wheelcuda._probe.uvforms import Place

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


#: A uv that records what it is asked to install, and asks the real uv which release
#: it would take (what wheelcuda pins).
BUILDING_UV = """#!/bin/sh
case "$*" in
  "cache prune"*) ;;
  "pip compile"*) exec "$REAL_UV" "$@" ;;
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
           "LOG": str(log), **_only(links, tmp_path)}
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
    assert "causal-conv1d: uv takes 1.7.0 (" in outs[0], outs[0]
    assert "from wheelcuda's wheel cache (nothing compiled)" in outs[1]


def _only(links: Path, tmp: Path) -> dict[str, str]:
    """uv searches ``links`` and an empty index (uv 0.13.9 ignores UV_NO_INDEX: it asked
    pypi.org with it set), in a uv cache of its own."""
    (tmp / "no-index").mkdir(exist_ok=True)
    return {"UV_DEFAULT_INDEX": (tmp / "no-index").as_uri(), "UV_FIND_LINKS": str(links),
            "UV_CACHE_DIR": str(tmp / "uv-cache"), "REAL_UV": find_uv_bin()}


def _one_sdist(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A user environment, a uv that logs its calls, and an index of causal-conv1d 1.7.0."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    (bin_dir / "uv").write_text(BUILDING_UV)
    (bin_dir / "uv").chmod(0o755)
    links = _links(tmp_path / "links", "causal_conv1d-1.7.0.tar.gz")
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": os.environ["WHEELCUDA_CACHE_DIR"],
           "PATH": f"{bin_dir}:{os.environ['PATH']}", "WHEELCUDA_INSTALLER": "uv",
           "LOG": str(tmp_path / "log"), **_only(links, tmp_path)}
    return fakes.user_env(tmp_path / "a"), env


def test_a_name_that_does_not_exist_stops_before_the_installer(tmp_path: Path) -> None:
    py, env = _one_sdist(tmp_path)
    done = subprocess.run([sys.executable, "-m", "wheelcuda", "install", "--python", str(py),
                           "--arch", "9.0", "causal-conv1dd"], env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "uv finds no release to install for causal-conv1dd: error: No solution found" \
        in done.stderr, done.stderr
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


@pytest.mark.parametrize("args", [
    ["--index-url", "https://mirror.invalid/simple"],
    # uv reads these too, and uv is asked without them: it could name another release
    ["--override", "overrides.txt"], ["--config-file", "uv.toml"], ["--no-config"],
    ["--only-binary", ":all:"], ["--no-sources"]])
def test_installer_arguments_that_choose_the_release_leave_it_unpinned(
        tmp_path: Path, args: list[str]) -> None:
    py, env = _one_sdist(tmp_path)
    done = subprocess.run([sys.executable, "-m", "wheelcuda", "install", "--python", str(py),
                           "--arch", "9.0", "causal-conv1d", "--", *args], env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"causal-conv1d: not pinned ({args[0]} after -- tells the installer" in done.stderr
    assert (tmp_path / "log").read_text().split()[-1 - len(args):] == ["causal-conv1d", *args]


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


def test_a_bare_name_is_pinned_once_per_install(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """With a team's index configured, install planned up to three times (the cache,
    after the index's answer, the build), each pin asking the indexes again: the pin could
    change between two asks, and each cost a round trip. The later plans take the first's."""
    from wheelcuda import _pipeline as pipeline  # noqa: PLC0415
    from wheelcuda._commands import install  # noqa: PLC0415
    from wheelcuda._commands.install import share as install_share  # noqa: PLC0415
    from wheelcuda._team.rules import Sharing  # noqa: PLC0415

    links = _links(tmp_path / "links", "causal_conv1d-1.7.0.tar.gz")
    for name, value in _only(links, tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("WHEELCUDA_INSTALLER", "uv")
    monkeypatch.setenv("PATH", f"{Path(find_uv_bin()).parent}:{os.environ['PATH']}")
    asked = []
    real = release.by_uv

    def counted(*args: object, **kwargs: object) -> object:
        asked.append(args[1])
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(release, "by_uv", counted)
    monkeypatch.setattr(install_share, "from_indexes", lambda *a: True)  # a wheel came
    py = fakes.user_env(tmp_path / "venv")
    given = PackageArgs(("causal-conv1d",))
    req = pipeline.Request(python=str(py), arch="9.0", need_torch=True, build_needs=True,
                           jobs=True)
    ctx = Context.current()
    found, looked = install._without_a_build(ctx, given, req, [],
                                             Sharing(indexes=("http://127.0.0.1:9/",)))
    assert found is None and looked is not None  # nothing kept: a build, planned in full
    plan = install.plan.prepare(ctx, given, req, [], pinned_by=looked)
    assert plan.given.specs == ("causal-conv1d==1.7.0",)
    assert any("uv takes 1.7.0" in note for note in plan.pins), plan.pins
    assert asked == ["causal-conv1d"], asked


def test_an_exact_pins_sdist_is_the_one_uv_names(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``name==version``: the key holds the sha256 of the sdist uv says it takes, not of
    one wheelcuda found by its own reading of the indexes (the reading of uv's settings
    that went wrong for bare names would go wrong here too)."""
    import hashlib  # noqa: PLC0415

    from wheelcuda import _pipeline as pipeline  # noqa: PLC0415
    from wheelcuda._commands import install  # noqa: PLC0415
    from wheelcuda._probe import uvforms  # noqa: PLC0415

    links = _links(tmp_path / "links", "causal_conv1d-1.7.0.tar.gz")
    for name, value in _only(links, tmp_path).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("WHEELCUDA_INSTALLER", "uv")
    monkeypatch.setenv("PATH", f"{Path(find_uv_bin()).parent}:{os.environ['PATH']}")
    monkeypatch.setattr(uvforms, "pinned_source", lambda *a: "sha256:its-own-reading")
    req = pipeline.Request(python=str(fakes.user_env(tmp_path / "venv")), arch="9.0",
                           need_torch=True, build_needs=True, jobs=True)
    plan = install.plan.prepare(Context.current(), PackageArgs(("causal-conv1d==1.7.0",)), req, [])
    digest = hashlib.sha256((links / "causal_conv1d-1.7.0.tar.gz").read_bytes()).hexdigest()
    assert plan.sdists == {"causal-conv1d==1.7.0": f"sha256:{digest}"}
    assert f"causal-conv1d==1.7.0 @ sha256:{digest}" in plan.fields["packages"]


def test_uv_says_which_release_under_the_users_constraints(tmp_path: Path) -> None:
    """With ``causal-conv1d<1.7`` as a constraint uv alone takes 1.6.0; wheelcuda read the
    indexes itself, pinned ==1.7.0, and uv then failed as unsatisfiable. uv is asked."""
    py, env = _one_sdist(tmp_path)
    _links(tmp_path / "links", "causal_conv1d-1.6.0.tar.gz")
    (tmp_path / "c.txt").write_text("causal-conv1d<1.7\n")
    done = subprocess.run([sys.executable, "-m", "wheelcuda", "install", "--python", str(py),
                           "--arch", "9.0", "causal-conv1d"],
                          env={**env, "UV_CONSTRAINT": str(tmp_path / "c.txt")},
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "causal-conv1d: uv takes 1.6.0 (" in done.stderr, done.stderr
    assert (tmp_path / "log").read_text().split()[-1] == "causal-conv1d==1.6.0"
    # what uv says it would install cannot be: uv's own words, before any build
    (tmp_path / "c.txt").write_text("causal-conv1d<1.0\n")
    refused = subprocess.run([sys.executable, "-m", "wheelcuda", "install", "--python",
                              str(py), "--arch", "9.0", "causal-conv1d"],
                             env={**env, "UV_CONSTRAINT": str(tmp_path / "c.txt"),
                                  "LOG": str(tmp_path / "log2")},
                             capture_output=True, text=True, check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "uv finds no release to install for causal-conv1d" in refused.stderr
    assert "UV_CONSTRAINT" in refused.stderr and not (tmp_path / "log2").exists()


def test_a_uv_that_cannot_answer_leaves_the_name_to_it(tmp_path: Path) -> None:
    """Offline with nothing cached, uv cannot say: not pinned, and not "no such project"
    (uv's hint says the network was disabled)."""
    py, env = _one_sdist(tmp_path)
    env = {**env, "UV_OFFLINE": "1", "UV_FIND_LINKS": "", "UV_DEFAULT_INDEX": ""}
    done = subprocess.run([sys.executable, "-m", "wheelcuda", "install", "--python", str(py),
                           "--arch", "9.0", "causal-conv1d"], env=env, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "causal-conv1d: not pinned (uv could not say which release it takes" in done.stderr
    assert (tmp_path / "log").read_text().split()[-1] == "causal-conv1d"


def test_pips_own_choosing_settings_leave_the_name_to_pip(tmp_path: Path) -> None:
    """pip cannot be asked without building the sdist's metadata (causal-conv1d's build
    requires torch: an isolated environment that downloads it); what pip reads beyond its
    indexes (a constraint, pre-releases) is then left to pip, unpinned."""
    prefix = tmp_path / "venv"
    prefix.mkdir()
    base = {"HOME": str(tmp_path), "XDG_CONFIG_DIRS": str(tmp_path / "none")}
    assert pipconf.choosing(Context.of(base, str(tmp_path)), str(prefix)) is None
    assert pipconf.choosing(Context.of({**base, "PIP_CONSTRAINT": "c.txt"}, str(tmp_path)),
                            str(prefix)) == "PIP_CONSTRAINT"
    (prefix / "pip.conf").write_text("[install]\npre = false\n")
    assert pipconf.choosing(Context.of(base, str(tmp_path)), str(prefix)) is None
    (prefix / "pip.conf").write_text("[install]\npre = true\n")
    assert pipconf.choosing(Context.of(base, str(tmp_path)), str(prefix)) == "PIP_PRE"
