"""Why a build failed, said after the installer's output: its signal, the compiler
error the log holds, an sdist published without its sources, what the clang route
cannot build, what the raised C++ standard may have done."""

from __future__ import annotations

import os
import signal
from collections.abc import Sequence

from ... import _pipeline as pipeline
from ..._probe import source
from ..._rules import buildkey, cxxstd
from ..._store import buildlog, wheels
from .. import build_watch
from .plan import Prepared

#: The installer's exit code after wheelcuda passed it a signal (proc.call: 128 + its
#: number): "uv exited with 130", and the end of its output, told nothing.
_INTERRUPTED = {128 + signal.SIGINT: "Ctrl-C", 128 + signal.SIGTERM: "SIGTERM",
                128 + signal.SIGHUP: "the terminal closed: SIGHUP"}


def failed(p: Prepared, build: wheels.Build, output: buildlog.BuildLog | None, code: int, *,
            took: str, raised: str) -> str:
    """The summary of a build that failed: its cause, not the installer's traceback."""
    if code in _INTERRUPTED:  # the signal's own doing: no compiler error to look for
        return f"the build was interrupted ({_INTERRUPTED[code]}) after {took}; nothing " \
               "was installed"
    r = p.resolved
    origin = build.refused() if p.from_cache else None
    dropped = (f"; the wheel taken from {origin} is out of wheelcuda's wheel cache again, so "
               "the next install builds") if origin else ""
    why = "".join(f"\n  {line}" for line in build_watch.failure_lines(
        output, fixes=build_watch.unreachable_fixes(r.fetch.unreachable), route=_route_note(r)))
    if output is not None:  # the log stays for the reader; the events are done
        output.discard_events()
    return (f"{p.tool.name} exited with {code} after {took}; nothing was installed"
            f"{dropped}{_upstream(r, p.specs)}{raised}{why}")


def _route_note(r: pipeline.Resolved) -> str:
    """What a compile error on the clang route may be owed to, and what builds it else
    (pure): clang takes most of what nvcc takes, not all (docs/clang.md lists what it
    does not); nothing for NVIDIA's nvcc. NVIDIA's archives are named only where they
    were not found unreachable (clang stands in when they do not answer)."""
    if not r.toolkit.by_clang:
        return ""
    archives = "" if r.fetch.unreachable else \
        "from their archives (--toolkit redist, where they answer) or "
    return (f"these came from the clang toolkit ({buildkey.compiler_name(r.compiler)}, CUDA "
            "12 without NVIDIA's nvcc), which builds most CUDA code nvcc builds but not all "
            f"(docs/clang.md): NVIDIA's nvcc builds it {archives}from a CUDA 12 toolkit on "
            "this machine (--toolkit /path/to/cuda-12.x)")


def _upstream(r: pipeline.Resolved, specs: Sequence[str]) -> str:
    """After a failed build: an sdist published without files its build needs cannot
    build anywhere (corpus: gaussian-splatting 2.11.0, fast-hadamard-transform 1.1.0)."""
    dirs = [str(r.home.path / "include")] if r.home else []
    if r.torch is not None:
        dirs += [os.path.join(r.torch.path, "include"),
                 os.path.join(r.torch.path, "include/torch/csrc/api/include")]
    dirs += ["/usr/include", "/usr/local/include"]

    def external(header: str) -> bool:
        return any(os.path.exists(os.path.join(d, header)) for d in dirs)

    for spec in specs:
        missing = source.missing_sources(spec, external) if os.path.isfile(spec) else []
        if missing:
            shown = ", ".join(sorted({h for _, h in missing})[:4])
            return (f"\n  note: {os.path.basename(spec)} does not hold {shown}, which its "
                    f"build needs ({missing[0][0]} names it): an sdist published without its "
                    "sources cannot build anywhere; build from the project's repository (with "
                    "its submodules), and tell its authors")
    return ""


def raised(r: pipeline.Resolved, calls: Sequence[str], *, failed: bool) -> str:
    """What the tree's compilers did to the build's C++ standard (_rules/cxxstd.py)."""
    count, old = cxxstd.raised(calls)
    if not count or r.torch is None:
        return ""
    std = r.cxx_std
    said = (f"\n  note: the build asked for {', '.join(sorted(old))}; torch {r.torch.version}'s "
            f"headers need C++{std}, so wheelcuda raised it in {count} compiles "
            f"({cxxstd.VAR}=keep keeps the build's own)")
    if failed:
        said += (f"; if the errors above are C++{std} ones, the extension is not "
                 f"C++{std}-clean: build it against a torch whose headers take "
                 f"{', '.join(sorted(old))} (torch {cxxstd.LAST_CXX17} or older take C++17)")
    return said
