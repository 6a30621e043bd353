"""What a live run trains (toyviz.training.live runs it in its own process): the two recipes' settings,
the attention-only model the induction recipe trains, and each recipe's training loop, a generator that
yields the run's header and then a record every few steps.

- "induction": a 2-layer attention-only transformer (the project's MultiHeadAttention) on random tokens
  that repeat with a random period. Tokens of the first period cannot be predicted; the later ones can,
  once an induction head looks at what followed the current token's earlier occurrence. The record shows
  the loss plateau, then the drop of the in-context loss (late tokens) as a previous-token head and an
  induction head form together (Olsson et al. 2022).
- "text": a tiny character-level ToyGPT on a text the lecturer pastes, a sample drawn every few seconds:
  gibberish, then the text's letters, then its words.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from toyviz.interpret.heads import pattern_scores
from toyviz.models import names
from toyviz.models.config import GPTConfig
from toyviz.models.gpt import ToyGPT
from toyviz.models.hooks import at
from toyviz.models.layers import MultiHeadAttention, Pass


# ---------------------------------------------------------------- the recipes' settings ----

@dataclass(frozen=True)
class Induction:
    vocab: int = 32             # random tokens; a period draws distinct ones
    length: int = 48            # positions a training sequence has
    periods: tuple[int, int] = (8, 16)   # a sequence repeats its first P tokens, P uniform in this range
    d_model: int = 64
    n_head: int = 4
    n_layer: int = 2
    batch: int = 32
    lr: float = 3e-3
    steps: int = 600
    every: int = 10             # record every this many steps
    probes: int = 32            # fixed sequences the record measures loss and heads on
    min_step_s: float = 0.05    # the pace (see `paced`): at least 30 s for the run


@dataclass(frozen=True)
class Text:
    context: int = 64
    d_model: int = 64
    n_head: int = 4
    n_layer: int = 2
    batch: int = 32
    lr: float = 3e-3
    steps: int = 600            # a few KB is memorised by then: words from step ~300, whole lines from ~450
    every: int = 20
    sample_every_s: float = 3.0  # wall-clock seconds between two samples
    sample_chars: int = 160
    min_step_s: float = 0.05    # the pace (see `paced`): at least 30 s for the run


RECIPES = {"induction": Induction, "text": Text}


# ---------------------------------------------------------------- the attention-only model ----

class AttentionOnly(nn.Module):
    """Token + learned position embeddings → n_layer pre-norm attention-only blocks → final norm → unembed.
    No feed-forward: what it predicts, it must move between positions (the smallest model an induction
    head forms in; Elhage et al. 2021). The attention is toyviz.models.layers' own, named and hooked
    as in ToyGPT, so a Record or pattern hook reads it the same way."""

    def __init__(self, vocab: int, length: int, d_model: int, n_head: int, n_layer: int):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(length, d_model)
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n_layer))
        self.attns = nn.ModuleList(MultiHeadAttention(d_model, n_head, bias=False) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx, hooks=None):  # idx (B, T) -> logits (B, T, V)
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1]))        # (B, T, C)
        for i, (norm, attn) in enumerate(zip(self.norms, self.attns)):
            x = at(hooks, names.resid_pre(i), x)
            x = x + at(hooks, names.attn(i), attn(norm(x), Pass(hooks, causal=True), names.attn(i)))
        return self.head(self.ln_f(x))


def repeating(n: int, s: Induction, gen: torch.Generator) -> torch.Tensor:
    """(n, length + 1) token ids: each row its own period P of distinct random tokens, repeated. A random
    P keeps position from giving the answer away: only the tokens' earlier occurrence does."""
    rows = []
    for _ in range(n):
        period = int(torch.randint(s.periods[0], s.periods[1] + 1, (1,), generator=gen))
        tokens = torch.randperm(s.vocab, generator=gen)[:period]
        rows.append(tokens.repeat(math.ceil((s.length + 1) / period))[: s.length + 1])
    return torch.stack(rows)


def early_late(s: Induction) -> tuple[slice, slice]:
    """Target positions always in a row's first period (unpredictable) and always in a repeat: the
    in-context loss is the loss on the late ones."""
    return slice(0, s.periods[0] - 1), slice(s.periods[1] - 1, s.length)


