"""The machine a build runs on: the cores it may use and the memory still free."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["available_memory", "cores"]


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
