"""sccache's counts of the compiles (nvcc's steps, the clang toolkit's, the host's) found
in the compile cache, compiled, and run on a build server, asked of the server a build's
compiles reach. Asking starts the server when
none runs, as the build's first compile would: install asks before the build, so the
server starts outside it (_commands/install.py)."""

from __future__ import annotations

import json

from .. import _proc as proc
from .._rules import compile_counts
from .._standalone import _tree
from ..errors import ToolError


def counts(environ: dict[str, str]) -> dict[str, int] | None:
    """sccache's totals (_rules/compile_counts.py's keys) of what it found in the cache and
    compiled, by kind, and ran on a build server (sccache-dist), from the server the build's
    compiles reach
    (the environment names its port and store); None when the cache is off or does not
    answer. Another build at the same time adds its own: the difference over a build is
    that build's unless two run at once."""
    _, program = _tree.compile_cache(environ)
    if program is None:
        return None
    try:
        out = proc.capture([program, "--show-stats", "--stats-format", "json"],
                           env=proc.child_environ(environ), timeout=60)
        stats = json.loads(out[out.index("{"):])["stats"]
        found = dict.fromkeys(compile_counts.KEYS, 0)
        for outcome, prefix in (("cache_hits", "hits"), ("cache_misses", "misses")):
            for key, n in stats[outcome]["adv_counts"].items():
                kind = compile_counts.kind(key)
                found[prefix if kind == "nvcc" else f"{kind}_{prefix}"] += int(n)
        found["remote"] = sum(stats["dist_compiles"].values())
        return found
    except (ToolError, ValueError, KeyError, TypeError, AttributeError):
        return None
