"""A torch extension's compile calls, which setuptools makes one after another without
ninja, answered at once and compiled side by side (_standalone/_overlap.py): which calls
may be, and the link that waits for them. Real forks and locks here; a real build of
two extensions: tests/integration/test_overlap.py."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from wheelcuda._standalone import _overlap

TORCH = ["-DTORCH_EXTENSION_NAME=ext_a", "-DTORCH_API_INCLUDE_EXTENSION_H"]
#: the build's CXX: the tree's host shim, as every route sets it
SHIM = {"CXX": "/c/homes/cu13.0-x/bin/wheelcuda-c++"}


def _args(obj: Path) -> list[str]:
    return ["-I/x", "-c", "a.cu", "-o", str(obj), *TORCH]


@pytest.mark.parametrize(("args", "sources", "environ", "parent", "want"), [
    (["-c", "a.cu", "-o", "a.o", *TORCH], ["a.cu"], {}, "/usr/bin/python3.11", True),
    (["-c", "a.cpp", "-o", "a.o", *TORCH], ["a.cpp"], {}, "/opt/py/bin/pypy3", True),
    (["-c", "a.cu", "-o", "a.o", *TORCH], ["a.cu"], {"CXX": "ccache /t/bin/wheelcuda-c++"},
     "python3", True),
    # the link would not run the shim: g++ does not wait
    (["-c", "a.cu", "-o", "a.o", *TORCH], ["a.cu"], {"CXX": "g++"}, "python3", False),
    (["-c", "a.cu", "-o", "a.o", *TORCH], ["a.cu"], {"CXX": ""}, "python3", False),
    # ninja and make run their own jobs, through a shell
    (["-c", "a.cu", "-o", "a.o", *TORCH], ["a.cu"], {}, "/bin/dash", False),
    (["-c", "a.cu", "-o", "a.o", *TORCH], ["a.cu"], {}, "/usr/bin/ninja", False),
    # not a torch extension's: a setup.py's own check, a plain C extension
    (["-c", "a.cu", "-o", "a.o"], ["a.cu"], {}, "/usr/bin/python3", False),
    # no object named, or two sources
    (["-c", "a.cu", *TORCH], ["a.cu"], {}, "/usr/bin/python3", False),
    (["-c", "a.cu", "b.cu", "-o", "a.o", *TORCH], ["a.cu", "b.cu"], {}, "python3", False),
    # turned off
    (["-c", "a.cu", "-o", "a.o", *TORCH], ["a.cu"], {_overlap.VAR: "1"}, "python3", False),
    (["-c", "a.cu", "-o", "a.o", *TORCH], ["a.cu"], {_overlap.VAR: "0"}, "python3", True),
])
def test_which_calls_may_return_at_once(args: list[str], sources: list[str],
                                        environ: dict[str, str], parent: str,
                                        want: bool) -> None:
    assert _overlap.wanted(args, sources, {**SHIM, **environ}, parent) is want


def test_output() -> None:
    assert _overlap.output(["-c", "x.cu", "-o", "x.o"]) == "x.o"
    assert _overlap.output(["-c", "x.cu", "-o"]) is None
    assert _overlap.output(["-c", "x.cu"]) is None


@pytest.fixture
def from_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_overlap, "_parent_exe", lambda: "/usr/bin/python3.11")


def test_answered_at_once_then_the_link_waits(tmp_path: Path, from_python: None) -> None:
    obj = tmp_path / "a.o"
    obj.write_bytes(b"an old object")

    def compile_() -> int:
        time.sleep(1.0)
        obj.write_bytes(b"\x7fELF new")
        return 0

    start = time.monotonic()
    assert _overlap.run(_args(obj), ["a.cu"], SHIM, compile_) == 0  # the parent, at once
    assert time.monotonic() - start < 0.8
    # emptied at once: newer than an extension built before, never the old object
    assert obj.read_bytes() == b""
    assert (tmp_path / ("a.o" + _overlap.PENDING)).exists()
    assert _overlap.join(["-shared", str(obj), "-o", str(tmp_path / "ext.so")]) == []
    assert obj.read_bytes() == b"\x7fELF new"
    assert time.monotonic() - start >= 1.0
    assert not (tmp_path / ("a.o" + _overlap.PENDING)).exists()
    assert _overlap.join([str(obj)]) == []  # nothing pending: nothing waited for


def test_a_failed_compile_fails_the_link_and_names_its_file(
        tmp_path: Path, from_python: None, capsys: pytest.CaptureFixture[str]) -> None:
    objs = [tmp_path / "a.o", tmp_path / "b.o"]
    assert _overlap.run(_args(objs[0]), ["a.cu"], SHIM, lambda: 0) == 0
    assert _overlap.run(_args(objs[1]), ["b.cu"], SHIM, lambda: 2) == 0
    with pytest.raises(SystemExit) as stopped:
        _overlap.joined([str(o) for o in objs], "wheelcuda-c++")
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert "wheelcuda-c++: b.o was not made: its compile failed (exit 2)" in err
    assert "a.o was not made" not in err and f"{_overlap.VAR}=1" in err
    assert objs[0].exists() and not objs[1].exists()  # nothing half-made is left to link


def test_a_compile_that_raises_or_exits_is_still_told(tmp_path: Path,
                                                      from_python: None) -> None:
    def raises() -> int:
        raise RuntimeError("boom")

    def exits() -> int:
        raise SystemExit(3)

    a, b = tmp_path / "a.o", tmp_path / "b.o"
    assert _overlap.run(_args(a), ["a.cu"], SHIM, raises) == 0
    assert _overlap.run(_args(b), ["b.cu"], SHIM, exits) == 0
    assert _overlap.join([str(a), str(b)]) == [(str(a), "1"), (str(b), "3")]


def test_compiled_here_when_not_wanted_or_the_folder_is_not_writable(
        tmp_path: Path, from_python: None) -> None:
    seen = []
    obj = tmp_path / "a.o"
    assert _overlap.run(_args(obj), ["a.cu"], {**SHIM, _overlap.VAR: "1"},
                        lambda: seen.append(os.getpid()) or 5) == 5
    missing = tmp_path / "no-such-folder" / "a.o"
    assert _overlap.run(_args(missing), ["a.cu"], SHIM, lambda: seen.append(os.getpid()) or 6) == 6
    assert seen == [os.getpid(), os.getpid()]  # in this process, its code returned


def test_the_detached_compile_knows_its_caller(tmp_path: Path, from_python: None) -> None:
    obj, told = tmp_path / "a.o", tmp_path / "caller"

    def compile_() -> int:
        told.write_text(str(_overlap.caller()))
        return 0

    assert _overlap.caller() is None
    assert _overlap.run(_args(obj), ["a.cu"], SHIM, compile_) == 0
    assert _overlap.join([str(obj)]) == []
    assert told.read_text() == str(os.getppid())  # this process's parent: the caller's build


def test_a_host_compile_asks_later_than_a_cuda_one(tmp_path: Path, from_python: None) -> None:
    """setuptools calls the main .cpp first; the .cu after it is the longer one."""
    began = {}
    start = time.monotonic()
    for name in ("main.cpp", "kernel.cu"):
        obj = tmp_path / f"{name}.o"
        told = tmp_path / f"{name}.t"
        assert _overlap.run([*_args(obj)[:2], name, *_args(obj)[3:]], [name], SHIM,
                            lambda told=told: (told.write_text(str(time.monotonic())), 0)[1]) == 0
        began[name] = told
    assert _overlap.join([str(tmp_path / f"{n}.o") for n in began]) == []
    cpp, cu = (float(began[n].read_text()) - start for n in ("main.cpp", "kernel.cu"))
    assert cu < 0.5 and cpp >= _overlap.HOST_LAG_S, (cpp, cu)


def test_the_shim_it_looks_for_is_the_one_trees_have() -> None:
    """_overlap.py is standalone (it cannot import _rules): its copy of the name agrees."""
    from wheelcuda._rules import tree  # noqa: PLC0415

    assert os.path.basename(tree.HOST_SHIM) == _overlap.HOST_SHIM
