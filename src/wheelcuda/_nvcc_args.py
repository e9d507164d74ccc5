"""nvcc's command language, read: which files, which GPU targets, which flags for the
host, the device and the link (issue 20). Pure; standalone like _clang_nvcc, which
turns a :class:`Translation` into a clang call. Forms it does not carry out raise
:class:`Refused`, naming the option and the other toolkits.
"""

from __future__ import annotations

import os
import re
import shlex

__all__ = ["CLANG_FOR_ARCH", "OTHERS", "Refused", "Translation", "translate"]

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
_GLUED = ("-I", "-D", "-U", "-L", "-l", "-o", "-O", "-m", "-x")
#: Options without a value: meaning, then spellings. "ignore": what clang does anyway
#: (relaxed constexpr, lambdas), or only the cost or diagnostics of nvcc's own steps;
#: "rdc-mode": relocatable device code and device linking, which need nvlink.
_FLAGS_TEXT = """
c -c --compile
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
rdc-mode -dc --device-c -dw --device-w -dlink --device-link
unsupported -lib --lib -ptx --ptx -cubin --cubin -fatbin --fatbin -run --run -dryrun --dryrun -m32
"""


def _table(text: str) -> dict[str, str]:
    return {word: line.split()[0] for line in text.strip().splitlines()
            for word in line.split()[1:]}


_VALUED = _table(_VALUED_TEXT)
_FLAGS = _table(_FLAGS_TEXT)
_CUDA_SOURCES = (".cu", ".cuh")
_C_SOURCES = {".c": "c", ".cpp": "c++", ".cc": "c++", ".cxx": "c++", ".c++": "c++",
              ".C": "c++", ".i": "c++-cpp-output", ".ii": "c++-cpp-output"}
OTHERS = ("the toolkit from NVIDIA's archives (--toolkit redist) or one on this "
           "machine (--toolkit local)")
#: The lowest clang major that knows each arch (clang's Cuda.cpp; FACTS.md).
CLANG_FOR_ARCH = {"100": 20, "101": 20, "120": 20, "103": 21, "121": 21, "110": 21}
_PAIR = re.compile(r"^arch=(compute|sm)_(\w+),code=\[?([\w,]+)\]?$")


