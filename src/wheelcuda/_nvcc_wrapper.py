"""The tree's ``bin/nvcc``: prune the GPU targets a build asks for to the ones you have.

Standalone on purpose: this file is copied into each synthesized tree and run by
``bin/nvcc`` (a sh trampoline) on the Python that wheelcuda runs on, with ``-I -S``, so
it imports nothing but the standard library and works whichever environment the build
runs in. It executes the real nvcc through ``bin/.nvcc-real``, a link in the same
folder: nvcc reads ``nvcc.profile`` from the folder it was invoked through (FACTS.md).

Why: packages such as causal-conv1d and mamba-ssm hard-code nine ``-gencode`` targets,
and torch ignores TORCH_CUDA_ARCH_LIST once a package's flags contain ``arch``. A build
for one card then compiles everything nine times (25 min against 4.5 min here).

``WHEELCUDA_ARCHS`` (set by ``wheelcuda env``, torch syntax: ``9.0;12.0+PTX``) turns it
on; unset or ``WHEELCUDA_ALL_ARCHS=1`` leaves every argument as it is. The rewrite keeps
every other flag in place, replaces every arch option (``-gencode``,
``--generate-code``, ``-arch``/``--gpu-architecture``, ``-code``/``--gpu-code``) with one
``-gencode`` per target: SASS for each, PTX for the highest when the list says +PTX.
A family variant the build asked for (``sm_90a``: wgmma kernels need it) is kept for
that arch. Targets the build did not ask for are built anyway, with a warning.

A pruned compile call usually builds one target, where nvcc ignores ``--threads``; with
``WHEELCUDA_SPLIT_COMPILE=N`` (set by ``wheelcuda install``, see jobs.py) it
also gets ``--split-compile`` so that a lone big file does not leave cores idle.
"""

from __future__ import annotations

import os
import re
import sys

REAL = ".nvcc-real"
_PAIR = re.compile(r"arch=([\w]+),code=\[?([\w,]+)\]?$")
#: Options whose value says which GPU code to make, in each spelling nvcc takes.
_GENCODE = ("-gencode", "--generate-code")
_ARCH = ("-arch", "--gpu-architecture")
_CODE = ("-code", "--gpu-code")
_THREADS = ("-t", "--threads")
_SPLIT = ("-split-compile", "--split-compile")
#: Calls that compile device code (object or relocatable object); wheelcuda install
#: counts them in the log this wrapper writes.
COMPILES = ("-c", "--compile", "-dc", "--device-c")
_DEBUG = ("-G", "--device-debug")
#: Calls that make no GPU code: leave them alone.
_QUERIES = ("--version", "-V", "--list-gpu-arch", "--list-gpu-code", "-h", "--help",
            "-E", "--preprocess", "-M", "--generate-dependencies", "-MM")
_SINGLE = ("-ptx", "--ptx", "-cubin", "--cubin")


def parse_targets(text: str) -> list[tuple[str, bool]]:
    """``9.0;12.0a+PTX`` -> ([("90", False), ("120a", True)]) as (number, ptx) (pure)."""
    out: list[tuple[str, bool]] = []
    for item in re.split(r"[;,\s]+", text.strip()):
        m = re.match(r"^(\d+)\.(\d)([af]?)(\+PTX)?$", item, re.IGNORECASE)
        if m:
            out.append((m.group(1) + m.group(2) + m.group(3).lower(), bool(m.group(4))))
    return out


def _split_option(args: list[str], i: int) -> tuple[str | None, str, int]:
    """(name, value, next index) for args[i] in the forms -x v, -x=v, --xx v, --xx=v."""
    arg = args[i]
    for names in (_GENCODE, _ARCH, _CODE, _THREADS, _SPLIT):
        for name in names:
            if arg == name:
                value = args[i + 1] if i + 1 < len(args) else ""
                return name, value, i + 2
            if arg.startswith(name + "="):
                return name, arg[len(name) + 1:], i + 1
    return None, "", i + 1


def _numbers(value: str) -> set[str]:
    """``sm_90a`` / ``compute_90`` / ``[sm_80,compute_80]`` -> {"90a"} / {"90"} / {"80"}."""
    return {v.split("_", 1)[1] for v in re.split(r"[,\[\]\s]+", value) if "_" in v}


def requested(args: list[str]) -> tuple[list[str], set[str], bool]:
    """(other args, the arch numbers the build asked for, had any arch option) (pure)."""
    others: list[str] = []
    asked: set[str] = set()
    seen, i = False, 0
    while i < len(args):
        name, value, nxt = _split_option(args, i)
        if name in _GENCODE:
            m = _PAIR.match(value.replace(" ", ""))
            asked |= _numbers(m.group(2)) if m else _numbers(value)
            seen = True
        elif name in _ARCH or name in _CODE:
            asked |= set(_numbers(value))
            seen = True
        elif name is None:
            others.append(args[i])
        else:
            others += args[i:nxt]
        i = nxt
    return others, asked, seen


def _base(number: str) -> str:
    return number.rstrip("af")


def _untouchable(args: list[str]) -> bool:
    """Calls to leave exactly as they are: queries, single-target outputs (-ptx, -cubin
    accept one arch only), and link-time optimization (code=lto_XX)."""
    return (any(a in _QUERIES or a in _SINGLE for a in args)
            or any("lto_" in a for a in args))


