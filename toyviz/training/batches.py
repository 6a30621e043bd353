"""The batches the models train on: random windows of a corpus for the GPT (with repeated spans and
short copy sequences that make induction heads form), verse pairs grouped by length for the translator.

Each is a pure function of its random generator (or seed), so every process draws the same global
batch and a resumed run draws the batches it would have drawn.
"""
from __future__ import annotations

import math

import torch


def gpt_batch(ids: torch.Tensor, bos: int, batch: int, context: int, gen: torch.Generator,
              repeat_share: float = 0.0):
    """Random windows of the corpus, each starting with BOS as at inference → x, y (batch, context).

    A `repeat_share` of the windows get a span repeated later in the same window (half of those spans
    are random tokens): natural text repeats too seldom within 256 tokens for a small model to learn
    in-context copying early, and copying is what induction heads do.
    """
    starts = torch.randint(0, len(ids) - context, (batch,), generator=gen)
    window = torch.stack([ids[s: s + context] for s in starts.tolist()]).long()
    for row in range(batch):
        if torch.rand(1, generator=gen).item() < repeat_share:
            add_repeated_span(window[row], bos, gen)
    x = torch.cat([torch.full((batch, 1), bos), window[:, :-1]], dim=1)
    return x, window


def repeat_share_at(step: int, start: float, end: float, fade_steps: int) -> float:
    """The curriculum of repeated spans: `start` at step 0, falling linearly to `end` at `fade_steps`.
    Many repeats early give the copying signal that makes induction heads form; few later leave
    the budget to ordinary text, while the heads, once formed, keep being used."""
    if step >= fade_steps:
        return end
    return end + (start - end) * (1 - step / fade_steps)


def add_repeated_span(window: torch.Tensor, bos: int, gen: torch.Generator):
    """In place: copy a span of 8 to context/2 tokens to a later place in the window; every other time
    the span is first overwritten with random ordinary tokens (ids below BOS)."""
    context = len(window)
    period = int(torch.randint(8, context // 2, (1,), generator=gen))
    first = int(torch.randint(0, context - 2 * period + 1, (1,), generator=gen))
    second = int(torch.randint(first + period, context - period + 1, (1,), generator=gen))
    if torch.rand(1, generator=gen).item() < 0.5:
        window[first: first + period] = torch.randint(0, bos, (period,), generator=gen)
    window[second: second + period] = window[first: first + period].clone()


def copy_batch(bos: int, n: int, max_period: int, gen: torch.Generator):
    """n short sequences BOS + r + r, r a run of 8 to max_period - 1 random ordinary tokens → x, y.

    Short on purpose: in a sequence of T tokens an untrained head puts about 1/T of its attention on
    the token that would predict the repeat, and the induction circuit's gradient scales with it. In
    256-token windows (the curriculum of `add_repeated_span`) no induction head formed in 17 M tokens;
    on these it forms in a few hundred steps (measured on the shipped GPT, see its model card).
    """
    period = int(torch.randint(8, max_period, (1,), generator=gen))
    r = torch.randint(0, bos, (n, period), generator=gen)
    seq = torch.cat([torch.full((n, 1), bos), r, r], dim=1)
    return seq[:, :-1], seq[:, 1:]


def copy_period_at(step: int) -> int:
    """The copy batches' longest run grows from 16 to 64 tokens over 1,200 steps: the circuit forms on
    short runs, then learns to reach back as far as the probes' 50-token runs."""
    return min(64, 16 + step // 25)


class VerseBatches:
    """The translator's training batches, epoch after epoch: every verse once an epoch, in one of its
    English versions drawn at random (a source per pair per epoch), grouped by length so a batch
    needs little padding (on two cores this halves the step time of random batches), the batches in
    a shuffled order. Epoch e's batches are a pure function of (seed, e), so a resumed run draws the
    same ones without saving them.

    versions: one list per verse of its (source ids, target ids) pairs, one per English source.
    """

    def __init__(self, versions: list[list[tuple[list[int], list[int]]]], batch: int, seed: int):
        self.versions, self.seed = versions, seed
        # near-equal batches (batch or batch - 1 rows) rather than a short last one: every verse is
        # drawn, and no batch is too small to split between the processes
        self.per_epoch = max(1, math.ceil(len(versions) / batch))
        self._epoch = (None, None)

    def epoch(self, e: int) -> list[list[tuple[list[int], list[int]]]]:
        if self._epoch[0] != e:
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + e)
            picks = [v[int(torch.randint(len(v), (1,), generator=gen))] for v in self.versions]
            noise = torch.rand(len(picks), generator=gen).tolist()
            order = sorted(range(len(picks)), key=lambda i: (len(picks[i][0]) + len(picks[i][1]), noise[i]))
            batches = [chunk.tolist() for chunk in torch.tensor(order).tensor_split(self.per_epoch)]
            self._epoch = (e, [[picks[i] for i in batches[b]]
                               for b in torch.randperm(self.per_epoch, generator=gen).tolist()])
        return self._epoch[1]

    def at(self, step: int) -> list[tuple[list[int], list[int]]]:
        return self.epoch(step // self.per_epoch)[step % self.per_epoch]


def translation_batch(rows, src_pad: int, tgt_pad: int, bos: int, eos: int):
    """(src ids, tgt ids) rows → src (B, S), decoder input (B, T), target (B, T) padded; -1 marks padding targets."""
    S, T = max(len(s) for s, _ in rows), max(len(t) for _, t in rows) + 1
    src = torch.full((len(rows), S), src_pad)
    tgt_in = torch.full((len(rows), T), tgt_pad)
    tgt_out = torch.full((len(rows), T), -1)
    for r, (s, t) in enumerate(rows):
        src[r, : len(s)] = torch.tensor(s)
        tgt_in[r, : len(t) + 1] = torch.tensor([bos] + t)
        tgt_out[r, : len(t) + 1] = torch.tensor(t + [eos])
    return src, tgt_in, tgt_out
