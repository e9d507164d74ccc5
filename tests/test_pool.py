"""The machine's compile budget, decided at compile time (_standalone/_pool.py): its
arithmetic (pure), then the real nvcc wrapper run as concurrent processes (``python -I
-S``, as bin/nvcc runs it) in front of a compiler that prints its arguments, and compiles
that really allocate memory, two builds at once, under a budget and under a real cgroup
limit."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_progress import foreground
from wheelcuda._rules import jobs, packages, progress
from wheelcuda._rules.tree import WRAPPER_MODULES
from wheelcuda._standalone import _events, _machine, _pool, _tree
from wheelcuda._standalone import _nvcc_wrapper as w

GIB = 1024**3


def ask(pid: int, *, build: int = 1, seconds: float = -1.0, unit: float = 1.0,
        split: bool = True, threads: int = 1, arrived: float | None = None) -> _pool.Ask:
    return _pool.Ask(pid, build, float(pid) if arrived is None else arrived, seconds,
                     int(unit * GIB), threads, split, f"f{pid}.cu")


def plan(asks: list[_pool.Ask], running: list[_pool.Held] = (),  # type: ignore[assignment]
         cores: int = 16, budget: float | None = 100.0) -> dict[int, _pool.Grant | None]:
    """Each waiting compile's answer, as each computes it alone from the same files."""
    b = None if budget is None else int(budget * GIB)
    return {a.pid: _pool.decide(a, asks, running, cores=cores, budget=b) for a in asks}


# --- the arithmetic -----------------------------------------------------------------

@pytest.mark.parametrize(("free", "waiting", "cap", "want"), [
    (16, 1, 16, 16),   # a lone call takes the pool, up to the cap
    (32, 1, 16, 16),
    (16, 3, 16, 5),    # three at once: a third each
    (11, 2, 16, 5),
    (3, 3, 16, 2),     # two while two are free: one thread is no split
    (1, 1, 16, 1),
    (0, 2, 16, 0),
])
def test_take(free: int, waiting: int, cap: int, want: int) -> None:
    assert _pool.take(free, waiting, cap) == want


@pytest.mark.parametrize(("tokens", "threads", "want"), [
    (5, 1, 5), (1, 1, 0),   # one thread: no split
    (5, 2, 4), (3, 2, 0),   # --threads 2 (two targets): split 2 uses 4
])
def test_used(tokens: int, threads: int, want: int) -> None:
    assert _pool.used(tokens, threads) == want


def test_causal_conv1d_on_16_cores_splits_as_install_did() -> None:
    """Three kernel files and the binding start together (the H200: split-compile 10/11
    in install's 182 s build): the three divide two threads per core, the binding (a
    host compile) takes a core alone."""
    asks = [ask(1, split=False), ask(2), ask(3), ask(4)]
    got = plan(asks)
    assert got[1] == _pool.Grant(1, GIB)
    assert sorted(g.threads for p, g in got.items() if g and p != 1) == [10, 11, 11]
    assert all(g.memory == 2 * GIB for p, g in got.items() if g and p != 1)


def test_one_at_a_time_each_sees_what_the_others_took() -> None:
    """The processes take the lock one after the other; each finds the earlier ones
    running and takes its part of what they left."""
    asks = [ask(2), ask(3), ask(4)]
    first = _pool.decide(asks[0], asks, [], cores=16, budget=100 * GIB)
    assert first is not None and first.threads == 10
    running = [_pool.Held(2, first.memory, first.threads)]
    second = _pool.decide(asks[1], asks[1:], running, cores=16, budget=100 * GIB)
    assert second is not None and second.threads == 11


def test_memory_bounds_how_many_run_and_a_large_one_is_not_passed_over() -> None:
    """Shares of 3 GiB in a 10 GiB budget: three run; the fourth waits though a core is
    free, and a small one that came after it waits behind it."""
    asks = [ask(p, unit=3.0, split=False) for p in (1, 2, 3, 4)] + [ask(5, unit=0.5,
                                                                          split=False)]
    got = plan(asks, budget=10.0)
    assert [p for p, g in got.items() if g] == [1, 2, 3]


def test_one_compile_always_runs_however_large() -> None:
    got = plan([ask(1, unit=64.0)], budget=8.0)
    assert got[1] is not None


def test_running_compiles_hold_their_share() -> None:
    running = [_pool.Held(9, 8 * GIB, 0)]
    assert plan([ask(1, unit=3.0, split=False)], running, budget=10.0)[1] is None
    assert plan([ask(1, unit=2.0, split=False)], running, budget=10.0)[1] is not None


def test_cores_bound_how_many_run() -> None:
    asks = [ask(p, split=False) for p in range(1, 6)]
    assert sum(g is not None for g in plan(asks, cores=2).values()) == 2
    running = [_pool.Held(9, GIB, 0), _pool.Held(8, GIB, 0)]
    assert not any(plan(asks, running, cores=2).values())


def test_memory_unknown_cores_alone_decide() -> None:
    asks = [ask(p, unit=1000.0, split=False) for p in range(1, 5)]
    assert all(plan(asks, budget=None).values())


