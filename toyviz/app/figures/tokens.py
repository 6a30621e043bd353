"""Tokens tab: how the tokenizer cut the prompt, and how long each token's vectors are."""
from __future__ import annotations

import math

import plotly.graph_objects as go

from toyviz.app.figures import figure, grid_axes, numpy, style, token_grid, token_labels, tokens_per_row, visible
from toyviz.i18n import LANGUAGES, catalogue, t
from toyviz.models.trace import Trace

PALETTE = ["#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
           "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"]
# a stepped colour scale: value k (0 … 11) is drawn in PALETTE[k], so equal ids get equal colours
_STEPPED = [[edge, c] for k, c in enumerate(PALETTE) for edge in (k / len(PALETTE), (k + 1) / len(PALETTE))]


def described(english: str, n: int) -> str:
    """A trace's name for its tokens (toyviz.models.trace: "The prompt as {n} tokens (BOS first)", in English) in
    the event's language: the catalogues' [figures.described] entry with that English, else the English."""
    keys = [key for key, text in catalogue(LANGUAGES[0]).items() if key.startswith("figures.described.") and text == english]
    return t(keys[0], n=n) if keys else english.format(n=n)


def token_pieces(trace: Trace, *, per_row: int | None = None, projector: bool = False) -> go.Figure:
    """The prompt as the model sees it: one coloured box per BPE piece with its id underneath,
    so a student sees where words are split and that a repeated piece gets the same id."""
    per_row = per_row or tokens_per_row(projector)
    ids, pieces = trace.token_ids, trace.tokens
    texts = [f"{visible(p)}<br>#{i}" for p, i in zip(pieces, ids)]
    hover = [t("figures.hover.token", position=k, piece=visible(p), id=i) for k, (p, i) in enumerate(zip(pieces, ids))]
    fig = figure(token_grid(texts, [i % len(PALETTE) for i in ids], hover_values=hover, colorscale=_STEPPED,
                            zmin=-0.5, zmax=len(PALETTE) - 0.5, per_row=per_row))
    title = described(trace.described, len(ids))
    if trace.truncated:
        title += t("figures.tokens.dropped", n=trace.truncated)
    return style(grid_axes(fig), title, filename="toyviz-tokens", projector=projector,
                 height=110 + 52 * math.ceil(len(ids) / per_row))


def embedding_norms(trace: Trace, *, projector: bool = False) -> go.Figure:
    """Length of each token's embedding, of its positional vector and of their sum (what enters
    layer 0), so a student sees whether identity or position dominates the input."""
    labels = token_labels(trace.tokens)
    embed = trace.residual_parts["embed"]
    if trace.positional is None:
        bars = [(t("figures.token_embedding"), embed)]
    else:
        bars = [(t("figures.token_embedding"), embed - trace.positional), (t("figures.positional"), trace.positional),
                (t("figures.embedding_sum"), embed)]
    fig = figure([go.Bar(x=labels, y=numpy(v.norm(dim=-1)), name=name,
                         hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>") for name, v in bars])
    fig.update_layout(barmode="group", xaxis_title_text=t("figures.token"), yaxis_title_text="‖vector‖")
    return style(fig, t("figures.embedding_norms"), filename="toyviz-embedding-norms", projector=projector)
