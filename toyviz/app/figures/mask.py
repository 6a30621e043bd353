"""The causal mask, switched off: does an earlier prediction change when a later word changes?

With the mask, position t only reads positions ≤ t, so editing a later token leaves every earlier
next-token distribution exactly as it was. Without it, the change leaks backwards — the model
could read the very token it is asked to predict.
"""
from __future__ import annotations

import plotly.graph_objects as go
import torch

from toyviz.app.figures import figure, style, token_labels
from toyviz.models.trace import Trace


def first_difference(a: list[int], b: list[int]) -> int:
    """Index of the first token where two prompts differ (their common length if one is a prefix)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def prediction_shift(base: Trace, changed: Trace, upto: int) -> torch.Tensor:
    """[upto] total-variation distance between the next-token distributions at each earlier position."""
    p, q = base.logits[:upto].float().softmax(-1), changed.logits[:upto].float().softmax(-1)
    return 0.5 * (p - q).abs().sum(-1)


def leak_figure(base: Trace, changed: Trace, base_open: Trace, changed_open: Trace, *,
                projector: bool = False) -> go.Figure:
    """Bars per earlier position: how much its prediction moved when a later token changed,
    with the causal mask (always exactly 0) and without it (the leak)."""
    upto = first_difference(base.token_ids, changed.token_ids)
    labels = token_labels(base.tokens[:upto])
    masked = prediction_shift(base, changed, upto).cpu().numpy()
    unmasked = prediction_shift(base_open, changed_open, upto).cpu().numpy()
    fig = figure([go.Bar(x=labels, y=masked, name="with the causal mask"),
                  go.Bar(x=labels, y=unmasked, name="without the mask")])
    fig.update_layout(barmode="group", yaxis_title_text="change (TV distance)",
                      xaxis_title_text=f"positions before the first changed token ({upto})")
    # two short lines: one long line ran past the right edge of a projector-sized figure, number and all
    title = (f"Changing a later token moves the earlier predictions<br>by at most {masked.max(initial=0):.2g} with "
             f"the causal mask, by up to {unmasked.max(initial=0):.2g} without it")
    return style(fig, title, filename="toyviz-mask-leak", projector=projector, height=420)
