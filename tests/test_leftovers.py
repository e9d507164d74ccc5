"""What a run leaves behind, and what it says while it waits, as the first user met them
(2026-12-01): an entry without a wheel after "nothing compiled", empty lock files per key
ever tried, a Ctrl-C's setuptools and uv scraps in the key's folder, a silent 4-minute
wait for uv's lock on the venv; and doctor's words without torch and in a uv project
whose builds are isolated."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from tests import fakes
from tests.test_cli import run


def _uv(tmp: Path, body: str) -> dict[str, str]:
    """A fake uv (Python): ``body`` runs for an install; `cache prune` does nothing."""
    source = ("import os, sys, time\nargs = sys.argv[1:]\n"
              "if args[:2] == ['cache', 'prune']:\n    sys.exit(0)\n" + body)
    return fakes.uv_on_path(tmp, source)


def _ext(tmp: Path) -> Path:
    ext = tmp / "ext"
    ext.mkdir()
    (ext / "pyproject.toml").write_text('[project]\nname = "ext"\nversion = "1.0"\n')
    return ext


def test_nothing_built_leaves_no_entry_and_no_lock(tmp_path: Path, isolated: Path) -> None:
    """uv found it installed and built nothing: no entry of 0.0 MB in `cache list`."""
    env = _uv(tmp_path, "sys.exit(0)\n")
    py = fakes.user_env(tmp_path)
    r = run("install", "--python", str(py), "--arch", "9.0", str(_ext(tmp_path)), env=env)
    assert r.returncode == 0, r.stderr
    assert "nothing compiled" in r.stderr
    listed = run("cache", "list").stdout + run("cache", "list").stderr
    assert "ext-" not in listed, listed
    builds = isolated / "builds"
    assert not builds.exists() or [p.name for p in builds.iterdir()] == []


def test_a_failed_build_leaves_no_lock_file(tmp_path: Path, isolated: Path) -> None:
    env = _uv(tmp_path, "sys.exit(1)\n")
    py = fakes.user_env(tmp_path)
    r = run("install", "--python", str(py), "--arch", "9.0", str(_ext(tmp_path)), env=env)
    assert r.returncode == 1 and "nothing was installed" in r.stderr
    builds = isolated / "builds"
    assert not builds.exists() or [p.name for p in builds.iterdir()] == []


def test_a_stopped_build_of_a_kept_key_leaves_no_scraps(tmp_path: Path, isolated: Path) -> None:
    """A key with an earlier entry keeps it; what the stopped build made goes."""
    ok = _uv(tmp_path, "d = os.path.join(os.environ['UV_CACHE_DIR'], 'built')\n"
                       "os.makedirs(d, exist_ok=True)\n"
                       "open(os.path.join(d, 'ext-1.0-py3-none-any.whl'), 'w').close()\n")
    py = fakes.user_env(tmp_path)
    ext = _ext(tmp_path)
    assert run("install", "--python", str(py), "--arch", "9.0", str(ext), env=ok).returncode == 0
    [key] = [p for p in (isolated / "builds").iterdir() if p.is_dir()]
    (tmp_path / "again").mkdir()
    stopped = _uv(tmp_path / "again", "base = os.path.dirname(os.environ['UV_CACHE_DIR'])\n"
                  "os.makedirs(os.path.join(base, 'setuptools-build', 'temp'))\n"
                  "os.makedirs(os.path.join(os.environ['UV_CACHE_DIR'], 'builds-v0', '.tmpab12'))"
                  "\nsys.exit(130)\n")
    r = run("install", "--python", str(py), "--arch", "9.0", str(ext), "--", "--reinstall",
            env=stopped)
    assert r.returncode == 130 or r.returncode == 1, r.stderr
    assert (key / "build.json").is_file() and list((key / "wheels").glob("*.whl"))
    assert not (key / "setuptools-build").exists()
    assert not list(key.glob("uv/builds-v0/.tmp*"))


def test_prune_removes_what_others_left(tmp_path: Path, isolated: Path) -> None:
    builds = isolated / "builds"
    key = builds / "ext-0123456789abcdef"
    (key / "wheels").mkdir(parents=True)
    (key / "build.json").write_text("{}")
    (key / "setuptools-build" / "temp").mkdir(parents=True)
    (key / "uv" / "builds-v0" / ".tmpzz").mkdir(parents=True)
    (builds / ".gone-0123456789abcdef.lock").write_text("")
    isolated.chmod(0o700)
    builds.chmod(0o700)
    r = run("cache", "prune")
    assert r.returncode == 0, r.stderr
    assert not (key / "setuptools-build").exists() and not (key / "uv/builds-v0/.tmpzz").exists()
    assert not (builds / ".gone-0123456789abcdef.lock").exists()
    assert (key / "build.json").is_file()


HOLD = """import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_a_wait_for_uvs_lock_on_the_venv_is_named(tmp_path: Path) -> None:
    """Another install holds <venv>/.lock (as uv does for a whole install): the wait is
    said, with the holder, and when it ends."""
    py = fakes.user_env(tmp_path)  # its prefix is tmp_path
    lock = tmp_path / ".lock"
    # held 9 s: the note comes after 3 s of waiting, and wheelcuda's own start took
    # over 2 s on a loaded machine (make live beside make test)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(lock), "9"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    env = _uv(tmp_path, "import fcntl\n"
                        f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
                        "fcntl.flock(fd, fcntl.LOCK_EX)\nsys.exit(0)\n")
    start = time.monotonic()
    r = run("install", "--python", str(py), "--arch", "9.0", str(_ext(tmp_path)), env=env)
    holder.wait()
    holder.stdout.close()
    assert r.returncode == 0, r.stderr
    assert time.monotonic() - start >= 3
    said = " ".join(r.stderr.split())
    assert f"waiting for uv's lock on {tmp_path} (another install into this environment): " \
           f"pid {holder.pid}: python" in said, said
    assert "is free now" in said