def test_a_split_holds_a_second_share_while_memory_lets_it() -> None:
    """flash-attn on the GPU machine: 5.5 GiB a compile, 16 at once in 120 GiB leave room
    for some to split; they divide the threads, the others compile unsplit."""
    asks = [ask(p, unit=5.5) for p in range(1, 17)]
    got = plan(asks, budget=120.0)
    assert all(got.values())
    split = [g for g in got.values() if g and g.threads > 1]
    assert len(split) == int((120 - 16 * 5.5) // 5.5) == 5
    assert all(g.memory == 2 * int(5.5 * GIB) for g in split)
    assert sum(g.threads for g in split) <= 32


def test_the_longest_expected_starts_first() -> None:
    """ninja started them in setup.py's order; the long one came last."""
    asks = [ask(1, seconds=10), ask(2, seconds=20), ask(3, seconds=300), ask(4)]
    got = plan(asks, cores=1)
    assert [p for p, g in got.items() if g] == [3]
    assert got[3] is not None and got[3].ahead  # it started before earlier ones
    later = plan([a for a in asks if a.pid != 3], [_pool.Held(3, GIB, 0)], cores=2)
    assert [p for p, g in later.items() if g] == [2]  # then 20 s, then 10 s, then unknown


def test_two_builds_take_turns() -> None:
    """A second build is not held back until the first's every file has run: each
    build's longest first, the builds side by side."""
    first = [ask(p, build=1, seconds=100 + p) for p in range(1, 6)]
    second = [ask(p, build=2, arrived=10.0 + p) for p in range(11, 14)]
    got = plan([*first, *second], cores=2)
    assert sorted(p for p, g in got.items() if g) == [5, 11]


def test_the_users_fixed_split_holds_two_shares() -> None:
    got = plan([ask(1, split=False, unit=2.0 * 3)], budget=100.0)
    assert got[1] is not None and got[1].memory == 6 * GIB


@pytest.mark.parametrize(("text", "want"), [
    ("64G", 64 * GIB), ("512M", 512 * 1024**2), ("1.5G", int(1.5 * GIB)), ("2GiB", 2 * GIB),
    ("1073741824", GIB), ("", None), ("lots", None), ("0", None), ("-1G", None)])
def test_parse_size(text: str, want: int | None) -> None:
    assert _machine.parse_size(text) == want


def test_the_machine_is_read() -> None:
    assert _machine.cores() >= 1
    memory = _machine.available_memory()
    assert memory is None or memory > 0


# --- what the tree knows at compile time --------------------------------------------

FACTS = {"recipes": {"flash-attn": {"job_gb": 5.5, "order": {"k.cu": 300.0}},
                     "causal-conv1d": {"job_gb": 4.0}}}


def test_a_compiles_memory_the_build_then_the_recipe_then_the_default() -> None:
    assert _tree.job_gb({"WHEELCUDA_JOB_GB": "6.5"}, FACTS, "flash_attn") == 6.5
    assert _tree.job_gb({}, FACTS, "Flash_Attn") == 5.5  # the package as PKG-INFO names it
    assert _tree.job_gb({}, FACTS, "chamferdist") == _tree.DEFAULT_JOB_GB
    assert _tree.job_gb({"WHEELCUDA_JOB_GB": "lots"}, FACTS, "x") == _tree.DEFAULT_JOB_GB


def test_the_order_the_last_build_then_the_recipes_guess(tmp_path: Path) -> None:
    assert _tree.order({}, FACTS, "flash-attn") == {"k.cu": 300.0}
    assert _tree.order({}, FACTS, "causal-conv1d") == {}
    last = tmp_path / "order.json"
    last.write_text(json.dumps({"k.cu": 200.0, "bad": "x", "neg": -1, "yes": True}))
    assert _tree.order({"WHEELCUDA_ORDER": str(last)}, FACTS, "flash-attn") == {"k.cu": 200.0}


def test_the_tree_holds_every_recipes_memory_and_guess() -> None:
    recipes = packages.tree_recipes()
    assert recipes["flash-attn"]["job_gb"] == 5.5
    assert len(recipes["flash-attn"]["order"]) == 72  # type: ignore[arg-type]
    assert max(recipes["causal-conv1d"]["order"].items(),  # type: ignore[attr-defined]
               key=lambda kv: kv[1])[0] == "causal_conv1d_bwd.cu"
    assert "order" not in recipes["mamba-ssm"]


# --- the real wrapper, as concurrent processes ---------------------------------------

FAKE_NVCC = '#!/bin/sh\necho "ARGS $*"\nsleep "${FAKE_NVCC_S:-1}"\n'


@pytest.fixture
def nvcc(tmp_path: Path) -> Path:
    """A bin/ folder with the wrapper and a fake real nvcc beside it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy(w.__file__, bin_dir / "nvcc.py")
    for name in WRAPPER_MODULES:  # what the tree holds beside it
        shutil.copy(Path(w.__file__).with_name(name), bin_dir / name)
    real = bin_dir / w.REAL
    real.write_text(FAKE_NVCC)
    real.chmod(0o755)
    return bin_dir / "nvcc.py"


def start(nvcc: Path, pool: Path, hold: float = 1.0,
          args: tuple[str, ...] = ("-c", "k.cu", "-o", "k.o", "-arch=sm_80"),
          **env: str) -> subprocess.Popen[str]:
    # a compile killed with SIGKILL leaves its temporary folder: in the test's own
    environ = {"PATH": os.environ["PATH"], "WHEELCUDA_ARCHS": "9.0", "WHEELCUDA_POOL": str(pool),
               "FAKE_NVCC_S": str(hold), "WHEELCUDA_NO_PROGRESS": "1",
               "TMPDIR": str(pool.parent), **env}
    return subprocess.Popen([sys.executable, "-I", "-S", str(nvcc), *args], env=environ,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, preexec_fn=foreground)  # noqa: PLW1509


def split_of(proc: subprocess.Popen[str]) -> int:
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "ARGS " in out, (out, err)
    m = re.search(r"--split-compile=(\d+)", out)
    return int(m.group(1)) if m else 1


def test_calls_started_together_divide_the_threads(nvcc: Path, tmp_path: Path) -> None:
    cores = _machine.cores()
    splits = sorted(split_of(p) for p in [start(nvcc, tmp_path / "pool") for _ in range(3)])
    if cores >= 6:
        assert sum(splits) <= 2 * cores and min(splits) >= 2
    else:  # two cores: two run split, the third waits for one of them
        assert max(splits) >= 2


def test_a_lone_call_takes_the_threads_up_to_a_core_each(nvcc: Path, tmp_path: Path) -> None:
    assert split_of(start(nvcc, tmp_path / "pool", hold=0)) == _machine.cores()


def test_a_killed_compile_gives_its_place_back(nvcc: Path, tmp_path: Path) -> None:
    pool = tmp_path / "pool"
    victim = start(nvcc, pool, hold=60)
    time.sleep(1.5)
    os.killpg(victim.pid, signal.SIGKILL)  # the compile and its children: an OOM kill
    victim.communicate(timeout=10)
    assert split_of(start(nvcc, pool, hold=0)) == _machine.cores()
    assert not list(pool.glob("run-*"))  # the dead one's record went with its reader


def test_a_pool_that_cannot_be_made_gives_way_to_the_trees(nvcc: Path, tmp_path: Path) -> None:
    """The machine's pool cannot be made (a file in the way; another user's folder, a file
    system without locks): the compile takes the one the tree's facts name (the store's),
    budget and split included."""
    (tmp_path / "file").write_text("")
    (nvcc.parent / _tree.CONFIG).write_text(json.dumps({"pool": str(tmp_path / "ours")}))
    proc = start(nvcc, tmp_path / "file" / "pool", hold=0)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "ARGS " in out, err
    assert f"--split-compile={_machine.cores()}" in out and "pool" not in err, err
    assert (tmp_path / "ours" / "lock").is_file()


def test_with_no_pool_at_all_the_compile_still_runs(nvcc: Path, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    proc = start(nvcc, tmp_path / "file" / "pool", hold=0)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "ARGS " in out and "--split-compile" not in out
    assert f"no compile pool could be used: {tmp_path}/file/pool (" in err
    assert "fix: export WHEELCUDA_POOL=" in err


HOST_STEP = """#!/bin/sh
echo "ARGS $*"
exec {python} -I -S {shim} -c host.cpp -o host.o
"""


def test_nvccs_host_step_through_the_shim_does_not_wait_for_its_own_place(
        nvcc: Path, tmp_path: Path) -> None:
    """nvcc runs its host compiler for each file; when that is this tree's shim
    (CUDAHOSTCXX, -ccbin, CMake's host compiler set to CXX), the step is part of the
    compile the pool admitted. With room for one compile only, it once waited for that
    compile's own place: for ever."""
    bin_dir = nvcc.parent
    (bin_dir / w.REAL).write_text(HOST_STEP.format(python=sys.executable,
                                                   shim=bin_dir / "_cxx_std.py"))
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "c++").write_text('#!/bin/sh\necho "HOST $*"\n')
    (tools / "c++").chmod(0o755)
    proc = start(nvcc, tmp_path / "pool", PATH=f"{tools}:/usr/bin:/bin",
                 WHEELCUDA_MEMORY="1G", WHEELCUDA_JOB_GB="0.9")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "HOST -c host.cpp -o host.o" in out


