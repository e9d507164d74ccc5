"""The machine a compile runs on, read at compile time: the cores this process may use
and the memory still free, within the limits of its cgroups (a container's CPU quota and
memory limit, v1 or v2, on any cgroup from its own to the root), and the memory a
running compile holds now.

Standalone: copied into each tree's bin/ beside the compile pool (_pool.py), which reads
it before each compile; the standard library only. _probe/machine.py answers the same
questions for wheelcuda's own commands from here.
"""

from __future__ import annotations

import math
import os
import re


def cores() -> int:
    """CPUs this process may run on: its affinity (cpusets count), and a cgroup's CPU
    quota (a container limited to 8 CPUs of a 64-core host sees all 64 otherwise)."""
    try:
        count = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        count = os.cpu_count() or 1
    quota = _cpu_quota()
    return max(1, min(count, quota)) if quota else count


def _cgroup_dirs() -> list[str]:
    """This process's cgroup folders, v2 and v1's memory and cpu controllers, from its
    own up to the root (a limit may be set on any of them)."""
    out = []
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    for line in lines:
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        for base in (["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] if not controllers else
                     [f"/sys/fs/cgroup/{c}" for c in controllers.split(",")
                      if c in ("memory", "cpu")]):
            here = path
            while True:
                folder = base + here.rstrip("/")
                if os.path.isdir(folder):
                    out.append(folder)
                if here in ("/", ""):
                    break
                here = os.path.dirname(here)
    return out


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def _cpu_quota() -> int | None:
    """The smallest CPU quota of this process's cgroups, in whole CPUs (rounded up): v2's
    ``cpu.max`` (``QUOTA PERIOD``), v1's ``cpu.cfs_quota_us`` and ``cpu.cfs_period_us``."""
    found = []
    for folder in _cgroup_dirs():
        v2 = (_read(os.path.join(folder, "cpu.max")) or "").split()
        pair = v2 if len(v2) == 2 else [_read(os.path.join(folder, f"cpu.cfs_{n}_us")) or ""
                                        for n in ("quota", "period")]
        if all(p.isdecimal() for p in pair) and int(pair[1]) > 0:
            found.append(math.ceil(int(pair[0]) / int(pair[1])))
    return min(found) if found else None


def _meminfo_available(text: str) -> int | None:
    for line in text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return None


def _inactive_file(folder: str, v1: bool) -> int:
    """Page cache the kernel reclaims first, counted in a cgroup's usage: v2's
    ``inactive_file``, v1's ``total_inactive_file`` (its whole subtree) from memory.stat.
    Left in, a limited container that had just unpacked torch looked full and ran one
    compile at a time (docker's and the kubelet's ``working set`` subtract it too)."""
    name = "total_inactive_file" if v1 else "inactive_file"
    for line in (_read(os.path.join(folder, "memory.stat")) or "").splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdecimal():
            return int(value)
    return 0


def _cgroup_room() -> int | None:
    """The least room below a memory limit among this process's cgroups (v2's
    memory.max, v1's memory.limit_in_bytes), its usage less the page cache the kernel
    reclaims first, in bytes; None without a limit."""
    rooms = []
    for folder in _cgroup_dirs():
        for limit_name, used_name in (("memory.max", "memory.current"),
                                      ("memory.limit_in_bytes", "memory.usage_in_bytes")):
            limit = _read(os.path.join(folder, limit_name))
            usage = _read(os.path.join(folder, used_name))
            # v1 says "no limit" with a number near 2**63
            if limit and usage and limit.isdecimal() and usage.isdecimal() \
                    and int(limit) < 2**60:
                used = max(0, int(usage) - _inactive_file(folder, used_name != "memory.current"))
                rooms.append(max(0, int(limit) - used))
    return min(rooms) if rooms else None


def available_memory() -> int | None:
    """Bytes a build may still use: MemAvailable, capped by its cgroups' room."""
    meminfo = _read("/proc/meminfo")
    values = [v for v in (_meminfo_available(meminfo or ""), _cgroup_room()) if v is not None]
    return min(values) if values else None


def _children(pid: int) -> list[int]:
    """The processes ``pid``'s threads started (nvcc starts cicc and ptxas from threads
    of its own with ``--threads``); empty when they cannot be read."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        text = _read(f"/proc/{pid}/task/{tid}/children") or ""
        out += [int(c) for c in text.split() if c.isdecimal()]
    return out


def tree_memory(pid: int) -> int:
    """Bytes resident in ``pid`` and every process below it (a compile: its wrapper,
    nvcc, cicc, ptxas, the host compiler), from /proc's statm; 0 when it is gone."""
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    total, todo, seen = 0, [pid], set[int]()
    while todo:
        p = todo.pop()
        if p in seen or len(seen) > 4096:  # a pid reused under us cannot loop for ever
            continue
        seen.add(p)
        fields = (_read(f"/proc/{p}/statm") or "").split()
        if len(fields) > 1 and fields[1].isdecimal():
            total += int(fields[1]) * page
        todo += _children(p)
    return total


def parse_size(text: str) -> int | None:
    """``64G``, ``512M``, ``1.5T``, ``1073741824`` -> bytes; None when it is not a size
    above zero (pure)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(?:i?[bB])?\s*", text or "")
    if not m:
        return None
    size = int(float(m[1]) * 1024 ** " kmgt".index(m[2].lower() or " "))
    return size if size > 0 else None
