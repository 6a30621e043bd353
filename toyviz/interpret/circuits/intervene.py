"""Scale one feature of a graph and compare: what the graph predicts, and what the real GPT does.

The graph's prediction is linear: the feature's activation changes by δ = (scale − 1) · activation, and the
change flows along the graph's edges, each later feature changing by the sum of what reaches it (an edge
A[t, s] carries A[t, s] / value_s per unit of s), down to the target's logit. That is the frozen model with
attention patterns, norm scales and which features are active all held, the features themselves following.

The real GPT gets the same edit where the feature writes: δ × the feature's decoder row added to its layer's
MLP output at its position (the rest of the MLP untouched), and everything after it recomputed, attention
and layer norms included. Where the two disagree, the graph's frozen parts matter (a changed pattern, a norm,
a feature switching on or off).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from toyviz.interpret.circuits.graph import Graph
from toyviz.interpret.transcoders import TranscoderSet, mlp_output


@dataclass
class Intervention:
    predicted_logit_change: float     # the graph's change of the target's logit − mean logit
    real_logit_change: float          # the GPT's
    prob_before: float                # the GPT's probability of the target
    prob_after: float


def predicted_prob(prob: float, logit_change: float) -> float:
    """The target's probability if its logit alone moved by logit_change (the graph predicts that one logit)."""
    up = prob * math.exp(logit_change)
    return up / (1 - prob + up)


def propagated(graph: Graph, node: int, delta: float) -> torch.Tensor:
    """(N,) the change of every node when feature `node` changes by delta, through the graph's edges."""
    values = graph.values
    per_unit = torch.zeros_like(graph.adjacency)
    features = graph.kinds() == 0
    per_unit[:, features] = graph.adjacency[:, features] / values[features]       # ∂ target / ∂ activation
    change = torch.zeros(len(values), dtype=values.dtype)
    change[node] = delta
    for _ in range(graph.n_layers + 1):                   # each step reaches one layer further; the graph's depth
        moved = per_unit @ change
        moved[node] = delta
        change = torch.where(features | (torch.arange(len(values)) == graph.logit_index), moved, change)
    return change


@torch.no_grad()
def intervene(model, transcoders: TranscoderSet, graph: Graph, node: int, scale: float) -> Intervention:
    """Feature node `node` of the graph times `scale` (0: ablated; 2: doubled), predicted and real."""
    if not 0 <= node < graph.n_features:
        raise ValueError(f"node {node} is not a feature node (0 … {graph.n_features - 1})")
    layer, position, feature = (int(t[node]) for t in (graph.layer, graph.position, graph.feature))
    delta = (scale - 1) * float(graph.values[node])
    predicted = float(propagated(graph, node, delta)[graph.logit_index])
    prompt = graph.prompt
    write = delta * transcoders[layer].W_dec[feature]

    def edited(out):                                      # out (1, T, d)
        out = out.clone()
        out[0, position] += write.to(out.dtype)
        return out
    ids = torch.tensor([prompt.ids], device=model.tok_emb.weight.device)
    after = model(ids, hooks={mlp_output(layer): edited})[0][0, -1]
    before = prompt.logits[-1]
    demeaned = lambda logits: float(logits[prompt.target] - logits.mean())
    return Intervention(predicted, demeaned(after) - demeaned(before), float(before.softmax(-1)[prompt.target]),
                        float(after.softmax(-1)[prompt.target]))
