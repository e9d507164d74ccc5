"""A build you can watch (the tree's nvcc timing each compile, _progress.py; install
showing them, _commands/build_watch.py), its profile, and a failed build you can read
(_rules/progress.py), with fakes: tests/integration/test_progress.py does it for real."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.pypi_server import tiny_wheel
from tests.test_cli import run
from tests.test_share import FIELDS, LABEL
from wheelcuda import _proc as proc
from wheelcuda import _report as report
from wheelcuda._commands import build_watch
from wheelcuda._rules import progress, redact
from wheelcuda._standalone import _build, _events, _pool, _progress
from wheelcuda._store import buildlog, prune, wheels
from wheelcuda._store.layout import Layout
from wheelcuda._team import rules_key as sharekey
from wheelcuda._team import store_wheelfile as wheelfile

SRC = Path(_progress.__file__).parent


def _compiler(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-nvcc"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


#: _progress.run as the tree's programs call it: the program, its argv, the tree's bin
#: folder (here the package's own, which holds no tree facts) and the environment
RUN = ("import sys; sys.path.insert(0, sys.argv[1]); import _progress; "
       "sys.exit(_progress.run(_progress.Call(sys.argv[2], ['nvcc', *sys.argv[5:]]), "
       "sys.argv[1], {'WHEELCUDA_PROGRESS': sys.argv[3], 'WHEELCUDA_POOL': sys.argv[4], "
       "'PATH': '/usr/bin:/bin', 'TMPDIR': __import__('os').environ.get('TMPDIR', '/tmp')}))")


def _run(real: str, events: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUN, str(SRC), real, str(events),
                           str(events.parent / "pool"), *args],
                          capture_output=True, text=True, check=False, timeout=60)


def test_sources_and_targets_are_read_from_the_call() -> None:
    args = ["-I", "x.cu", "-c", "k.cu", "-o", "k.o", "-gencode=arch=compute_90,code=sm_90",
            "-gencode", "arch=compute_80,code=[sm_80,compute_80]", "-Xcompiler", "a.c"]
    assert _progress.sources(args) == ["k.cu"]
    assert _progress.targets(args) == ["sm_90", "sm_80", "compute_80"]
    assert _progress.targets(["-arch", "sm_120", "-c", "a.cu"]) == ["sm_120"]


def test_a_compile_is_timed_told_and_its_code_passed_on(tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    ok = _run(_compiler(tmp_path, "sleep 0.2; echo out; exit 0"), events,
              "-c", "dir/k.cu", "-gencode=arch=compute_90,code=sm_90", "--split-compile=2")
    assert ok.returncode == 0 and ok.stdout == "out\n"
    assert ok.stderr.startswith("wheelcuda: compiled k.cu (sm_90) in 0.")
    start, end = (json.loads(line) for line in events.read_text().splitlines())
    assert start["event"] == "start" and start["file"] == "dir/k.cu"
    assert end["event"] == "end" and end["code"] == 0 and end["wall"] >= 0.2
    assert end["split"] == 2 and end["threads"] is None and end["peak_kb"] > 0
    failed = _run(_compiler(tmp_path, "exit 3"), events, "-c", "bad.cu")
    assert failed.returncode == 3 and "failed (exit 3) bad.cu in " in failed.stderr


@pytest.mark.parametrize(("sig", "group"), [(signal.SIGINT, True), (signal.SIGTERM, False)])
def test_an_interrupted_compile_ends_as_interrupted_and_tells_no_end(
        tmp_path: Path, sig: signal.Signals, group: bool) -> None:
    """A Ctrl-C reaches the whole build (the process group), ninja or a parent ending
    the build may signal the wrapper alone: either way the compiler stops, the wrapper
    ends by the same signal, and the compiler's temporary files go with its folder (a
    Ctrl-C during a clang compile left zero-byte .fatbin, .o and .s files in /tmp, on
    every route, not only install's)."""
    events, user_tmp = tmp_path / "events.jsonl", tmp_path / "user-tmp"
    user_tmp.mkdir()
    compiler = _compiler(tmp_path, ': > "$TMPDIR/k-1a2b.fatbin"; : > "$TMPDIR/k-1a2b.s"; '
                                   'echo "$TMPDIR" > "$0.tmp"; exec sleep 30')
    # started as a terminal's foreground job is, Ctrl-C not ignored: under `sh -c '... &'`
    # (or nohup) the test's own run ignores it, every child inherits that, and the compile
    # rightly ran on, which once timed this test out in CI
    child = subprocess.Popen([sys.executable, "-c", RUN, str(SRC), compiler, str(events),
                              str(tmp_path / "pool"), "-c", "k.cu"],
                             process_group=0, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "TMPDIR": str(user_tmp)},
                             preexec_fn=foreground)  # noqa: PLW1509
    try:
        deadline = time.monotonic() + 20
        while not Path(compiler + ".tmp").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        os.killpg(child.pid, sig) if group else os.kill(child.pid, sig)
        _, err = child.communicate(timeout=20)
    finally:  # ended however the test ends
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
    assert child.returncode == -sig and "Traceback" not in err
    assert [json.loads(line)["event"] for line in events.read_text().splitlines()] == ["start"]
    given = Path(Path(compiler + ".tmp").read_text().strip())
    assert given.parent == user_tmp and given.name.startswith("wheelcuda-cc-")
    assert not list(user_tmp.iterdir())  # the compile's folder and its files are gone