def test_a_stopped_waiting_compile_holds_no_one_back(nvcc: Path, tmp_path: Path) -> None:
    """A build stopped with Ctrl-Z while its compile waited: once its record is stale the
    others plan without it, and it takes its turn when it runs again."""
    pool = tmp_path / "pool"
    one = {"WHEELCUDA_MEMORY": "1G", "WHEELCUDA_JOB_GB": "0.9"}  # room for one at a time
    first = start(nvcc, pool, hold=2, **one)
    time.sleep(0.5)
    stopped = start(nvcc, pool, hold=0, **one)
    time.sleep(1)
    os.killpg(stopped.pid, signal.SIGSTOP)
    try:
        assert split_of(first) >= 1
        later = start(nvcc, pool, hold=0, **one)
        assert split_of(later) >= 1  # within _pool.STALE_S and a poll, not never
    finally:
        os.killpg(stopped.pid, signal.SIGCONT)
    assert split_of(stopped) >= 1


def test_a_pool_others_can_write_is_refused(nvcc: Path, tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o777)  # as a folder in /tmp made by someone else would be
    proc = start(nvcc, folder, hold=0)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0 and "--split-compile" not in out
    assert "not a folder only this user can write" in err
    assert not any(folder.iterdir())


def test_the_users_split_compile_wins(nvcc: Path, tmp_path: Path) -> None:
    assert split_of(start(nvcc, tmp_path / "pool", hold=0, WHEELCUDA_SPLIT_COMPILE="3")) == 3


def test_calls_that_compile_nothing_leave_the_pool_alone(nvcc: Path, tmp_path: Path) -> None:
    proc = start(nvcc, tmp_path / "pool", hold=0, args=("--version",))
    assert split_of(proc) == 1
    assert not (tmp_path / "pool").exists()


# --- compiles that really allocate: two builds at once, one budget --------------------

#: A compiler that takes MB of memory (every page written), holds it a while, and says
#: when it held it.
ALLOCATING = """#!{python}
import os, sys, time
mb = int(os.environ["FAKE_MB"])
start = time.time()
block = bytearray(mb * 1024 * 1024)
block[::4096] = b"\\1" * len(range(0, len(block), 4096))
time.sleep(float(os.environ["FAKE_S"]))
with open(os.environ["FAKE_TRACE"], "a") as f:
    f.write(f"{{start}} {{time.time()}} {{mb}}\\n")
"""


