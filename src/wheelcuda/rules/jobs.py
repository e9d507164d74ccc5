"""How many compile jobs fit this machine (MAX_JOBS), and how many threads the nvcc
calls may use (the pool WHEELCUDA_JOBSERVER describes), unless the user said.

Cores alone are not enough: a causal-conv1d compile job peaked at 3.4 GB RSS here, and
flash-attn builds are known to be killed by the kernel when MAX_JOBS follows the core
count. So: min(cores, available memory / memory per job), at least 1. Memory is what
the kernel reports available, capped by the cgroup limit a container runs under.

Pruned to one GPU target, an nvcc call runs single-threaded (nvcc ignores --threads for
one target), and a package with one big file waits on it: causal_conv1d_bwd.cu spent
140 s in cicc and 100 s in ptxas on one core while the other was idle. nvcc's
``--split-compile N`` runs the optimizer on N threads ("minimal (if any) impact on
performance of the compiled binary", says its --help); the tree's nvcc wrapper adds it.
With N=2 that file's ptxas took 65 s instead of 100 s and the whole build 231 s instead
of 272 s. Its memory grows once, not with N: the file's call peaked at 3.2 GiB unsplit
(2-core machine) and at 5.5, 5.6, 5.6 and 5.8 GiB with N = 2, 4, 8, 16 (the GPU
machine, the four side by side; nvcc 13.0.88, sm_90). So a split call counts as two
jobs' memory whatever its N, and memory bounds how many calls split at once, not how
many threads they use.

A fixed N per call cannot fit both kinds of package: MAX_JOBS=16 calls of N=2 fill the
GPU machine, but causal-conv1d compiles 3 files, and at N=1 it took 349 s there where
N=8 took 191 s. So the calls share a pool of tokens (standalone/_nvcc_pool.py says how):
2 threads per core (the cores oversubscribed at most twice, as before), the calls that
memory lets split at once, and at most one thread per core for one call. Calls that
start together divide the threads, so 3 files get about 10 each on 16 cores, 16 files
2 each, and a lone file 16.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..standalone._nvcc_pool import POOL, parse_pool
from .checks import Kind, Problem

__all__ = ["for_build", "max_jobs", "pool", "problems"]


def max_jobs(cores: int, available_bytes: int | None, job_gb: float) -> int:
    """The job count that uses the cores without running out of memory (pure)."""
    if available_bytes is None:
        return max(1, cores)
    by_memory = int(available_bytes / (job_gb * 1024**3))
    return max(1, min(cores, by_memory))


def pool(cores: int, available_bytes: int | None, job_gb: float,
         jobs: int) -> tuple[int, int, int]:
    """(thread tokens, split tokens, most threads for one call) when ``jobs`` calls may
    run at once (pure). A split call holds one more job's memory than ``jobs`` counted,
    so splits = what memory holds beyond ``jobs`` jobs; none when memory is unknown."""
    if available_bytes is None:
        return 2 * cores, 0, cores
    room = int(available_bytes / (job_gb * 1024**3)) - jobs
    return 2 * cores, max(0, min(jobs, room)), cores


def problems(environ: Mapping[str, str]) -> list[Problem]:
    """MAX_JOBS or WHEELCUDA_SPLIT_COMPILE set to something that is not a count, or a
    WHEELCUDA_JOBSERVER of the wrong form (pure). torch ignores such a MAX_JOBS without a
    word; some setup.py files crash on it."""
    out = []
    for var in ("MAX_JOBS", "WHEELCUDA_SPLIT_COMPILE"):
        value = environ.get(var) or ""
        if value and not (value.strip().isdecimal() and int(value) > 0):
            out.append(Problem(Kind.JOBS, f"{var}={value!r} is not a whole number above 0",
                               f"export {var}=2   (or unset {var}: wheelcuda picks one)"))
    value = environ.get(POOL) or ""
    if value and parse_pool(value) is None:
        out.append(Problem(Kind.JOBS, f"{POOL}={value!r} is not FOLDER:THREADS:SPLITS:CAP",
                           f"unset {POOL}   (wheelcuda install sets one)"))
    return out


def for_build(job_gb: float, environ: Mapping[str, str], n: int, memory: int | None, *,
              split: bool = True, pool_dir: str = "") -> dict[str, str]:
    """MAX_JOBS and (with ``split``) WHEELCUDA_JOBSERVER for a build on a machine of ``n``
    cores and ``memory`` bytes available (pure; :func:`problems` first).

    WHEELCUDA_JOBSERVER is ``pool_dir:THREADS:SPLITS:CAP`` (see :func:`pool`); the nvcc
    wrapper makes ``pool_dir`` when a call first needs it, and takes an empty one as
    ``$TMPDIR/wheelcuda-jobs-<uid>``, one pool per user, which concurrent builds share.
    A value the user set is kept, and counts: the pool is sized for the user's MAX_JOBS;
    the user's WHEELCUDA_SPLIT_COMPILE fixes every call's split, so no pool then. An
    empty value counts as unset (CI files often export MAX_JOBS="")."""
    user = environ.get("MAX_JOBS")
    jobs = int(user) if user else max_jobs(n, memory, job_gb)
    chosen = {"MAX_JOBS": str(jobs)}
    if split and not environ.get("WHEELCUDA_SPLIT_COMPILE"):
        threads, splits, cap = pool(n, memory, job_gb, jobs)
        chosen[POOL] = f"{pool_dir}:{threads}:{splits}:{cap}"
    return {k: v for k, v in chosen.items() if not environ.get(k)}
