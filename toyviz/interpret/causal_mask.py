"""What the causal mask is for: change a prompt's last word, and see whether the earlier predictions move.

With the mask, position t only reads positions ≤ t, so editing a later token leaves every earlier next-token
distribution exactly as it was. Without it, the change leaks backwards — the model could read the very token it is
asked to predict. The Inside-a-head tab draws it (toyviz.app.figures.mask); a lesson's `answer: leak` asks it.
"""
from __future__ import annotations

import torch

from toyviz.models.trace import Trace


def with_last_word(text: str, word: str) -> str:
    """The text with its last word replaced by `word` (a one-word text becomes `word`)."""
    words = text.rsplit(maxsplit=1)
    return (words[0] + " " if len(words) > 1 else "") + word


def first_difference(a: list[int], b: list[int]) -> int:
    """Index of the first token where two prompts differ (their common length if one is a prefix)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def prediction_shift(base: Trace, changed: Trace, upto: int) -> torch.Tensor:
    """[upto] total-variation distance between the next-token distributions at each earlier position."""
    p, q = base.logits[:upto].float().softmax(-1), changed.logits[:upto].float().softmax(-1)
    return 0.5 * (p - q).abs().sum(-1)