def _allocating_tree(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "tree" / "bin"
    bin_dir.mkdir(parents=True)
    shutil.copy(w.__file__, bin_dir / "nvcc.py")
    for name in WRAPPER_MODULES:
        shutil.copy(Path(w.__file__).with_name(name), bin_dir / name)
    real = bin_dir / w.REAL
    real.write_text(ALLOCATING.format(python=sys.executable))
    real.chmod(0o755)
    return bin_dir / "nvcc.py"


def _build(nvcc: Path, files: int, env: dict[str, str], cwd: Path,
           preexec: object = None) -> subprocess.Popen[str]:
    """A build: one Python process (its root) that starts ``files`` compiles at once, as
    ninja does with MAX_JOBS at least that many, and fails when one of them fails."""
    script = (
        "import subprocess, sys\n"
        f"procs = [subprocess.Popen([sys.executable, '-I', '-S', {str(nvcc)!r}, '-c', "
        f"f'k{{i}}.cu', '-o', f'k{{i}}.o', '-arch=sm_80']) for i in range({files})]\n"
        "sys.exit(max(p.wait() != 0 for p in procs))\n")
    cwd.mkdir(exist_ok=True)
    return subprocess.Popen([sys.executable, "-c", script], env=env, cwd=cwd, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            preexec_fn=preexec)  # type: ignore[arg-type]  # noqa: PLW1509


def _most_held(trace: Path) -> int:
    """The most MB the traced compiles held at one time."""
    spans = [tuple(map(float, line.split())) for line in trace.read_text().splitlines()]
    points = sorted({t for s, e, _ in spans for t in (s, e)})
    return int(max(sum(mb for s, e, mb in spans if s <= t < e) for t in points))


def _two_builds(tmp_path: Path, env: dict[str, str], preexec: object = None) -> Path:
    nvcc = _allocating_tree(tmp_path)
    trace = tmp_path / "trace"
    environ = {"PATH": os.environ["PATH"], "WHEELCUDA_ARCHS": "9.0",
               "WHEELCUDA_POOL": str(tmp_path / "pool"), "WHEELCUDA_NO_PROGRESS": "1",
               "FAKE_TRACE": str(trace), "FAKE_S": "1.0", **env}
    builds = [_build(nvcc, 4, environ, tmp_path / f"build{i}", preexec) for i in (1, 2)]
    for b in builds:
        _, err = b.communicate(timeout=300)
        assert b.returncode == 0, err
    assert len(trace.read_text().splitlines()) == 8
    return trace


def test_two_builds_at_once_hold_at_most_the_budget(tmp_path: Path) -> None:
    """Two flash-attn-like builds side by side, each compile taking 300 MB for real, a
    budget of 1 GiB (WHEELCUDA_MEMORY) and a share of 550 MB: one compile at a time,
    whatever the cores (two here would let two run)."""
    trace = _two_builds(tmp_path, {"FAKE_MB": "300", "WHEELCUDA_JOB_GB": "0.55",
                                   "WHEELCUDA_MEMORY": "1G"})
    assert _most_held(trace) <= 300


@pytest.fixture
def memory_cgroup(tmp_path: Path) -> Iterator[Path]:
    """A memory cgroup of this machine limited to 1 GiB, which the builds run in (v1's
    controller here; v2 elsewhere); skipped where cgroups cannot be made (not root)."""
    for base, limit in (("/sys/fs/cgroup/memory", "memory.limit_in_bytes"),
                        ("/sys/fs/cgroup", "memory.max")):
        group = Path(base) / f"wheelcuda-test-{os.getpid()}-{tmp_path.name}"
        try:
            group.mkdir()
        except OSError:
            continue
        try:
            (group / limit).write_text(str(GIB))
        except OSError:
            group.rmdir()
            continue
        yield group
        for _ in range(50):  # its processes are gone once the builds are waited for
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)
        return
    pytest.skip("no memory cgroup can be made here (cgroups need root)")


def test_two_builds_in_a_limited_cgroup_are_never_killed(tmp_path: Path,
                                                         memory_cgroup: Path) -> None:
    """The budget read from the kernel: eight compiles of 600 MB each in a cgroup of 1
    GiB, where two at once (what two cores allow) get one killed. Each compile reads the
    cgroup's room when the pool is empty; a share of 650 MB lets one run at a time, and
    the kernel kills none."""
    procs = str(memory_cgroup / "cgroup.procs")

    def join() -> None:
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    trace = _two_builds(tmp_path, {"FAKE_MB": "600", "WHEELCUDA_JOB_GB": "0.65"}, join)
    assert _most_held(trace) <= 600


# --- kept profiles: the memory and order of the next build ---------------------------

def _compile(name: str, peak_gib: float, split: int | None = None,
             archs: tuple[str, ...] = ("sm_90",), wall: float = 10.0) -> _events.Compile:
    return _events.Compile(name, archs, wall, wall, int(peak_gib * 1024**2), 0, 0.0, split)


def test_a_jobs_memory_is_measured_from_the_profile() -> None:
    """flash-attn 2.8.3 peaked at about 4.3 GiB a job on the GPU machine (sm_90)."""
    profile = [_compile("a.cu", 4.3), _compile("b.cu", 2.0)]
    assert progress.measured_job_gb(profile, 1) == pytest.approx(4.3 * 1.25, abs=0.01)
    # a split call holds about two jobs' memory (_rules/jobs.py): it counts as two
    assert progress.measured_job_gb([_compile("a.cu", 5.8, split=8)], 1) == \
        pytest.approx(2.9 * 1.25, abs=0.01)
    # a build for more archs than the profiled one: each arch another pass
    assert progress.measured_job_gb(profile, 2) == pytest.approx(4.3 * 2 * 1.25, abs=0.01)
    assert progress.measured_job_gb([], 1) is None


