"""What a person sees when things go wrong at the edges: a fetch that unpacks nothing, a
lock taken twice or held by a running build, nvcc called through a link, an interpreter
or a compiler that answers oddly, checks that must come before a download, a cache path
nvcc's shell steps cannot quote, two installs of one key at once, a venv deleted under
a tree.

Each docstring says what went wrong without the behaviour checked ("Before: ..."). The
CLI is the level where a person meets these, so most tests drive ``python -m wheelcuda``
on fake environments (tests/fakes.py) with a fake ``uv`` first on PATH; the rest call
the one function that decides. Nothing here needs a real nvcc: the fakes' nvcc answers
``--version`` and ``--list-gpu-code``. What killed runs leave, and ``cache prune``, are
in tests/test_prune.py.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import filelock
import pytest

from tests import fakes
from tests.test_builds import BASE, record
from tests.test_cli import fail, run
from wheelcuda import _cli as cli
from wheelcuda import _pipeline as pipeline
from wheelcuda._commands import home as home_command
from wheelcuda._context import Context
from wheelcuda._probe import installer as installer_probe
from wheelcuda._probe import source
from wheelcuda._rules import buildkey
from wheelcuda._rules import tree as plan
from wheelcuda._store import toolkits, trees, wheels
from wheelcuda._store.layout import Layout

REPO = Path(__file__).resolve().parents[1]

#: The requirement torch's fake pin (``cuda-toolkit==13.0.3``) makes install fetch.
SPEC = "==13.0.3"

FAKE_UV = """# A fake uv: records each call; a fetch (--target) unpacks the fake compiler set or
# nothing; an install creates its cache folder as uv does and exits with CODE. Asked
# which release it would take, it cannot say (as offline), and records nothing.
import json, os, sys
sys.path[:0] = [{repo!r}, {src!r}]
args = sys.argv[1:]
if args[:2] == ["pip", "compile"]:
    sys.exit("error: the fake uv resolves nothing")
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\\n")
if "--target" in args:
    if {unpack!r}:
        from pathlib import Path
        from tests import fakes
        fakes.cu13_site(Path(args[args.index("--target") + 1]))
    sys.exit(0)
if os.environ.get("UV_CACHE_DIR"):
    os.makedirs(os.environ["UV_CACHE_DIR"], exist_ok=True)
    open(os.path.join(os.environ["UV_CACHE_DIR"], "half-built.whl"), "w").close()
