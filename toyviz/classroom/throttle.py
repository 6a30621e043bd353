"""How often one client may join or vote, so that a script in a loop can neither guess join codes nor stuff
a ballot box with made-up device ids.

A token bucket per client (its address as the server sees it): `burst` at once, then `per_second`. A lecture hall
often reaches the server through one address (the university's network address translation), so a burst is a
whole class: 120 phones joining or voting within the same seconds pass.
"""
from __future__ import annotations

import threading
import time

FORGET_S = 600.0         # a client unseen this long is forgotten: memory follows the clients of ten minutes


class Throttle:
    def __init__(self, burst: float, per_second: float):
        self.burst, self.per_second = burst, per_second
        self.buckets: dict[str, tuple[float, float]] = {}       # client → (tokens left, when counted)
        self.lock = threading.Lock()
        self.swept = time.monotonic()

    def wait(self, client: str, now: float | None = None) -> float:
        """0 and one token taken when `client` may go on; else the seconds until it may (nothing taken)."""
        now = time.monotonic() if now is None else now
        with self.lock:
            if now - self.swept > FORGET_S:
                self.buckets = {c: b for c, b in self.buckets.items() if now - b[1] < FORGET_S}
                self.swept = now
            tokens, then = self.buckets.get(client, (self.burst, now))
            tokens = min(self.burst, tokens + (now - then) * self.per_second)
            if tokens < 1:
                self.buckets[client] = (tokens, now)
                return (1 - tokens) / self.per_second
            self.buckets[client] = (tokens - 1, now)
            return 0.0
