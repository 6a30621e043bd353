"""What every explanation method shares: a prompt's ids, the token and position it asks about, and
the GPT's logits with hooks (toyviz.models.hooks) — the methods edit and read the model's own
forward pass, never a copy of it, and pass their hooks per call, so a shared model stays safe to
use from other threads while an explanation runs.
"""
from __future__ import annotations

import torch

from toyviz.api import GPT
from toyviz.i18n import mistake
from toyviz.models import names
from toyviz.models.hooks import Hook, Hooks

resid_pre = names.resid_pre


def heads_site(layer: int) -> str:
    """The point of block `layer`'s per-head outputs before W_O ("block2.attn.heads")."""
    return names.heads(names.attn(layer))


def run(gpt: GPT, ids: list[int], hooks: Hooks | None = None) -> torch.Tensor:
    """Logits [T, V] of one forward pass over ids with `hooks` (toyviz.models.names lists the points)."""
    with torch.no_grad():
        return gpt.model(torch.tensor([ids], device=gpt.device), hooks=hooks)[0][0]


def capture(store: dict, name: str) -> dict[str, Hook]:
    """A hook that keeps what passes `name` in store[name] and changes nothing."""
    return {name: lambda t: store.__setitem__(name, t)}


def encode(gpt: GPT, text: str) -> list[int]:
    """The prompt's token ids, BOS first (as every view sees them)."""
    return gpt.encode(text)[0]


def pick_token(gpt: GPT, token, logits: torch.Tensor) -> int:
    """None → the top token of `logits`; a string → its single token id; an int → checked id."""
    if token is None:
        return int(logits.argmax())
    if isinstance(token, str):
        ids = gpt.tokenizer.encode(token)
        if len(ids) != 1:
            raise mistake("errors.one_token", given=repr(token), count=len(ids),
                          pieces=" | ".join(gpt.tokenizer.pieces(ids)))
        return ids[0]
    if not 0 <= int(token) < gpt.config.vocab_size:
        raise mistake("errors.outside_vocabulary", token=token, last=gpt.config.vocab_size - 1)
    return int(token)


def check_position(position: int, T: int) -> int:
    if not -T <= position < T:
        raise mistake("errors.position", position=position, count=T)
    return position % T
