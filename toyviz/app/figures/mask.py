"""The causal mask, switched off: does an earlier prediction change when a later word changes? The bars of
what toyviz.interpret.causal_mask measures."""
from __future__ import annotations

import plotly.graph_objects as go

from toyviz.i18n import t
from toyviz.app.figures import figure, style, token_labels
from toyviz.interpret.causal_mask import first_difference, prediction_shift
from toyviz.models.trace import Trace


def leak_figure(base: Trace, changed: Trace, base_open: Trace, changed_open: Trace, *,
                projector: bool = False) -> go.Figure:
    """Bars per earlier position: how much its prediction moved when a later token changed,
    with the causal mask (always exactly 0) and without it (the leak)."""
    upto = first_difference(base.token_ids, changed.token_ids)
    labels = token_labels(base.tokens[:upto])
    masked = prediction_shift(base, changed, upto).cpu().numpy()
    unmasked = prediction_shift(base_open, changed_open, upto).cpu().numpy()
    fig = figure([go.Bar(x=labels, y=masked, name=t("figures.mask.with")),
                  go.Bar(x=labels, y=unmasked, name=t("figures.mask.without"))])
    fig.update_layout(barmode="group", yaxis_title_text=t("figures.mask.change"),
                      xaxis_title_text=t("figures.mask.positions", upto=upto))
    # two short lines: one long line ran past the right edge of a projector-sized figure, number and all
    title = t("figures.mask.title", masked=f"{masked.max(initial=0):.2g}", unmasked=f"{unmasked.max(initial=0):.2g}")
    return style(fig, title, filename="toyviz-mask-leak", projector=projector, height=420)
