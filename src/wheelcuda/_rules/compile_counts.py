"""What sccache's counts over a build say: the build's own part of them, and the words
the install summary and ``cache show`` give them (pure; _commands/compile_counts.py asks
the server)."""

from __future__ import annotations


def difference(before: dict[str, int] | None, after: dict[str, int] | None
               ) -> dict[str, int] | None:
    """What a build added to sccache's counts (pure); None without both, or when the
    server restarted between them (its counts start again at 0)."""
    if before is None or after is None or any(after[k] < before[k] for k in before):
        return None
    return {k: after[k] - before[k] for k in before}


def said(counts: dict[str, int], compiles: int = 0) -> str:
    """"compile cache: 9 of 9 nvcc steps hit, 0 compiled on a build server" (pure). Fewer
    steps counted than the build's CUDA compiles (``compiles``; each is several steps)
    means sccache's server stopped during the build and each sccache ran its compile
    itself, uncached and uncounted (seen with sccache 0.16: a server whose idle timeout
    is shorter than one compile stops in the middle of it)."""
    steps = counts["hits"] + counts["misses"]
    if steps < max(compiles, 1):
        return (f"compile cache: sccache's server counted {steps} nvcc step"
                f"{'' if steps == 1 else 's'} for {compiles or 'its'} CUDA compile"
                f"{'' if compiles == 1 else 's'} (it stopped during the build, so the rest "
                "ran without the cache: a compile longer than SCCACHE_IDLE_TIMEOUT, 600 s "
                "by default, outlasts it; set it higher, or 0)")
    return (f"compile cache: {counts['hits']} of {steps} nvcc step"
            f"{'' if steps == 1 else 's'} hit, {counts['remote']} compiled on a build server")
