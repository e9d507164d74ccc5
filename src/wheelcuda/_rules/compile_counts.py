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


def said(counts_: dict[str, int]) -> str:
    """"compile cache: 9 of 9 nvcc steps hit, 0 compiled on a build server" (pure). No
    step counted while compiles went through sccache: its server stopped during the
    build, and each sccache then ran its compile itself, uncached (seen with sccache
    0.16: a server whose idle timeout is shorter than one compile stops in the middle of
    it)."""
    steps = counts_["hits"] + counts_["misses"]
    if not steps:
        return ("compile cache: sccache's server counted no nvcc step (it stopped during "
                "the build, so the compiles ran without the cache: a compile longer than "
                "SCCACHE_IDLE_TIMEOUT, 600 s by default, outlasts it; set it higher, or 0)")
    return (f"compile cache: {counts_['hits']} of {steps} nvcc step"
            f"{'' if steps == 1 else 's'} hit, {counts_['remote']} compiled on a build server")