class Refused(Exception):
    """An nvcc form this translator does not carry out: what, and the fix."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix


class Translation:
    """What one nvcc call asks, read from its words."""

    def __init__(self) -> None:
        self.mode = "link"  # c, E, M, MM, link, version, help, list-arch, list-code
        self.inputs: list[tuple[str, str | None]] = []  # (path, language or None)
        self.language: str | None = None
        self.out: str | None = None
        self.common: list[str] = []  # to clang for every job
        self.host: list[str] = []  # to the host compile only
        self.device: list[str] = []  # to the device compile only
        self.link: list[str] = []  # to the link only
        self.sass: list[str] = []  # sm_X to make SASS for
        self.ptx: list[str] = []  # sm_X to carry PTX for
        self.opt: str | None = None
        self.device_debug = False
        self.forward = False
        self.cudart = "shared"
        self.depfile: list[str] = []
        self.verbose = False


def _value_of(word: str) -> tuple[str, str | None] | None:
    """(name, glued value or None) for a valued option word, else None."""
    if word in _VALUED:
        return _VALUED[word], None
    if "=" in word:
        key, _, value = word.partition("=")
        if key in _VALUED:
            return _VALUED[key], value
    for short in _GLUED:
        if word.startswith(short) and len(word) > len(short) and word not in _FLAGS:
            return _VALUED[short], word[len(short):]
    return None


def _unquote(value: str) -> str:
    """nvcc takes ``'-fPIC'`` (torch's ninja file quotes -Xcompiler values)."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def _items(value: str) -> list[str]:
    return [_unquote(v.strip()) for v in value.split(",") if v.strip()]


def _expand(args: list[str]) -> list[str]:
    """``--options-file F`` replaced by the words F holds."""
    out: list[str] = []
    words = iter(args)
    for word in words:
        valued = _value_of(word)
        if valued and valued[0] == "optf":
            path = valued[1] if valued[1] is not None else next(words, "")
            try:
                with open(path, encoding="utf-8") as f:
                    out += _expand(shlex.split(f.read()))
            except OSError as exc:
                raise Refused(f"nvcc --options-file {path}: {exc.strerror}",
                              "name a file that exists") from None
        else:
            out.append(word)
    return out


def _arch_number(name: str) -> str:
    """``sm_90a`` / ``compute_90a`` / ``90`` -> ``90a``."""
    return name.split("_", 1)[1] if "_" in name else name


def _targets(t: Translation, kind: str, value: str, arch_seen: list[str]) -> None:
    """Record what -gencode / -arch / -code ask for."""
    if kind == "gencode":
        m = _PAIR.match(value.replace(" ", ""))
        if not m:
            raise Refused(f"nvcc -gencode {value}: not the arch=compute_X,code=sm_X form",
                          "write it as -gencode arch=compute_90,code=sm_90")
        virtual = m.group(2)
        for code in m.group(3).split(","):
            number = _arch_number(code)
            if code.startswith("compute_"):
                t.ptx.append(number)
            elif number != virtual:
                raise Refused(
                    f"nvcc -gencode {value}: SASS for sm_{number} from compute_{virtual} "
                    "(clang compiles each arch from its own virtual arch)",
                    f"ask for arch=compute_{number},code=sm_{number}, or use {OTHERS}")
            else:
                t.sass.append(number)
    elif kind == "arch":
        for a in _items(value):
            if a in ("native", "all", "all-major"):
                raise Refused(f"nvcc -arch={a}: the clang toolkit takes named archs",
                              "name them (-arch=sm_90), or let wheelcuda pick yours "
                              "(wheelcuda env sets WHEELCUDA_ARCHS)")
            arch_seen.append(a)
    else:  # code
        for c in _items(value):
            number = _arch_number(c)
            (t.ptx if c.startswith("compute_") else t.sass).append(number)


def translate(args: list[str]) -> Translation:  # noqa: PLR0912
    """Read an nvcc call (pure)."""
    t = Translation()
    args = _expand(args)
    arch_seen: list[str] = []
    code_given = False
    words = iter(args)
    for word in words:
        if not word.startswith("-") or word == "-":
            lang = t.language
            suffix = os.path.splitext(word)[1]
            if lang is None and suffix in _CUDA_SOURCES:
                lang = "cuda"
            elif lang is None and suffix in _C_SOURCES:
                lang = _C_SOURCES[suffix]
            t.inputs.append((word, lang))
            continue
        if word in _FLAGS:
            _flag(t, _FLAGS[word], word)
            continue
        valued = _value_of(word)
        if valued is None:
            if t.forward and word.startswith("-"):
                t.host.append(word)
                continue
            raise Refused(f"nvcc option {word}: the clang toolkit does not translate it",
                          f"leave it out, or build with {OTHERS}")
        name, value = valued
        if value is None:
            value = next(words, None)
            if value is None:
                raise Refused(f"nvcc option {word} needs a value", f"give one: {word} VALUE")
        if name in ("gencode", "arch", "code"):
            code_given |= name == "code"
            _targets(t, name, value, arch_seen)
        else:
            _valued(t, name, value, word)
    if arch_seen and not code_given:
        # -arch=sm_X alone: SASS and PTX for X; -arch=compute_X alone: PTX (nvcc's -code
        # defaults to -arch); with -code, -arch only names the virtual arch of the codes
        for a in arch_seen:
            if not a.startswith("compute_"):
                t.sass.append(_arch_number(a))
            t.ptx.append(_arch_number(a))
    t.sass = list(dict.fromkeys(t.sass))
    t.ptx = list(dict.fromkeys(t.ptx))
    return t


def _flag(t: Translation, meaning: str, word: str) -> None:  # noqa: PLR0912
    if meaning in ("c", "E", "M", "MM", "version", "help", "list-arch", "list-code"):
        if t.mode == "link" or meaning in ("version", "help"):
            t.mode = meaning
    elif meaning in ("MD", "MMD", "MP"):
        t.depfile.append(f"-{meaning}")
    elif meaning == "shared":
        t.link.append("-shared")
    elif meaning == "g":
        t.host.append("-g")
    elif meaning == "G":
        t.device_debug = True
    elif meaning == "lineinfo":
        t.device.append("-gline-directives-only")
    elif meaning == "fast":
        t.common += ["-fgpu-flush-denormals-to-zero", "-fgpu-approx-transcendentals",
                     "-mllvm", "-nvptx-prec-divf32=1", "-mllvm", "-nvptx-prec-sqrtf32=0",
                     "-ffp-contract=fast"]
    elif meaning == "res-usage":
        t.common += ["-Xcuda-ptxas", "-v"]
    elif meaning == "w":
        t.common.append("-w")
    elif meaning == "v":
        t.verbose = True
        t.common.append("-v")
    elif meaning == "forward":
        t.forward = True
    elif meaning == "host":
        t.host.append(word[1:] if word.startswith("--") else word)
    elif meaning == "werror-all":
        t.common.append("-Werror")
    elif meaning == "rdc-mode":
        raise _rdc(word)
    elif meaning == "unsupported":
        raise Refused(f"nvcc {word}: the clang toolkit compiles to objects and links, "
                      "nothing else", f"build with {OTHERS}")


def _rdc(word: str) -> Refused:
    return Refused(f"nvcc {word}: relocatable device code and device linking need "
                   "NVIDIA's nvlink, which no CUDA 12 wheel holds",
                   f"build with {OTHERS}")


def _bool(value: str, word: str) -> bool:
    v = value.lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    key = word.split("=", 1)[0]
    raise Refused(f"nvcc {key}={value}: not true or false", f"{key}=true or {key}=false")


def _valued(t: Translation, name: str, value: str, word: str) -> None:  # noqa: PLR0912, PLR0915
    if name == "o":
        t.out = value
    elif name in ("I", "D", "U", "L", "l"):
        (t.link if name in ("L", "l") else t.common).append(f"-{name}{value}")
    elif name in ("isystem", "include"):
        t.common += [f"-{name}", value]
    elif name == "x":
        lang = {"cu": "cuda", "c": "c", "c++": "c++", "cpp": "c++", "none": None}
        if value not in lang:
            raise Refused(f"nvcc -x {value}: not a language the clang toolkit compiles",
                          "-x cu, -x c++ or -x c")
        t.language = lang[value]
    elif name == "std":
        t.common.append(f"-std={value}")
    elif name == "Xcompiler":
        t.host += _items(value)
    elif name == "Xptxas":
        for item in _items(value):
            t.common += ["-Xcuda-ptxas", item]
    elif name == "Xlinker":
        t.link += [f"-Wl,{item}" for item in _items(value)]
    elif name == "MF":
        t.depfile += ["-MF", value]
    elif name == "MT":
        t.depfile += ["-MT", value]
    elif name == "rdc":
        if _bool(value, word):
            raise _rdc(word if "=" in word else f"{word} {value}")
    elif name == "ftz":
        t.common.append("-fgpu-flush-denormals-to-zero" if _bool(value, word)
                        else "-fno-gpu-flush-denormals-to-zero")
    elif name == "prec-div":
        t.common += ["-mllvm", f"-nvptx-prec-divf32={2 if _bool(value, word) else 1}"]
    elif name == "prec-sqrt":
        t.common += ["-mllvm", f"-nvptx-prec-sqrtf32={1 if _bool(value, word) else 0}"]
    elif name == "fmad":
        t.common.append("-ffp-contract=fast" if _bool(value, word) else "-ffp-contract=off")
    elif name == "maxrregcount":
        t.common += ["-Xcuda-ptxas", f"--maxrregcount={value}"]
    elif name == "cudart":
        if value not in ("shared", "none", "static"):
            raise Refused(f"nvcc {word} {value}: not shared, static or none",
                          "--cudart shared")
        t.cudart = value
    elif name == "Werror":
        if "all-warnings" in _items(value):
            t.common.append("-Werror")
    elif name == "default-stream":
        t.common.append(f"-fgpu-default-stream={value}")
    elif name == "m":
        if value != "64":
            raise Refused(f"nvcc -m{value}: only 64-bit code", "-m64")
    elif name == "O":
        t.opt = value
    elif name == "Xnvlink":
        pass  # no device link happens without -rdc, which stops above
    elif name == "Xarchive":
        raise Refused(f"nvcc {word}: the clang toolkit makes no libraries", f"use {OTHERS}")
    # ccbin, threads, split, Xfatbin, Xcudafe, ignore: the host compiler is clang itself,
    # the rest is nvcc's own steps' cost or diagnostics