def foreground() -> None:
    """In a child before it runs: Ctrl-C and Ctrl-\\ as a terminal's foreground job gets
    them (a shell's background job, and so a test run started as one, ignores both)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def test_a_compile_started_with_ctrl_c_ignored_runs_on(tmp_path: Path) -> None:
    """Under nohup, or as a background job of sh, a build ignores SIGINT; its compiles
    do too (a signal ignored at the start stays ignored), whatever reaches them."""
    events = tmp_path / "events.jsonl"
    compiler = _compiler(tmp_path, 'echo "$$" > "$0.pid"; sleep 1; echo done')
    child = subprocess.Popen([sys.executable, "-c", RUN, str(SRC), compiler, str(events),
                              str(tmp_path / "pool"), "-c", "k.cu"], process_group=0,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT,  # noqa: PLW1509
                                                              signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 20
        while not Path(compiler + ".pid").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        os.killpg(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=20)
        assert child.returncode == 0 and out == "done\n", err
    finally:
        with contextlib.suppress(OSError):
            os.killpg(child.pid, signal.SIGKILL)
        child.communicate()


def _rows(*rows: dict[str, object]) -> list[str]:
    return [json.dumps(r) for r in rows]


def test_events_fold_into_what_runs_and_what_is_done() -> None:
    lines = _rows({"event": "start", "pid": 1, "file": "/a/x.cu", "t": 100.0},
                    {"event": "start", "pid": 2, "file": "/a/y.cu", "t": 101.0},
                    {"event": "end", "pid": 1, "file": "/a/x.cu", "t": 130.0, "wall": 30.0,
                     "cpu": 55.0, "peak_kb": 2 * 1024 * 1024, "code": 0, "archs": ["sm_90"]})
    state = _events.read_events([*lines, "{half a line", "[]", ""])
    assert list(state.running) == [2]
    (done,) = state.done
    assert (done.name, done.wall, done.start, done.archs) == ("x.cu", 30.0, 100.0, ("sm_90",))
    assert _events.finished_line(done, 1, 3) == \
        "[1/3] compiled x.cu (sm_90) in 30.0s, cpu 55.0s, peak 2.0 GiB"
    before = [_events.Compile("/old/x.cu", (), 30.0, 50.0, 0, 0, 0.0),
              _events.Compile("/old/y.cu", (), 300.0, 300.0, 0, 0, 0.0),
              _events.Compile("/old/z.cu", (), 300.0, 300.0, 0, 0, 0.0)]
    line = _events.status_line(state, now=161.0, elapsed=61.0, before=before, jobs=2)
    # y.cu has had 60 of its 300 s, z.cu 300 to go: 540 s over 2 jobs
    assert line == "[1/3] y.cu 1m00s · 1m01s elapsed · about 4 min left"
    assert _events.status_line(state, now=161.0, elapsed=61.0) == \
        "[1 done] y.cu 1m00s · 1m01s elapsed"
    narrow = _events.status_line(state, now=161.0, elapsed=61.0, before=before, width=20)
    assert narrow == "[1/3] y.cu 1m00s"  # whole parts: never a value cut in the middle


def test_the_profile_is_kept_read_back_and_shown() -> None:
    compiles = [_events.Compile("/b/long.cu", ("sm_90",), 300.0, 290.0, 4 * 1024 * 1024, 0,
                                 10.0, 2, 1),
                _events.Compile("/b/short.cu", ("sm_90",), 20.0, 19.0, 1024 * 1024, 0, 5.0)]
    rows = progress.profile(compiles)
    assert [r["file"] for r in rows] == ["/b/short.cu", "/b/long.cu"]  # as they started
    assert progress.from_profile(json.loads(json.dumps(rows))) == sorted(
        compiles, key=lambda c: c.start)
    assert progress.from_profile("junk") == [] and progress.from_profile([1, {}]) == []
    text = "\n".join(progress.profile_text(compiles, cores=16))
    assert "2 compiles in 5m05s" in text and "longest: long.cu 5m00s" in text
    assert "floor on 16 cores: 5m00s" in text
    assert "no compile profile" in progress.profile_text([])[0]


def test_the_first_compiler_errors_and_our_refusals_are_found() -> None:
    log = ["Traceback (most recent call last):", '  File "setup.py", line 3, in <module>',
           "/src/a.cpp:12:5: error: 'foo' was not declared in this scope",
           "/src/a.cpp:12:5: error: 'foo' was not declared in this scope",
           '/src/k.cu(7): error: identifier "bar" is undefined',
           "/src/k.cu(9): catastrophic error: cannot open source file \"x.h\"",
           "/t/all.h:5:2: error: #error C++20 or later compatible compiler is required",
           "nvcc (wheelcuda, clang toolkit): error: -rdc=true: relocatable device code and "
           "device linking need NVIDIA's nvlink, which the clang toolkit does not have",
           "  fix: rerun with --toolkit redist or --toolkit local",
           "wheelcuda: compiled error_need.cu (sm_90) in 1.0s",  # a name is not an error
           "k2.cu(10): error #20014-D: calling a __host__ function from a __device__ one",
           "nvcc fatal   : Unsupported gpu architecture 'compute_999'",
           "/usr/bin/ld: cannot find -lcudart: No such file or directory",
           "error: subprocess-exited-with-error"]
    errors, ours = progress.compiler_errors(log)
    # torch's own #error first: it says why, where the others are its consequences
    assert errors == ["/t/all.h:5: error: #error C++20 or later compatible compiler is "
                      "required",
                      "/src/a.cpp:12: error: 'foo' was not declared in this scope",
                      '/src/k.cu:7: error: identifier "bar" is undefined',
                      '/src/k.cu:9: error: cannot open source file "x.h"',
                      "k2.cu:10: error: calling a __host__ function from a __device__ one"]
    assert ours == ["nvcc (wheelcuda, clang toolkit): error: -rdc=true: relocatable device "
                    "code and device linking need NVIDIA's nvlink, which the clang toolkit "
                    "does not have", "  fix: rerun with --toolkit redist or --toolkit local"]
    assert progress.compiler_errors(log, most=9)[0][5:] == [
        "nvcc: error: Unsupported gpu architecture 'compute_999'",
        "ld: error: cannot find -lcudart: No such file or directory"]
    assert len(progress.compiler_errors(log * 10, most=2)[0]) == 2
    assert all(len(e) <= 40 for e in progress.compiler_errors(
        ["/a.cu(1): error: " + "x" * 5000], width=40)[0])


def _log(tmp_path: Path, data: bytes) -> buildlog.BuildLog:
    out = tmp_path / "b.log"
    out.write_bytes(data)
    return buildlog.BuildLog(out, tmp_path / "b.jsonl")


def test_a_failure_is_read_from_a_log_of_any_size_and_encoding(tmp_path: Path) -> None:
    noise = b"x" * 200 + b"\n"
    data = noise * 30000 + "/s/k.cu(3): error: caf\xe9".encode("latin-1") + b"\n" + noise
    lines = build_watch.failure_lines(_log(tmp_path, data))  # 6 MB, latin-1
    assert lines[:2] == ["the first compiler errors:", "  /s/k.cu:3: error: caf\ufffd"]
    assert lines[-1] == f"the whole build's output: {tmp_path / 'b.log'}"
    said = build_watch.failure_lines(_log(tmp_path, b"Resolving\nerror: No solution found\n"))
    assert said[:3] == ["the end of the build's output:", "  Resolving",
                        "  error: No solution found"]
    fixes = ["note: --toolkit redist is not possible here"]
    refused = b"fatbinary (wheelcuda, clang toolkit): error: no image\n  fix: --toolkit redist\n"
    shown = build_watch.failure_lines(_log(tmp_path, refused), fixes=fixes)
    assert shown[1:4] == ["  fatbinary (wheelcuda, clang toolkit): error: no image",
                          "    fix: --toolkit redist", f"  {fixes[0]}"]
    # a compile error on the clang route says which compiler made it, and what else builds
    clang = build_watch.failure_lines(
        _log(tmp_path, b"k.cu:3:11: error: no matching function for call to 'max'\n"),
        route="these came from the clang toolkit (...)")
    assert clang[:3] == ["the first compiler errors:",
                         "  k.cu:3: error: no matching function for call to 'max'",
                         "these came from the clang toolkit (...)"]
    assert build_watch.unreachable_fixes(None) == []
    assert "WHEELCUDA_REDIST_URL" in build_watch.unreachable_fixes("could not connect")[0]


def test_a_log_folder_that_cannot_be_written_is_a_warning(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    layout = Layout(tmp_path / "cache")
    layout.private()
    (tmp_path / "cache" / "logs").write_text("a file where the folder goes")
    assert build_watch.start_log(layout, "k-1") is None
    assert "building without a log or progress" in capsys.readouterr().err
    ok = buildlog.start(Layout(tmp_path / "other"), "k-1")
    assert ok.output.is_file() and ok.events.is_file() and ok.events_text() == []
    assert oct(ok.output.stat().st_mode & 0o777) == "0o600"


def test_watching_shows_a_line_per_compile_off_a_terminal(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = buildlog.start(Layout(tmp_path / "cache"), "k-1")
    before = [_events.Compile("/x/a.cu", (), 10.0, 10.0, 0, 0, 0.0)]
    with build_watch.watching(log, before=before) as seen:
        log.events.write_text("\n".join(_rows(
            {"event": "start", "pid": 7, "file": "/y/a.cu", "t": 1.0},
            {"event": "end", "pid": 7, "file": "/y/a.cu", "t": 3.0, "wall": 2.0, "cpu": 1.0,
             "peak_kb": 1024, "code": 0})) + "\n")
    assert [c.name for c in seen.done] == ["a.cu"]
    assert "wheelcuda: [1/1] compiled a.cu in 2.0s" in capsys.readouterr().err
    report.configure(-1)
    try:
        with build_watch.watching(log) as quiet:
            time.sleep(0.7)
        assert len(quiet.done) == 1 and capsys.readouterr().err == ""
    finally:
        report.configure(0)


def test_prune_removes_old_logs_and_keeps_the_newest(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "cache")
    logs = layout.private(layout.logs)
    now = time.time()
    for i in range(25):
        for suffix in (".log", ".jsonl"):
            path = logs / f"k-{i:02d}{suffix}"
            path.write_text("x")
            os.utime(path, (now - 1000 + i, now - 1000 + i))
    ancient = logs / "old-1.log"
    ancient.write_text("x")
    os.utime(ancient, (now - 40 * 86400, now - 40 * 86400))
    gone = buildlog.old(layout, now=now)
    assert ancient in gone and logs / "k-24.log" not in gone
    assert logs / "k-04.log" in gone and logs / "k-04.jsonl" in gone
    assert logs / "k-05.log" not in gone  # the newest 20 builds stay
    removed, busy = prune.prune(layout)
    assert not busy and {r.path for r in removed} == set(gone)
    assert sorted(p.name for p in logs.iterdir() if not p.name.startswith(".")) == sorted(
        f"k-{i:02d}{s}" for i in range(5, 25) for s in (".log", ".jsonl"))


def test_the_profile_travels_with_the_wheel_as_data_not_as_key(tmp_path: Path) -> None:
    rows = progress.profile([_events.Compile("/b/k.cu", ("sm_90",), 30.0, 29.0, 2048, 0, 1.0)])
    out = wheelfile.labelled(tiny_wheel(tmp_path / "built"), tmp_path / "out", FIELDS,
                             profile=rows)
    assert out.name == f"demo_pkg-1.0.0+{LABEL}-py3-none-any.whl"  # the same label
    carried = wheelfile.read_key(out)
    assert carried is not None and carried["profile"] == [{**rows[0], "file": "k.cu"}]
    assert sharekey.matches(carried, FIELDS)  # still the key wanted
    layout = Layout(tmp_path / "cache")
    wheels.adopt(layout, "demo-pkg-1", {**FIELDS, "names": ["demo-pkg"]}, [out], "https://team/simple/",
                 profile=carried["profile"])
    assert wheels.profile_of(layout, "demo-pkg-1") == carried["profile"]
    assert wheels.profile_of(layout, "another-key", ["demo-pkg"]) == carried["profile"]
    assert wheels.profile_of(layout, "another-key", ["other"]) == []


def test_builds_lists_the_running_ones_with_their_progress(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "cache")
    logs = layout.private(layout.logs)
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    stamp = time.strftime("%Y%m%d-%H%M%S")  # as install names its files, once it runs
    shown = time.strftime("%Y-%m-%d %H:%M:%S", time.strptime(stamp, "%Y%m%d-%H%M%S"))
    try:
        (logs / f"demo-ext-1a2b-{stamp}-{alive.pid}.log").write_text("")
        (logs / f"demo-ext-1a2b-{stamp}-{alive.pid}.jsonl").write_text("\n".join(
            _rows({"event": "start", "pid": 3, "file": "/s/first.cu", "t": time.time()},
                    {"event": "start", "pid": 4, "file": "/s/second.cu", "t": time.time()},
                    {"event": "start", "pid": 5, "file": "/s/half"})) + '\n{"event": "sta')
        dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                              capture_output=True, text=True, check=True).stdout.strip()
        (logs / f"gone-9f-20261201-101010-{dead}.jsonl").write_text("")  # a failed build's
        # a killed install's, whose pid a later process took: that one is not the build
        (logs / f"reused-9f-20261201-101010-{alive.pid}.jsonl").write_text("")
        env = {"WHEELCUDA_CACHE_DIR": str(layout.root)}
        r = run("builds", env=env)
        assert r.returncode == 0, r.stderr
        assert f"demo-ext-1a2b  (wheelcuda install, pid {alive.pid}, since {shown})" \
            in r.stdout
        assert "[0 done] " in r.stdout and "(+2 running)" in r.stdout and "gone" not in r.stdout
        assert "reused" not in r.stdout
        data = json.loads(run("builds", "--json", env=env).stdout)
        [row] = data["builds"]
        # the line still being written is not read
        assert row["running"] == ["/s/first.cu", "/s/half", "/s/second.cu"]
        assert row["done"] == 0
    finally:
        alive.kill()
        alive.wait()
    idle = run("builds", env={"WHEELCUDA_CACHE_DIR": str(tmp_path / "empty")})
    assert idle.returncode == 0 and "no build is running" in idle.stderr


def test_builds_lists_a_build_the_tree_watched(tmp_path: Path) -> None:
    """A build uv or pip runs (no install around it): its compiles wrote their events to
    the tree cache's folder, named by the build's root process and its start; `builds`
    lists it while that process lives, by the package it builds, with the recipe's
    guess for a first build."""
    layout = Layout(tmp_path / "cache")
    events = layout.private(layout.events)
    root = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        start = _build.stat(root.pid)
        assert start is not None
        (events / f"tree-{root.pid}-{start.start}.jsonl").write_text("\n".join(_rows(
            {"event": "start", "pid": 3, "file": "/s/flash_fwd_hdim64_fp16_sm80.cu",
             "t": time.time() - 90, "build": "flash_attn 2.8.3", "root": root.pid,
             "by": "uv"})) + "\n")
        (events / f"tree-{root.pid}-{start.start + 1}.jsonl").write_text("")  # pid reused
        r = run("builds", env={"WHEELCUDA_CACHE_DIR": str(layout.root)})
        assert r.returncode == 0, r.stderr
        assert f"flash_attn 2.8.3  (uv, pid {root.pid}, since " in r.stdout
        # 90 s ago, read a moment later (a loaded machine: a second or more)
        assert re.search(r"\[0/72\] flash_fwd_hdim64_fp16_sm80\.cu 1m3\ds", r.stdout), r.stdout
        assert "(the recipe's guess)" in r.stdout and r.stdout.count("pid") == 1
    finally:
        root.kill()
        root.wait()
    assert "no build is running" in run("builds", env={
        "WHEELCUDA_CACHE_DIR": str(layout.root)}).stderr


def test_a_teammates_profile_that_is_not_one_is_skipped() -> None:
    rows = [{"file": "a.cu", "archs": 5, "wall": float("inf"), "cpu": 1, "start": 0},
            {"file": "b.cu", "archs": ["sm_90"], "wall": 2, "cpu": 1, "start": 0,
             "peak_kb": 1e400, "code": "x", "split": True},
            {"file": "c.cu", "wall": -1}, "junk", None]
    [only] = progress.from_profile(rows)
    assert (only.name, only.wall, only.peak_kb, only.code, only.split) == ("b.cu", 2.0, 0, 0,
                                                                         None)


def test_a_teammates_profile_of_huge_numbers_and_escapes_breaks_nothing() -> None:
    """Valid JSON from a teammate's wheel: an int of 400 digits (it raised OverflowError
    in every later install and --explain of the package, under any key, until cache
    clear), and file names holding escape sequences, which reached the terminal raw."""
    rows = json.loads('[{"file": "\\u001b]0;owned\\u0007a.cu", "archs": ["sm_90\\u001b[2J"], '
                      '"wall": 3, "cpu": 2, "start": 0, "peak_kb": 1' + "0" * 400 + ', '
                      '"split": 1' + "0" * 400 + ', "code": 0}]')
    [row] = progress.from_profile(rows)
    assert row.peak_kb == 0 and row.split is None
    assert "\x1b" not in row.file and "\x07" not in row.file and row.file.endswith("a.cu")
    assert row.archs == ("sm_90?[2J",)
    assert progress.measured_job_gb([row], 1) is None  # nothing measured, no crash
    text = "\n".join(progress.profile_text([row], cores=16))
    assert "\x1b" not in text and "a.cu" in text


def test_a_profile_of_floats_near_the_largest_breaks_nothing() -> None:
    """1e308 is a finite float and valid JSON, but two of them added overflow: the
    profile's text, the order file and the line of time left raised OverflowError or
    wrote inf. Numbers beyond a float's exact range are read as unknown."""
    rows = json.loads('[{"file": "a.cu", "archs": ["sm_90"], "wall": 1e308, "cpu": 1e308, '
                      '"start": 0, "peak_kb": 1e308, "split": 1, "code": 0}, '
                      '{"file": "b.cu", "archs": ["sm_90"], "wall": 3, "cpu": 1e308, '
                      '"start": 1e308, "peak_kb": 10, "code": 0}, '
                      '{"file": "c.cu", "archs": ["sm_90"], "wall": 3, "cpu": 2, "start": 0, '
                      '"peak_kb": 1e308, "code": 0}]')
    profile = progress.from_profile(rows)  # a row of unknown times is no profile row
    assert [(c.file, c.wall, c.peak_kb) for c in profile] == [("c.cu", 3.0, 0)]
    assert progress.longest_first(profile) == {"c.cu": 3.0}
    assert "c.cu" in "\n".join(progress.profile_text(profile, cores=16))
    events = [json.dumps({"event": "start", "pid": 7, "t": 1e308, "file": "a.cu"}),
              json.dumps({"event": "start", "pid": 8, "t": 5.0, "file": "b.cu"}),
              json.dumps({"event": "end", "pid": 8, "t": 1e308, "wall": 1e308, "cpu": 1e308,
                          "peak_kb": 1e308, "file": "b.cu"})]
    state = _events.read_events(events)
    assert "a.cu" in _events.status_line(state, now=10.0, elapsed=10.0, before=profile)