def rewrite(args: list[str], targets: list[tuple[str, bool]]
            ) -> tuple[list[str], str | None]:
    """The nvcc arguments for ``targets``, and a warning or None (pure).

    A call that asked for some of the targets builds just those (a file compiled only
    for sm_100a keeps sm_100a alone: its kernels may not build for sm_90); a call that
    asked for none of them builds all of them, with a warning.
    """
    if not targets or _untouchable(args):
        return list(args), None
    others, asked, seen = requested(args)
    if not seen and not any(a.endswith(".cu") for a in args):
        return list(args), None  # no GPU code asked for: not ours to add
    chosen = [t for t in targets if any(_base(v) == _base(t[0]) for v in asked)] or targets
    flags: list[str] = []
    missing: list[str] = []
    for number, _ in chosen:
        variants = sorted(v for v in asked if _base(v) == _base(number)) or [number]
        if seen and not any(_base(v) == _base(number) for v in asked):
            missing.append("sm_" + number)
        flags += [f"-gencode=arch=compute_{v},code=sm_{v}" for v in variants]
    ptx = [n for n, p in chosen if p]
    if ptx:
        top = max(ptx, key=lambda n: int(_base(n)))
        flags.append(f"-gencode=arch=compute_{top},code=compute_{top}")
    warning = None
    if missing and asked:
        asked_text = ",".join("sm_" + a for a in sorted(asked, key=lambda n: int(_base(n))))
        warning = (f"wheelcuda: this build asked for {asked_text}, not for "
                   f"{','.join(missing)}; building {','.join(missing)} anyway")
    return _cap_threads(others, len(flags)) + flags, warning


def _cap_threads(args: list[str], jobs: int) -> list[str]:
    """``--threads N`` compiles N targets at once: more than there are targets is waste
    (and nvcc ignores it for one target, says its --help). 0 (all CPUs) is kept."""
    out: list[str] = []
    i = 0
    while i < len(args):
        name, value, nxt = _split_option(args, i)
        if name in _THREADS and value.isdecimal() and value != "0":
            out += [name, str(max(1, min(int(value), jobs)))]
        else:
            out += args[i:nxt]
        i = nxt
    return out


def add_split(args: list[str], share: int, inherited: list[str] | None = None) -> list[str]:
    """``--split-compile`` for a compile call, so a lone big file uses more than one core
    (pure; see jobs.py for the measurements).

    ``share`` is how many threads one call may use (WHEELCUDA_SPLIT_COMPILE, set by
    ``wheelcuda install``); the call's own ``--threads`` takes its part first. A call
    that sets ``--split-compile`` itself (or through ``inherited``: NVCC_PREPEND_FLAGS
    and NVCC_APPEND_FLAGS, which nvcc reads too), a device-debug call (``-G`` overrides
    it), a call :func:`rewrite` leaves alone, or one that compiles nothing is left alone.
    """
    every = [*(inherited or []), *args]
    if (share <= 1 or _untouchable(args) or not any(a in COMPILES for a in args)
            or any(a in _DEBUG for a in every)):
        return args
    threads, i = 1, 0
    while i < len(every):
        name, value, i = _split_option(every, i)
        if name in _SPLIT:
            return args
        if name in _THREADS and value.isdecimal():
            threads = int(value) or share  # 0: all CPUs
    split = share // max(1, threads)
    return [*args, f"--split-compile={split}"] if split > 1 else args


def _share(value: str | None) -> int:
    return int(value) if value and value.isdecimal() else 1


def main() -> None:
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    real = os.path.join(here, REAL)
    args = sys.argv[1:]
    archs = os.environ.get("WHEELCUDA_ARCHS", "")
    if archs and os.environ.get("WHEELCUDA_ALL_ARCHS", "") not in ("1", "true", "TRUE"):
        args, warning = rewrite(args, parse_targets(archs))
        # a pruned call: let it use the cores its one target leaves idle
        inherited = " ".join(os.environ.get(v, "") for v in
                             ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")).split()
        args = add_split(args, _share(os.environ.get("WHEELCUDA_SPLIT_COMPILE")), inherited)
        if warning:
            sys.stderr.write(warning + "\n")
    if os.environ.get("WHEELCUDA_NVCC_LOG"):  # wheelcuda install counts the compiles
        try:
            with open(os.environ["WHEELCUDA_NVCC_LOG"], "a") as log:
                log.write(" ".join(args) + "\n")
        except OSError:  # a log it cannot write costs the count, never the compile
            pass
    # argv[0] stays bin/nvcc: nvcc finds nvcc.profile from it (_HERE_) and names itself
    # by it ("nvcc: NVIDIA (R) Cuda compiler driver", which CMake's compiler check reads).
    try:
        os.execv(real, [os.path.join(here, "nvcc"), *args])  # noqa: S606 - argv list
    except OSError as exc:  # a compiler that cannot run: say which, not a traceback
        sys.stderr.write(f"wheelcuda: cannot run the CUDA compiler {os.path.realpath(real)}: "
                         f"{exc.strerror or exc}\n  fix: reinstall the compiler wheels, or "
                         "run `wheelcuda cache prune` and build again\n")
        sys.exit(127)


if __name__ == "__main__":
    main()
