"""Reading the residual stream out: what the model would predict after each layer (logit lens), and
how much each write adds to one logit (direct logit attribution). Computed from a trace; the
Residual tab draws them and `toyviz.interpret.explain` checks them against ablations.
"""
from __future__ import annotations

import numpy as np
import torch

from toyviz.i18n import t
from toyviz.models.names import EMBED, LN_F, Name, bias, head, layer_of
from toyviz.models.trace import Trace


def layer_streams(trace: Trace) -> tuple[list[str], torch.Tensor]:
    """The stream after the embedding and after each layer → (names, [L+1, T, d_model])."""
    names, streams, total = [], [], 0
    parts = list(trace.residual_parts.items())
    for k, (name, part) in enumerate(parts):
        total = total + part
        if k + 1 == len(parts) or layer_of(parts[k + 1][0]) != layer_of(name):
            layer = layer_of(name)
            names.append(EMBED if layer < 0 else f"after layer {layer}")
            streams.append(total)
    return names, torch.stack(streams)


def stream_name(name: str) -> str:
    """A stream's name as `layer_streams` gives it ("embed", "after layer 2") in the event's language."""
    layer = name.removeprefix("after layer ")
    return t("figures.residual.after_layer", layer=layer) if layer != name and layer.isdigit() else name


@torch.no_grad()
def logit_lens(trace: Trace, model) -> tuple[list[str], torch.Tensor]:
    """The model's final norm and head applied to the stream after each layer →
    (row names, probabilities [L+1, T, V]); the last row is the real output."""
    names, streams = layer_streams(trace)
    return names, model.head(model.ln_f(streams)).float().softmax(-1)


def logit_lens_top(trace: Trace, model) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(row names, top token id [L+1, T], its probability [L+1, T]) of the logit lens."""
    names, probs = logit_lens(trace, model)
    top = probs.max(-1)
    return names, top.indices.cpu().numpy(), top.values.cpu().numpy()


def direct_logit_attribution(trace: Trace, model, position: int = -1, token: int | None = None, *,
                             minus_mean: bool = False) -> dict[str, float]:
    """`contributions` by each term's label, as figures show them: "embed", "L0 H0" … "block0.attn.bias",
    "block0.mlp", …, "ln_f.bias"."""
    return {name.label: value for name, value in contributions(trace, model, position, token,
                                                               minus_mean=minus_mean).items()}


@torch.no_grad()
def contributions(trace: Trace, model, position: int = -1, token: int | None = None, *,
                  minus_mean: bool = False) -> dict[Name, float]:
    """How much each write adds to one logit (default: the predicted next token at `position`), or
    with `minus_mean` to that logit minus the mean logit over the vocabulary.

    The final norm computes LN(x) = γ ⊙ (x − mean(x)) / std(x) + β and the logit is u · LN(x) with
    u = W_U[tok] (or W_U[tok] − mean_v W_U[v]; the head has no bias). The stream x is the sum of the
    parts, and centring is linear, so with std(x) taken from the trace (the value this pass really
    divided by):

        u · LN(x) = Σ_parts (γ ⊙ u) · (part − mean(part)) / std(x)  +  u · β

    and an attention write splits exactly into its heads' writes plus W_O's bias (a term of its own:
    it belongs to no head). The identity is exact for this pass; what is a linearisation is reading
    a term as "what that write caused": std(x) is held fixed, whereas removing a write would change
    it and every later layer (under post-norm, every later norm too: those corrections appear as
    the "block{i}.ln1.change" … terms). Keys (toyviz.models.names): "embed", each head "block0.attn.heads.0" …,
    W_O's bias "block0.attn.bias", "block0.mlp", …, the final norm's β "ln_f.bias".
    """
    ln = trace.layernorms[LN_F]
    token = int(trace.logits[position].argmax()) if token is None else int(token)
    W = model.head.weight.double()
    u = W[token] - W.mean(0) if minus_mean else W[token]                      # (C,)
    direction = ln["weight"].double() * u / ln["std"][position].double()
    centred = (lambda v: v - v.mean()) if ln.centres else (lambda v: v)     # an RMSNorm centres nothing
    contrib = lambda v: float((centred(v.double()) * direction).sum())
    out = {}
    for name, part in trace.residual_parts.items():
        if name.component == "attn":
            layer = layer_of(name)
            for h in range(trace.n_head):
                out[head(layer, h)] = contrib(trace.head_writes[layer, h, position])
            out[bias(name)] = contrib(trace.attn_out_bias[layer])
        else:
            out[name] = contrib(part[position])
    out[bias(LN_F)] = float(u @ ln["bias"].double())
    return out
