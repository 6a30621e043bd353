"""How fast a live generation reaches a page: one stream's clock, asked after every token.

A stream shows the tokens at a reading pace, at most TOKENS_PER_S (a fast CPU flashes 64 tokens up in
under a second, which hides that the model writes one token at a time), but not when more than
BUSY_GENERATIONS stream at once: a paced stream holds its worker while it sleeps, and a class must not
queue for a first token behind sleeping streams. It sends the text at most TEXT_EVERY_S apart (tokens
that come faster go together) and the figures with the last token only. A page sent more updates than
it can draw falls behind the server: it freezes, and Stop arrives after the generation is over.

What a page can draw: Gradio's page, for every streamed update, re-reads the value of every component
that any event has shown a progress for (a structured clone each), so an update costs more with every
tab a visitor has opened (found with Chromium's CPU profiler). After opening every tab, one update cost
the page ~45 ms on this 2-core machine: at 32 updates/s the page showed 128 tokens 1.3-1.7 s after they
arrived, at 12/s it kept up, also with the CPU slowed 2x (a student's laptop; benchmarks.stream.keeping_up).
So TEXT_EVERY_S is a little under two paced tokens: every update shows two new tokens, 12 a second.

The server also sends at most UPDATES_PER_S in all, so with many streams each one's interval grows with
their number: every update costs the server's event loop (Gradio rebuilds every output an update leaves
unchanged), and a class's 16 streams at 40 a second each kept it busy enough to delay every answer
(profiled under benchmarks.load).
"""
from __future__ import annotations

import time

TOKENS_PER_S, TEXT_EVERY_S, UPDATES_PER_S = 24, 1 / 13, 80
BUSY_GENERATIONS = 2        # streams at once beyond which none paces itself


class Pace:
    """One stream's clock, started when the stream starts. After each token: `wait` until that token's
    reading time, then send the text if `due`; `streaming` is how many streams run now, this one included."""

    def __init__(self):
        self.start, self.sent = time.perf_counter(), -1.0

    def wait(self, tokens: int, streaming: int) -> None:
        """Sleep until `tokens` tokens have had their reading time, unless a class is waiting."""
        if streaming <= BUSY_GENERATIONS:
            time.sleep(max(0.0, self.start + tokens / TOKENS_PER_S - time.perf_counter()))

    def due(self, streaming: int) -> bool:
        """Whether the text goes out now (the clock then counts from this update)."""
        if time.perf_counter() - self.sent < max(TEXT_EVERY_S, streaming / UPDATES_PER_S):
            return False
        self.sent = time.perf_counter()
        return True
