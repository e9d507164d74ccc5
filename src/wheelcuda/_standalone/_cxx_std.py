"""The C++ standard a build asks for, raised to the one torch's headers need.

torch 2.14's headers stop with ``#error C++20 or later compatible compiler is required
to use PyTorch`` (2.13's needed C++17); setup.py files that pass ``-std=c++17``
(chamferdist 1.0.3, spatial-correlation-sampler 0.5.0) then fail under every route, and
with their ``-std=c++17`` changed to ``-std=c++20`` and nothing else, chamferdist built
and imported. torch itself passes ``-std=c++20`` only when the build names no
standard of its own.

Standalone on purpose, like _nvcc_wrapper: copied into each tree's bin/ and used by its
nvcc (``-std``, ``--std`` and the standard inside ``-Xcompiler``) and by its host
compiler shim (``bin/wheelcuda-c++``, :func:`main`), when ``WHEELCUDA_CXX_STD`` names the
standard. The shim is every build's CXX (_rules/cxxstd.py), so that its compiles wait
for their turn in the machine's budget and are told like nvcc's.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys

try:
    from . import _overlap, _progress, _tree, _view
except ImportError:  # run from a tree's bin/, beside them
    sys.dont_write_bytecode = True  # no __pycache__ in a tree (the shim says -B too)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _overlap  # type: ignore[import-not-found,no-redef]
    import _progress  # type: ignore[import-not-found,no-redef]
    import _tree  # type: ignore[import-not-found,no-redef]
    import _view  # type: ignore[import-not-found,no-redef]

#: The standard to raise to (``20``), set by wheelcuda for a build against a torch whose
#: headers need it; ``keep`` (or unset) leaves every argument as it is.
VAR = "WHEELCUDA_CXX_STD"
#: The compiler the host shim runs (_rules/cxxstd.py sets it: the user's CXX, else c++).
REAL_VAR = "WHEELCUDA_REAL_CXX"
#: What a raised call writes to WHEELCUDA_NVCC_LOG (install says it after the build).
LOG_MARK = "# wheelcuda: raised"
#: compiled when used (re.match caches it): a compile's start pays only for what it uses
_STD = r"^(c|gnu)\+\+(\d[\dxyzab])$"
#: The draft names compilers take for each standard.
_ALIAS = {"0x": 11, "1y": 14, "1z": 17, "2a": 20, "2b": 23, "2c": 26}
_XCOMPILER = ("-Xcompiler", "--compiler-options")


def wanted(value: str | None) -> int | None:
    """``"20"`` -> 20; None (nothing raised) for unset, ``keep``, 0 or anything that is
    not a number (pure)."""
    return int(value) if value and value.strip().isdecimal() and int(value) > 0 else None


def _number(name: str) -> int | None:
    m = re.match(_STD, name)
    if not m:
        return None
    digits = m.group(2)
    if digits in _ALIAS:
        return _ALIAS[digits] + 100  # comparable with c++11 -> 111 below
    number = int(digits) if digits.isdecimal() else None
    return None if number is None else (number + 100 if number < 90 else number)


def _raised(name: str, want: int) -> str | None:
    """``c++17`` -> ``c++20`` when 17 is below ``want`` (98 and 03 too); None to keep it."""
    number = _number(name)
    m = re.match(_STD, name)
    if number is None or m is None or number >= want + 100:
        return None
    return f"{m.group(1)}++{want}"


def _one(arg: str, want: int, raised: list[str]) -> str:
    """``-std=c++17`` / ``--std=c++17`` raised, else ``arg`` as it is."""
    for prefix in ("-std=", "--std="):
        if arg.startswith(prefix):
            new = _raised(arg[len(prefix):], want)
            if new:
                raised.append(arg[len(prefix):])
                return prefix + new
    return arg


def raise_args(args: list[str], want: int) -> tuple[list[str], list[str]]:
    """(``args`` with each standard below ``want`` raised to it, the standards raised)
    (pure). Handles ``-std=X``, ``--std=X``, ``-std X``, and the host compiler's options
    nvcc passes on (``-Xcompiler -std=c++17``, ``-Xcompiler=-O3,-std=c++17``). A
    standard named twice after raising is named once: nvcc refuses a repeated ``-std``."""
    out: list[str] = []
    raised: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-std", "--std") and i + 1 < len(args):
            new = _raised(args[i + 1], want)
            if new:
                raised.append(args[i + 1])
            out += [arg, new or args[i + 1]]
            i += 2
            continue
        head, eq, tail = arg.partition("=")
        if head in _XCOMPILER and eq:
            out.append(f"{head}={','.join(_one(a, want, raised) for a in tail.split(','))}")
        elif arg in _XCOMPILER and i + 1 < len(args):
            out += [arg, ",".join(_one(a, want, raised) for a in args[i + 1].split(","))]
            i += 2
            continue
        else:
            out.append(_one(arg, want, raised))
        i += 1
    return _once(out), raised


def _once(args: list[str]) -> list[str]:
    """Every ``-std=X`` after its first identical copy left out."""
    seen: set[str] = set()
    out = []
    for arg in args:
        if arg.startswith(("-std=", "--std=")):
            if arg in seen:
                continue
            seen.add(arg)
        out.append(arg)
    return out


def log_raised(raised: list[str], want: int, who: str) -> None:
    """One WHEELCUDA_NVCC_LOG line for a call whose standard was raised."""
    log = os.environ.get("WHEELCUDA_NVCC_LOG")
    if raised and log:  # a log it cannot write costs only the note
        with contextlib.suppress(OSError), open(log, "a") as f:
            f.write(f"{LOG_MARK} {' '.join(sorted(set(raised)))} -> c++{want} ({who})\n")


def _through_cache(cache: str, real: list[str], args: list[str], here: str,
                   environ: dict[str, str]) -> int:
    """A host compile through the compile cache (WHEELCUDA_COMPILE_CACHE) at the stable
    paths of _view.py, as the tree's nvcc runs its compiles: torch's C++ files are a
    build's other half (28 s of 43 s of causal-conv1d's warm build on the GPU machine)."""
    with _view.through(args, _tree.config(here), here) as view:
        return _progress.run(_progress.Call(cache, [cache, *real, *view.args], cached=True),
                             here, {**environ, **_view.ENVIRON})


def main() -> None:
    """The tree's host compiler shim (bin/wheelcuda-c++): the real compiler, its
    standard raised; a compile call (``-c``) waits for its turn in the machine's budget
    and is timed and told as the nvcc wrapper's are (_progress.py)."""
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    environ = dict(os.environ)
    # CXX may be a command with words ("ccache g++"), as torch's ninja rule and CMake
    # take it; a shim among them (this tree's, another's) would run a shim: left out
    real = _tree.real_command(_tree.split_command(environ.get(REAL_VAR) or "c++"),
                              environ.get("PATH", os.defpath))
    args = sys.argv[1:]
    want = wanted(environ.get(VAR))
    if want:
        args, raised = raise_args(args, want)
        log_raised(raised, want, "host")
    try:
        found = _tree.which(real[0], environ.get("PATH", os.defpath))
        if found and "-c" in args and (sources := _progress.sources(args)):
            def compile_() -> int:
                # through sccache (CXX="sccache g++"): its server, which the first compile
                # starts, outlives the compile, so it keeps the user's TMPDIR (_progress.Call)
                cached = os.path.basename(found).startswith("sccache") and len(real) > 1
                cache = None if cached or environ.get(_progress.ADMITTED_VAR) else \
                    _tree.compile_cache(environ)[1]
                if cache:
                    return _through_cache(cache, real, args, here, environ)
                return _progress.run(_progress.Call(found, [*real, *args], cached=cached),
                                     here, environ)
            # setuptools' calls one after another: side by side (_overlap.py)
            sys.exit(_overlap.run(args, sources, environ, compile_))
        # torch links its extensions with CXX: a link of objects still compiling waits
        _overlap.joined(args, "wheelcuda-c++")
        os.execvp(real[0], [*real, *args])  # noqa: S606 - argv list
    except OSError as exc:
        sys.stderr.write(f"wheelcuda-c++: cannot run the host compiler {real}: "
                         f"{exc.strerror or exc}\n  fix: install it (apt install g++), or "
                         f"name one: export CXX=/path/to/g++\n")
        sys.exit(127)


if __name__ == "__main__":
    main()
