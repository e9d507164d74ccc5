"""The clang toolkit's ``bin/nvcc``: nvcc's command language, compiled by clang.

Standalone on purpose, like _nvcc_wrapper: a tree's ``bin/.nvcc-real`` leads here through
a sh trampoline that runs it on wheelcuda's Python with ``-I -S``, so it imports nothing
but the standard library. The trampoline sets ``WHEELCUDA_CLANG`` (the clang++ to run),
``WHEELCUDA_CLANG_VERSION`` and ``WHEELCUDA_PTXAS_VERSION`` (for ``--version``) and
``WHEELCUDA_NVCC_HERE`` (the path it was invoked through: the tree is the folder above
its ``bin``, as ``TOP = $(_HERE_)/..`` in nvcc.profile).

Why: no CUDA 12 wheel holds nvcc, cicc or cudafe++ (12.1 to 12.9 looked at), but they hold ptxas,
libdevice, the headers and libnvfatbin; clang compiles CUDA itself from those
(``--cuda-path``), with the tree's ``bin/fatbinary`` (_fatbinary.py) in place of NVIDIA's.

What it translates: the forms torch's cpp_extension, setuptools recipes and the packages
wheelcuda knows use to compile (``-c``, ``-E``, ``-M``, dependency output, ``-gencode`` /
``-arch`` / ``-code``, ``-Xcompiler``, ``-Xptxas``, the math switches, ``--version``) and to
link without device linking. Anything else (``-rdc``, ``-dlink``, an unknown option)
stops with a message naming it and the other toolkits: it never silently does something
else. Mapping choices that differ from nvcc are listed in docs/clang.md.
"""

from __future__ import annotations

import os
import shlex
import sys

try:
    from . import _nvcc_table as _table
    from ._nvcc_args import Refused, Translation, translate
except ImportError:  # run as a script from the clang toolkit's folder, beside it
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _nvcc_table as _table  # type: ignore[import-not-found,no-redef]
    from _nvcc_args import Refused, Translation, translate  # type: ignore[import-not-found,no-redef]

ARCHS, CLANG_FOR_ARCH, OTHERS = _table.ARCHS, _table.CLANG_FOR_ARCH, _table.OTHERS
PTXAS_FOR_ARCH = _table.PTXAS_FOR_ARCH

#: Where the clang toolkit keeps :data:`HOST_MATH_TEXT`, beside this script.
HOST_MATH = "host_math.h"
#: What nvcc's crt/math_functions.hpp declares __host__ __device__ that neither clang's
#: CUDA headers (device code only) nor the host's <cmath> give host code: min and max of
#: every arithmetic pair nvcc has, and sincos(float, float*, float*). Host code in a .cu
#: calling max(int, int) built with nvcc and failed on the clang route ("no matching
#: function for call to 'max'": pytorch-fast-transformers 0.4.0, cluster_cuda.cu:292).
#: The class, checked: a host call of each of that header's 53 other __host__ __device__
#: overloads (exp2(float), rsqrt(float), erfinv(float), copysign(double, float), ...),
#: compiled and linked by nvcc 13.0 and by the clang toolkit (clang 22, CUDA 12.8
#: headers); only sincos(float) differed. Host-only here: clang lets a __host__ function
#: overload a __device__ one of the same signature, so device code keeps clang's own.
#: Each returns what nvcc's does (checked: the same results from nvcc 13.0 and from
#: clang 22 with this, on int, unsigned, long long, unsigned long, float and double,
#: mixed signedness and width; sincos through the compiler's own builtin, as glibc's
#: sincosf is declared only once <math.h> is, after this header).
HOST_MATH_TEXT = """#pragma once
#if defined(__cplusplus) && defined(__CUDA__)
#define WCU_HOST_FN_ static inline __attribute__((host))
#define WCU_MINMAX_(R, A, B) \\
  WCU_HOST_FN_ R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; } \\
  WCU_HOST_FN_ R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
WCU_MINMAX_(int, int, int)
WCU_MINMAX_(unsigned int, unsigned int, unsigned int)
WCU_MINMAX_(unsigned int, int, unsigned int)
WCU_MINMAX_(unsigned int, unsigned int, int)
WCU_MINMAX_(long, long, long)
WCU_MINMAX_(unsigned long, unsigned long, unsigned long)
WCU_MINMAX_(unsigned long, long, unsigned long)
WCU_MINMAX_(unsigned long, unsigned long, long)
WCU_MINMAX_(long long, long long, long long)
WCU_MINMAX_(unsigned long long, unsigned long long, unsigned long long)
WCU_MINMAX_(unsigned long long, long long, unsigned long long)
WCU_MINMAX_(unsigned long long, unsigned long long, long long)
WCU_MINMAX_(float, float, float)
WCU_MINMAX_(double, double, double)
WCU_MINMAX_(double, float, double)
WCU_MINMAX_(double, double, float)
WCU_HOST_FN_ void sincos(float a, float *s, float *c) { __builtin_sincosf(a, s, c); }
#undef WCU_MINMAX_
#undef WCU_HOST_FN_
#endif
"""


