"""The machine a build runs on: the cores it may use, the memory still free, its C
library."""

from __future__ import annotations

import platform

from .._standalone import _machine


def libc() -> str:
    """``glibc 2.36``: the C library a wheel built here links against. A wheel built
    with a newer glibc's symbols does not load on an older one (wheelcuda's wheels are
    ``linux_x86_64``, not audited down to a manylinux tag), so the key that travels to a
    team's index holds it."""
    name, version = platform.libc_ver()
    return f"{name} {version}".strip() or "unknown"


def cores() -> int:
    """CPUs this process may run on (affinity, cpusets and a cgroup's CPU quota count),
    as the tree's compile pool counts them at compile time."""
    return _machine.cores()


def available_memory() -> int | None:
    """Bytes a build may still use: MemAvailable, capped by its cgroups' room, as the
    tree's compile pool reads it at compile time."""
    return _machine.available_memory()