def test_doctor_without_torch_gives_no_compiler_advice(tmp_path: Path) -> None:
    site = fakes.build_needs(tmp_path / "site")
    py = fakes.python(tmp_path, [site])
    r = run("doctor", "--python", str(py), "--arch", "12.0")
    assert r.returncode == 1
    assert f"ERROR: torch is not installed in {py}" in r.stdout
    assert "cuda-toolkit" not in r.stdout and "MISSING" not in r.stdout, r.stdout
    assert "not judged: torch is not installed" in r.stdout
    # no torch, no CUDA release: the section names none it would then not judge
    assert "CUDA components\n" in r.stdout and "CUDA 13 components" not in r.stdout


def test_doctor_in_an_isolated_uv_project_notes_the_build_needs(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "0.1"\n')
    venv = project / ".venv"  # the project's own environment (uv sync's)
    site = fakes.torch(fakes.cu13_site(venv / "site"))  # no setuptools, wheel, ...
    py = fakes.python(venv, [site])
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": os.environ["WHEELCUDA_CACHE_DIR"]}
    doctor = [sys.executable, "-m", "wheelcuda", "doctor", "--python", str(py), "--arch", "9.0"]
    r = subprocess.run(doctor, capture_output=True, text=True, env=env, cwd=project, check=False)
    assert r.returncode == 0, r.stdout
    assert "WARNING: setuptools, wheel, packaging missing" in r.stdout
    assert "builds in isolation" in " ".join(r.stdout.split())
    # a project that turns isolation off needs them: a warning all the same, since install
    # installs them before it builds
    (project / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "0.1"\n'
                                            "[tool.uv]\nno-build-isolation = true\n")
    r = subprocess.run(doctor, capture_output=True, text=True, env=env, cwd=project, check=False)
    assert r.returncode == 0 and "WARNING: setuptools, wheel, packaging missing" in r.stdout
    assert "builds in isolation" not in " ".join(r.stdout.split())
    # another environment than the project's: its build needs are what they are
    (project / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "0.1"\n')
    other = fakes.python(tmp_path, [site])
    r = subprocess.run([*doctor[:5], str(other), *doctor[6:]], capture_output=True, text=True,
                       env=env, cwd=project, check=False)
    assert r.returncode == 0 and "WARNING: setuptools, wheel, packaging missing" in r.stdout
    assert "builds in isolation" not in " ".join(r.stdout.split())
