"""What the server keeps between requests, bounded in bytes: a thread-safe LRU cache that weighs its
values, and how a long-running server's allocator gives freed memory back.

A trace of one full-context prompt holds about 25 MB of tensors (every head's queries, keys, values,
scores, writes, every layer's stream and the logits): a cache bounded by a count of entries lets a
class that pastes long prompts grow the server by gigabytes. Bounded by bytes it cannot.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import dataclasses
import sys
import threading
import time
from collections import OrderedDict
from pathlib import Path

import torch

MB = 2 ** 20


def nbytes(value, depth: int = 4) -> int:
    """Bytes of the tensors and arrays in value (or what an object's `nbytes` says, as a trace's PerHead and
    NormStats do), looking `depth` levels into dataclasses, objects, dicts, lists and tuples (what traces,
    translations and answers are made of); other leaves count 0."""
    if isinstance(getattr(value, "nbytes", None), int):      # tensors, arrays, and objects that say their size
        return value.nbytes
    if depth == 0 or isinstance(value, (str, bytes, int, float, bool, type(None))):
        return 0
    if isinstance(value, dict):
        return sum(nbytes(v, depth - 1) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(nbytes(v, depth - 1) for v in value)
    if dataclasses.is_dataclass(value) or hasattr(value, "__dict__"):
        return sum(nbytes(v, depth - 1) for v in vars(value).values())
    return 0


class LRU:
    """A thread-safe least-recently-used cache (the app serves several users at once) holding at most
    `size` values and, with `budget`, at most that many bytes of them. A value heavier than the whole budget
    is returned and not kept: kept, it would hold more memory than the cache was given, for as long as
    nobody asked for anything else."""

    def __init__(self, size: int, budget: int | None = None, weigh=None):
        self.size, self.budget, self.weigh = size, budget, weigh or nbytes
        self.items, self.weights, self.lock = OrderedDict(), {}, threading.Lock()

    def peek(self, key):
        """The cached value or None, computing nothing."""
        with self.lock:
            return self.items.get(key)

    def get(self, key, make):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = make()                                     # computed outside the lock
        weight = self.weigh(value) if self.budget is not None else 0
        if self.budget is not None and weight > self.budget:
            return value
        with self.lock:
            self.items[key], self.weights[key] = value, weight
            self.items.move_to_end(key)
            while len(self.items) > 1 and (len(self.items) > self.size or self.bytes() > (self.budget or sys.maxsize)):
                old, _ = self.items.popitem(last=False)
                del self.weights[old]
        return value

    def bytes(self) -> int:
        return sum(self.weights.values())


# glibc's malloc settings (mallopt): a server answering from many threads at once otherwise keeps
# one heap per thread (up to 8 per core) and, once it has freed a few large tensors, raises the size
# from which it maps memory straight from the system, so later tensors land in heaps it never returns.
# Fixing that size also fixes the size from which free() hands a heap's top back at once (128 kB):
# then every forward pass faults its pages in afresh, 20-25 % of its time (8.0 → 9.6 ms at T = 128,
# benchmarks.core), so the heaps keep up to TRIM_FROM at their top instead, and the keeper thread
# below hands it back every RETURN_EVERY_S.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8
ARENAS = 2
MMAP_FROM = 1 * MB
TRIM_FROM = 64 * MB


def settle_allocator() -> bool:
    """Fewer heaps, every allocation from MMAP_FROM bytes mapped and handed back to the system when
    freed, so memory follows the caches instead of only growing, and freed heap tops kept for the next
    pass up to TRIM_FROM (return_freed_memory gives them back). True where applied (glibc), else a
    no-op returning False."""
    libc = glibc()
    return libc is not None and all(libc.mallopt(option, value) for option, value in
                                    ((M_ARENA_MAX, ARENAS), (M_MMAP_THRESHOLD, MMAP_FROM), (M_TRIM_THRESHOLD, TRIM_FROM)))


def glibc():
    """The C library, where it is glibc (with mallopt and malloc_trim); None elsewhere."""
    name = ctypes.util.find_library("c")
    if not sys.platform.startswith("linux") or name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:
        return None


def mkl_keeps_thread_buffers() -> bool | None:
    """Whether MKL, torch's matrix library on x86, keeps its buffers for every thread that used it (its
    fast memory manager: ~8 MB a thread that traced, never given back while the thread lives); None
    where torch has no MKL. Off only when MKL_DISABLE_FAST_MM=1 was set before torch loaded (importing toyviz sets it)."""
    try:
        lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        return lib.mkl_serv_get_fast_mm_status() == 0
    except (OSError, AttributeError):
        return None


# Freed blocks in the middle of a heap stay resident until malloc_trim hands their pages back: after
# a class (8 threads answering for a minute, in-process) 600 MB resident fell to 433 MB with one call,
# of which the caches held 44 MB. A call takes up to ~70 ms under load (it locks the heaps meanwhile).
RETURN_EVERY_S = 10.0


def return_freed_memory() -> bool:
    """Hand the pages of freed heap blocks back to the system (glibc's malloc_trim); False elsewhere."""
    libc = glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def keep_returning_freed_memory(every_s: float = RETURN_EVERY_S) -> threading.Thread:
    """A daemon thread calling return_freed_memory every `every_s` seconds while the server runs."""
    def loop():
        while return_freed_memory():
            time.sleep(every_s)
    thread = threading.Thread(target=loop, name="toyviz-return-memory", daemon=True)
    thread.start()
    return thread