def test_a_compile_killed_by_a_signal_kills_the_wrapper_the_same_way(tmp_path: Path) -> None:
    """ninja tells a compile ended by a signal (an interrupted build) from a failed one."""
    killed = _run(_compiler(tmp_path, "kill -TERM $$"), tmp_path / "e.jsonl", "-c", "k.cu")
    assert killed.returncode == -signal.SIGTERM
    assert "failed (exit 143) k.cu" in killed.stderr


def test_the_installer_is_told_not_to_ask_when_nobody_sees_it(tmp_path: Path) -> None:
    log = buildlog.start(Layout(tmp_path / "cache"), "k-1")
    assert build_watch.build_variables(log, False, {}) == {
        "WHEELCUDA_PROGRESS": str(log.events), "PIP_NO_INPUT": "1"}
    assert "PIP_NO_INPUT" not in build_watch.build_variables(log, True, {})  # -v: it may ask
    assert "PIP_NO_INPUT" not in build_watch.build_variables(log, False, {"PIP_NO_INPUT": "0"})
    assert build_watch.build_variables(None, False, {}) == {}


def test_a_log_that_cannot_be_written_never_stops_the_build(tmp_path: Path) -> None:
    """A full disk under the log: the output still reaches the terminal and the child
    ends (nobody reading its pipe would block it)."""
    script = "head -c 3000000 /dev/zero | tr '\\\\0' x; echo; exit 4"
    code = proc.call(["sh", "-c", script], env={"PATH": "/usr/bin:/bin"}, log="/dev/full",
                     echo=True)
    assert code == 4


