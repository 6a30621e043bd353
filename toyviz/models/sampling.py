"""Turning next-token logits into a distribution (temperature, top-k, top-p) and drawing from it.

Kept apart from the models so the app can redraw the probability bars for a new temperature
from stored logits without running the model again.
"""
from __future__ import annotations

import torch


def next_token_probs(logits: torch.Tensor, temperature: float = 1.0, top_k: int = 0,
                     top_p: float = 1.0) -> torch.Tensor:
    """logits (V,) → probabilities (V,). temperature 0 is greedy (all mass on the argmax);
    top_k 0 and top_p 1 switch those filters off."""
    logits = logits.float()
    if temperature <= 0:
        return torch.nn.functional.one_hot(logits.argmax(), logits.numel()).to(logits.dtype)
    logits = logits / temperature
    if 0 < top_k < logits.numel():
        kth = torch.topk(logits, top_k).values[-1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True)
        cumulative = sorted_logits.softmax(-1).cumsum(-1)
        # drop a token once the tokens before it already reach top_p (the first always stays)
        drop_sorted = (cumulative - sorted_logits.softmax(-1)) >= top_p
        logits = logits.masked_fill(drop_sorted.scatter(0, order, drop_sorted), float("-inf"))
    return logits.softmax(-1)


def draw(probs: torch.Tensor, generator: torch.Generator | None) -> int:
    """One token id from probs; deterministic for a given generator state."""
    return int(torch.multinomial(probs, 1, generator=generator).item())


def top_candidates(probs: torch.Tensor, n: int = 10) -> list[tuple[int, float]]:
    values, ids = torch.topk(probs, min(n, probs.numel()))
    return [(i, v) for i, v in zip(ids.tolist(), values.tolist()) if v > 0]
