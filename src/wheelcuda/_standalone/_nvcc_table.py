"""nvcc's options as data: every spelling of each, what takes a value, which values are
nvcc's own; and the archs each clang and ptxas release knows.

Standalone: copied beside the programs that read it, flat (into a tree's ``bin/`` for
the nvcc wrapper and _progress, into the clang toolkit for _nvcc_args and _clang_nvcc),
so the standard library alone. _sources/clang/data.py takes the arch table from here.
"""

from __future__ import annotations

#: Options that take a value (as the next word, ``=value``, or for the one-letter ones
#: glued on: ``-Ifoo``): meaning, then every spelling nvcc takes.
_VALUED_TEXT = """
o -o --output-file
I -I --include-path
D -D --define-macro
U -U --undefine-macro
L -L --library-path
l -l --library
isystem -isystem --system-include
include -include --pre-include
x -x --x
std -std --std
ccbin -ccbin --compiler-bindir
Xcompiler -Xcompiler --compiler-options
Xptxas -Xptxas --ptxas-options
Xlinker -Xlinker --linker-options
Xnvlink -Xnvlink --nvlink-options
Xfatbin -Xfatbin --fatbin-options
Xcudafe -Xcudafe
Xarchive -Xarchive --archive-options
gencode -gencode --generate-code
arch -arch --gpu-architecture
code -code --gpu-code
threads -t --threads
split -split-compile --split-compile
MF -MF --dependency-output
MT -MT --dependency-target-name
rdc -rdc --relocatable-device-code
ftz -ftz --ftz
prec-div -prec-div --prec-div
prec-sqrt -prec-sqrt --prec-sqrt
fmad -fmad --fmad
maxrregcount -maxrregcount --maxrregcount
cudart -cudart --cudart
ignore -keep-dir --keep-dir -odir --output-directory -diag-suppress --diag-suppress -diag-warn
ignore --diag-warn -diag-error --diag-error -dopt --dopt
Werror -Werror --Werror
default-stream -default-stream --default-stream
optf -optf --options-file
m -m --machine
O -O --optimize
"""
GLUED = ("-I", "-D", "-U", "-L", "-l", "-o", "-O", "-m", "-x")
#: host options whose value is the next word (-Xcompiler -include,foo.h)
PAIRED = ("-include", "-isystem", "-I", "-D", "-U", "-iquote", "-idirafter", "-imacros")
LEVELS = ("0", "1", "2", "3", "s", "z", "fast", "g")
#: nvcc's -Werror kinds
WERROR = ("all-warnings", "cross-execution-space-call", "reorder", "default-stream-launch",
           "missing-launch-bounds", "ext-lambda-captures-this", "deprecated-declarations")
#: Options without a value: meaning, then spellings. "ignore": what clang does anyway
#: (relaxed constexpr, lambdas), or only the cost or diagnostics of nvcc's own steps;
#: "dc" (a relocatable device object) and "rdc-mode": relocatable device code and
#: device linking, which need nvlink; "dlto": device link-time optimization.
_FLAGS_TEXT = """
c -c --compile
ignore -link --link
E -E --preprocess
M -M --generate-dependencies
MM -MM --generate-nonsystem-dependencies
MD -MD --generate-dependencies-with-compile
MMD -MMD --generate-nonsystem-dependencies-with-compile
MP -MP --generate-dependency-targets
shared -shared --shared
g -g --debug
G -G --device-debug
lineinfo -lineinfo --generate-line-info
fast -use_fast_math --use_fast_math
res-usage -res-usage --resource-usage
w -w --disable-warnings
v -v --verbose
version -V --version
help -h --help
list-arch -list-gpu-arch --list-gpu-arch
list-code -list-gpu-code --list-gpu-code
forward -forward-unknown-to-host-compiler --forward-unknown-to-host-compiler
forward-link -forward-unknown-to-host-linker --forward-unknown-to-host-linker
ignore -expt-relaxed-constexpr --expt-relaxed-constexpr -expt-extended-lambda
ignore --expt-extended-lambda -extended-lambda --extended-lambda -Wno-deprecated-gpu-targets
ignore --Wno-deprecated-gpu-targets -allow-unsupported-compiler --allow-unsupported-compiler
ignore -keep --keep -save-temps --save-temps -extra-device-vectorization
ignore --extra-device-vectorization -restrict --restrict -display-error-number
ignore --display-error-number -no-display-error-number --no-display-error-number -Wreorder
ignore -Wdefault-stream-launch -Wext-lambda-captures-this -Wmissing-launch-bounds
host -Wno-deprecated-declarations --Wno-deprecated-declarations
werror-all -Werror=all-warnings
dc -dc --device-c
rdc-mode -dw --device-w -dlink --device-link
dlto -dlto --dlink-time-opt
ptx -ptx --ptx
cubin -cubin --cubin
unsupported -lib --lib -fatbin --fatbin -run --run -dryrun --dryrun -m32
"""