@pytest.mark.parametrize("echo", [True, False])
def test_a_token_the_installer_prints_stays_out_of_the_kept_log(tmp_path: Path,
                                                                echo: bool) -> None:
    """pip's "Looking in indexes" line hides user:password but not a query token: the log
    kept after the build holds the line redacted, even when it came in two reads (a
    token cut in half would pass a redactor that sees halves), and in any encoding."""
    url = "http://127.0.0.1:8/simple/?private_token=SECRET123"
    script = (f"printf 'Looking in indexes: {url[:30]}'; sleep 0.2; "
              f"printf '{url[30:]}\\n'; printf 'caf\\351 ok\\n'")
    log = tmp_path / "build.log"
    code = proc.call(["sh", "-c", script], env={"PATH": "/usr/bin:/bin"}, log=str(log),
                     echo=echo, scrub=redact.text)
    assert code == 0
    kept = log.read_bytes()
    assert b"SECRET123" not in kept and b"private_token=***" in kept, kept
    assert b"caf\xe9 ok" in kept  # not UTF-8: passed as it is


def test_cache_clear_all_removes_the_logs_but_a_running_builds(tmp_path: Path) -> None:
    layout = Layout(tmp_path / "cache")
    running = buildlog.start(layout, "k-1")  # named by this process, which runs
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    old = [layout.logs / f"k-2-20261201-101010-{dead}{s}" for s in (".log", ".jsonl")]
    for path in old:
        path.write_text("x")
    r = run("cache", "clear", "--all", env={"WHEELCUDA_CACHE_DIR": str(layout.root)})
    assert r.returncode == 0 and "removed 2 build log file(s)" in r.stderr
    assert not any(p.exists() for p in old)
    assert running.output.exists() and running.events.exists()


