"""sccache's counts of the compiles (nvcc's steps, the clang toolkit's, the host's) found
in the compile cache, compiled, and run on a build server, asked of the server a build's
compiles reach. Asking starts the server when
none runs, as the build's first compile would: install asks before the build, so the
server starts outside it (_commands/install/run.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping

from .. import _proc as proc
from .._context import Context
from .._pipeline import buildplan
from .._rules import compile_counts
from .._standalone import _tree
from ..errors import ToolError
from .build_watch import NOT_PASSED


def before(ctx: Context, variables: Mapping[str, str], tmp: str, *, by_clang: bool,
           builds: bool) -> tuple[dict[str, str], dict[str, int] | None, dict[str, str]]:
    """The environment that reaches sccache's server from outside the build; the
    server's counts before the build (None: no compile cache, nothing to build, or the
    clang toolkit's compiles, which do not go through it), whose difference after the
    summary gives; and the build's temporary folder. A build's own TMPDIR (``tmp``,
    removed when it ends) only while no compile goes through sccache: sccache 0.16's
    server makes its nvcc folders in the TMPDIR of the first compile that reaches it,
    for as long as it runs, and panics at src/compiler/nvcc.rs:391 once that folder is
    gone."""
    lasting = proc.child_environ(ctx.environ, dict(variables), drop=NOT_PASSED)
    on = not by_clang and _tree.compile_cache(lasting)[1] is not None
    cached = counts(lasting) if on and builds else None
    return lasting, cached, {} if on else buildplan.temp_variables(ctx, tmp)


def after(cached: dict[str, int] | None, lasting: dict[str, str]) -> dict[str, int] | None:
    """What the build found in the compile cache and compiled: the server's counts now
    less ``cached`` (None when there was nothing to count)."""
    return compile_counts.difference(cached, counts(lasting)) if cached else None


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
