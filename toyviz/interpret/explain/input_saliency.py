"""2. Input saliency: gradient × input and integrated gradients of the chosen token's logit with
respect to the token embeddings, one number per input token.

Saliency is local (gradient × input) or path-dependent (integrated gradients: the answer depends
on the baseline). Neither says the model "looks at" a token.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from toyviz.api import GPT
from toyviz.errors import UserError
from toyviz.interpret.explain.prompt import capture, check_position, encode, pick_token, run
from toyviz.models import names


@dataclass
class Saliency:
    """Per input token: gradient × input and integrated gradients of logit(token) at `position`.

    Both are taken with respect to the *token* embedding (scaled as the model scales it); the
    positional vectors stay as they are, in the input and in the baseline, so the numbers say how
    much each token's identity matters, not its place. Tokens after `position` get exactly 0 in
    a causal model. `gap` = |Σ integrated − (logit − baseline_logit)| / |logit − baseline_logit|.
    """
    tokens: list[str]
    position: int
    token: int
    piece: str
    grad_x_input: torch.Tensor    # [T] Σ_d ∂logit/∂e_t,d · e_t,d at the input
    integrated: torch.Tensor      # [T] Σ_d (e − b)_t,d · ∫ ∂logit/∂e_t,d along the straight path
    logit: float
    baseline_logit: float
    gap: float
    baseline: str
    steps: int


def _baseline(gpt: GPT, tok: torch.Tensor, baseline: str) -> torch.Tensor:
    """tok (1, T, C) → the baseline token embeddings (1, T, C): BOS's at every position, or zeros."""
    if baseline == "zero":
        return torch.zeros_like(tok)
    if baseline == "bos":
        bos = gpt.model.tok_emb.weight[gpt.bos] * gpt.model.embed_scale
        return bos.expand_as(tok)
    raise UserError(f"baseline must be 'bos' or 'zero', not {baseline!r}")


STEPS_AT_ONCE = 4    # rows of the path a forward and backward pass takes: ~28 MB a row at 256 tokens (33 at once: 0.93 GB)


@torch.inference_mode(False)                                          # gradients, even if the caller is in inference mode
def saliency(gpt: GPT, text: str, token=None, *, position: int = -1, steps: int = 32,
             baseline: str = "bos") -> Saliency:
    """Gradient × input, and integrated gradients from `baseline` ("bos": the BOS token's embedding
    at every position, so the BOS position itself always scores 0; "zero": no token at all) in
    `steps` trapezoid steps (steps + 1 gradients, in batched forward and backward passes of STEPS_AT_ONCE).

    Can claim: integrated gradients split logit(input) − logit(baseline) among the input tokens
    (completeness; `gap` says how well `steps` achieve it). Cannot claim: that the split is unique
    (another baseline gives another split), or that a token with a small score is unused —
    gradient × input is a first-order, local measure and saturates.
    """
    if steps < 1:
        raise UserError("steps must be 1 or more")
    model, ids = gpt.model, encode(gpt, text)
    p = check_position(position, len(ids))
    seen = {}
    target = pick_token(gpt, token, run(gpt, ids, capture(seen, names.TOKENS))[p])
    with torch.no_grad():
        tok = seen[names.TOKENS]                                      # (1, T, C) as the model scales them
        base = _baseline(gpt, tok, baseline)
        alphas = torch.linspace(0, 1, steps + 1, device=tok.device)[:, None, None]
        path = (base + alphas * (tok - base)).detach()                # (S+1, T, C), path[-1] is the input
    logits, grads = [], []
    for rows in path.split(STEPS_AT_ONCE):
        with torch.enable_grad():
            rows = rows.clone().requires_grad_(True)
            # the token embeddings become the path's rows (positions are added to them as usual)
            out, _ = model(torch.tensor([ids], device=gpt.device), hooks={names.TOKENS: lambda t, rows=rows: rows})
            logits.append(out[:, p, target])                          # (B,)
            grads += torch.autograd.grad(logits[-1].sum(), rows)      # (B, T, C)
    logit, grads = torch.cat(logits).detach(), torch.cat(grads)       # (S+1,), (S+1, T, C)
    w = torch.full((steps + 1,), 1.0 / steps, device=tok.device)
    w[0] = w[-1] = 0.5 / steps                                        # trapezoid rule
    integrated = ((tok - base)[0] * torch.einsum("s,std->td", w, grads)).sum(-1)   # (T,)
    grad_x_input = (tok[0] * grads[-1]).sum(-1)                                  # (T,)
    diff = float(logit[-1] - logit[0])
    gap = abs(float(integrated.sum()) - diff) / abs(diff) if diff else float(abs(integrated.sum()))
    return Saliency(gpt.tokenizer.pieces(ids), p, target, gpt.tokenizer.piece(target), grad_x_input.detach(),
                    integrated.detach(), float(logit[-1]), float(logit[0]), gap, baseline, steps)

