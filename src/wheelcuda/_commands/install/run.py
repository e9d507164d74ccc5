"""The build: the installer run under the key's lock with the plan's environment, its
progress watched, the wheel cache's record written; and install's last line."""

from __future__ import annotations

import contextlib
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from ... import _pipeline as pipeline
from ... import _proc as proc
from ... import _report as report
from ..._context import Context
from ..._data import settings as registry
from ..._pipeline import buildplan
from ..._rules import progress, redact
from ..._standalone import _events
from ..._store import fs, wheels
from ...errors import CacheError, WheelcudaError
from .. import build_watch
from .. import compile_counts as sccache_counts
from ..common import note
from . import failure, summary
from .plan import Prepared, kept_sources


def execute(ctx: Context, p: Prepared) -> tuple[int, str]:
    """Run the installer (output streams through) under the key's lock; the exit code
    and the summary line. Concurrent installs of one key build once: the second waits,
    then finds the wheel in the key's installer cache. The record and the kept wheels
    are written before the lock is let go; a failed build leaves no entry."""
    r = p.resolved
    with wheels.building(r.layout, p.key) as build, \
            tempfile.NamedTemporaryFile("r", prefix="wheelcuda-nvcc-") as log, \
            tempfile.TemporaryDirectory(prefix="wheelcuda-tmp-",
                                        dir=ctx.get("TMPDIR") or None) as tmp:
        p = _under_lock(p)
        output = build_watch.start_log(r.layout, p.key)
        echo = output is None or report.verbosity() > 0
        # each source's seconds in the last build: the compile pool starts the longest
        # first (without one, the recipe's guess the tree holds)
        order = build.write_order(p.order) if p.order else None
        lasting, cached, temp = sccache_counts.before(
            ctx, p.variables, tmp, by_clang=r.toolkit.by_clang, builds=not p.from_cache)
        env = build_watch.build_environ(
            ctx.environ, {**p.variables, registry.NVCC_LOG.name: log.name,
                          **buildplan.order_variables(order), **temp}, output, echo)
        start = time.monotonic()
        watch = build_watch.environment_lock(r.target.prefix, p.tool.locks_environment, note)
        # a first build is read against the recipe's guess of its files, where one exists
        before = list(p.profile) or _events.guess(p.order)
        # the installer's own output goes to the log; on the terminal with -v (or when
        # there is no log to keep it)
        with pipeline.in_use(r) as in_use, watch, build_watch.watching(
                output, before=before,
                source="" if p.profile else "the recipe's guess") as seen:
            # the log is kept: a token the installer prints (pip's "Looking in indexes"
            # line hides user:password, not a query's private_token) is not
            code = proc.call(p.argv, env=env, log=str(output.output) if output else None,
                             echo=echo, scrub=redact.text,
                             keep_fds=[*in_use, *([build.lock_fd] if build.lock_fd
                                                  is not None else [])])
        seconds = time.monotonic() - start
        calls = log.read().splitlines()
        compiles = summary.compile_summary(calls, r.compiler)
        hits = sccache_counts.after(cached, lasting) if compiles else None
        compiles = summary.with_hits(compiles, hits, calls)
        unpruned = summary.unpruned_calls(calls)
        took = _events.duration(seconds)
        raised = failure.raised(r, calls, failed=code != 0)
        if code != 0:
            return code, failure.failed(p, build, output, code, took=took, raised=raised)
        done = summary.installed(p)
        # a wheel with unpruned (LTO) code is recorded as what it is, not as pruned
        fields = {**p.fields, "prune": False, "unpruned_calls": unpruned} if unpruned \
            else p.fields
        # -e and -r keep no wheel: the wheel cache never serves them (PackageArgs.cacheable)
        try:
            build.done(fields, done, seconds, p.tool.name,
                       [n for n in p.names if n] if p.given.cacheable else [],
                       built=bool(compiles) or p.from_cache,
                       profile=progress.profile(seen.done) if seen.done else None,
                       compile_cache=hits)
        except CacheError as exc:  # installed all the same: the cache's loss, said so
            report.warn(f"warning: {exc}")
        if output is not None:  # kept with the key as its profile; the log of a build stays
            output.discard_events() if compiles else output.discard()
        prune = p.tool.cache_prune_argv()
        if prune:
            with contextlib.suppress(WheelcudaError):
                proc.capture(prune, env=lasting, timeout=120)
    return 0, summary.line(p, done, compiles, unpruned, f" in {took}") + raised


def _under_lock(p: Prepared) -> Prepared:
    """What to run once the key's lock is held: for --rebuild, the key's installer cache
    emptied (it would hand back the wheel it built); else, when another install of this
    key built it while this one waited, that wheel."""
    r = p.resolved
    if p.rebuild:
        for folder in wheels.installer_cache(r.layout, p.tool.name, p.key).values():
            fs.discard(Path(folder))
    elif not p.from_cache and p.given.cacheable:
        chosen = kept_sources(r, p.key, p.specs, p.names)
        if chosen != list(p.specs):
            note(f"another install built this key ({p.key}) meanwhile: installing it")
            return replace(p, argv=p.tool.install_argv(r.target.python, chosen, p.extra),
                           from_cache=True)
    return p













