"""The container's limits (toyviz.machine) read from fake cgroup files, and the app's default worker
count (toyviz.app.compute.default_workers) following them: a 2-vCPU, 16 GB Space on a 32-core host starts 2
workers, not 32."""
import os

import pytest

from toyviz.app.compute import SERVER_BYTES, WORKER_BYTES, default_workers
from toyviz.machine import Container, container

GB = 2 ** 30
V1_NO_LIMIT = "9223372036854771712"         # what cgroup v1 writes where memory has no limit


def cgroup(root, files: dict[str, str]):
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text + "\n")
    return root


@pytest.fixture
def host_of_32_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(32)), raising=False)


@pytest.mark.parametrize("files, quota, memory", [
    ({"cpu.max": "200000 100000", "memory.max": str(16 * GB)}, 2.0, 16 * GB),                      # v2
    ({"cpu.max": "max 100000", "memory.max": "max"}, None, None),
    ({"cpu/cpu.cfs_quota_us": "150000", "cpu/cpu.cfs_period_us": "100000",                         # v1
      "memory/memory.limit_in_bytes": str(3 * GB)}, 1.5, 3 * GB),
    ({"cpu/cpu.cfs_quota_us": "-1", "cpu/cpu.cfs_period_us": "100000",
      "memory/memory.limit_in_bytes": V1_NO_LIMIT}, None, None),
    ({}, None, None),                                                                              # no cgroup
])
def test_the_quota_and_the_memory_limit_are_read_from_either_cgroup_version(tmp_path, host_of_32_cores,
                                                                             files, quota, memory):
    assert container(cgroup(tmp_path, files)) == Container(32, quota, memory)


def test_a_quota_below_the_cores_sets_the_cpus_rounded_down_to_at_least_one():
    assert Container(32, None, None).cpus == 32
    assert Container(32, 2.0, None).cpus == 2
    assert Container(32, 1.5, None).cpus == 1        # the half CPU left is the server's own
    assert Container(32, 0.5, None).cpus == 1
    assert Container(2, 8.0, None).cpus == 2         # a quota above the cores adds none


def test_memory_below_the_cpus_times_the_footprint_sets_how_many_fit():
    each, reserved = 800, 800
    assert Container(8, None, None).fitting(each, reserved) == 8
    assert Container(8, None, 8 * 800 + reserved).fitting(each, reserved) == 8
    assert Container(8, None, 3 * 800 + reserved + 799).fitting(each, reserved) == 3
    assert Container(8, None, 800 + reserved - 1).fitting(each, reserved) == 0     # none: the server computes
    assert Container(8, None, reserved // 2).fitting(each, reserved) == 0


def test_the_default_worker_count_follows_the_container(tmp_path, host_of_32_cores):
    space = cgroup(tmp_path / "space", {"cpu.max": "200000 100000", "memory.max": str(16 * GB)})
    assert default_workers("cpu", space) == 2
    small = cgroup(tmp_path / "small", {"memory.max": str(SERVER_BYTES + 3 * WORKER_BYTES + 1)})
    assert default_workers("cpu", small) == 3
    tiny = cgroup(tmp_path / "tiny", {"memory.max": str(GB)})
    assert default_workers("cpu", tiny) == 0
    assert default_workers("cpu", tmp_path / "none") == 32
    assert default_workers("cuda", space) == 1