def clang_major(version: str) -> int:
    try:
        return int(version.split(".", maxsplit=1)[0])
    except ValueError:
        return 0


def _release(version: str) -> tuple[int, int]:
    try:
        major, minor = version.split(".")[:2]
        return int(major), int(minor)
    except ValueError:
        return (0, 0)


def check_archs(t: Translation, version: str, ptxas: str = "") -> None:
    """Stop before clang does, naming the clang (or the CUDA release) an arch needs."""
    major = clang_major(version)
    for number in dict.fromkeys(t.sass + t.ptx):
        cuda = PTXAS_FOR_ARCH.get(number.rstrip("af"))
        if ptxas and cuda and _release(ptxas) < cuda:
            raise Refused(f"sm_{number} needs CUDA {cuda[0]}.{cuda[1]} or newer; this "
                          f"toolkit's ptxas is {ptxas}", "a torch built with a newer CUDA 12 "
                          "(cu128 for sm_120), or ask for another arch")
        need = CLANG_FOR_ARCH.get(number.rstrip("af"), 0)
        if major and need and major < need:
            raise Refused(f"sm_{number} needs clang {need} or newer; this toolkit's clang is "
                          f"{version}", f"install clang-{max(need, 22)} (apt install "
                          f"clang-{max(need, 22)}) and run wheelcuda again, or use {OTHERS}")
        if number.endswith("f"):
            raise Refused(f"sm_{number}: family-specific archs need CUDA 12.9's nvcc",
                          f"ask for sm_{number[:-1]}, or use {OTHERS}")


