"""nvcc's command language, read for the clang toolkit: which files, which GPU targets,
which flags for the host, the device and the link. Pure; standalone like _clang_nvcc,
which turns a :class:`Translation` into a clang call. Forms it does not carry out raise
:class:`Refused`, naming the option and the other toolkits.
"""

from __future__ import annotations

import os
import re
import shlex
import sys

try:
    from . import _nvcc_table as _table
except ImportError:  # run as a script from the clang toolkit's folder, beside it
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _nvcc_table as _table  # type: ignore[import-not-found,no-redef]

C_SOURCES, CUDA_SOURCES, DEVICE_CODE = _table.C_SOURCES, _table.CUDA_SOURCES, _table.DEVICE_CODE
SWITCHES = _table.SWITCHES
FLAGS, GLUED, LEVELS, OTHERS = _table.FLAGS, _table.GLUED, _table.LEVELS, _table.OTHERS
PAIR, PAIRED, VALUED, WERROR = _table.PAIR, _table.PAIRED, _table.VALUED, _table.WERROR

class Refused(Exception):
    """An nvcc form this translator does not carry out: what, and the fix."""

    def __init__(self, message: str, fix: str) -> None:
        super().__init__(message)
        self.message, self.fix = message, fix


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
        self.device_debug = self.forward = self.forward_link = self.verbose = False
        self.device_llvm: list[str] = []  # -mllvm options for the device compile
        self.cudart = "shared"
        self.depfile: list[str] = []


def _value_of(word: str) -> tuple[str, str | None] | None:
    """(name, glued value or None) for a valued option word, else None."""
    if word in VALUED:
        return VALUED[word], None
    if "=" in word:
        key, _, value = word.partition("=")
        if key in VALUED:
            return VALUED[key], value
    for short in GLUED:
        if word.startswith(short) and len(word) > len(short) and word not in FLAGS:
            value = word[len(short):]
            if (short == "-m" and not value.isdigit()) or \
                    (short == "-O" and value not in LEVELS) or \
                    (short in ("-l", "-o", "-x") and value[:1] in ("-", "=")):
                return None  # -march=native, -mavx2, -Ofoo: not nvcc's; -link: its own
            return VALUED[short], value
    return None


def _unquote(value: str) -> str:
    """nvcc takes ``'-fPIC'`` (torch's ninja file quotes -Xcompiler values)."""
    quoted = len(value) >= 2 and value[0] == value[-1] and value[0] in "'\""
    return value[1:-1] if quoted else value


def _items(value: str) -> list[str]:
    return [_unquote(v.strip()) for v in value.split(",") if v.strip()]


def _split(text: str, where: str) -> list[str]:
    """Shell words, or a refusal naming ``where`` (an unbalanced quote)."""
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise Refused(f"nvcc {where}: {exc} in {text.strip()[:80]!r}",
                      "balance the quotes") from None


def _expand(args: list[str], seen: tuple[str, ...] = ()) -> list[str]:
    """``--options-file F`` replaced by the words F holds."""
    out: list[str] = []
    words = iter(args)
    for word in words:
        valued = _value_of(word)
        if valued and valued[0] == "optf":
            path = valued[1] if valued[1] is not None else next(words, "")
            if os.path.realpath(path) in seen:
                raise Refused(f"nvcc --options-file {path} includes itself",
                              "leave the option file out of itself")
            try:
                with open(path, encoding="utf-8") as f:
                    words_in = _split(f.read(), f"--options-file {path}")
            except OSError as exc:
                raise Refused(f"nvcc --options-file {path}: {exc.strerror}",
                              "name a file that exists") from None
            except UnicodeDecodeError:
                raise Refused(f"nvcc --options-file {path}: not UTF-8 text",
                              "write the options file as UTF-8") from None
            out += _expand(words_in, (*seen, os.path.realpath(path)))
        else:
            out.append(word)
    return out


def _is_source(path: str) -> bool:
    """Not an object or a library (those are linked as they are, whatever -x says)."""
    return os.path.splitext(path)[1] not in (".o", ".a", ".so", ".obj", ".lib") and \
        ".so." not in os.path.basename(path)


