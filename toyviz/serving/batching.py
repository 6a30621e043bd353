"""Continuous batching: the generations of everyone streaming at once, decoded together.

A generated token is a forward pass over one position: about a hundred small torch operations whose
cost on a CPU is nearly all overhead (and, in a server, waits for the interpreter lock: see
toyviz.serving.server). One forward over the newest tokens of N streams costs little more than one over a
single stream, so when a class presses Generate together the streams share one forward a step instead
of queueing for the workers one at a time.

`Streams(model).generate_ids(...)` keeps ToyGPT.generate_ids's contract: the same window, the same
sampling, the same tokens (logits equal up to float rounding). One background thread runs the steps:
- a new stream reads its window alone (its own KVCache), samples its first token, and joins the batch:
  its keys are copied into a row of a StreamsCache;
- each round, one forward over every row's newest token; each row samples with its own settings and
  generator;
- a stream whose window overflows reads its next window alone, as a new one does, and keeps its row;
- a stream that has all its tokens, or whose reader stopped listening (Stop, a closed page), leaves.
"""
from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Iterator

import torch

from toyviz.models.gpt import SampledToken, ToyGPT, sample, window_start
from toyviz.models.hooks import steering
from toyviz.models.layers import KVCache

ALIVE_CHECK_S = 1.0             # how often a waiting reader checks that the thread serving it still runs