def test_a_compile_through_the_cache_says_so_without_the_servers_usage() -> None:
    """sccache's server runs the compiler: the child's cpu and memory are not the
    compile's, so the line says where it went instead (and the profile keeps no peak)."""
    line = _progress.describe("csrc/k.cu", ["sm_90"], 0, wall=3.0, cpu=0.0, peak_kb=0,
                              cached=True)
    assert line == "wheelcuda: compiled k.cu (sm_90) in 3.0s, through sccache"
    call = _progress.Call("/x/sccache", ["/x/sccache", "/t/bin/.nvcc-real", "-c", "k.cu"],
                          cached=True)
    assert call.args() == ["-c", "k.cu"]
    assert _progress.Call("/t/bin/.nvcc-real", ["/t/bin/nvcc", "-c", "k.cu"]).args() == \
        ["-c", "k.cu"]


# --- a line a person can read --------------------------------------------------------

def test_a_terminal_line_keeps_whole_values_what_matters_first() -> None:
    """Under a pty with no width, `uv add` showed `… compiled causal_conv1d_update.cu
    (sm_120) in 8.` and `· [1 d`: cut at 80 columns in the middle of a value. The count,
    the time so far and the file come first; a part that does not fit goes whole."""
    state = _events.read_events(_rows(
        {"event": "start", "pid": 1, "file": "/s/csrc/causal_conv1d_bwd.cu", "t": 100.0},
        {"event": "start", "pid": 2, "file": "/s/csrc/causal_conv1d_update.cu", "t": 100.5},
        {"event": "end", "pid": 2, "file": "/s/csrc/causal_conv1d_update.cu", "t": 108.8,
         "wall": 8.3, "cpu": 8.0, "peak_kb": 1, "code": 0}))
    before = _events.guess({"causal_conv1d_bwd.cu": 270.0, "causal_conv1d_update.cu": 8.0,
                            "causal_conv1d_fwd.cu": 40.0, "causal_conv1d.cpp": 38.0})
    what = ["compiled causal_conv1d_update.cu (sm_120) in 8.3s",
            "compiled causal_conv1d_update.cu in 8.3s", "compiled causal_conv1d_update.cu"]
    wide = _build.line(state, "causal-conv1d 1.7.0", what, before=before, source="",
                       now=160.0, width=200)
    assert wide == ("wheelcuda [1/4] 1m00s · compiled causal_conv1d_update.cu (sm_120) in "
                    "8.3s · about 5 min left · causal-conv1d 1.7.0")
    # spread over the cores, not only the compiles that came so far (flash-attn's first
    # line said 130 min, 2 running of 16, where 18 were left)
    assert "about 2 min left" in _build.line(state, "causal-conv1d 1.7.0", what, before=before,
                                             source="", now=160.0, width=200, jobs=2)
    for width in (80, 60, 45, 30):
        line = _build.line(state, "causal-conv1d 1.7.0", what, before=before, source="",
                           now=160.0, width=width)
        assert len(line) <= width and line.startswith("wheelcuda [1/4] 1m00s"), line
        parts = line.split(" · ")
        assert all(p in (parts[0], *what, "about 5 min left", "causal-conv1d 1.7.0")
                   for p in parts), line
    assert _build.line(state, "causal-conv1d 1.7.0", what, before=before, source="",
                       now=160.0, width=80) == \
        "wheelcuda [1/4] 1m00s · compiled causal_conv1d_update.cu (sm_120) in 8.3s"