if {lock!r} and "--no-build-isolation" in args:  # the lock, while the build runs?
    import fcntl
    fd = os.open({lock!r}, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # another build may use it too
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            state = "free"
        except BlockingIOError:
            state = "shared"  # in use: cache clear and prune leave it
    except BlockingIOError:
        state = "held"  # exclusively: a fetch that never let go
    os.close(fd)
    with open({log!r} + ".lock", "w") as f:
        f.write(state)
sys.exit({code!r})
"""


def fake_uv(tmp: Path, *, unpack: bool = False, code: int = 0,
            lock: Path | None = None) -> dict[str, str]:
    """Variables that put a fake ``uv`` first on PATH (calls logged in ``tmp/uv-calls``)."""
    return fakes.uv_on_path(tmp, FAKE_UV.format(
        repo=str(REPO), src=str(REPO / "src"), log=str(tmp / "uv-calls"), unpack=unpack,
        code=code, lock=str(lock) if lock else ""))


def uv_calls(tmp: Path) -> list[list[str]]:
    log = tmp / "uv-calls"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def torch_only(tmp: Path) -> Path:
    """An environment with torch cu130 and the build needs, but no compiler wheels."""
    return fakes.python(tmp, [fakes.build_needs(fakes.torch(tmp / "site"))])


def store_marks(cache: Path) -> list[Path]:
    return sorted((cache / "toolkits").glob(f"*/{toolkits.MARK}"))


def nvcc_of(tmp: Path) -> Path:
    """The fake compiler's nvcc in ``fakes.user_env(tmp)``'s site folder."""
    return tmp / "site/nvidia/cu13/bin/nvcc"


def tree_of(py: Path, env: dict[str, str] | None = None) -> Path:
    r = run("home", "--python", str(py), env=env)
    assert r.returncode == 0, r.stderr
    return Path(r.stdout.strip())


# --- store fetch: one lock, and no completion mark without the compiler -----------

def test_fetch_that_unpacks_nothing_marks_no_store(tmp_path: Path,
                                                   isolated: Path) -> None:
    """Before: the mark was written whatever the installer unpacked. A uv that exited 0
    having unpacked nothing left ``toolkits/cuda-toolkit-13.0.3-*/wheelcuda-store.json``
    beside an empty folder, and every later install trusted that store (and failed
    further on, with "missing CUDA 13 wheels", never fetching again)."""
    py = torch_only(tmp_path)
    env = fake_uv(tmp_path, unpack=False)
    for _ in range(2):  # the second run fetches again: nothing was trusted
        r = run("install", "--python", str(py), "--arch", "9.0", "causal-conv1d", env=env)
        fail(r, "uv reported success fetching cuda-toolkit[nvcc,cccl]==13.0.3",
             "did not arrive in the store", "nvidia-cuda-nvcc", "fix: run uv by hand")
        assert store_marks(isolated) == []
    assert [c[:2] for c in uv_calls(tmp_path)] == [["pip", "install"]] * 2
    assert all("--target" in c for c in uv_calls(tmp_path))  # no build ever started
    leftovers = [p.name for p in (isolated / "toolkits").iterdir()
                 if not p.name.endswith(".lock")]
    assert leftovers == []


def test_fetch_leaves_its_lock_free(tmp_path: Path, isolated: Path) -> None:
    """What a good fetch leaves: a complete store whose lock is not held exclusively
    while the build runs (the fake uv checks it: held shared, as a store in use is)
    and free after it. (This one passed on the old code as well: its
    doubly-acquired lock object was collected when fetch returned, and filelock's
    ``__del__`` dropped the leaked hold; the next test holds on to the object.)"""
    lock = isolated / "toolkits" / f".{toolkits.folder_name(SPEC)}.lock"
    env = fake_uv(tmp_path, unpack=True, lock=lock)
    r = run("install", "--python", str(torch_only(tmp_path)), "--arch", "9.0",
            "causal-conv1d", env=env)
    assert r.returncode == 0, r.stderr
    assert store_marks(isolated) == [isolated / "toolkits" / toolkits.folder_name(SPEC)
                                     / toolkits.MARK]
    calls = uv_calls(tmp_path)
    assert "--target" in calls[0] and "--no-build-isolation" in calls[1]
    assert (tmp_path / "uv-calls.lock").read_text() == "shared"  # during the build
    guard = filelock.FileLock(str(lock), timeout=0)  # and after it
    guard.acquire()
    guard.release()


def test_fetch_takes_its_lock_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                   ) -> None:
    """Before: fetch called ``lock.acquire()`` and then ``with lock:``, so the lock's
    count was 2 inside and still 1 after: the store's lock stayed held after the fetch
    for as long as the lock object lived (on CPython it died, and let go, when fetch
    returned; here the test keeps it, as any other reference would), and another
    process's fetch timed out on it (after 30 minutes)."""
    made: list[filelock.BaseFileLock] = []
    real = filelock.FileLock

    def spy(*args: Any, **kwargs: Any) -> filelock.BaseFileLock:
        lock = real(*args, **kwargs)
        made.append(lock)
        return lock

    monkeypatch.setattr(filelock, "FileLock", spy)
    env = fake_uv(tmp_path, unpack=True)
    ctx = Context.of({**os.environ, **env})
    layout = Layout.for_environ(ctx.environ)
    found = toolkits.fetch(layout, ctx, installer_probe.choose(ctx), SPEC,
                           python=str(torch_only(tmp_path)), major=13)
    assert found == toolkits.existing(layout, SPEC)
    lock = layout.lock(layout.toolkits, found.name)
    assert [m.lock_file for m in made] == [str(lock)]
    assert not made[0].is_locked
    other = subprocess.run([sys.executable, "-c", "import filelock, sys; "
                            "filelock.FileLock(sys.argv[1], timeout=0).acquire()", str(lock)],
                           capture_output=True, text=True, check=False)
    assert other.returncode == 0, other.stderr  # another process takes it at once


# --- the trampoline names the tree's own wrapper ----------------------------------

def test_nvcc_through_a_link_runs_the_trees_wrapper(tmp_path: Path) -> None:
    """Before: ``bin/nvcc`` ran ``"${0%/*}/.nvcc-wrapper.py"``. Through a link to it
    (``~/bin/nvcc``, a CMake toolchain link) ``$0`` is the link: the call failed when
    nothing was beside the link, and ran whatever ``.nvcc-wrapper.py`` was planted
    beside it (here: the marker was written and no nvcc answered)."""
    tree = tree_of(fakes.user_env(tmp_path))
    links = tmp_path / "bin"
    links.mkdir()
    (links / "nvcc").symlink_to(tree / "bin/nvcc")
    r = subprocess.run([str(links / "nvcc"), "--version"], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr  # before: python could not open the file
    assert "Cuda compilation tools, release 13.0, V13.0.88" in r.stdout
    marker = tmp_path / "planted-ran"
    (links / ".nvcc-wrapper.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    r = subprocess.run([str(links / "nvcc"), "--version"], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr
    assert "release 13.0, V13.0.88" in r.stdout
    assert not marker.exists()
    assert str(tree / plan.WRAPPER_SOURCE) in (tree / "bin/nvcc").read_text()


# --- no traceback reaches a user ---------------------------------------------------

@pytest.mark.parametrize("answer", [
    {"prefix": "P", "site_dirs": []},  # no version
    {"prefix": "P", "site_dirs": [], "version": "3.11.7"},
    {"prefix": "P", "site_dirs": "nope", "version": [3, 11, 7]},
])
def test_interpreter_answer_without_version(tmp_path: Path, answer: object) -> None:
    """Before: a probe answer without ``version`` ended in a KeyError traceback, a
    version string in a ValueError traceback (exit 1 both), and a string for site_dirs
    was read letter by letter ("missing CUDA 13 wheels ... (looked in n, o, p, e)").
    Now: one message saying what the answer lacks."""
    fake = tmp_path / "python"
    fake.write_text(f"#!/bin/sh\nprintf '%s\\n' '{json.dumps(answer)}'\n")
    fake.chmod(0o755)
    for command in (["home"], ["env", "--arch", "9.0"]):
        fail(run(*command, "--python", str(fake)),
             "did not answer as a Python interpreter", "lacks", "fix:")


def test_compiler_that_cannot_run(tmp_path: Path) -> None:
    """Before: the wrapper's ``os.execv`` raised PermissionError out of main(): a Python
    traceback in the middle of a build log, exit 1. Now one line naming the compiler
    and the fix, exit 127 (what a shell says for a command it cannot run)."""
    py = fakes.user_env(tmp_path)
    tree = tree_of(py)
    real = Path(os.path.realpath(tree / plan.REAL_NVCC))
    assert real == nvcc_of(tmp_path).resolve()
    real.chmod(real.stat().st_mode & ~(stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
    (tmp_path / "k.cu").write_text("__global__ void k() {}\n")
    env = {**os.environ, "WHEELCUDA_ARCHS": "9.0"}
    r = subprocess.run([str(tree / "bin/nvcc"), "-c", "k.cu", "-o", "k.o"], cwd=tmp_path,
                       capture_output=True, text=True, env=env, check=False)
    assert r.returncode == 127, r.stderr
    assert f"wheelcuda: cannot run the CUDA compiler {real}" in r.stderr
    assert "fix:" in r.stderr and "Traceback" not in r.stderr


def test_compile_log_that_cannot_be_written(tmp_path: Path) -> None:
    """Found while writing these tests (the old wrapper did the same): when
    WHEELCUDA_NVCC_LOG (install's count of the compiles) could not be opened, the wrapper
    died with a FileNotFoundError traceback and the compile failed. Now the count is
    lost and nvcc runs."""
    tree = tree_of(fakes.user_env(tmp_path))
    env = {**os.environ, "WHEELCUDA_NVCC_LOG": str(tmp_path / "gone" / "log")}
    r = subprocess.run([str(tree / "bin/nvcc"), "--version"], capture_output=True, text=True,
                       env=env, check=False)
    assert r.returncode == 0, r.stderr
    assert "release 13.0, V13.0.88" in r.stdout and "Traceback" not in r.stderr


def test_doctor_with_a_one_line_nvcc_banner(tmp_path: Path) -> None:
    """Before: doctor took ``splitlines()[-2]`` of ``nvcc --version``: a compiler that
    printed one line crashed doctor with an IndexError traceback."""
    py = fakes.user_env(tmp_path)
    tree_of(py)
    nvcc_of(tmp_path).write_text(  # after the tree was built: its manifest stays valid
        "#!/bin/sh\ncase \"$1\" in\n  --version) echo 'nvcc 13.0.88' ;;\n"
        "  --list-gpu-code) printf 'sm_90\\n' ;;\n  *) exit 3 ;;\nesac\n")
    r = run("doctor", "--python", str(py), "--arch", "9.0")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    assert "nvcc 13.0.88" in r.stdout and "OK: a build would work" in r.stdout


def _boom(args: object, ctx: object) -> int:
    raise RuntimeError("kaboom")


def test_unexpected_error_is_one_line(monkeypatch: pytest.MonkeyPatch,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Before: cli.main caught only WheelcudaError and KeyboardInterrupt; any other
    exception left as a traceback. Now one line, exit 1, and the traceback with
    WHEELCUDA_DEBUG=1."""
    monkeypatch.setattr(home_command, "main", _boom)
    assert cli.main(["home"]) == 1
    err = capsys.readouterr().err
    assert "wheelcuda: internal error: RuntimeError: kaboom" in err
    assert "WHEELCUDA_DEBUG=1" in err and "Traceback" not in err
    assert cli.main(["home"], environ={**os.environ, "WHEELCUDA_DEBUG": "1"}) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "in _boom" in err
    assert "wheelcuda: internal error: RuntimeError: kaboom" in err


# --- cache clear and the build lock; a failed install leaves no entry ----------------

def test_clear_leaves_a_key_a_build_holds(isolated: Path) -> None:
    """Before: ``cache clear`` renamed and deleted every key folder, also the one a
    running install was building into (its UV_CACHE_DIR vanished mid-build)."""
    layout = Layout(isolated)
    built = buildkey.BuildKey(**BASE)
    fields, key = built.fields(), built.id
    record(layout, key, fields, ["causal-conv1d==1.7.0"])
    guard = filelock.FileLock(str(layout.lock(layout.builds, key)), timeout=0)
    guard.acquire()
    try:
        r = run("cache", "clear")
        assert r.returncode == 0, r.stderr
        assert layout.build(key).is_dir()
        assert f"left {layout.build(key)}: a running wheelcuda holds it" in r.stderr
        assert wheels.clear(layout, None) == ([], [layout.build(key)])
    finally:
        guard.release()
    r = run("cache", "clear")
    assert r.returncode == 0 and "removed 1 cached build(s)" in r.stderr
    assert not layout.build(key).exists()


def test_prune_dry_run_and_clear_pkg_name_a_live_first_build(isolated: Path) -> None:
    """During a live first build, `cache prune --dry-run` said
    `would remove …: build: nothing recorded` where prune left it, and `cache clear PKG`
    did not name the entry it left."""
    layout = Layout(isolated)
    key = "causal-conv1d-0123456789abcdef"
    layout.private(layout.builds)
    layout.private(layout.build(key))
    guard = filelock.FileLock(str(layout.lock(layout.builds, key)), timeout=0)
    guard.acquire()
    try:
        dry = run("cache", "prune", "--dry-run")
        assert dry.returncode == 0, dry.stderr
        assert "would remove" not in dry.stderr
        assert f"left {layout.build(key)}: a running wheelcuda holds it" in dry.stderr
        cleared = run("cache", "clear", "causal_conv1d")
        assert f"left {layout.build(key)}: a running wheelcuda holds it" in cleared.stderr
        other = run("cache", "clear", "mamba-ssm")
        assert str(layout.build(key)) not in other.stderr
    finally:
        guard.release()
    dry = run("cache", "prune", "--dry-run")
    assert f"would remove {layout.build(key)}" in dry.stderr and layout.build(key).is_dir()


def test_clear_leaves_the_tree_a_running_build_uses(tmp_path: Path, isolated: Path) -> None:
    """`wheelcuda run -- sh -c 'sleep 4; "$CUDACXX" --version'`
    while `cache clear --trees --toolkits` ran ended in `nvcc: not found`. run (and
    install, and the backend) hold a shared lock on the tree; clear skips it and says so."""
    py = fakes.user_env(tmp_path)
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": str(isolated)}
    running = subprocess.Popen(
        [sys.executable, "-m", "wheelcuda", "run", "--python", str(py), "--arch", "9.0", "--",
         "sh", "-c", 'touch "$0"; sleep 4; test -x "$CUDACXX" && echo nvcc-still-there',
         str(tmp_path / "started")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    for _ in range(300):
        if (tmp_path / "started").exists():
            break
        time.sleep(0.1)
    cleared = run("cache", "clear", "--trees", "--toolkits")
    out, err = running.communicate(timeout=60)
    assert running.returncode == 0, err
    assert "nvcc-still-there" in out
    assert cleared.returncode == 0, cleared.stderr
    assert "a running wheelcuda holds it" in cleared.stderr and "/homes/" in cleared.stderr
    assert "removed 0 tree(s)" in cleared.stderr
    after = run("cache", "clear", "--trees")  # once it ended: removed
    assert "removed 1 tree(s)" in after.stderr, after.stderr


def test_failed_install_leaves_no_entry(tmp_path: Path, isolated: Path) -> None:
    """Before: a failed install left ``builds/<key>`` (the installer's cache folder)
    behind, and ``cache list`` showed it as an entry with nothing recorded."""
    env = fake_uv(tmp_path, code=3)
    args = ["install", "--python", str(fakes.user_env(tmp_path)), "--arch", "9.0",
            "causal-conv1d"]
    explained = run(*args, "--explain", env=env)
    assert explained.returncode == 0, explained.stderr
    key = next(line.split()[-1] for line in explained.stdout.splitlines()
               if line.startswith("cache key"))
    r = run(*args, env=env)
    assert r.returncode == 3 and "uv exited with 3" in r.stderr
    assert len(uv_calls(tmp_path)) == 1  # the build ran, and made its cache folder
    listing = run("cache", "list", "--json")
    assert listing.returncode == 0, listing.stderr
    assert json.loads(listing.stdout)["entries"] == []
    assert not (isolated / "builds" / key).exists()
    assert [p.name for p in (isolated / "builds").iterdir() if not p.name.startswith(".")] == []


# --- the cheap checks come before the fetch ----------------------------------------

def test_arch_error_before_any_fetch(tmp_path: Path) -> None:
    """Before: install fetched the compiler set (minutes, a download) and only then said
    "no GPU architecture given"."""
    env = fake_uv(tmp_path)
    fail(run("install", "--python", str(torch_only(tmp_path)), "causal-conv1d", env=env),
         "no GPU architecture given", "--arch 12.0")
    assert uv_calls(tmp_path) == []


def test_bad_max_jobs_before_any_fetch(tmp_path: Path) -> None:
    """Before: MAX_JOBS='abc' was reported after the fetch."""
    env = {**fake_uv(tmp_path), "MAX_JOBS": "abc"}
    fail(run("install", "--python", str(torch_only(tmp_path)), "--arch", "9.0",
             "causal-conv1d", env=env), "MAX_JOBS: 'abc' is not a whole number above 0")
    assert uv_calls(tmp_path) == []


def test_explain_fetches_nothing(tmp_path: Path, isolated: Path) -> None:
    """Before: ``install --explain`` downloaded the compiler set into the store to
    explain what it would do."""
    env = fake_uv(tmp_path, unpack=True)
    r = run("install", "--python", str(torch_only(tmp_path)), "--arch", "9.0", "--explain",
            "causal-conv1d", env=env)
    assert r.returncode == 0, r.stderr
    assert "compiler   would fetch cuda-toolkit[nvcc,cccl]==13.0.3 (about 270 MB) into " \
        f"{isolated / 'toolkits' / toolkits.folder_name(SPEC)}" in r.stdout
    assert uv_calls(tmp_path) == []
    kits = isolated / "toolkits"
    assert not kits.exists() or [p for p in kits.iterdir() if not p.name.endswith(".lock")] == []


# --- the tree key, the source hash, the stub's compiler ----------------------------

def test_relative_interpreter_spelling_gives_the_same_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the tree key and the trampoline held ``sys.executable`` as spelled: a
    relative spelling gave a second tree, whose ``bin/nvcc`` ran ``./python`` and so
    worked only from that folder."""
    py = fakes.user_env(tmp_path)
    here = Path(sys.executable)
    req = pipeline.Request(python=str(py), need_archs=False)
    keys, wrappers = [], []
    for spelling, cwd in ((str(here), tmp_path), (f"./{here.name}", here.parent),
                          (str(here.parent / ".." / here.parent.name / here.name), tmp_path)):
        monkeypatch.chdir(cwd)
        monkeypatch.setattr(sys, "executable", spelling)
        ctx = Context.of(os.environ)
        assert ctx.executable == str(here)
        tree = pipeline.resolve(ctx, req).tree
        assert tree is not None
        keys.append(tree.key)
        wrappers.append(dict(tree.files)[plan.WRAPPER])
    assert len(set(keys)) == 1 and len(set(wrappers)) == 1
    assert f"exec {here} -IBS " in wrappers[0]


def _count_hashes(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    hashed: list[Path] = []
    real = source._file_hash

    def counting(path: Path) -> str:
        hashed.append(path)
        return real(path)

    monkeypatch.setattr(source, "_file_hash", counting)
    return hashed


def test_source_hash_does_not_follow_links(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: ``_tree_hash`` walked with ``followlinks=True``: a ``loop -> .`` link made
    it walk loop/loop/loop/... (40 levels, until ELOOP), hashing everything again at each
    level, and a link to a folder outside (a dataset, a checkout) hashed all of that
    folder, 40 times over here; retargeting such a link to a folder with the same files
    gave the same key."""
    src = tmp_path / "ext"
    (src / "csrc").mkdir(parents=True)
    (src / "csrc/k.cu").write_text("__global__ void k() {}\n")
    (src / "setup.py").write_text("from setuptools import setup\nsetup(name='ext')\n")
    (src / "loop").symlink_to(".")
    for name in ("big", "big2"):
        for i in range(300):
            (tmp_path / name).mkdir(exist_ok=True)
            (tmp_path / name / f"f{i}.bin").write_bytes(b"x" * 4096)
    (src / "data").symlink_to(tmp_path / "big")
    hashed = _count_hashes(monkeypatch)
    start = time.monotonic()
    first = source.source_id(str(src))
    assert time.monotonic() - start < 2.0
    assert sorted(p.relative_to(src) for p in hashed) == [Path("csrc/k.cu"), Path("setup.py")]
    (src / "data").unlink()
    (src / "data").symlink_to(tmp_path / "big2")  # the same files, another target
    assert source.source_id(str(src)) != first
    (src / "data").unlink()
    (src / "data").symlink_to(tmp_path / "big")
    assert source.source_id(str(src)) == first


def test_stub_built_with_the_chosen_host_compiler(tmp_path: Path) -> None:
    """Before: ``stub.build_stub`` always ran ``gcc`` from PATH, whatever CC said (the
    compiler nvcc would use, and the one checked against host_config.h)."""
    log = tmp_path / "cc-calls"
    cc = tmp_path / "my-cc"
    cc.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {log}\nexec gcc "$@"\n')
    cc.chmod(0o755)
    tree = tree_of(fakes.user_env(tmp_path), env={"CC": str(cc)})
    calls = log.read_text().splitlines()
    assert any(c.startswith("-E -P -x c") and c.endswith("/cuda.h") for c in calls), calls
    assert any("-shared" in c and "-Wl,-soname,libcuda.so.1" in c for c in calls), calls
    assert (tree / plan.STUB).is_file()


# --- a cache path the shell steps cannot quote --------------------------------------

@pytest.mark.parametrize("name", ["a$b", "a`b", 'a"b'])
def test_cache_path_with_shell_characters(tmp_path: Path, name: str) -> None:
    """Before: ``env`` exited 0 and built a tree under that path, which could not
    compile: nvcc runs its steps through ``sh -c`` with the paths in double quotes."""
    cache = tmp_path / name
    py = fakes.user_env(tmp_path)
    for command in (["env", "--arch", "9.0"], ["home"]):
        r = run(*command, "--python", str(py), env={"WHEELCUDA_CACHE_DIR": str(cache)})
        fail(r, "WHEELCUDA_CACHE_DIR", "cannot quote")
        assert not cache.exists()


# --- builds of one key: their folders, concurrent installs, a deleted venv -------------

def test_each_key_builds_in_its_own_setuptools_folder(tmp_path: Path) -> None:
    """A local folder built in place kept setuptools' build/ between installs: ninja then
    took the objects of an sm_90 build as up to date for an --all-archs or sm_120 one,
    and a wrong wheel was kept. Each key now gets its own build_base."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_text('#!/bin/sh\necho "$DIST_EXTRA_CONFIG" >> "$LOG"; cat "$DIST_EXTRA_CONFIG" '
                  '>> "$LOG"\n')
    uv.chmod(0o755)
    log = tmp_path / "log"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "WHEELCUDA_INSTALLER": "uv",
           "LOG": str(log)}
    py = fakes.user_env(tmp_path)
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "setup.py").write_text("from setuptools import setup\nsetup(name='ext')\n")
    for arch in ("9.0", "12.0"):
        assert run("install", "--python", str(py), "--arch", arch, str(ext),
                   env=env).returncode == 0
    configs = [line for line in log.read_text().splitlines() if line.endswith("setuptools.cfg")]
    bases = [line for line in log.read_text().splitlines() if line.startswith("build_base")]
    assert len(set(configs)) == 2 and len(set(bases)) == 2
    assert all("/builds/" in base for base in bases)


def test_warm_path_survives_a_removed_working_folder(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    code = (f"import os, sys; os.chdir({str(gone)!r}); os.rmdir({str(gone)!r}); "
            "from wheelcuda._entry import main; sys.exit(main(['env', '--arch', '9.0']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=fakes.pythonpath_env(), check=False)
    assert "Traceback" not in r.stderr, r.stderr


def test_unreadable_source_is_a_message(tmp_path: Path) -> None:
    fail(run("install", "--python", str(fakes.user_env(tmp_path)), "--arch", "9.0",
             "--explain", "/proc/self/mem"), "cannot read /proc/self/mem")


def test_all_archs_sets_no_arch_variable_of_the_package(tmp_path: Path) -> None:
    py = fakes.user_env(tmp_path)
    r = run("install", "--python", str(py), "--arch", "9.0", "--all-archs", "--explain",
            "flash-attn==2.8.3")
    assert r.returncode == 0, r.stderr
    assert "FLASH_ATTN_CUDA_ARCHS" not in r.stdout
    assert "FLASH_ATTN_CUDA_ARCHS=90" in run("install", "--python", str(py), "--arch", "9.0",
                                              "--explain", "flash-attn==2.8.3").stdout


def test_two_installs_of_one_key_build_once(tmp_path: Path) -> None:
    """`install --arch 9.0 ./ext` in one venv and, 2 s later,
    the same in a second venv with the same torch: the second waited in silence, then
    compiled again. Now it says that it waits, and takes the first one's wheel."""
    bin_dir = tmp_path / "fakebin"
    bin_dir.mkdir()
    uv = bin_dir / "uv"
    uv.write_text('#!/bin/sh\ncase "$*" in\n  "cache prune"*) ;;\n'
                  '  *.whl*) echo WHEEL >> "$LOG" ;;\n'
                  '  *) echo BUILD >> "$LOG"; sleep 8; mkdir -p "$UV_CACHE_DIR/built"; '
                  'touch "$UV_CACHE_DIR/built/ext-1.0-py3-none-any.whl" ;;\nesac\n')
    uv.chmod(0o755)
    log = tmp_path / "log"
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "pyproject.toml").write_text('[project]\nname = "ext"\nversion = "1.0"\n')
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": os.environ["WHEELCUDA_CACHE_DIR"],
           "PATH": f"{bin_dir}:{os.environ['PATH']}", "WHEELCUDA_INSTALLER": "uv",
           "LOG": str(log)}
    pys = [fakes.user_env(tmp_path / n) for n in ("a", "b")]
    runs = []
    for py in pys:
        runs.append(subprocess.Popen(
            [sys.executable, "-m", "wheelcuda", "install", "--python", str(py), "--arch",
             "9.0", str(ext)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True))
        time.sleep(1.5)
    outs = [r.communicate(timeout=120) for r in runs]
    assert [r.returncode for r in runs] == [0, 0], outs
    assert log.read_text().split() == ["BUILD", "WHEEL"]
    second = outs[1][1]
    assert "waiting for a build of ext-" in second  # said while it waited
    assert "another install built this key" in second
    assert "from wheelcuda's wheel cache (nothing compiled)" in second
    # runs that went well and compiled nothing keep no log (one per run piled up)
    assert not list((Path(os.environ["WHEELCUDA_CACHE_DIR"]) / "logs").glob("*.log"))


def test_a_tree_whose_python_is_gone_is_found_and_replaced(tmp_path: Path,
                                                            isolated: Path) -> None:
    """A tree's bin/nvcc names the Python it was made with.
    Delete that venv and nvcc failed with `exec: …/python: not found`, `cache prune`
    said "nothing to prune", and uv.toml files uv-config wrote pointed at the broken
    tree. Now tree reads reject it, prune removes it, doctor names the settings."""
    py = fakes.user_env(tmp_path)
    venv = tmp_path / "wheelcuda-venv"  # the environment wheelcuda ran from, later deleted
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = next(venv.glob("lib/python*/site-packages"))
    deps = next(Path(sys.executable).parent.parent.glob("lib/python*/site-packages"))
    (site / "deps.pth").write_text(f"{deps}\n")
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": str(isolated)}
    made = subprocess.run([str(venv / "bin/python"), "-m", "wheelcuda", "home", "--python",
                           str(py)], capture_output=True, text=True, env=env, check=False)
    assert made.returncode == 0, made.stderr
    tree = Path(made.stdout.strip())
    assert trees.python_gone(tree) is None
    (tmp_path / "uv.toml").write_text(
        f'[extra-build-variables.demo-ext]\nCUDA_HOME = "{tree}"\nWHEELCUDA_SET = "1"\n')
    shutil.rmtree(venv)
    assert trees.python_gone(tree) == str(venv / "bin/python")
    dry = run("cache", "prune", "--dry-run")
    assert f"would remove {tree}" in dry.stderr and "which is gone" in dry.stderr
    doctor = subprocess.run([sys.executable, "-m", "wheelcuda", "doctor", "--json", "--python",
                             str(py), "--arch", "9.0"], capture_output=True, text=True,
                            env=env, cwd=tmp_path, check=False)
    report = json.loads(doctor.stdout)
    found = [p for p in report["problems"] if str(tree) in p["message"]]
    assert found and "demo-ext" in found[0]["message"] and "which is gone" in found[0]["message"]
    assert "wheelcuda uv-config --write uv.toml demo-ext" in found[0]["fix"]
    again = run("home", "--python", str(py))  # a Python that exists: another tree
    assert again.returncode == 0 and Path(again.stdout.strip()) != tree
    assert trees.python_gone(Path(again.stdout.strip())) is None
    assert "removed" in run("cache", "prune").stderr and not tree.exists()


def test_doctor_and_install_agree_on_a_read_only_cache(tmp_path: Path) -> None:
    """With the cache on a read-only mount, doctor said "OK: a build would work" and
    install then failed writing it. Both now say the cache cannot be written, with the
    fix (a real write: root passes a read-only mode bit, not a read-only mount)."""
    from tests.integration import sandbox  # noqa: PLC0415

    if not sandbox.can_hide():
        pytest.skip("needs unshare -m (root)")
    py = fakes.user_env(tmp_path)
    cache = Path(os.environ["WHEELCUDA_CACHE_DIR"])
    cache.mkdir(parents=True, exist_ok=True)
    run("home", "--python", str(py))  # the tree exists: a read-only cache still serves env
    wc = f"{sys.executable} -m wheelcuda"
    script = (f"mount --bind {cache} {cache} && mount -o remount,bind,ro {cache} {cache} && "
              f"{{ {wc} doctor --python {py} --arch 9.0; echo DOCTOR=$?; "
              f"{wc} install --python {py} --arch 9.0 {tmp_path}/nothing-here; "
              f"echo INSTALL=$?; {wc} env --python {py} --arch 9.0 >/dev/null; echo ENV=$?; }}")
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": str(cache)}
    (tmp_path / "nothing-here").mkdir()
    (tmp_path / "nothing-here/pyproject.toml").write_text('[project]\nname = "x"\nversion = "1"\n')
    r = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True,
                       text=True, check=False, timeout=300)
    said = r.stdout + r.stderr
    assert "DOCTOR=1" in said and "INSTALL=1" in said, said
    assert said.count("a build cannot write wheelcuda's cache: cannot write in") >= 2, said
    assert "Read-only file system" in said and "Traceback" not in said
    assert "OK: a build would work" not in said
    assert "ENV=0" in said  # env names the tree it has: nothing to write


def test_doctor_checks_the_trees_uv_settings_name(tmp_path: Path, isolated: Path) -> None:
    """Found by a new user: prune removed the clang a project's tree ran, `uv sync` then
    failed with `cannot run …/clang++: No such file or directory`, and doctor in the
    project said "OK: a build would work" (it checked only the tree's Python). It now
    checks each tree uv's settings here name as a build would meet it: there, whole,
    and its nvcc answering."""
    py = fakes.user_env(tmp_path / "venv")
    layout = Layout(isolated)
    layout.private(layout.homes)
    broken = layout.homes / "cu12.8-clanggone"
    (broken / "bin").mkdir(parents=True)
    (broken / plan.MANIFEST).write_text(json.dumps({"format": plan.FORMAT}))
    (broken / "bin/nvcc").write_text(
        "#!/bin/sh\necho 'nvcc (wheelcuda, clang toolkit): error: cannot run "
        "/gone/clang++: it is not there (or not executable)' >&2\nexit 1\n")
    (broken / "bin/nvcc").chmod(0o755)
    missing = layout.homes / "cu13.0-neverthere"
    project = tmp_path / "project"
    project.mkdir()
    (project / "uv.toml").write_text(
        f'[extra-build-variables.causal-conv1d]\nCUDA_HOME = "{broken}"\n'
        f'[extra-build-variables.flash-attn]\nCUDA_HOME = "{missing}"\n')
    env = {**fakes.pythonpath_env(), "WHEELCUDA_CACHE_DIR": str(isolated)}
    doctor = subprocess.run([sys.executable, "-m", "wheelcuda", "doctor", "--json", "--python",
                             str(py), "--arch", "9.0"], capture_output=True, text=True,
                            env=env, cwd=project, check=False)
    report = json.loads(doctor.stdout)
    said = {p["message"]: p["fix"] for p in report["problems"]}
    clang = next(m for m in said if str(broken) in m)
    assert "causal-conv1d" in clang and "its nvcc fails" in clang and "cannot run" in clang
    gone = next(m for m in said if str(missing) in m)
    assert "flash-attn" in gone and "it does not exist" in gone
    assert "wheelcuda uv-config --write uv.toml causal-conv1d" in said[clang]


#: A cache folder nothing can write, root included (a cache mounted read-only, without
#: needing the root that mounts one).
UNWRITABLE = "/proc/wheelcuda-cache"


def test_doctor_says_why_there_is_no_tree_and_a_fetch_that_works_read_only(
        tmp_path: Path) -> None:
    """Before: the tree's line said "not built (see problems)", and there is no
    section of that name; and over a cache that cannot be written, the fix for a
    compiler set still to fetch was `wheelcuda fetch`, which fails there. The line now
    names the problem line printed below, and that fix moves the cache first: pasted,
    it fetches, and doctor then says a build would work."""
    py = torch_only(tmp_path)
    env = {**fake_uv(tmp_path, unpack=True), "WHEELCUDA_CACHE_DIR": UNWRITABLE,
           "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    r = run("doctor", "--python", str(py), "--arch", "9.0", env=env)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert "see problems" not in r.stdout
    assert ("CUDA_HOME      not built: the compiler set is not here yet (the WARNING line "
            "below, with its fix)") in r.stdout, r.stdout
    assert "ERROR: a build cannot write wheelcuda's cache: cannot write in /proc" in r.stdout
    warning = next(line for line in r.stdout.splitlines()
                   if line.startswith("WARNING: missing CUDA 13 wheels"))
    assert f"not while the cache is {UNWRITABLE}, which cannot be written" in warning
    fix = r.stdout.splitlines()[r.stdout.splitlines().index(warning) + 1]
    moved = tmp_path / "xdg" / "wheelcuda"  # the default folder: WHEELCUDA_CACHE_DIR moved it
    assert fix.startswith(f"  fix: export WHEELCUDA_CACHE_DIR={moved} && wheelcuda fetch "
                          f"--python {py}"), fix
    pasted = {**env, "WHEELCUDA_CACHE_DIR": str(moved)}
    fetched = run("fetch", "--python", str(py), env=pasted)
    assert fetched.returncode == 0, fetched.stderr
    after = run("doctor", "--python", str(py), "--arch", "9.0", env=pasted)
    assert after.returncode == 0 and "OK: a build would work" in after.stdout, after.stdout
    assert f"CUDA_HOME      {moved}/homes/" in after.stdout


def test_doctor_points_at_the_problem_that_keeps_the_tree_away(tmp_path: Path) -> None:
    """Without torch, or with a host compiler nvcc refuses, the tree's line says which
    and which line below says it; never "see problems"."""
    no_torch = fakes.python(tmp_path / "a", [fakes.build_needs(fakes.cu13_site(
        tmp_path / "a/site"))])
    r = run("doctor", "--python", str(no_torch), "--arch", "9.0")
    assert "CUDA_HOME      not built: torch does not allow a build (the ERROR line below, " \
           "with its fix)" in r.stdout, r.stdout
    gcc = tmp_path / "gcc-16"
    gcc.write_text("#!/bin/sh\ncase \"$1\" in -dumpfullversion) echo 16.1.0;; "
                   "*) echo 'gcc (GCC) 16.1.0';; esac\n")
    gcc.chmod(0o755)
    r = run("doctor", "--python", str(fakes.user_env(tmp_path / "b")), "--arch", "9.0",
            env={"NVCC_CCBIN": str(gcc)})
    assert "CUDA_HOME      not built: this nvcc does not take the host compiler (the ERROR " \
           "line below, with its fix)" in r.stdout, r.stdout


def test_a_writable_folder_for_the_cache_is_this_users_own(tmp_path: Path) -> None:
    """The folder doctor's fix moves the cache to: the default one when
    WHEELCUDA_CACHE_DIR moved the cache away from it, else one under TMPDIR, never one
    others may write to, and none when nothing can be written."""
    from wheelcuda._pipeline import preflight  # noqa: PLC0415

    xdg, temp = tmp_path / "xdg", tmp_path / "tmp"
    temp.mkdir()
    ctx = Context.of({"XDG_CACHE_HOME": str(xdg), "TMPDIR": str(temp)})
    assert preflight.writable_folder(ctx, Layout(Path(UNWRITABLE))) == xdg / "wheelcuda"
    mine = temp / f"wheelcuda-{os.getuid()}"
    assert preflight.writable_folder(ctx, Layout(xdg / "wheelcuda")) == mine
    mine.mkdir(mode=0o777)
    mine.chmod(0o777)
    assert preflight.writable_folder(ctx, Layout(xdg / "wheelcuda")) is None
    nowhere = Context.of({"XDG_CACHE_HOME": "/proc/x", "TMPDIR": "/proc/y"})
    assert preflight.writable_folder(nowhere, Layout(Path(UNWRITABLE))) is None
