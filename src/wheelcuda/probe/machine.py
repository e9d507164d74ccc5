"""The machine a build runs on: the cores it may use, the memory still free, its C
library."""

from __future__ import annotations

import os
import platform
from pathlib import Path

__all__ = ["available_memory", "cores", "libc"]


def libc() -> str:
    """``glibc 2.36``: the C library a wheel built here links against. A wheel built
    with a newer glibc's symbols does not load on an older one (wheelcuda's wheels are
    ``linux_x86_64``, not audited down to a manylinux tag), so the key that travels to a
    team's index holds it."""
    name, version = platform.libc_ver()
    return f"{name} {version}".strip() or "unknown"


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