class StreamsCache(KVCache):
    """The keys and values of several independent sequences decoded together, one row each
    (toyviz.serving.batching): row r holds its own positions 0 … lengths[r] − 1. Rows differ in length, so each
    layer's keys sit in a buffer padded at the end, and `keep` masks the padding. A sequence joins with
    the cache of its own prompt (`put`) and leaves (`drop`) without touching the other rows' keys.
    During a forward every row gets one new position; `advance` then counts it."""

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = capacity                                         # positions a row can hold
        self.rows = 0
        self.lengths = torch.zeros(0, dtype=torch.long)                  # (rows,)
        self.buffers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # layer → (R, nh, capacity, hs) × 2

    def put(self, row: int, cache: KVCache):
        """Row `row` (an existing one, or `rows` to add one) takes over a one-sequence cache."""
        for layer, (k, v) in cache.layers.items():
            if layer not in self.buffers or row >= self.buffers[layer][0].shape[0]:
                self._grow(layer, k, max(4, 2 * (row + 1)))
            kb, vb = self.buffers[layer]
            kb[row, :, : k.shape[2]], vb[row, :, : v.shape[2]] = k[0], v[0]
        if row == self.rows:
            self.rows += 1
            self.lengths = torch.cat((self.lengths.to(self.buffers[0][0].device), self.lengths.new_zeros(1)))
        self.lengths[row] = cache.length

    def _grow(self, layer: int, like: torch.Tensor, rows: int):
        old = self.buffers.get(layer)
        shape = (rows, like.shape[1], self.capacity, like.shape[3])
        new = (like.new_zeros(shape), like.new_zeros(shape))
        if old is not None:
            for buffer, kept in zip(new, old):
                buffer[: kept.shape[0]] = kept
        self.buffers[layer] = new

    def drop(self, row: int):
        """Remove a row; the last row moves into its place (the caller moves its sequence too)."""
        last = self.rows - 1
        if row != last:
            for kb, vb in self.buffers.values():
                kb[row], vb[row] = kb[last], vb[last]
            self.lengths[row] = self.lengths[last]
        self.rows, self.lengths = last, self.lengths[:last].clone()

    def extend(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """k, v (rows, nh, 1, hs): each row's newest position, written at its own length."""
        kb, vb = self.buffers[layer]
        rows = torch.arange(self.rows, device=k.device)
        kb[rows, :, self.lengths], vb[rows, :, self.lengths] = k[:, :, 0], v[:, :, 0]
        width = int(self.lengths.max()) + 1
        return kb[: self.rows, :, :width], vb[: self.rows, :, :width]

    def keep(self, layer: int) -> torch.Tensor:
        width = int(self.lengths.max()) + 1
        return torch.arange(width, device=self.lengths.device)[None, :] <= self.lengths[:, None]   # (rows, Tk)

    def advance(self):
        self.lengths += 1

    @property
    def length(self) -> torch.Tensor:
        """(rows,) each row's next position."""
        return self.lengths


@dataclass(eq=False)                            # a stream is itself: compared and hashed by identity
class Stream:
    """One generation: its tokens so far, its window's start, its settings, where its tokens go."""
    seq: list[int]
    start: int
    left: int
    temperature: float
    top_k: int
    top_p: float
    generator: torch.Generator
    steer: dict[int, torch.Tensor] | None
    out: queue.SimpleQueue = field(default_factory=queue.SimpleQueue)
    stopped: bool = False                       # its reader went away

    @property
    def done(self) -> bool:
        return self.left == 0 or self.stopped


class Streams:
    """Generations of one model decoded together by a background thread (see the module's notes)."""

    def __init__(self, model: ToyGPT):
        self.model = model
        self.waiting: list[Stream] = []
        self.wake = threading.Condition()
        self.thread: threading.Thread | None = None
        self.rounds = 0                         # batched forwards so far (tests and benchmarks read it)
        # the thread's own: the batch's keys, and the stream in each of its rows
        self.cache, self.rows = StreamsCache(model.config.context), []

    def generate_ids(self, ids: list[int], max_new_tokens: int, *, temperature: float = 1.0, top_k: int = 0,
                     top_p: float = 1.0, seed: int | None = None, steer: dict[int, torch.Tensor] | None = None
                     ) -> Iterator[SampledToken]:
        """As ToyGPT.generate_ids (always with the KV cache), computed together with the other streams."""
        generator = torch.Generator(device=self.model.tok_emb.weight.device)
        generator.manual_seed(seed) if seed is not None else generator.seed()
        stream = Stream(list(ids), max(0, len(ids) - self.model.config.context), max_new_tokens,
                        temperature, top_k, top_p, generator, steer)
        if max_new_tokens <= 0:
            return
        with self.wake:
            if self.thread is None or not self.thread.is_alive():     # first use, or the last one was killed
                self.cache, self.rows = StreamsCache(self.model.config.context), []
                self.thread = threading.Thread(target=self._serve, name="toyviz-streams", daemon=True)
                self.thread.start()
            self.waiting.append(stream)
            serving = self.thread
            self.wake.notify()
        try:
            for _ in range(max_new_tokens):
                item = self._next(stream, serving)
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stream.stopped = True               # the thread drops its row at its next round

    @staticmethod
    def _next(stream: Stream, serving: threading.Thread):
        """The stream's next token; an error if the thread serving it died (killed by something that is not
        an Exception, which _serve cannot pass on) instead of a reader waiting for good."""
        while True:
            try:
                return stream.out.get(timeout=ALIVE_CHECK_S)
            except queue.Empty:
                if not serving.is_alive():
                    return RuntimeError("the generation stopped: its thread ended; press Generate again")

    # ------------------------------------------------------------ the background thread ----
    def _serve(self):
        while True:
            with self.wake:
                while not self.waiting and not self.rows:
                    self.wake.wait()
                joining, self.waiting = self.waiting, []
            try:
                with torch.no_grad():
                    self._round(self.cache, self.rows, joining)
            except Exception as err:            # a bug must reach the readers, not hang them
                for stream in set(self.rows + joining):
                    stream.out.put(err)
                self.rows = []
            if not self.rows:                   # idle: the buffers (~2 MB a row here) go, not kept for the next class
                self.cache = StreamsCache(self.model.config.context)

    def _round(self, cache: StreamsCache, rows: list[Stream], joining: list[Stream]):
        for stream in joining:
            rows.append(stream)
            self._read_window(stream, cache, len(rows) - 1)
        self._leave(cache, rows)
        for r, stream in enumerate(rows):
            start = window_start(len(stream.seq), stream.start, self.model.config.context)
            if start != stream.start:                                   # as generate_ids: jump half a window
                stream.start = start
                self._read_window(stream, cache, r)
        self._leave(cache, rows)
        if not rows:
            return
        device = self.model.tok_emb.weight.device
        newest = torch.tensor([[stream.seq[-1]] for stream in rows], device=device)      # (R, 1)
        logits, _ = self.model(newest, cache=cache, hooks=steering(self._steering(rows)))
        cache.advance()
        self.rounds += 1
        for stream, row_logits in zip(rows, logits[:, -1]):
            self._emit(stream, row_logits, 1)

    def _read_window(self, stream: Stream, cache: StreamsCache, row: int):
        """The stream's window through a cache of its own (a prompt, or the window after a jump), whose
        keys then fill cache row `row`."""
        window = stream.seq[stream.start:]
        own = KVCache()
        logits, _ = self.model(torch.tensor([window], device=self.model.tok_emb.weight.device), cache=own,
                               hooks=steering(stream.steer))
        cache.put(row, own)
        self._emit(stream, logits[0, -1], len(window))

    @staticmethod
    def _emit(stream: Stream, logits: torch.Tensor, positions: int):
        step = sample(logits, stream.temperature, stream.top_k, stream.top_p, stream.generator, positions)
        stream.seq.append(step.token)
        stream.left -= 1
        stream.out.put(step)

    @staticmethod
    def _leave(cache: StreamsCache, rows: list[Stream]):
        """Drop the finished streams' rows (the last row moves into a freed one, its stream with it)."""
        for r in reversed(range(len(rows))):
            if rows[r].done:
                cache.drop(r)
                rows[r] = rows[-1]
                rows.pop()

    def _steering(self, rows: list[Stream]) -> dict[int, torch.Tensor] | None:
        """Each row's own steering vectors as (R, 1, C) per layer (zeros for rows without), or None."""
        layers = {layer for stream in rows for layer in (stream.steer or {})}
        if not layers:
            return None
        zeros = self.model.tok_emb.weight.new_zeros(self.model.config.d_model)
        return {layer: torch.stack([(stream.steer or {}).get(layer, zeros) for stream in rows])[:, None]
                for layer in layers}
