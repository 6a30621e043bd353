"""What the container this process runs in gives it: cores to run on, CPU time, memory.

A container sees the host: its affinity mask lists all 32 cores of a 32-core host even where its cgroup
allows it two cores' worth of time (how Docker's `--cpus` and Hugging Face Spaces limit CPUs), and
/proc/meminfo shows the host's memory. The limits are in the cgroup's files, read here where present:

- cgroup v2: `cpu.max` ("max 100000": no quota; "200000 100000": two CPUs' time each 100 ms) and
  `memory.max` ("max", or bytes);
- cgroup v1: `cpu/cpu.cfs_quota_us` (-1: no quota) over `cpu/cpu.cfs_period_us`, and
  `memory/memory.limit_in_bytes` (no limit reads as the largest page multiple below 2^63).

They are read at the cgroup file system's root, where a container with its own cgroup namespace (Docker's
default on cgroup v2, Kubernetes, Spaces) and Docker on cgroup v1 see their own cgroup's files.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

CGROUP = Path("/sys/fs/cgroup")
NO_LIMIT = 2 ** 62          # cgroup v1's "no memory limit" (~2^63) and anything else no machine has


@dataclass(frozen=True)
class Container:
    affinity: int                  # the cores the scheduler may run this process on
    cpu_quota: float | None        # the CPUs' worth of time the cgroup allows each period (1.5: one and a half)
    memory: int | None             # the bytes the cgroup allows, its processes together

    @property
    def cpus(self) -> int:
        """The CPUs this process and its children can compute on at once: its cores, fewer where the quota
        allows less time. A fraction of a CPU is rounded down: a process more than the quota's whole CPUs only computes
        on time the others would have had (the cgroup is throttled for the rest of a period once it has spent
        its quota), and the fraction left over is the server's own (routing, ~6 ms of CPU an update). At least 1."""
        if self.cpu_quota is None:
            return self.affinity
        return max(1, min(self.affinity, math.floor(self.cpu_quota)))

    def fitting(self, each: int, reserved: int) -> int:
        """How many processes of `each` resident bytes to run: one per CPU (`cpus`), no more than the memory
        holds beside `reserved` bytes of the parent's own (0 where not one fits)."""
        if self.memory is None:
            return self.cpus
        return max(0, min(self.cpus, (self.memory - reserved) // each))


def container(root: Path | str = CGROUP) -> Container:
    """This process's container as its cgroup files at `root` describe it (a folder of fake files in tests)."""
    root = Path(root)
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return Container(affinity, cpu_quota(root), memory_limit(root))


def cpu_quota(root: Path) -> float | None:
    """The CPUs' worth of time the cgroup allows (v2, else v1), None for no quota."""
    v2 = read(root / "cpu.max")
    if v2 is not None:
        quota, _, period = v2.partition(" ")
    else:
        quota, period = read(root / "cpu" / "cpu.cfs_quota_us"), read(root / "cpu" / "cpu.cfs_period_us")
    try:
        return int(quota) / int(period) if int(quota) > 0 and int(period) > 0 else None
    except (TypeError, ValueError):            # "max", a file missing
        return None


def memory_limit(root: Path) -> int | None:
    """The bytes the cgroup allows (v2, else v1), None for no limit."""
    text = read(root / "memory.max")
    if text is None:
        text = read(root / "memory" / "memory.limit_in_bytes")
    try:
        limit = int(text)
    except (TypeError, ValueError):            # "max", a file missing
        return None
    return limit if 0 < limit < NO_LIMIT else None


def read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:                            # absent (another cgroup version, no cgroup file system)
        return None


def available_memory() -> int | None:
    """Bytes free now: the kernel's MemAvailable, or less under the container's own limit; None if unknown."""
    try:
        info = dict(line.split(":", 1) for line in Path("/proc/meminfo").read_text().splitlines())
        free = int(info["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return None
    limit = container().memory
    return min(free, limit) if limit else free