def test_a_profile_of_small_compiles_does_not_size_a_big_build() -> None:
    """A build in which only small files compiled (an editable rebuild), or one whose
    numbers are tiny, once sized flash-attn's next build at 8000 KiB a job (MAX_JOBS 16
    in 32 GiB): a profile lacking the recipe's files takes the recipe's figure as its
    floor, any other at least a GiB."""
    tiny = [_compile("flash_api.cpp", 0.008)]
    order, gb = packages.first_order(["flash-attn"]), packages.job_gb(["flash-attn"])
    assert gb == 5.5
    floor = progress.job_floor(tiny, order, gb)
    assert progress.measured_job_gb(tiny, 1, floor=floor) == 5.5
    whole = [_compile(name, 4.3) for name in order]  # every file the recipe knows
    assert progress.measured_job_gb(whole, 1, floor=progress.job_floor(whole, order, gb)) \
        == pytest.approx(4.3 * 1.25, abs=0.01)
    assert progress.measured_job_gb(tiny, 1) == progress.LEAST_JOB_GB  # no recipe


def test_max_jobs_lets_ninja_start_every_file_the_recipe_knows() -> None:
    """flash-attn on 16 cores: with a ceiling of 32, ninja started its split-KV files,
    the longest, 52nd to 57th of 73 (setup.py's order), and the pool could not choose
    them: they ended the build alone."""
    assert jobs.max_jobs(16, packages.known_files(["flash-attn"])) == 72
    assert jobs.max_jobs(64, packages.known_files(["flash-attn"])) == 128
    assert jobs.for_build({}, 16, files=72) == {"MAX_JOBS": "72"}
    assert jobs.for_build({"MAX_JOBS": "8"}, 16, files=72) == {}  # the user's wins
    assert packages.known_files(["causal-conv1d", None, "chamferdist"]) == 4


def test_max_jobs_is_a_ceiling_of_twice_the_cores() -> None:
    assert jobs.max_jobs(16) == 32
    assert jobs.for_build({}, 16) == {"MAX_JOBS": "32"}
    assert jobs.for_build({"MAX_JOBS": "4"}, 16) == {}  # the user's, kept
    assert jobs.for_build({"MAX_JOBS": ""}, 2) == {"MAX_JOBS": "4"}  # empty: unset
    assert jobs.for_build({}, 16, measured_gb=5.38) == {"MAX_JOBS": "32",
                                                        "WHEELCUDA_JOB_GB": "5.38"}


def test_bad_job_settings_are_problems() -> None:
    said = [p.message for p in jobs.problems({"MAX_JOBS": "x", "WHEELCUDA_MEMORY": "lots",
                                              "WHEELCUDA_JOB_GB": "-2",
                                              "WHEELCUDA_SPLIT_COMPILE": "0"})]
    assert len(said) == 4
    assert jobs.problems({"MAX_JOBS": "8", "WHEELCUDA_MEMORY": "64G",
                          "WHEELCUDA_JOB_GB": "5.5"}) == []


def test_longest_first_takes_each_files_longest_run() -> None:
    profile = [_compile("/x/a.cu", 1.0, wall=5.0), _compile("/y/a.cu", 1.0, wall=9.0),
               _compile("b.cu", 1.0, wall=3.0)]
    assert progress.longest_first(profile) == {"a.cu": 9.0, "b.cu": 3.0}


def test_a_first_build_takes_the_recipes_guess() -> None:
    """No profile yet: the recipe's guess orders the build; a profile of other files
    (an editable rebuild of the binding alone) keeps the guess as it is beside them."""
    guess = packages.first_order(["flash-attn"])
    assert len(guess) == 72  # flash-attn 2.8.3's kernel files: 3 kinds x 6 hdims x 2 x 2
    assert progress.longest_first([], guess) == guess
    top = max(guess, key=guess.__getitem__)
    assert top.startswith("flash_fwd_split_") and "causal" not in top  # listed last
    assert progress.longest_first([_compile("a.cu", 1.0, wall=5.0)], guess) == \
        {"a.cu": 5.0, **guess}
    assert packages.first_order(["mamba-ssm", None]) == {}


def test_a_partial_profile_keeps_the_guess_for_what_it_lacks() -> None:
    """An editable rebuild measured two files: the others keep their guess, scaled by the
    median measured/guess ratio, so a long unmeasured file still starts early."""
    guess = {"long.cu": 200.0, "mid.cu": 100.0, "short.cu": 10.0, "tiny.cu": 5.0}
    profile = [_compile("mid.cu", 1.0, wall=50.0), _compile("short.cu", 1.0, wall=5.0),
               _compile("tiny.cu", 1.0, wall=5.0)]
    order = progress.longest_first(profile, guess)
    assert order == {"long.cu": 100.0, "mid.cu": 50.0, "short.cu": 5.0, "tiny.cu": 5.0}
    assert max(order, key=order.__getitem__) == "long.cu"


