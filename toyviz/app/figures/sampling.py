"""Sampling tab: how temperature, top-k and top-p reshape the next-token distribution, and how
likely each generated token was when it was drawn."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import torch

from toyviz.i18n import t
from toyviz.app.figures import candidate_label, figure, grid_axes, numpy, style, token_grid, tokens_per_row, visible
from toyviz.models.sampling import next_token_probs


# the streamed text's shades (toyviz.app.views.sampling.probability_html: indigo at 0.12 + 0.6·p opacity on white), so
# that the text and this figure colour the same token alike and the colour bar is the text's legend too
PROBABILITY_SHADES = [[0.0, "rgba(99,102,241,0.12)"], [1.0, "rgba(99,102,241,0.72)"]]


def next_token_bars(logits: torch.Tensor, piece, *, temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
                    n: int = 15, projector: bool = False) -> go.Figure:
    """The n most likely next tokens before (outline: plain softmax) and after the sampling
    settings (filled), from stored logits — so moving a slider needs no model run.
    `piece(id)` names a token."""
    raw = numpy(torch.softmax(logits.float(), -1))
    after = numpy(next_token_probs(logits, temperature, top_k, top_p))
    top = np.argsort(-raw, kind="stable")[:n]
    names = [candidate_label(piece(int(i)), i) for i in top]
    fig = figure([
        go.Bar(y=names, x=after[top], orientation="h", name=t("figures.sampling.after"),
               hovertemplate="%{y}: %{x:.3f}<extra>" + t("figures.sampling.after") + "</extra>"),
        go.Bar(y=names, x=raw[top], orientation="h", name=t("figures.sampling.softmax"),
               marker=dict(color="rgba(0,0,0,0)", line=dict(color="#333", width=1.5)),
               hovertemplate="%{y}: %{x:.3f}<extra>" + t("figures.sampling.softmax") + "</extra>")])        # outline drawn on top
    fig.update_layout(barmode="overlay", xaxis_title_text=t("figures.probability"), yaxis_autorange="reversed")
    kept = int((after > 0).sum())
    return style(fig, t("figures.sampling.next_one" if kept == 1 else "figures.sampling.next", temperature=f"{temperature:g}",
                        top_k=top_k or t("figures.sampling.off"), top_p=f"{top_p:g}", kept=kept),
                 filename=f"toyviz-sampling-T{temperature:g}-k{top_k}-p{top_p:g}", projector=projector,
                 height=200 + 30 * len(top))


def generated_tokens(steps: list[tuple[str, float]], *, per_row: int | None = None, projector: bool = False
                     ) -> go.Figure:
    """Generated text, one box per token coloured by the probability it was drawn with: pale
    boxes are the surprising choices where sampling took a less likely path."""
    per_row = per_row or tokens_per_row(projector)
    pieces = [p for p, _ in steps]
    probs = [float(p) for _, p in steps]
    hover = [t("figures.hover.drawn", step=k, piece=visible(piece), p=f"{p:.3f}") for k, (piece, p) in enumerate(steps)]
    fig = figure(token_grid([visible(p) for p in pieces], probs, hover_values=hover, colorscale=PROBABILITY_SHADES,
                            zmin=0, zmax=1, per_row=per_row, colorbar_title="p"))
    # at 110 px + a line, a single line left the colour bar under ~40 px: Gradio's plotly.js gave up
    # drawing the whole figure ("Something went wrong with axis scaling") and the panel stayed empty
    return style(grid_axes(fig), t("figures.sampling.generated", n=len(steps)),
                 filename="toyviz-generated", projector=projector,
                 height=150 + 52 * max(1, math.ceil(len(steps) / per_row)))