def test_the_width_is_columns_else_the_terminals_else_80() -> None:
    assert _build.width(-1, {"COLUMNS": "132"}) == 132
    assert _build.width(-1, {"COLUMNS": "wide"}) == 80  # not a number: the terminal's
    assert _build.width(-1, {}) == 80  # no terminal (a closed descriptor): 80


def test_the_uv_route_learns_order_and_time_left_from_the_last_build(tmp_path: Path) -> None:
    """Time left was never shown on uv's or pip's route: only install handed its builds'
    profile over. The tree's compilers now read the package's last build through the
    same cache (its events), the recipe's guess filling what it lacks."""
    events = tmp_path / "events"
    events.mkdir()
    last = [{"event": "start", "pid": 5, "file": "/u/1/csrc/a.cu", "t": 1.0, "rel": "csrc/a.cu",
             "build": "causal_conv1d 1.7.0"},
            {"event": "end", "pid": 5, "file": "/u/1/csrc/a.cu", "t": 91.0, "rel": "csrc/a.cu",
             "wall": 90.0, "cpu": 90.0, "peak_kb": 1, "code": 0, "build": "causal_conv1d 1.7.0"},
            {"event": "start", "pid": 6, "file": "/u/1/b.cu", "t": 1.0, "rel": "b.cu",
             "build": "causal_conv1d 1.7.0"},
            {"event": "end", "pid": 6, "file": "/u/1/b.cu", "t": 3.0, "rel": "b.cu",
             "wall": 2.0, "cpu": 2.0, "peak_kb": 1, "code": 1, "build": "causal_conv1d 1.7.0"}]
    (events / "tree-11-22.jsonl").write_text("\n".join(_rows(*last)) + "\n")
    (events / "tree-12-23.jsonl").write_text("\n".join(_rows(  # another package's
        {"event": "start", "pid": 7, "file": "/x/a.cu", "t": 1.0, "build": "other 1.0"})))
    (events / "tree-13-24.jsonl").write_text("\n".join(_rows(  # one still running
        {"event": "start", "pid": 8, "file": "/y/c.cu", "t": 1.0, "build": "causal_conv1d 1"})))
    facts = {"events": str(events),
             "recipes": {"causal-conv1d": {"order": {"a.cu": 50.0, "z.cu": 7.0}}}}
    seconds, source = _progress._expected({}, facts, "causal-conv1d", None)
    assert seconds == {"csrc/a.cu": 90.0, "z.cu": 7.0} and source == ""  # b.cu failed
    assert _progress._expected({}, {**facts, "events": str(tmp_path / "none")},
                               "causal-conv1d", None) == ({"a.cu": 50.0, "z.cu": 7.0},
                                                          "the recipe's guess")