def command(t: Translation, clang: str, home: str,  # noqa: PLR0912
            host_math: str | None = None) -> list[str]:
    """The clang call for ``t`` (pure); ``host_math``: the header of nvcc's host
    min/max (:data:`HOST_MATH_TEXT`), included before the sources of a CUDA compile."""
    cuda_inputs = [p for p, lang in t.inputs if lang == "cuda"]
    argv = [clang]
    if cuda_inputs or t.mode in ("E", "M", "MM"):
        # --no-offload-new-driver: clang 22 links CUDA objects through clang-linker-wrapper
        # by default, which a clang without it (ziglang's) cannot run; the fatbin is
        # embedded at compile time, as nvcc does
        argv += [f"--cuda-path={home}", "-Wno-unknown-cuda-version", "--no-cuda-version-check",
                 "--no-offload-new-driver"]
        # nvcc warns on a narrowing conversion in a braced initializer (#2361-D, #69-D),
        # and its host compiler (GCC) on a non-constant one; clang makes both an error by
        # default: torch-harmonics 0.8.1 (attention_cuda_fwd.cu:555, `int64_t d[] =
        # {size_t...}`) built with nvcc and failed on the clang route. Checked: clang 22
        # with this warns where nvcc 13.0 warns, on the constant and the variable form.
        argv.append("-Wno-error=c++11-narrowing")
        sass = t.sass or (["52"] if not t.ptx else [])
        ptx = t.ptx if (t.sass or t.ptx) else ["52"]
        for number in dict.fromkeys(sass + ptx):
            argv.append(f"--cuda-gpu-arch=sm_{number}")
            argv.append(f"--{'' if number in ptx else 'no-'}cuda-include-ptx=sm_{number}")
        if t.device_debug:
            argv += ["--cuda-noopt-device-debug", "-Xarch_device", "-g"]
        else:  # nvcc optimizes device code at -O3 whatever -O the host gets
            argv += ["-Xarch_device", "-O3"]
        if t.opt is not None:
            argv += ["-Xarch_host", f"-O{t.opt}"]
        argv += [w for d in t.device for w in ("-Xarch_device", d)]
        # NVPTX's own switches: unknown to no LLVM target, used by the device's only
        argv += [w for o in t.device_llvm for w in ("-mllvm", o)]
        argv += [w for h in t.host for w in ("-Xarch_host", h)]
        if host_math:
            argv += ["-include", host_math]
    else:
        if t.opt is not None:
            argv.append(f"-O{t.opt}")
        argv += t.host
    argv += t.common
    if any(lang not in (None, "cuda") for _, lang in t.inputs):
        # nvcc.profile's INCLUDES: a .cpp nvcc compiles sees the toolkit's headers too
        argv.append(f"-I{os.path.join(home, 'include')}")
    if t.mode == "E":
        argv += ["-E", "--cuda-host-only"]
    elif t.mode in ("M", "MM"):
        argv += [f"-{t.mode}", "--cuda-host-only"]
    elif t.mode == "c":
        argv.append("-c")
    argv += t.depfile
    if t.out is not None:
        argv += ["-o", t.out]
    current: str | None = None
    for path, lang in t.inputs:
        if lang != current:
            argv += ["-x", lang or "none"]
            current = lang
        argv.append(path)
    if t.mode == "link":
        argv += [f"-L{os.path.join(home, 'lib64')}", *t.link]
        if t.cudart == "shared":
            # nvcc links cudart statically by default: a program it links runs anywhere;
            # the wheels hold only libcudart.so.12, so the program is told where it is
            argv += ["-lcudart", f"-Wl,-rpath,{os.path.join(home, 'lib64')}"]
        elif t.cudart == "static":
            raise Refused("nvcc --cudart static: the CUDA 12 wheels hold no static cudart",
                          f"--cudart shared, or use {OTHERS}")
    return argv


#: The sccache the tree's nvcc wrapper asks this compile to run clang through (set by the
#: wrapper for a compile call while WHEELCUDA_COMPILE_CACHE is on).
CACHE_PROGRAM_VAR = "WHEELCUDA_CACHE_PROGRAM"


def cached(argv: list[str], t: Translation, cache: str, sass: str) -> tuple[str, list[str]]:
    """The program to run and its argv: clang itself, or, for a compile (``-c``) with a
    cache named, sccache with clang (sccache caches ``clang -x cuda`` as a C-family
    compile). What the tree's fatbinary keeps (WHEELCUDA_FATBIN_SASS) reaches it through
    the environment, which sccache does not hash, while clang's own arguments can be the
    same for SASS and PTX as for PTX alone: it goes into the arguments as a debug prefix
    map that matches no path, so it is in the key and changes nothing clang writes
    (pure)."""
    if not cache or t.mode != "c":
        return argv[0], argv
    return cache, [cache, *argv, f"-fdebug-prefix-map=/wheelcuda-fatbin-sass={sass or '-'}"]


def fatbin_select(t: Translation) -> str:
    """What the tree's fatbinary keeps: SASS only for the archs asked (clang makes SASS
    for every arch it compiles, also one asked only as PTX)."""
    sass = t.sass or (["52"] if not t.ptx else [])
    return ",".join(sass)


