"""What sccache's counts over a build say: the build's own part of them, and the words
the install summary and ``cache show`` give them (pure; _commands/compile_counts.py asks
the server).

The counts, by what sccache compiled: ``hits``/``misses``, NVIDIA's nvcc steps (cudafe++,
cicc, ptxas: sccache caches each); ``clang_hits``/``clang_misses``, the clang toolkit's
CUDA compiles (one each); ``host_hits``/``host_misses``, C and C++ compiles (torch's
bindings, through the tree's host shim); ``remote``, compiles run on a build server. A
record written before clang and host compiles were cached holds the first three only."""

from __future__ import annotations

from collections.abc import Mapping

#: each kind's keys and how a summary names one of it
_KINDS = (("hits", "misses", "nvcc step"), ("clang_hits", "clang_misses", "clang CUDA compile"),
          ("host_hits", "host_misses", "C++ compile"))
KEYS = ("hits", "misses", "clang_hits", "clang_misses", "host_hits", "host_misses", "remote")


def kind(key: str) -> str:
    """Which count one of sccache's ``adv_counts`` keys (``ptx [cicc]``, ``cuda [clang]``,
    ``c++ [gcc]``) adds to: ``host``, ``clang`` or ``nvcc`` (pure)."""
    language, _, compiler = key.partition(" ")
    if language in ("c", "c++", "objc", "objc++"):
        return "host"
    return "clang" if compiler == "[clang]" else "nvcc"


def difference(before: Mapping[str, int] | None, after: Mapping[str, int] | None
               ) -> dict[str, int] | None:
    """What a build added to sccache's counts (pure); None without both, or when the
    server restarted between them (its counts start again at 0)."""
    if before is None or after is None or any(after.get(k, 0) < v for k, v in before.items()):
        return None
    return {k: after.get(k, 0) - before.get(k, 0) for k in KEYS}


def said(counts: Mapping[str, int], compiles: int = 0) -> str:
    """"compile cache: 9 of 9 nvcc steps hit, 2 of 2 C++ compiles hit, 0 compiled on a build
    server" (pure): each kind the build compiled. Fewer CUDA steps counted than the
    build's CUDA compiles (``compiles``; each is one clang compile or several nvcc steps)
    means sccache's server stopped during the build and each sccache ran its compile
    itself, uncached and uncounted (seen with sccache 0.16: a server whose idle timeout
    is shorter than one compile stops in the middle of it)."""
    cuda = sum(counts.get(k, 0) for k in ("hits", "misses", "clang_hits", "clang_misses"))
    if cuda < max(compiles, 1 if not counts.get("host_hits", 0) + counts.get("host_misses", 0)
                  else 0):
        unit = "clang CUDA compile" if counts.get("clang_hits", 0) + \
            counts.get("clang_misses", 0) else "nvcc step"
        return (f"compile cache: sccache's server counted {cuda} {unit}"
                f"{'' if cuda == 1 else 's'} for {compiles or 'its'} CUDA compile"
                f"{'' if compiles == 1 else 's'} (it stopped during the build, so the rest "
                "ran without the cache: a compile longer than SCCACHE_IDLE_TIMEOUT, 600 s "
                "by default, outlasts it; set it higher, or 0)")
    parts: list[str] = []
    for hit, miss, unit in _KINDS:
        steps = counts.get(hit, 0) + counts.get(miss, 0)
        if steps or (hit == "hits" and not cuda and not parts):
            parts.append(f"{counts.get(hit, 0)} of {steps} {unit}{'' if steps == 1 else 's'} "
                         "hit")
    if not parts:
        parts.append("0 of 0 nvcc steps hit")
    return f"compile cache: {', '.join(parts)}, {counts.get('remote', 0)} compiled on a " \
        "build server"