def test_a_build_held_back_by_another_says_so(tmp_path: Path) -> None:
    """A build whose compiles waited for another build's showed `[0/0] · 1m29s elapsed`.
    Its compiles write a wait event naming whom they wait for; builds and its line say
    it."""
    state = _events.read_events(_rows(
        {"event": "wait", "pid": 3, "file": "k.cu", "t": 10.0, "build": "mine 1.0",
         "for": "2 compiles of causal-conv1d 1.7.0 (pid 4242)"}))
    assert state.build == "mine 1.0" and not state.running
    assert _events.status_line(state, 100.0, 90.0) == \
        "[0 done] waiting for 2 compiles of causal-conv1d 1.7.0 (pid 4242) · 1m30s elapsed"
    started = _events.read_events(_rows({"event": "start", "pid": 3, "file": "k.cu",
                                         "t": 95.0}), state)
    assert not started.waiting and list(started.running) == [3]
    assert _progress._holders([_pool.Held(1, 1, 0, "a", 4242, "causal-conv1d 1.7.0"),
                               _pool.Held(2, 1, 0, "b", 4242, "causal-conv1d 1.7.0"),
                               _pool.Held(5, 1, 0, "c", 77, "")]) == \
        "2 compiles of causal-conv1d 1.7.0 (pid 4242), 1 compile of another build (pid 77)"