def _readable(path: str) -> None:
    """A file nvcc takes as input without -x: one of its sources, or something to link."""
    suffix = os.path.splitext(path)[1]
    if suffix in DEVICE_CODE:
        raise Refused(f"nvcc {path}: {suffix} input is device code for NVIDIA's own tools, "
                      "which the clang toolkit does not drive", f"build with {OTHERS}")
    reads = (*CUDA_SOURCES, *C_SOURCES)
    if path == "-" or not suffix or suffix in reads or not _is_source(path):
        return
    raise Refused(f"nvcc {path}: nvcc does not know what to do with a {suffix} file",
                  f"name it with one of nvcc's suffixes ({', '.join(reads)}), or give -x cu")


def _arch_number(name: str) -> str:
    """``sm_90a`` / ``compute_90a`` / ``90`` -> ``90a``."""
    return name.split("_", 1)[1] if "_" in name else name


def _targets(t: Translation, kind: str, value: str,  # noqa: PLR0912
             arch_seen: list[str]) -> None:
    """Record what -gencode / -arch / -code ask for."""
    if kind == "gencode":
        m = re.match(PAIR, value.replace(" ", ""))
        if not m:
            raise Refused(f"nvcc -gencode {value}: not the arch=compute_X,code=sm_X form",
                          "write it as -gencode arch=compute_90,code=sm_90")
        virtual = m.group(2)
        for code in m.group(3).split(","):
            number = _arch_number(code)
            if code.startswith("lto_"):
                raise _lto(f"-gencode {value}")
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
            if c.startswith("lto_"):
                raise _lto(f"-code {value}")
            number = _arch_number(c)
            (t.ptx if c.startswith("compute_") else t.sass).append(number)


def _lto(what: str) -> Refused:
    return Refused(f"nvcc {what}: link-time optimized device code needs NVIDIA's nvlink",
                   f"ask for sm_X or compute_X, or build with {OTHERS}")


def _input(t: Translation, word: str) -> None:
    if word.startswith("@"):
        # nvcc 13.0 reads @opts as an input; clang would expand it as clang's options
        raise Refused(f"nvcc {word}: nvcc takes no @file of options (it reads {word} as an "
                      "input file)", f"--options-file {word[1:]}")
    suffix = os.path.splitext(word)[1]
    t.inputs.append((word, t.language or ("cuda" if suffix in CUDA_SOURCES
                                          else C_SOURCES.get(suffix))))


def translate(args: list[str]) -> Translation:  # noqa: PLR0912
    """Read an nvcc call (pure)."""
    t = Translation()
    args = _expand(args)
    arch_seen: list[str] = []
    code_given = False
    words = iter(args)
    for word in words:
        if not word.startswith("-") or word == "-":
            _input(t, word)
            continue
        if word in FLAGS:
            _flag(t, FLAGS[word], word)
            continue
        valued = _value_of(word)
        if valued is None:
            if t.forward and word.startswith("-"):
                t.host.append(word)
                continue
            if t.forward_link and word.startswith("-"):
                t.link.append(word)
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
    if arch_seen and code_given:
        virtual = {_arch_number(a) for a in arch_seen}
        odd = [n for n in t.sass if n not in virtual]
        if odd:
            raise Refused(f"nvcc -arch {','.join(arch_seen)} with -code sm_{odd[0]}: SASS for "
                          f"sm_{odd[0]} from another virtual arch (clang compiles each arch "
                          "from its own)", f"-arch=sm_{odd[0]}, or use {OTHERS}")
    if t.language is None:
        for path, _lang in t.inputs:
            _readable(path)
    if t.language is not None:  # nvcc's -x holds for every source file, wherever it stands
        t.inputs = [(p, t.language if lang is not None or _is_source(p) else None)
                    for p, lang in t.inputs]
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
        if t.mode not in ("link", meaning) and meaning not in ("version", "help") and \
                t.mode not in ("version", "help"):
            raise Refused(f"nvcc {word} with -{t.mode}: two things to make at once",
                          "one of -c, -E, -M, -MM per call")
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
        t.device += ["-fgpu-flush-denormals-to-zero", "-fgpu-approx-transcendentals",
                     "-ffp-contract=fast"]
        t.device_llvm += ["-nvptx-prec-divf32=1", "-nvptx-prec-sqrtf32=0"]
    elif meaning == "res-usage":
        t.common += ["-Xcuda-ptxas", "-v"]
    elif meaning == "w":
        t.common.append("-w")
    elif meaning == "v":
        t.verbose = True
        t.common.append("-v")
    elif meaning == "forward":
        t.forward = True
    elif meaning == "forward-link":
        t.forward_link = True
    elif meaning == "host":
        t.host.append(word[1:] if word.startswith("--") else word)
    elif meaning == "werror-all":
        t.common.append("-Werror")
    elif meaning in ("dc", "rdc-mode"):
        raise _rdc(word)
    elif meaning == "dlto":
        raise _lto(word)
    elif meaning in ("ptx", "cubin", "unsupported"):
        raise Refused(f"nvcc {word}: the clang toolkit compiles to objects and links, "
                      "nothing else", f"build with {OTHERS}")


