"""How many compile jobs fit this machine (MAX_JOBS), and how many threads each nvcc
call may use (WHEELCUDA_SPLIT_COMPILE), unless the user said.

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
of 272 s, but the largest process grew from 3.4 to 5.8 GB: so each split thread is
counted as one more job's memory, and the cores are oversubscribed at most twice.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..data.recipes import DEFAULT_JOB_GB
from .checks import Kind, Problem

__all__ = ["DEFAULT_JOB_GB", "for_build", "max_jobs", "problems", "split_compile"]


def max_jobs(cores: int, available_bytes: int | None, job_gb: float) -> int:
    """The job count that uses the cores without running out of memory (pure)."""
    if available_bytes is None:
        return max(1, cores)
    by_memory = int(available_bytes / (job_gb * 1024**3))
    return max(1, min(cores, by_memory))


def split_compile(cores: int, available_bytes: int | None, job_gb: float, jobs: int) -> int:
    """Threads nvcc's optimizer may use in one call when ``jobs`` calls run at once (pure)."""
    by_cpu = max(1, 2 * cores // max(1, jobs))
    if available_bytes is None:
        return 1
    by_memory = int(available_bytes / (max(1, jobs) * job_gb * 1024**3))
    return max(1, min(by_cpu, by_memory))


def problems(environ: Mapping[str, str]) -> list[Problem]:
    """MAX_JOBS or WHEELCUDA_SPLIT_COMPILE set to something that is not a count (pure).
    torch ignores such a MAX_JOBS without a word; some setup.py files crash on it."""
    out = []
    for var in ("MAX_JOBS", "WHEELCUDA_SPLIT_COMPILE"):
        value = environ.get(var) or ""
        if value and not (value.strip().isdecimal() and int(value) > 0):
            out.append(Problem(Kind.JOBS, f"{var}={value!r} is not a whole number above 0",
                               f"export {var}=2   (or unset {var}: wheelcuda picks one)"))
    return out


def for_build(job_gb: float, environ: Mapping[str, str], n: int, memory: int | None, *,
              split: bool = True) -> dict[str, str]:
    """MAX_JOBS and (with ``split``) WHEELCUDA_SPLIT_COMPILE for a build on a machine of
    ``n`` cores and ``memory`` bytes available (pure; :func:`problems` first). A value
    the user set is kept, and counts: split threads are sized for the user's MAX_JOBS.
    An empty one counts as unset (CI files often export MAX_JOBS="")."""
    user = environ.get("MAX_JOBS")
    jobs = int(user) if user else max_jobs(n, memory, job_gb)
    chosen = {"MAX_JOBS": str(jobs)}
    if split:
        chosen["WHEELCUDA_SPLIT_COMPILE"] = str(split_compile(n, memory, job_gb, jobs))
    return {k: v for k, v in chosen.items() if not environ.get(k)}