def _table(text: str) -> dict[str, str]:
    return {word: line.split()[0] for line in text.strip().splitlines()
            for word in line.split()[1:]}


VALUED = _table(_VALUED_TEXT)
FLAGS = _table(_FLAGS_TEXT)


def spellings(*meanings: str) -> tuple[str, ...]:
    """Every spelling nvcc takes for each of ``meanings``, valued or not: ``"arch"`` ->
    ``("-arch", "--gpu-architecture")`` (pure)."""
    return tuple(word for meaning in meanings for table in (VALUED, FLAGS)
                 for word, m in table.items() if m == meaning)


#: What nvcc 13.0 compiles by its suffix without -x (``K.CU``, ``k.cuh``, ``k.c++`` and
#: ``K.C`` are "Don't know what to do with"); objects and libraries are linked.
CUDA_SOURCES = (".cu",)
C_SOURCES = {".c": "c", ".cpp": "c++", ".cc": "c++", ".cxx": "c++",
             ".i": "c++-cpp-output", ".ii": "c++-cpp-output"}
#: NVIDIA's device code, which only its ptxas, nvlink and fatbinary take
DEVICE_CODE = (".ptx", ".cubin", ".fatbin", ".optixir")
#: nvcc's true/false switches: (Translation list, the flag for true, for false)
SWITCHES = {"ftz": ("device", "-fgpu-flush-denormals-to-zero",
                    "-fno-gpu-flush-denormals-to-zero"),
            "prec-div": ("device_llvm", "-nvptx-prec-divf32=2", "-nvptx-prec-divf32=1"),
            "prec-sqrt": ("device_llvm", "-nvptx-prec-sqrtf32=1", "-nvptx-prec-sqrtf32=0"),
            "fmad": ("device", "-ffp-contract=fast", "-ffp-contract=off")}
OTHERS = ("the toolkit from NVIDIA's archives (--toolkit redist) or one on this "
           "machine (--toolkit local)")
#: The lowest clang major that compiles each arch, by its number less any ``a``/``f``
#: (clang's ``Cuda.cpp``; checked: clang 19 stops at sm_90a, clang 22 builds sm_120).
#: Archs not listed: any clang the toolkit takes (_sources/clang/data.py MIN_MAJOR).
CLANG_FOR_ARCH = {"100": 20, "101": 20, "120": 20, "103": 21, "121": 21, "110": 21}
#: The lowest ptxas (CUDA release) that knows each arch; older ones know all the rest
#: down to sm_50 (sm_120 needs 12.8; sm_103 and sm_121 need nvcc 13.0, ptxas 12.9).
PTXAS_FOR_ARCH = {"100": (12, 8), "101": (12, 8), "120": (12, 8), "103": (12, 9),
                  "121": (12, 9)}
#: Every arch the clang toolkit may name, oldest first.
ARCHS = ("50", "52", "53", "60", "61", "62", "70", "72", "75", "80", "86", "87", "89", "90",
         "90a", "100", "100a", "101", "101a", "103", "103a", "120", "120a", "121", "121a")
#: (compiled when used: re.match caches it, and a compile's start pays for no other)
PAIR = r"^arch=(compute|sm)_(\w+),code=\[?([\w,]+)\]?$"