def test_two_files_of_one_name_in_two_folders_are_two_files() -> None:
    """The order and the time left keyed on a file's base name: cpu/ops.cu and
    cuda/ops.cu counted as one file (the longest's seconds for both, one of them never
    "done"). A compile is keyed by its path in the package's folder (unpacked elsewhere
    each build); a recipe's guess, which names files alone, still matches by name."""
    assert _events.relative("/tmp/b1/pkg-1.0/csrc/cuda/ops.cu", "/tmp/b1/pkg-1.0") == \
        "csrc/cuda/ops.cu"
    assert _events.relative("/usr/include/x.cu", "/tmp/b1/pkg-1.0") == ""
    cpu = _events.Compile("/b/csrc/cpu/ops.cu", (), 10.0, 10.0, 0, 0, 0.0, rel="csrc/cpu/ops.cu")
    cuda = _events.Compile("/b/csrc/cuda/ops.cu", ("sm_90",), 90.0, 90.0, 0, 0, 0.0,
                           rel="csrc/cuda/ops.cu")
    order = progress.longest_first([cpu, cuda], {"ops.cu": 50.0, "other.cu": 20.0})
    # the guess of a file not measured is scaled as the measured ones were (median 1.8)
    assert order == {"csrc/cpu/ops.cu": 10.0, "csrc/cuda/ops.cu": 90.0, "other.cu": 36.0}
    # one done, the other running for 30 s: 60 s of it left, not none
    state = _events.read_events([json.dumps(e) for e in (
        {"event": "start", "pid": 1, "file": "/x/csrc/cpu/ops.cu", "rel": "csrc/cpu/ops.cu",
         "t": 0.0},
        {"event": "end", "pid": 1, "file": "/x/csrc/cpu/ops.cu", "rel": "csrc/cpu/ops.cu",
         "t": 10.0, "wall": 10.0, "cpu": 9.0, "code": 0},
        {"event": "start", "pid": 2, "file": "/x/csrc/cuda/ops.cu", "rel": "csrc/cuda/ops.cu",
         "t": 10.0})])
    line = _events.status_line(state, 40.0, 40.0, before=[cpu, cuda], jobs=1)
    assert "about 1 min left" in line, line
    # kept and read back with the path in the package (no machine's folder in it)
    [row] = progress.from_profile(progress.carried(progress.profile([cuda])))
    assert (row.key, row.file) == ("csrc/cuda/ops.cu", "ops.cu")


# --- no toll, no timer: a free slot is taken at once, a waiter wakes on a release ----

