"""The GPT's forward pass composed from its own modules (blocks, norms, projections), with *edits*:
functions that may replace an activation on its way through. Every method of `toyviz.interpret.explain`
runs on it, so no model file changes and no hooks are registered: a shared model stays safe to
use from other threads while an explanation runs. It expects the model in eval mode (as
`toyviz.load` returns it): dropout is not re-created here.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F

from toyviz.models import names
from toyviz.api import GPT, PromptError
from toyviz.models.layers import apply_rope, rope_angles

Edit = Callable[[torch.Tensor], torch.Tensor]

# Edit points (the names an `edits` dict may use):
#   "resid_pre.<i>"  the stream entering block i           (B, T, C)
#   "attn.<i>.heads" block i's per-head outputs before W_O  (B, nh, T, hs)
#   "mlp.<i>"        block i's feed-forward write           (B, T, C)
#   "final"          the stream the final norm reads        (B, T, C)

def resid_pre(layer: int) -> str:
    return f"resid_pre.{layer}"


def heads_site(layer: int) -> str:
    return f"{names.attn(layer)}.heads"


def inputs(model, idx: torch.Tensor):
    """idx (B, T) → token embeddings (B, T, C) as the model scales them, the positional vectors
    (T, C) or None, and the RoPE angles (T, hs/2) or None: ToyGPT.embed's parts before it adds them,
    for saliency, which differentiates the token part alone."""
    positions = torch.arange(idx.shape[1], device=idx.device)
    tok = model.tok_emb(idx) * model.embed_scale
    rope = rope_angles(positions, model.config.d_head) if model.config.positional == "rope" else None
    return tok, model.positional(positions), rope


def _attention(attn, h: torch.Tensor, *, causal: bool, rope, edit: Edit | None) -> torch.Tensor:
    """MultiHeadAttention.forward without cache/padding, with an edit of the heads' outputs:
    h (B, T, C) → (B, T, C)."""
    B, T, C = h.shape
    q, k, v = (attn._heads(lin(h)) for lin in (attn.q, attn.k, attn.v))   # (B, nh, T, hs)
    if rope is not None:
        q, k = apply_rope(q, rope), apply_rope(k, rope)
    mask = torch.ones(T, T, dtype=torch.bool, device=h.device).tril()[None, None] if causal and T > 1 else None
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)             # (B, nh, T, hs)
    if edit is not None:
        y = edit(y)
    return attn.o(y.transpose(1, 2).reshape(B, T, C))


def _sublayer(block, x, fn, norm):
    """Block._sublayer without recording: pre-norm x + f(norm(x)), post-norm norm(x + f(x))."""
    if block.pre_norm:
        return x + block.drop(fn(norm(x)))
    return norm(x + block.drop(fn(x)))


def _block(model, i: int, x, *, rope, edits: dict[str, Edit]):
    """Block i on x (B, T, C). Without an edit inside it, the model's own Block.forward runs."""
    block, causal = model.blocks[i], model.config.causal
    attn_edit, mlp_edit = edits.get(heads_site(i)), edits.get(names.mlp(i))
    if attn_edit is None and mlp_edit is None:
        return block(x, index=i, causal=causal, rope=rope, cache=None, ablate=None, rec=None)
    attn = lambda h: _attention(block.attn, h, causal=causal, rope=rope, edit=attn_edit)
    x = _sublayer(block, x, attn, block.ln1)
    mlp = block.mlp if mlp_edit is None else (lambda h: mlp_edit(block.mlp(h)))
    return _sublayer(block, x, mlp, block.ln2)


def stream(model, x, *, rope, edits: dict[str, Edit] | None = None, start: int = 0):
    """The stream entering block `start` (B, T, C) → the stream the final norm reads (B, T, C)."""
    edits = edits or {}
    for i in range(start, len(model.blocks)):
        if resid_pre(i) in edits:
            x = edits[resid_pre(i)](x)
        x = _block(model, i, x, rope=rope, edits=edits)
    return edits["final"](x) if "final" in edits else x


def final_logits(model, final):
    """Final stream (B, T, C) → logits (B, T, V)."""
    return model.head(model.ln_f(final))


def run(gpt: GPT, ids: list[int], edits: dict[str, Edit] | None = None) -> torch.Tensor:
    """Logits [T, V] of one forward pass over ids with `edits` applied (see the edit points above).
    Without edits this is the model's own forward (same modules, same order)."""
    idx = torch.tensor([ids], device=gpt.device)
    with torch.no_grad():
        x, _, rope = gpt.model.embed(idx)
        return final_logits(gpt.model, stream(gpt.model, x, rope=rope, edits=edits))[0]


def capture(store: dict, key: str) -> Edit:
    def keep(t):
        store[key] = t
        return t
    return keep


def replace(value: torch.Tensor | None, kind: str) -> Edit:
    """An edit that zeroes its tensor, replaces it by its mean over positions (dim -2), or by `value`."""
    if kind == "zero":
        return torch.zeros_like
    if kind == "mean":
        return lambda t: t.mean(dim=-2, keepdim=True).expand_as(t)
    return lambda t: value.expand_as(t)



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
            raise PromptError(f"{token!r} is {len(ids)} tokens ({gpt.tokenizer.pieces(ids)}); pick one token")
        return ids[0]
    if not 0 <= int(token) < gpt.config.vocab_size:
        raise PromptError(f"token id {token} is outside the vocabulary (0…{gpt.config.vocab_size - 1})")
    return int(token)


def check_position(position: int, T: int) -> int:
    if not -T <= position < T:
        raise PromptError(f"position {position} is outside the prompt's {T} tokens")
    return position % T
