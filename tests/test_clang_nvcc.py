"""The clang toolkit's decisions, pure: how nvcc's words become a clang call,
what the fatbinary stand-in keeps, which clang serves. The real clang, the real CUDA 12
wheels and the builds are in tests/integration/test_clang.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from wheelcuda._sources.clang import data as clang_data
from wheelcuda._sources.clang import rules as clangfit
from wheelcuda._standalone import _clang_nvcc as cn
from wheelcuda._standalone import _fatbinary as fb
from wheelcuda._standalone._nvcc_args import Refused, translate

HOME = "/cache/homes/cu12.8-x"
#: what torch 2.9.1's ninja rule runs for a .cu (cpp_extension), with the arch pruned
TORCH_NINJA = [
    "--generate-dependencies-with-compile", "--dependency-output", "k.o.d",
    "-I/t/include", "-I/t/include/torch/csrc/api/include", "-c", "k.cu", "-o", "k.o",
    "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
    "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
    "--expt-relaxed-constexpr", "--compiler-options", "'-fPIC'", "-O3",
    "-gencode", "arch=compute_90,code=sm_90", "--split-compile", "2",
    "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=_C", "-std=c++17",
]


def clang_call(args: list[str]) -> list[str]:
    return cn.command(translate(args), "/usr/bin/clang++-22", HOME)


def test_torchs_ninja_rule_becomes_one_clang_compile() -> None:
    argv = clang_call(TORCH_NINJA)
    assert argv[0] == "/usr/bin/clang++-22"
    assert f"--cuda-path={HOME}" in argv
    assert "--cuda-gpu-arch=sm_90" in argv and "--no-cuda-include-ptx=sm_90" in argv
    assert argv[argv.index("-MD") + 1:argv.index("-MD") + 3] == ["-MF", "k.o.d"]
    # -fPIC and -O3 reach the host compile only; device code is always -O3, as nvcc's
    assert argv[argv.index("-fPIC") - 1:argv.index("-fPIC") + 1] == ["-Xarch_host", "-fPIC"]
    assert argv[argv.index("-Xarch_device"):][:2] == ["-Xarch_device", "-O3"]
    assert argv[-3:] == ["-x", "cuda", "k.cu"]
    assert "-c" in argv and argv[argv.index("-o") + 1] == "k.o"
    assert "-std=c++17" in argv and "-DTORCH_EXTENSION_NAME=_C" in argv
    assert not any("split" in a or "expt" in a for a in argv)


@pytest.mark.parametrize(("args", "sass", "ptx"), [
    (["-arch=sm_90"], ["90"], ["90"]),  # nvcc: -arch=sm_X is SASS and PTX for X
    (["-arch=compute_80"], [], ["80"]),  # -code defaults to -arch: PTX only
    (["-arch=compute_90", "-code=sm_90"], ["90"], []),
    (["-gencode=arch=compute_90a,code=sm_90a"], ["90a"], []),
    (["-gencode", "arch=compute_90,code=[sm_90,compute_90]"], ["90"], ["90"]),
    (["--generate-code=arch=compute_120,code=compute_120"], [], ["120"]),
])
def test_gpu_targets_in_each_spelling(args: list[str], sass: list[str], ptx: list[str]) -> None:
    t = translate([*args, "-c", "k.cu"])
    assert (t.sass, t.ptx) == (sass, ptx)


def test_a_cuda_compile_includes_nvccs_host_min_and_max_first() -> None:
    """Host code calling max(int, int) builds with nvcc (its crt headers declare it
    __host__ __device__) and failed with clang, whose CUDA headers give it to device code
    only: every CUDA compile includes the toolkit's header of the host ones; a host-only
    .cpp does not need it."""
    argv = cn.command(translate(["-c", "k.cu", "-arch=sm_90"]), "clang++", HOME, "/r/h.h")
    assert argv[argv.index("-include") + 1] == "/r/h.h" and argv.index("-include") < \
        argv.index("k.cu")
    assert "-include" not in cn.command(translate(["-c", "k.cpp"]), "clang++", HOME, "/r/h.h")
    assert "__attribute__((host))" in cn.HOST_MATH_TEXT  # device code keeps clang's own


def test_narrowing_in_a_braced_initializer_warns_as_with_nvcc() -> None:
    """nvcc builds `int64_t d[] = {size_t_value}` with a warning (torch-harmonics 0.8.1);
    clang makes it an error unless told otherwise: each CUDA compile tells it."""
    argv = cn.command(translate(["-c", "k.cu", "-arch=sm_90"]), "clang++", HOME)
    assert "-Wno-error=c++11-narrowing" in argv
    assert "-Wno-error=c++11-narrowing" not in cn.command(translate(["-c", "k.cpp"]),
                                                          "clang++", HOME)


def test_ptx_only_targets_keep_no_sass() -> None:
    t = translate(["-gencode", "arch=compute_90,code=compute_90", "-c", "k.cu"])
    argv = cn.command(t, "clang++", HOME)
    assert "--cuda-gpu-arch=sm_90" in argv and "--cuda-include-ptx=sm_90" in argv
    assert cn.fatbin_select(t) == ""  # fatbinary drops clang's SASS on the way to PTX


@pytest.mark.parametrize(("args", "says"), [
    (["-rdc=true", "-c", "k.cu"], "relocatable device code"),
    (["--relocatable-device-code", "true", "-c", "k.cu"], "relocatable device code"),
    (["-dc", "k.cu"], "nvlink"),
    (["-dlink", "k.o"], "nvlink"),
    (["-dlto", "-arch=sm_90", "-c", "k.cu"], "link-time optimized"),
    (["--dlink-time-opt", "-c", "k.cu"], "link-time optimized"),
    (["--cubin", "k.cu"], "--cubin"),
    (["--banana", "-c", "k.cu"], "nvcc option --banana"),
    (["-gencode", "arch=compute_80,code=sm_86", "-c", "k.cu"], "SASS for sm_86 from compute_80"),
    (["-arch=native", "-c", "k.cu"], "named archs"),
    (["-ptx", "k.cu"], "-ptx"),
    (["-x", "fortran", "k.f"], "not a language"),
    (["-ftz=maybe", "-c", "k.cu"], "not true or false"),
])
def test_what_it_does_not_translate_stops_with_the_other_toolkits(args: list[str],
                                                                   says: str) -> None:
    with pytest.raises(Refused) as exc:
        translate(args)
    assert says in exc.value.message
    assert "--toolkit redist" in exc.value.fix or "give" in exc.value.fix or \
        "name them" in exc.value.fix or "-x cu" in exc.value.fix or "true" in exc.value.fix


def test_rdc_false_and_nvcc_only_switches_are_fine() -> None:
    t = translate(["-rdc=false", "--expt-extended-lambda", "-Wno-deprecated-gpu-targets",
                   "-t", "4", "-Xcudafe", "--diag_suppress=177", "-lineinfo", "-c", "k.cu"])
    assert t.mode == "c" and t.device == ["-gline-directives-only"]


def test_fast_math_and_the_precision_switches_reach_device_code_only() -> None:
    fast = translate(["--use_fast_math", "-c", "k.cu"])
    assert "-fgpu-flush-denormals-to-zero" in fast.device
    assert "-fgpu-approx-transcendentals" in fast.device
    assert fast.device_llvm == ["-nvptx-prec-divf32=1", "-nvptx-prec-sqrtf32=0"]
    assert not fast.common
    exact = translate(["-ftz=false", "-prec-div=true", "-fmad=false", "-c", "k.cu"])
    assert exact.device == ["-fno-gpu-flush-denormals-to-zero", "-ffp-contract=off"]
    assert exact.device_llvm == ["-nvptx-prec-divf32=2"]
    argv = clang_call(["--use_fast_math", "-c", "k.cu"])
    at = argv.index("-ffp-contract=fast")
    assert argv[at - 1:at + 1] == ["-Xarch_device", "-ffp-contract=fast"]
    assert not any("gpu" in a or "fp-contract" in a
                   for a in clang_call(["--use_fast_math", "-c", "h.cpp"]))


def test_review_findings_on_the_option_reader(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(Refused, match="not one of nvcc's -Werror kinds"):
        translate(["-Werror", "-c", "k.cu"])
    assert "-Werror" in translate(["-Werror", "all-warnings,reorder", "-c", "k.cu"]).common
    fwd = translate(["-forward-unknown-to-host-compiler", "-march=native", "-mavx2", "-c",
                     "k.cu"])
    assert fwd.host == ["-march=native", "-mavx2"]
    assert translate(["-forward-unknown-to-host-linker", "-Wl,--as-needed", "k.o"]).link == [
        "-Wl,--as-needed"]
    assert translate(["-link", "k.o"]).mode == "link"  # nvcc's own -link, not -l ink
    late = translate(["a.cpp", "b.o", "-x", "cu", "-c"])
    assert late.inputs == [("a.cpp", "cuda"), ("b.o", None)]
    with pytest.raises(Refused, match="another virtual arch"):
        translate(["-arch=compute_80", "-code=sm_90", "-c", "k.cu"])
    with pytest.raises(Refused, match="link-time optimized"):
        translate(["-gencode", "arch=compute_90,code=lto_90", "-c", "k.cu"])
    split = translate(["-Xcompiler", "-O3 -Wall", "-Xcompiler", "-include,pre.h", "-c", "k.cu"])
    assert split.host == ["-O3", "-Wall"] and split.common[-2:] == ["-include", "pre.h"]
    assert "-fgpu-default-stream=legacy" in translate(["-default-stream", "null", "-c",
                                                       "k.cu"]).common
    with pytest.raises(Refused, match="two things to make at once"):
        translate(["-c", "-E", "k.cu"])
    loop = tmp_path / "loop.txt"
    loop.write_text(f"--options-file {loop}\n")
    with pytest.raises(Refused, match="includes itself"):
        translate(["--options-file", str(loop), "k.cu"])


def test_the_archs_of_this_clang_and_this_ptxas() -> None:
    t = translate(["-arch=sm_120", "-c", "k.cu"])
    with pytest.raises(Refused, match=r"sm_120 needs CUDA 12\.8 or newer"):
        cn.check_archs(t, "22.1.8", "12.6.85")
    assert "120" not in cn.arch_list("22.1.8", "12.6.85")
    assert {"120", "103", "121"} <= set(cn.arch_list("22.1.8", "12.9.86"))
    assert "103" not in cn.arch_list("22.1.8", "12.8.93")
    assert "120" not in cn.arch_list("19.1.7", "12.8.93")


def test_preprocess_and_dependencies_take_the_host_side() -> None:
    assert clang_call(["-E", "k.cu", "-o", "k.i"])[-6:-3] == ["--cuda-host-only", "-o", "k.i"]
    argv = clang_call(["-M", "k.cu", "-arch=sm_90"])
    assert "-M" in argv and "--cuda-host-only" in argv


def test_link_uses_the_shared_runtime_and_refuses_the_static_one() -> None:
    argv = clang_call(["k.o", "-o", "k", "-lfoo", "-Xlinker", "-rpath,/x"])
    assert argv[-5:] == ["-lfoo", "-Wl,-rpath", "-Wl,/x", "-lcudart", f"-Wl,-rpath,{HOME}/lib64"]
    assert f"-L{HOME}/lib64" in argv
    with pytest.raises(Refused, match="no static cudart"):
        clang_call(["k.o", "-o", "k", "--cudart", "static"])


def test_a_cpp_file_sees_the_toolkits_headers_as_with_nvcc() -> None:
    argv = clang_call(["-c", "h.cpp", "-O3"])
    assert f"-I{HOME}/include" in argv and argv[-3:] == ["-x", "c++", "h.cpp"]
    assert f"-I{HOME}/include" not in clang_call(["-c", "k.cu"])


def test_unknown_flags_go_to_the_host_when_asked() -> None:
    t = translate(["-forward-unknown-to-host-compiler", "-fopenmp", "-c", "k.cu"])
    assert t.host == ["-fopenmp"]


def test_options_file(tmp_path) -> None:  # type: ignore[no-untyped-def]
    opts = tmp_path / "o.txt"
    opts.write_text("-c -O2 '-DNAME=a b'\n")
    t = translate(["--options-file", str(opts), "k.cu"])
    assert t.mode == "c" and t.opt == "2" and "-DNAME=a b" in t.common
    with pytest.raises(Refused, match="options-file"):
        translate(["-optf", str(tmp_path / "missing"), "k.cu"])


def test_an_old_clang_names_the_clang_an_arch_needs() -> None:
    t = translate(["-arch=sm_120", "-c", "k.cu"])
    with pytest.raises(Refused) as exc:
        cn.check_archs(t, "19.1.7")
    assert "sm_120 needs clang 20 or newer" in exc.value.message
    assert "apt install clang-22" in exc.value.fix
    cn.check_archs(t, "22.1.8")


def test_version_reads_like_nvcc_and_names_clang() -> None:
    text = cn._version_text("22.1.8", "12.8.93", "abc123")
    assert "release 12.8, V12.8.93" in text
    assert "Build wheelcuda_clang_22.1.8/ptxas_12.8.93/abc123" in text


# -- fatbinary ---------------------------------------------------------------------------

def test_fatbinary_reads_both_clang_forms() -> None:
    out, images = fb.parse(["-64", "--create", "o.fatbin",
                            "--image3=kind=elf,sm=90,file=a.cubin",
                            "--image3=kind=ptx,sm=90,file=a.s",
                            "--image=profile=sm_80,file=b.cubin",
                            "--image=profile=compute_80,file=b.s"])
    assert out == "o.fatbin"
    assert [(i.kind, i.arch) for i in images] == [("elf", "90"), ("ptx", "90"), ("elf", "80"),
                                                  ("ptx", "80")]
    assert [i.arch for i in fb.select(images, "90")] == ["90", "90", "80"]
    assert fb.select(images, None) == images
    # nothing left to put in it: an error, never an empty fatbin that links and then
    # has no kernel at run time
    sass_only = [i for i in images if i.kind == "elf"]
    with pytest.raises(fb.Usage, match="the fatbin would hold no kernel"):
        fb.select(sass_only, "120")
    with pytest.raises(fb.Usage, match="no device code"):
        fb.select([], "90")


@pytest.mark.parametrize(("args", "says"), [
    (["--create", "o", "--image3=kind=lto,sm=90,file=a"], "image kind 'lto'"),
    (["--create", "o", "--image=profile=gfx90,file=a"], "neither sm_X nor compute_X"),
    (["--create", "o", "--banana"], "--banana"),
    (["--image3=kind=elf,sm=90,file=a"], "no --create"),
])
def test_fatbinary_refuses_what_it_does_not_make(args: list[str], says: str) -> None:
    with pytest.raises(fb.Usage, match=says):
        fb.parse(args)


# -- which clang -------------------------------------------------------------------------

def clang(version: str | None, path: str = "/usr/bin/clang++", *, wrappers: bool = True,
          nvptx: bool = True) -> clangfit.Clang:
    return clangfit.Clang(path, "system package", version, "/r", wrappers, nvptx)


def test_the_newest_clang_that_builds_the_archs_serves() -> None:
    fit = clangfit.fit([clang("19.1.7", "/a"), clang("22.1.8", "/b")], ["9.0"])
    assert fit.chosen is not None and fit.chosen.path == "/b"
    assert fit.passed_over == ("clang 19.1.7 (/a, system package): clang 22.1.8 (/b, system "
                               "package) comes first",)


@pytest.mark.parametrize(("c", "archs", "says"), [
    (clang("19.1.7"), ["12.0"], "cannot build sm_120 (needs clang 20 or newer)"),
    (clang("22.1.8", wrappers=False), ["9.0"], "lacks clang's CUDA wrapper headers"),
    (clang("23.1.4", nvptx=False), ["9.0"], "no NVPTX backend"),
    (clang("16.0.6"), ["9.0"], "older than clang 19"),
    (clangfit.Clang("/x", "WHEELCUDA_CLANG", None, why="does not run: no such file"), ["9.0"],
     "does not run"),
])
def test_why_a_clang_does_not_serve(c: clangfit.Clang, archs: list[str], says: str) -> None:
    fit = clangfit.fit([c], archs)
    assert fit.chosen is None and says in fit.why
    assert "apt install clang-22" in fit.fix


def test_named_then_the_index_in_the_store_then_the_systems_then_the_index_to_fetch() -> None:
    system = clang("22.1.8", "/usr/bin/clang++-22")
    stored = clangfit.Clang("/s/clang++", "package index", "22.1.8", "/r", True, True, rank=1)
    to_fetch = clangfit.Clang("/f/clang++", "package index, to fetch", "22.1.8", "/r", True,
                              True, rank=3, fetch=True)
    named = clangfit.Clang("/n/clang++", "WHEELCUDA_CLANG", "19.1.7", "/r", True, True, rank=0)
    assert clangfit.fit([system, to_fetch], ["12.0"]).chosen == system
    assert clangfit.fit([stored, system, to_fetch], ["12.0"]).chosen == stored
    assert clangfit.fit([to_fetch], ["12.0"]).chosen == to_fetch
    assert clangfit.fit([named, system], ["9.0"]).chosen == named
    # a clang that cannot build the archs gives way to the one to fetch
    assert clangfit.fit([clang("19.1.7"), to_fetch], ["12.0"]).chosen == to_fetch


def test_no_clang_names_the_package_to_install() -> None:
    fit = clangfit.fit([], ["12.0"])
    assert fit.why == "no clang 20 or newer with CUDA support was found"
    assert fit.fix.startswith("apt install clang-22")
    off = clangfit.fit([clang("22.1.8")], ["9.0"], off=True)
    assert off.chosen is None and "WHEELCUDA_CLANG=none" in off.why


def test_which_clang_each_arch_needs() -> None:
    assert clang_data.clang_for("9.0") == 19 and clang_data.clang_for("12.0") == 20
    assert clang_data.clang_for("10.0a") == 20 and clang_data.clang_for("12.1") == 21
    # pinned where the release is known (the key names ptxas before the fetch)
    assert clang_data.requirements("12.8")[:1] == ["nvidia-cuda-nvcc-cu12==12.8.93"]
    assert clang_data.requirements("12.7")[:1] == ["nvidia-cuda-nvcc-cu12==12.7.*"]
    assert clang_data.ptxas_version("12.9") == "12.9.86" and not clang_data.ptxas_version("12.7")


@pytest.mark.parametrize(("args", "says"), [
    (["-Xcompiler", "'-fPIC", "-c", "k.cu"], "No closing quotation"),
    (["@opts", "-c", "k.cu"], "takes no @file"),
    (["-c", "K.CU"], "a .CU file"),
    (["-c", "k.cuh"], "a .cuh file"),
    (["-c", "k.c++"], "a .c++ file"),
    (["-c", "k.ptx"], ".ptx input is device code"),
    (["k.cubin", "-o", "k"], ".cubin input is device code"),
    (["-O", "-c", "k.cu"], "-O -c: not an optimization level"),
])
def test_nvcc_s_own_answers_or_a_clear_refusal(args: list[str], says: str) -> None:
    """What nvcc 13.0 does with each, measured: @opts is an input file to it; K.CU, k.cuh
    and k.c++ are "Don't know what to do with"; .ptx takes NVIDIA's ptxas; `-O -c` is
    "'-c': expected a number". Each was once a different build under clang."""
    with pytest.raises(Refused, match=re.escape(says)):
        translate(args)


def test_an_options_file_that_cannot_be_read_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    unbalanced = tmp_path / "unbalanced"
    unbalanced.write_text("-DX 'open\n")
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe-DX\n")
    with pytest.raises(Refused, match="No closing quotation"):
        translate(["--options-file", str(unbalanced), "-c", "k.cu"])
    with pytest.raises(Refused, match="not UTF-8"):
        translate(["--options-file", str(binary), "-c", "k.cu"])


def test_comma_lists_as_nvcc_reads_them() -> None:
    """nvcc 13.0 --dryrun: -DPAIR=a,b is -D "PAIR=a" -D "b"; -I, -U, -isystem, -include,
    -L and -l split the same way. -x cu takes any suffix, as nvcc does."""
    t = translate(["-DPAIR=a,b", "-I/i1,/i2", "-Ua,b", "-isystem", "/s1,/s2", "-L/l1,/l2",
                   "-lfoo,bar", "-x", "cu", "-c", "K.CU"])
    assert t.common == ["-DPAIR=a", "-Db", "-I/i1", "-I/i2", "-Ua", "-Ub",
                        "-isystem", "/s1", "-isystem", "/s2"]
    assert t.link == ["-L/l1", "-L/l2", "-lfoo", "-lbar"]
    assert t.inputs == [("K.CU", "cuda")]
    assert translate(["k.o", "libx.so.1", "noext", "-o", "k"]).mode == "link"


def test_a_clang_that_is_gone_is_said_at_the_first_question(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The clang toolkit's nvcc answered ``--version`` from its variables, so a tree whose
    clang was removed passed torch's and CMake's first question (and doctor's), and
    failed only at the first compile. It now says so at once, exit 1."""
    monkeypatch.setenv("WHEELCUDA_CLANG", str(tmp_path / "gone" / "clang++"))
    monkeypatch.setenv("WHEELCUDA_CLANG_VERSION", "22.1.1")
    monkeypatch.setenv("WHEELCUDA_PTXAS_VERSION", "12.8.93")
    monkeypatch.setattr("sys.argv", ["nvcc", "--version"])
    with pytest.raises(SystemExit) as stopped:
        cn.main()
    assert stopped.value.code == 1
    err = capsys.readouterr().err
    assert f"cannot run {tmp_path}/gone/clang++: it is not there" in err and "fix:" in err
    here = tmp_path / "clang++"
    here.write_text("#!/bin/sh\n")
    here.chmod(0o755)
    monkeypatch.setenv("WHEELCUDA_CLANG", str(here))
    cn.main()
    assert "release 12.8" in capsys.readouterr().out
