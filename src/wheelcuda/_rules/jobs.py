"""What a build is told of its compile jobs before it starts: MAX_JOBS, a ceiling, and
the memory one of its compiles holds when its last build measured it (pure).

How many compiles run at once, which of them starts next and how many threads each gets
is decided at compile time by the tree's programs, from the machine's memory and cores
then and every build of the user's running beside (_standalone/_pool.py): that reaches
every route alike (install, uv's isolated builds, pip, ``env``, the backend), where a
number decided here would be stale by the time the compile starts, and would change
uv's cache key from run to run (uv-config wrote ``MAX_JOBS = "16"`` with no split
tokens, so causal-conv1d's one long file compiled on one thread: 474 s against 182 s).

MAX_JOBS is the most compiles ninja (or a setup.py) starts: twice the cores, and at least
the files the package is known to have (its recipe's table), so that the pool, which runs
at most one per core, sees the compiles waiting and can start the longest first. ninja
starts in setup.py's order, and the pool chooses only among what ninja started: with 32
on 16 cores, flash-attn's split-KV files (its longest, 291-376 s) started 52nd to 57th
of 73 and ended the build alone (`uv add` on an H100, 927 s). A compile waiting in the
pool is a sleeping Python process (about 10 MB). A user's MAX_JOBS is kept and counts as
the ceiling.

Cores alone were never enough: a causal-conv1d compile job peaked at 3.4 GB RSS here,
and flash-attn builds are known to be killed by the kernel when MAX_JOBS follows the
core count; the pool holds compiles back for memory. nvcc's ``--split-compile N`` runs
the optimizer on N threads; with N=2 causal_conv1d_bwd.cu's ptxas took 65 s instead of
100 s and the whole build 231 s instead of 272 s (2-core machine). Its memory grows
once, not with N: the file's call peaked at 3.2 GiB unsplit and at 5.5, 5.6, 5.6 and 5.8
GiB with N = 2, 4, 8, 16 (the GPU machine; nvcc 13.0.88, sm_90), so a split call holds
two compile jobs' memory in the pool whatever its N.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._data import settings as registry
from . import settings_read
from .checks import Kind, Problem

JOB_GB_VAR = registry.JOB_GB.name
#: torch's own variable (not wheelcuda's, so not in the registry), read as a row is.
_MAX_JOBS = registry.Setting("MAX_JOBS", "int", "The most compiles a build starts at once.",
                             ("_rules/jobs.py",), example="2")


def max_jobs(cores: int, files: int = 0) -> int:
    """The ceiling on compiles started at once: twice the cores, and at least the
    ``files`` the build is known to compile (pure)."""
    return max(2 * max(1, cores), files)


def problems(environ: Mapping[str, str]) -> list[Problem]:
    """MAX_JOBS or WHEELCUDA_SPLIT_COMPILE set to something that is not a count,
    WHEELCUDA_MEMORY that is not a size, WHEELCUDA_JOB_GB that is not a number of GiB,
    each checked by its row's kind (pure). torch ignores such a MAX_JOBS without a word;
    some setup.py files crash on it."""
    return [Problem(Kind.JOBS, e.message, e.fix) for e in settings_read.refused(
        (_MAX_JOBS, registry.SPLIT_COMPILE, registry.MEMORY, registry.JOB_GB), environ)]


def for_build(environ: Mapping[str, str], cores: int, *,
              measured_gb: float | None = None, files: int = 0) -> dict[str, str]:
    """MAX_JOBS (the ceiling) and, when the package's last build measured it, the memory
    one of its compiles holds, for a build on a machine of ``cores`` cores of the
    ``files`` the build is known to compile (pure; :func:`problems` first). A value the
    user set is kept (an empty one counts as unset: CI files often export MAX_JOBS="")."""
    chosen = {"MAX_JOBS": str(max_jobs(cores, files))}
    if measured_gb is not None:
        chosen[JOB_GB_VAR] = f"{measured_gb:g}"
    return {k: v for k, v in chosen.items() if not environ.get(k)}