def _version_text(clang_version: str, ptxas_version: str, ident: str = "") -> str:
    """nvcc's banner; the last line says what compiles: clang's version, ptxas's, and
    ``ident``, a digest of the clang's path and resource folder and of these scripts
    (the wheel cache keys builds by it)."""
    release = ".".join(ptxas_version.split(".")[:2])
    return (f"nvcc: wheelcuda's clang-based nvcc (clang {clang_version} over NVIDIA's "
            "CUDA 12 wheels)\n"
            f"Cuda compilation tools, release {release}, V{ptxas_version}\n"
            f"Build wheelcuda_clang_{clang_version}/ptxas_{ptxas_version}"
            f"{'/' + ident if ident else ''}\n")


def arch_list(version: str, ptxas: str) -> list[str]:
    """The archs both this clang and this ptxas build (pure)."""
    major, release = clang_major(version), _release(ptxas)
    return [n for n in ARCHS if major >= CLANG_FOR_ARCH.get(n.rstrip("a"), 0)
            and release >= PTXAS_FOR_ARCH.get(n.rstrip("a"), (0, 0))]


def _arch_list(version: str, ptxas: str, prefix: str) -> str:
    return "".join(f"{prefix}_{n}\n" for n in arch_list(version, ptxas))


def main() -> None:
    args = sys.argv[1:]
    clang = os.environ.get("WHEELCUDA_CLANG", "")
    clang_version = os.environ.get("WHEELCUDA_CLANG_VERSION", "")
    ptxas_version = os.environ.get("WHEELCUDA_PTXAS_VERSION", "")
    here = os.environ.get("WHEELCUDA_NVCC_HERE") or sys.argv[0]
    home = os.path.dirname(os.path.dirname(os.path.abspath(here)))
    try:
        t = translate(args)
        if t.mode != "help" and not os.access(clang, os.X_OK):
            # said at once, --version included (torch and CMake ask it first), not at the
            # first compile: the clang this tree was made with was removed
            raise Refused(f"cannot run {clang}: it is not there (or not executable)",
                          "make the tree again (`wheelcuda env --toolkit clang`, or "
                          "`wheelcuda uv-config --write FILE` for uv's settings): it fetches "
                          "the clang toolkit")
        if t.mode == "version":
            sys.stdout.write(_version_text(clang_version, ptxas_version,
                                           os.environ.get("WHEELCUDA_CLANG_ID", "")))
            return
        if t.mode == "help":
            sys.stdout.write(__doc__ or "")
            return
        if t.mode in ("list-arch", "list-code"):
            sys.stdout.write(_arch_list(clang_version, ptxas_version,
                                        "compute" if t.mode == "list-arch" else "sm"))
            return
        if not t.inputs:
            raise Refused("nvcc: no input files", "name a .cu file")
        if not os.path.exists(os.path.join(home, "include", "cuda.h")):
            raise Refused(f"nvcc: {home} is not a CUDA_HOME (no include/cuda.h)",
                          "run it as $CUDA_HOME/bin/nvcc of a tree wheelcuda made "
                          "(eval \"$(wheelcuda env --toolkit clang)\")")
        check_archs(t, clang_version, ptxas_version)
        header = os.path.join(os.path.dirname(os.path.abspath(__file__)), HOST_MATH)
        argv = command(t, clang, home, header if os.path.isfile(header) else None)
    except Refused as exc:
        sys.stderr.write(f"nvcc (wheelcuda, clang toolkit): error: {exc.message}\n"
                         f"  fix: {exc.fix}\n")
        sys.exit(1)
    env = dict(os.environ)
    env["WHEELCUDA_FATBIN_SASS"] = fatbin_select(t)
    program, argv = cached(argv, t, env.pop(CACHE_PROGRAM_VAR, ""), env["WHEELCUDA_FATBIN_SASS"])
    if t.verbose:
        sys.stderr.write("#$ " + " ".join(shlex.quote(a) for a in argv) + "\n")
    try:
        os.execve(program, argv, env)  # noqa: S606 - argv list
    except OSError as exc:
        sys.stderr.write(f"nvcc (wheelcuda, clang toolkit): error: cannot run {clang}: "
                         f"{exc.strerror}\n  fix: wheelcuda doctor --toolkit clang says "
                         "which clang it found\n")
        sys.exit(1)


if __name__ == "__main__":
    main()