def test_a_free_slot_is_taken_without_sleeping(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Each compile slept 0.3 s before the pool decided, for its peers to show up: every
    .cpp and CMake test compile paid it. With a slot free the pool answers at once."""
    def no_sleep(seconds: float) -> None:
        raise AssertionError(f"the pool slept {seconds} s with a slot free")

    monkeypatch.setattr(time, "sleep", no_sleep)
    grant, slot = _pool.admit(ask(os.getpid()), {"WHEELCUDA_POOL": str(tmp_path / "pool")})
    assert grant.threads >= 1 and slot is not None
    slot.close()
    assert not list((tmp_path / "pool").glob("run-*"))


#: A compile in its own process: admitted into the pool of argv[2] with room for one
#: (WHEELCUDA_MEMORY 1G, a share of 0.9 GiB), it holds its place ``argv[3]`` seconds.
#: With ``argv[4]`` it has no timer to wake it: time.sleep fails, and the fallback look
#: comes after an hour, so only a wake-up from the compile that ends starts it.
ONE_COMPILE = """
import os, sys, time
sys.path.insert(0, sys.argv[1])
import _pool
real_sleep = time.sleep
if sys.argv[4] == "no-timer":
    def no_sleep(s):
        raise SystemExit(f"slept {s} s while waiting")
    time.sleep = no_sleep
    _pool.FALLBACK_S = 3600.0
ask = _pool.Ask(os.getpid(), os.getpid(), time.time(), -1.0, int(0.9 * 2**30), 1, False, "k.cu")
start = time.monotonic()
grant, slot = _pool.admit(ask, {"WHEELCUDA_POOL": sys.argv[2], "WHEELCUDA_MEMORY": "1G"})
print(f"admitted after {time.monotonic() - start:.3f}", flush=True)
real_sleep(float(sys.argv[3]))
slot.close()
"""


def _one(pool: Path, hold: float, mode: str = "") -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", ONE_COMPILE, str(Path(_pool.__file__).parent),
                             str(pool), str(hold), mode or "-"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def test_a_waiter_wakes_when_a_slot_frees_not_on_a_timer(tmp_path: Path) -> None:
    """Waiters looked again every 0.5 s. Now the compile that ends wakes the one its
    plan admits: the waiter here has no timer at all, and still starts."""
    pool = tmp_path / "pool"
    holder = _one(pool, 1.0)
    try:
        assert holder.stdout is not None and holder.stdout.readline().startswith("admitted")
        waiter = _one(pool, 0.0, "no-timer")
        out, err = waiter.communicate(timeout=30)
        assert waiter.returncode == 0, err
        assert float(out.split()[-1]) < 10, out  # woken when the holder ended (1 s)
    finally:
        holder.kill()
        holder.communicate()


# --- longest first, whatever order the compiles arrive in ------------------------------

CAUSAL = {"csrc/causal_conv1d.cpp": 38.0, "csrc/causal_conv1d_fwd.cu": 16.0,
          "csrc/causal_conv1d_bwd.cu": 180.0, "csrc/causal_conv1d_update.cu": 7.0}


def keyed(pid: int, key: str, *, arrived: float, build: int = 1) -> _pool.Ask:
    return _pool.Ask(pid, build, arrived, CAUSAL[key], GIB, 1, False, Path(key).name, key)


def test_a_known_file_leaves_the_cores_to_the_longer_ones_its_build_has_not_started(
        ) -> None:
    """An isolated build on 2 cores: the first compiles to arrive took both cores, and
    the backward kernel (the critical path, 4.5 min) started 6 to 36 s into the build.
    With the build's table in the pool, a short file that arrives first leaves the
    cores to the longer files not started yet, for up to 2 s."""
    table = {1: _pool.Expected(dict(CAUSAL))}
    update = keyed(1, "csrc/causal_conv1d_update.cu", arrived=100.0)
    alone = _pool.plan([update], [], cores=2, budget=None, expected=table, now=100.1)
    assert alone == {}  # bwd, the .cpp and fwd are longer: they will want both cores
    bwd = keyed(2, "csrc/causal_conv1d_bwd.cu", arrived=100.3)
    got = _pool.plan([update, bwd], [], cores=2, budget=None, expected=table, now=100.3)
    assert list(got) == [2]  # the critical file at once
    cpp = keyed(3, "csrc/causal_conv1d.cpp", arrived=100.4)
    running = [_pool.Held(2, GIB, 0, "b", 1, "", "csrc/causal_conv1d_bwd.cu")]
    got = _pool.plan([update, cpp], running, cores=2, budget=None, expected=table, now=100.4)
    assert list(got) == [3]  # the .cpp next: fwd, not come yet, is shorter
    # a longer file that never comes (an editable rebuild of one file) holds it back 2 s
    late = _pool.plan([update], [], cores=2, budget=None, expected=table,
                      now=100.0 + _pool.GRACE_S + 0.1)
    assert list(late) == [1]
    # a file the table does not know (a CMake test compile) is never held back
    other = _pool.Ask(9, 1, 100.0, -1.0, GIB, 1, False, "conftest.cpp", "conftest.cpp")
    assert list(_pool.plan([other], [], cores=2, budget=None, expected=table, now=100.0)) == [9]
    # nor one whose longer files all started already (named by the recipe's guess)
    started = {1: _pool.Expected({Path(k).name: s for k, s in CAUSAL.items()},
                                 frozenset({"causal_conv1d_bwd.cu", "causal_conv1d.cpp",
                                            "causal_conv1d_fwd.cu"}))}
    assert list(_pool.plan([update], [], cores=2, budget=None, expected=started,
                           now=100.1)) == [1]
    # on 16 cores the free cores are more than the longer files: it starts at once
    assert list(_pool.plan([update], [], cores=16, budget=None, expected=table,
                           now=100.1)) == [1]


def _on_two_cores() -> None:
    os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0],
                             sorted(os.sched_getaffinity(0))[-1]})


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two cores")
def test_the_critical_file_starts_first_though_it_arrives_late(nvcc: Path,
                                                               tmp_path: Path) -> None:
    """causal-conv1d's build as uv runs it, on two cores: the shortest file's compile
    comes first (a loaded machine starts the others' Python later); the backward kernel,
    listed third by setup.py, still starts before it, from the recipe's table in the
    tree (before: the first to come took a core after 0.3 s)."""
    events = tmp_path / "events"
    events.mkdir()
    order = {Path(k).name: s for k, s in CAUSAL.items()}
    (nvcc.parent / _tree.CONFIG).write_text(json.dumps({
        "events": str(events), "recipes": {"causal-conv1d": {"order": order}}}))
    package = tmp_path / "causal_conv1d-1.7.0"
    (package / "csrc").mkdir(parents=True)
    (package / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: causal_conv1d\n"
                                      "Version: 1.7.0\n")
    script = (
        "import os, subprocess, sys, time\n"
        "def go(f, s):\n"
        f"    return subprocess.Popen([sys.executable, '-I', '-S', {str(nvcc)!r}, '-c', f,\n"
        "                             '-o', f + '.o', '-arch=sm_80'],\n"
        "                            env={**os.environ, 'FAKE_NVCC_S': str(s)})\n"
        "procs = [go('csrc/causal_conv1d_update.cu', 1)]\n"
        "time.sleep(0.6)\n"
        "procs += [go('csrc/causal_conv1d.cpp', 1), go('csrc/causal_conv1d_fwd.cu', 1),\n"
        "          go('csrc/causal_conv1d_bwd.cu', 1)]\n"
        "sys.exit(max(p.wait() for p in procs))\n")
    env = {"PATH": os.environ["PATH"], "WHEELCUDA_ARCHS": "9.0",
           "WHEELCUDA_POOL": str(tmp_path / "pool"), "WHEELCUDA_NO_PROGRESS": "1",
           "TMPDIR": str(tmp_path)}
    r = subprocess.run([sys.executable, "-c", script], cwd=package, env=env, text=True,
                       capture_output=True, timeout=120, preexec_fn=_on_two_cores,
                       check=False)
    assert r.returncode == 0, r.stderr
    starts = {json.loads(line)["file"]: json.loads(line)["t"]
              for f in events.glob("tree-*.jsonl") for line in f.read_text().splitlines()
              if json.loads(line)["event"] == "start"}
    assert starts["csrc/causal_conv1d_bwd.cu"] < starts["csrc/causal_conv1d_update.cu"], starts


# --- a place ends with its compile ---------------------------------------------------

LEFTOVER = """#!/bin/sh
# a compile that leaves a server running, as sccache's client starts its server
setsid sh -c 'echo $$ > "$LEFTOVER_PID"; exec sleep 40' </dev/null >/dev/null 2>&1 &
exec sleep 60
"""


def test_a_process_the_compile_leaves_running_holds_no_place(nvcc: Path,
                                                             tmp_path: Path) -> None:
    """The place's lock file was inherited by what the compile left running (sccache's
    server): with the compile killed, its place stayed taken for as long as the server
    lived (for ever with SCCACHE_IDLE_TIMEOUT=0), and with two such on 2 cores no
    compile started again."""
    (nvcc.parent / w.REAL).write_text(LEFTOVER)
    pool, pid_file = tmp_path / "pool", tmp_path / "leftover.pid"
    one = {"WHEELCUDA_MEMORY": "1G", "WHEELCUDA_JOB_GB": "0.9",
           "LEFTOVER_PID": str(pid_file)}  # room for one compile at a time
    victim = start(nvcc, pool, **one)
    try:
        deadline = time.monotonic() + 20
        while not pid_file.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        os.killpg(victim.pid, signal.SIGKILL)  # the compile and its group: not the server
        victim.communicate(timeout=10)
        (nvcc.parent / w.REAL).write_text(FAKE_NVCC)
        after = start(nvcc, pool, hold=0, **one)
        out, err = after.communicate(timeout=20)  # before: it waited for the server
        assert after.returncode == 0 and "ARGS " in out, err
    finally:
        if pid_file.exists():
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid_file.read_text()), signal.SIGKILL)


def test_ctrl_c_while_waiting_ends_quietly(nvcc: Path, tmp_path: Path) -> None:
    """Ctrl-C printed a Python traceback for every compile still waiting in the pool;
    now each ends by the signal, as a running one does, and leaves no record."""
    pool = tmp_path / "pool"
    one = {"WHEELCUDA_MEMORY": "1G", "WHEELCUDA_JOB_GB": "0.9"}
    holder = start(nvcc, pool, hold=30, **one)
    try:
        deadline = time.monotonic() + 20
        while not list(pool.glob("run-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        waiter = start(nvcc, pool, hold=0, **one)
        while not list(pool.glob("wait-*")) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(waiter.pid, signal.SIGINT)
        out, err = waiter.communicate(timeout=20)
        assert waiter.returncode == -signal.SIGINT, err
        assert "Traceback" not in err and "ARGS" not in out, err
        assert not list(pool.glob("wait-*")) and not list(pool.glob("wake-*"))
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.communicate()


# --- memory: read now, the page cache left out ---------------------------------------

def test_a_cgroups_page_cache_is_not_counted_as_used(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """memory.current (v2) and usage_in_bytes (v1) count the page cache: after unpacking
    torch a limited container looked full and ran one compile at a time."""
    v2, v1 = tmp_path / "v2", tmp_path / "v1"
    for folder, limit, usage, stat_line in (
            (v2, "memory.max", "memory.current", "inactive_file"),
            (v1, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")):
        folder.mkdir()
        (folder / limit).write_text(str(8 * GIB))
        (folder / usage).write_text(str(7 * GIB))
        (folder / "memory.stat").write_text(f"active_file 1\n{stat_line} {5 * GIB}\n")
        monkeypatch.setattr(_machine, "_cgroup_dirs", lambda f=folder: [str(f)])
        assert _machine._cgroup_room() == 6 * GIB  # 8 - (7 - 5)


def test_the_budget_is_read_again_while_compiles_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget was what the kernel said when the pool was last empty: a build that
    started after a burst of file I/O kept the low figure to its end. Now it is what is
    available now plus what the running compiles hold of their shares (one that just
    started holds little, and will take the rest of its share)."""
    assert _machine.tree_memory(os.getpid()) > 0  # this process's own, read from /proc
    monkeypatch.setattr(_machine, "available_memory", lambda: 10 * GIB)
    monkeypatch.setattr(_machine, "tree_memory", lambda pid: GIB if pid == 9 else 6 * GIB)
    running = [_pool.Held(9, 4 * GIB, 0), _pool.Held(8, 4 * GIB, 0)]
    # 10 available + 1 of 9's share it holds + all of 8's (it holds more than its share)
    assert _pool._budget(running, {}) == 15 * GIB
    assert _pool._budget(running, {"WHEELCUDA_MEMORY": "12G"}) == 12 * GIB


def test_a_compile_held_back_by_another_build_tells_whom_it_waits_for(
        nvcc: Path, tmp_path: Path) -> None:
    """Two builds of one user share the machine's pool: the second's compile waits for
    the first's, and its events say so (`wheelcuda builds` and its terminal line read
    them), naming the build it waits for."""
    events = tmp_path / "events"
    events.mkdir()
    (nvcc.parent / _tree.CONFIG).write_text(json.dumps({"events": str(events)}))
    env = {"PATH": os.environ["PATH"], "WHEELCUDA_ARCHS": "9.0",
           "WHEELCUDA_POOL": str(tmp_path / "pool"), "WHEELCUDA_NO_PROGRESS": "1",
           "WHEELCUDA_MEMORY": "1G", "WHEELCUDA_JOB_GB": "0.9", "TMPDIR": str(tmp_path)}
    builds = []
    for name, hold in (("first", "3"), ("second", "0")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "PKG-INFO").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        builds.append(_build(nvcc, 1, {**env, "FAKE_NVCC_S": hold}, folder))
        time.sleep(1.0)  # the first holds the place
    for b in builds:
        _, err = b.communicate(timeout=60)
        assert b.returncode == 0, err
    waits = [json.loads(line) for f in events.glob("tree-*.jsonl")
             for line in f.read_text().splitlines() if '"wait"' in line]
    assert [(w["build"], w["for"]) for w in waits] == \
        [("second 1.0", f"1 compile of first 1.0 (pid {builds[0].pid})")]


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="mounts a small file system of its own (root, unshare -m)")
def test_a_compile_on_a_full_disk_says_so_and_runs(nvcc: Path, tmp_path: Path) -> None:
    """The pool, the events and TMPDIR on a file system with no room left (a make live
    beside make test filled this machine's disk): the compile still runs, and says why
    it had no pool, with the fix; never a hang."""
    full = tmp_path / "full"
    full.mkdir()
    (nvcc.parent / _tree.CONFIG).write_text(json.dumps({"events": str(full / "events")}))
    script = (f"mount -t tmpfs -o size=64k tmpfs {full} && mkdir {full}/events && "
              f"(cat /dev/zero > {full}/fill 2>/dev/null; true) && "
              f"exec {sys.executable} -I -S {nvcc} -c k.cu -o k.o -arch=sm_80")
    env = {"PATH": os.environ["PATH"], "WHEELCUDA_ARCHS": "9.0",
           "WHEELCUDA_POOL": str(full / "pool"), "TMPDIR": str(full), "FAKE_NVCC_S": "0",
           "WHEELCUDA_NO_PROGRESS": "1"}
    r = subprocess.run(["unshare", "-m", "sh", "-c", script], env=env, capture_output=True,
                       text=True, timeout=60, check=False)
    assert r.returncode == 0 and "ARGS " in r.stdout, r.stderr
    assert f"no compile pool could be used: {full}/pool (No space left on device)" in r.stderr
    assert "fix: export WHEELCUDA_POOL=" in r.stderr and "Traceback" not in r.stderr
