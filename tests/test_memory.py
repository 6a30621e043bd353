"""Byte-bounded caches (issue 17: a class must not grow the server's memory without bound)."""
import os
import platform
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import torch

from toyviz.explorer import Explorer
from toyviz.memory import LRU, MB, nbytes, return_freed_memory, settle_allocator


@dataclass
class Held:
    a: torch.Tensor
    parts: dict
    rows: list


def test_nbytes_counts_the_tensors_and_arrays_inside_nested_values():
    held = Held(torch.zeros(10, 10), {"x": np.zeros(5, dtype=np.float64), "name": "ignored"},
                [torch.zeros(3, dtype=torch.int64), 7])
    assert nbytes(held) == 400 + 40 + 24
    assert nbytes("text") == nbytes(3) == nbytes(None) == 0


def test_the_oldest_values_leave_when_the_bytes_pass_the_budget():
    cache = LRU(size=100, budget=1000)
    for key in range(5):
        cache.get(key, lambda: torch.zeros(100))            # 400 bytes each: two fit
    assert list(cache.items) == [3, 4] and cache.bytes() == 800
    cache.get(3, lambda: None)                              # a hit makes 3 the newest
    cache.get(5, lambda: torch.zeros(100))
    assert list(cache.items) == [3, 5]


def test_a_value_over_the_whole_budget_is_still_kept_alone():
    cache = LRU(size=100, budget=1000)
    cache.get("small", lambda: torch.zeros(10))
    big = cache.get("big", lambda: torch.zeros(1000))
    assert list(cache.items) == ["big"] and cache.peek("big") is big


def test_the_count_bound_still_holds_without_a_budget():
    cache = LRU(size=3)
    for key in range(10):
        cache.get(key, lambda k=key: k)
    assert list(cache.items) == [7, 8, 9] and cache.bytes() == 0


def test_many_threads_keep_the_cache_within_its_budget():
    cache, errors = LRU(size=1000, budget=10_000), []

    def worker(offset):
        try:
            for key in range(200):
                assert cache.get((offset, key % 50), lambda: torch.zeros(250)).numel() == 250
        except Exception as err:     # noqa: BLE001 — reported below
            errors.append(err)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and cache.bytes() <= 10_000 and len(cache.items) == len(cache.weights)


def test_the_explorers_trace_cache_holds_its_budget(tiny_gpt):
    explorer = Explorer(tiny_gpt, None)
    one = nbytes(explorer.trace("To be, or not to be")[0])
    explorer.traces.budget = 3 * one + one // 2
    for n in range(12):
        explorer.trace(f"To be, or not to be {n}")
    assert 1 < len(explorer.traces.items) <= 4 and explorer.traces.bytes() <= explorer.traces.budget


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_the_allocator_settings_apply_under_glibc():
    assert settle_allocator() is True


def resident_mb() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / MB


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_freed_memory_in_the_middle_of_the_heap_goes_back():
    """Every other block of 200 MB freed leaves holes the heap keeps resident; return_freed_memory
    hands their pages back (the server calls it every RETURN_EVERY_S)."""
    settle_allocator()
    blocks = [bytearray(100_000) for _ in range(2000)]       # below MMAP_FROM: from the heap, touched (zeroed)
    del blocks[::2]
    held = resident_mb()
    assert return_freed_memory() is True
    assert resident_mb() < held - 50, (held, resident_mb())
    del blocks
