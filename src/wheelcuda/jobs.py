"""How many compile jobs fit this machine (MAX_JOBS), unless the user said.

Cores alone are not enough: a causal-conv1d compile job peaked at 3.4 GB RSS here, and
flash-attn builds are known to be killed by the kernel when MAX_JOBS follows the core
count. So: min(cores, available memory / memory per job), at least 1. Memory is what
the kernel reports available, capped by the cgroup limit a container runs under.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Peak RSS of one nvcc/cicc job when the package table says nothing (GB).
DEFAULT_JOB_GB = 4.0


def max_jobs(cores: int, available_bytes: int | None, job_gb: float) -> int:
    """The job count that uses the cores without running out of memory (pure)."""
    if available_bytes is None:
        return max(1, cores)
    by_memory = int(available_bytes / (job_gb * 1024**3))
    return max(1, min(cores, by_memory))


def cores() -> int:
    """CPUs this process may run on (affinity and cgroup cpusets count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _meminfo_available(text: str) -> int | None:
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _cgroup_room() -> int | None:
    base = Path("/sys/fs/cgroup")
    try:
        limit = (base / "memory.max").read_text().strip()
        used = int((base / "memory.current").read_text())
    except (OSError, ValueError):
        return None
    return None if limit == "max" else max(0, int(limit) - used)


def available_memory() -> int | None:
    """Bytes a build may still use: MemAvailable, capped by the cgroup's room."""
    try:
        avail = _meminfo_available(Path("/proc/meminfo").read_text())
    except OSError:
        avail = None
    room = _cgroup_room()
    values = [v for v in (avail, room) if v is not None]
    return min(values) if values else None