def _rdc(word: str) -> Refused:
    return Refused(f"nvcc {word}: relocatable device code and device linking need "
                   "NVIDIA's nvlink, which no CUDA 12 wheel holds",
                   f"build with {OTHERS}")


def _one_of(value: str, word: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise Refused(f"nvcc {word} {value}: not one of {', '.join(choices)}",
                      f"{word} {choices[0]}")
    return value


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
        # nvcc reads each as a comma list: -DPAIR=a,b defines PAIR=a and b (nvcc 13.0's
        # --dryrun: -D "PAIR=a" -D "b"), -I/a,/b is two folders
        (t.link if name in ("L", "l") else t.common).extend(
            f"-{name}{item}" for item in _items(value))
    elif name in ("isystem", "include"):
        for item in _items(value):
            t.common += [f"-{name}", item]
    elif name == "x":
        lang = {"cu": "cuda", "c": "c", "c++": "c++", "cpp": "c++", "none": None}
        if value not in lang:
            raise Refused(f"nvcc -x {value}: not a language the clang toolkit compiles",
                          "-x cu, -x c++ or -x c")
        t.language = lang[value]
    elif name == "std":
        t.common.append(f"-std={value}")
    elif name == "Xcompiler":
        words = [w for item in _items(value) for w in _split(item, f"{word} {value}")]
        pending = None
        for w in words:
            if pending:
                t.common += [pending, w]  # the preprocessor's: device compiles see it too
                pending = None
            elif w in PAIRED:
                pending = w
            else:
                t.host.append(w)
        if pending:
            raise Refused(f"nvcc {word} {value}: {pending} needs a value",
                          f"give one: {word} {pending},VALUE")
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
    elif name in SWITCHES:
        where, on, off = SWITCHES[name]
        getattr(t, where).append(on if _bool(value, word) else off)
    elif name == "maxrregcount":
        t.common += ["-Xcuda-ptxas", f"--maxrregcount={value}"]
    elif name == "cudart":
        t.cudart = _one_of(value, word, ("shared", "none", "static"))
    elif name == "Werror":
        kinds = _items(value)
        odd = [k for k in kinds if k not in WERROR]
        if odd:
            raise Refused(f"nvcc {word} {value}: {odd[0]!r} is not one of nvcc's -Werror kinds",
                          f"-Werror {','.join(WERROR[:2])}, ...")
        if "all-warnings" in kinds:
            t.common.append("-Werror")
    elif name == "default-stream":
        value = _one_of(value, word, ("per-thread", "legacy", "null"))
        t.common.append(f"-fgpu-default-stream={'legacy' if value == 'null' else value}")
    elif name == "m":
        if value != "64":
            raise Refused(f"nvcc -m{value}: only 64-bit code", "-m64")
    elif name == "O":
        if value not in LEVELS:  # nvcc 13.0: `-O -c k.cu` is "'-c': expected a number"
            raise Refused(f"nvcc {word} {value}: not an optimization level",
                          "-O3 (or -O0 to -O3)")
        t.opt = value
    elif name == "Xnvlink":
        pass  # no device link happens without -rdc, which stops above
    elif name == "Xarchive":
        raise Refused(f"nvcc {word}: the clang toolkit makes no libraries", f"use {OTHERS}")
    # ccbin, threads, split, Xfatbin, Xcudafe, ignore: the host compiler is clang itself,
    # the rest is nvcc's own steps' cost or diagnostics