def induction_run(s: Induction, seed: int, stopped):
    """Train the attention-only model; yield the run's header, then a record every `s.every` steps."""
    torch.manual_seed(seed)
    model = AttentionOnly(s.vocab, s.length, s.d_model, s.n_head, s.n_layer)
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    probes = repeating(s.probes, s, torch.Generator().manual_seed(10_000))   # the same for every seed
    yield {"probe": probes[0, :-1].tolist(), "heads": [s.n_layer, s.n_head]}
    started = time.perf_counter()
    for step in range(s.steps + 1):
        if stopped():
            return
        if step % s.every == 0 or step == s.steps:
            yield dict(measure(model, probes, s), step=step, elapsed=time.perf_counter() - started)
        if step == s.steps:
            return
        began = time.perf_counter()
        batch = repeating(s.batch, s, gen)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        paced(began, s.min_step_s)


def paced(began: float, min_step_s: float):
    """Wait until `min_step_s` after `began`: on an idle machine a step takes a few ms and a run would be over
    before the lecturer has said what to watch; on a busy one the steps are slower than the pace and nothing
    waits. Sleeping leaves the cores to the app; the numbers are the same at any pace."""
    time.sleep(max(0.0, began + min_step_s - time.perf_counter()))


SCORED_PROBES = 8           # head scores are averaged over this many probes (the loss over all of them)


@torch.no_grad()
def measure(model: AttentionOnly, probes: torch.Tensor, s: Induction) -> dict:
    """The model on the probe sequences: its loss overall, on early and on late tokens, each head's
    induction and previous-token scores (toyviz.interpret.heads), and every head's pattern on probe 0."""
    patterns = {}
    hooks = {names.part(names.attn(i), "pattern"): (lambda p, i=i: patterns.__setitem__(i, p))
             for i in range(s.n_layer)}
    model.eval()
    logits = model(probes[:, :-1], hooks)
    model.train()
    per_token = F.cross_entropy(logits.transpose(1, 2), probes[:, 1:], reduction="none")     # (N, T)
    att = torch.stack([patterns[i] for i in range(s.n_layer)], 1)                           # (N, L, H, T, T)
    scores = [[[pattern_scores(att[n, l, h], probes[n, :-1].tolist()) for h in range(s.n_head)]
               for l in range(s.n_layer)] for n in range(min(SCORED_PROBES, len(probes)))]
    mean = lambda key: np.mean([[[h[key] for h in l] for l in row] for row in scores], 0).round(4).tolist()
    early, late = early_late(s)
    return {"loss": float(per_token.mean()), "early_loss": float(per_token[:, early].mean()),
            "in_context_loss": float(per_token[:, late].mean()),
            "induction": mean("induction"), "previous": mean("previous-token"),
            "patterns": att[0].numpy().astype(np.float16)}                                  # (L, H, T, T)


# ---------------------------------------------------------------- the text recipe ----

def text_run(s: Text, seed: int, stopped, text: str):
    """Train a character-level ToyGPT on `text`; yield the header, then a record every `s.every` steps,
    each with a sample when `s.sample_every_s` have passed since the last one."""
    chars = sorted(set(text))
    ids = torch.tensor([chars.index(c) for c in text])
    torch.manual_seed(seed)
    config = GPTConfig(vocab_size=len(chars), context=s.context, n_layer=s.n_layer, n_head=s.n_head,
                       d_model=s.d_model, positional="learned")
    model = ToyGPT(config)
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    yield {"chars": len(chars), "text_chars": len(text), "parameters": sum(p.numel() for p in model.parameters())}
    started, sampled = time.perf_counter(), -math.inf
    for step in range(1, s.steps + 1):
        if stopped():
            return
        began = time.perf_counter()
        starts = torch.randint(0, len(ids) - s.context - 1, (s.batch,), generator=gen)
        window = torch.stack([ids[i: i + s.context + 1] for i in starts.tolist()])     # (B, context + 1)
        _, loss = model(window[:, :-1], window[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        paced(began, s.min_step_s)
        if step % s.every and step != s.steps:
            continue
        record = {"step": step, "elapsed": time.perf_counter() - started, "loss": loss.item()}
        if time.perf_counter() - sampled >= s.sample_every_s or step == s.steps:
            sampled = time.perf_counter()
            record["sample"] = sample_text(model, ids[:1].tolist(), s.sample_chars, seed + step, chars, stopped)
        yield record


def sample_text(model: ToyGPT, start: list[int], n: int, seed: int, chars: list[str], stopped) -> str:
    """n characters the model writes after `start` (cut short when the run is stopped)."""
    model.eval()
    out = []
    for token in model.generate_ids(start, n, temperature=0.8, seed=seed):
        out.append(chars[token.token])
        if stopped():
            break
    model.train()
    return "".join(chars[i] for i in start) + "".join(out)
