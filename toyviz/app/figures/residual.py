"""Residual-stream tab: the stream is a sum of writes (embedding, every attention and
feed-forward output, and under post-norm each norm's correction), so we can ask how big each
write is, how much of the final vector it accounts for, what the model would predict if it
stopped after a layer (logit lens), and which head or MLP pushed the predicted token up.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import torch

from toyviz.i18n import t
from toyviz.app.figures import (candidate_label, cell_chars, cell_text, figure, heatmap, numpy, style, token_labels,
                                 visible)
from toyviz.models.trace import Trace
from toyviz.interpret.readout import stream_name



def write_shares(trace: Trace) -> dict[str, np.ndarray]:
    """{part: [T]} share of each write along the final stream direction,
    part[t]·final[t] / ‖final[t]‖²; because the parts add up to the final stream, the shares of
    every token sum to 1 (a share can be negative: that write pointed against the final direction)."""
    final = trace.residual_final.double()
    norm2 = (final * final).sum(-1)
    return {name: numpy((part.double() * final).sum(-1) / norm2) for name, part in trace.residual_parts.items()}


def residual_shares(trace: Trace, *, projector: bool = False) -> go.Figure:
    """Write × token heatmap of each write's share of the final stream (every column sums to 1):
    which layers built the vector the model finally reads at each position."""
    shares = write_shares(trace)
    fig = figure(heatmap(np.stack(list(shares.values())), x=token_labels(trace.tokens), y=[n.label for n in shares],
                         colorscale="RdBu_r", zmid=0, hover=t("figures.hover.share_at"),
                         colorbar_title=t("figures.residual.share")))
    fig.update_layout(xaxis_title_text=t("figures.token"), yaxis_title_text=t("figures.residual.writes_in_order"),
                      yaxis_autorange="reversed")
    return style(fig, t("figures.residual.shares"),
                 filename="toyviz-residual-shares", projector=projector, height=200 + 24 * len(shares))


def residual_norms(trace: Trace, position: int = -1, *, projector: bool = False) -> go.Figure:
    """For one token: the length of the embedding and of each write (bars) and of the running
    stream after each write (line), to show the stream growing as layers add to it."""
    names = [name.label for name in trace.residual_parts]
    parts = torch.stack([p[position].double() for p in trace.residual_parts.values()])
    fig = figure([
        go.Bar(x=names, y=numpy(parts.norm(dim=-1)), name=t("figures.residual.write_norm"),
               hovertemplate="%{x}: %{y:.3f}<extra>" + t("figures.residual.write_norm") + "</extra>"),
        go.Scatter(x=names, y=numpy(parts.cumsum(0).norm(dim=-1)), name=t("figures.residual.stream_norm"),
                   mode="lines+markers",
                   hovertemplate=t("figures.hover.after") + "<extra>" + t("figures.residual.stream_norm") + "</extra>")])
    fig.update_layout(xaxis_title_text=t("figures.residual.writes_in_order"), yaxis_title_text=t("figures.residual.norm"))
    label = token_labels(trace.tokens)[position]
    return style(fig, t("figures.residual.norms", token=label),
                 filename=f"toyviz-residual-norms-t{position % len(trace.tokens)}", projector=projector)


READABLE_CHARS = 5    # a cell that holds fewer shows "␣…": then the positions go down the rows
ROWS_AT_MOST = 64     # … as long as the figure stays a page tall (longer prompts: the hover alone)


def logit_lens(trace: Trace, lens: tuple[list[str], np.ndarray, np.ndarray], piece, *,
               projector: bool = False) -> go.Figure:
    """What the model would predict next if it stopped after each layer (its final norm and head
    applied early): watch the right answer appear, layer by layer. `lens` is the (row names, top token
    id [L+1, T], its probability [L+1, T]) of toyviz.interpret.readout.logit_lens_top; `piece(id)` names
    a token. The positions run across while a cell can show its token, else (a projector, a longer
    prompt) down."""
    names, top, prob = lens
    names = [stream_name(n) for n in names]
    text = [[visible(piece(int(i))) for i in row] for row in top]
    positions = token_labels(trace.tokens)
    down = cell_chars(len(positions), projector) < READABLE_CHARS and len(positions) <= ROWS_AT_MOST
    if down:
        prob, text = prob.T, [list(column) for column in zip(*text)]
    chars = cell_chars(len(names) if down else len(positions), projector)   # fewer than 2: the hover alone
    shown = [[cell_text(t, chars) for t in row] for row in text]
    x, y = (names, positions) if down else (positions, names)
    fig = figure(heatmap(prob, x=x, y=y, colorscale="Blues", zmin=0, zmax=1,
                         text=shown, texttemplate="%{text}" if chars >= 2 else None, colorbar_title="p(top)",
                         hover=("%{x}, %{y}" if down else "%{y}, %{x}") + t("figures.hover.top")))
    fig.update_traces(customdata=text)                 # plotly's cell text reads only `text`: the full piece hovers
    position_title = t("figures.residual.predicting")
    fig.update_layout(xaxis_title_text=t("figures.residual.read_after") if down else position_title,
                      yaxis_autorange="reversed")
    if down:
        fig.update_layout(yaxis_title_text=position_title)
    return style(fig, t("figures.residual.lens"), filename="toyviz-logit-lens",
                 projector=projector, height=200 + 22 * len(positions) if down else 220 + 40 * len(names))


def logit_attribution(trace: Trace, parts: dict[str, float], piece, position: int = -1, *,
                      projector: bool = False) -> go.Figure:
    """Direct contribution of the embedding, every head and every feed-forward to the predicted next
    token's logit minus the mean logit (the bars add up to it), to find which heads pushed it up: the
    quantity "Why this token?" decomposes, so the two tabs rank the same parts alike. Against the mean,
    a write that raises every logit alike scores 0: it does not make this token more likely. `parts`:
    toyviz.interpret.readout.direct_logit_attribution(trace, model, position, minus_mean=True)."""
    token = int(trace.logits[position].argmax())
    values = np.array(list(parts.values()), dtype=np.float32)
    fig = figure(go.Bar(x=list(parts), y=values, marker_color=np.where(values >= 0, "#2166ac", "#b2182b").tolist(),
                        hovertemplate="%{x}: %{y:+.3f}<extra></extra>"))
    fig.update_layout(xaxis_title_text=t("figures.residual.write"), yaxis_title_text=t("figures.residual.contribution"))
    label = token_labels(trace.tokens)[position]
    target = float(trace.logits[position, token] - trace.logits[position].mean())
    return style(fig, t("figures.residual.attribution", token=label, candidate=candidate_label(piece(token), token),
                        target=f"{target:.2f}"),
                 filename=f"toyviz-logit-attribution-t{position % len(trace.tokens)}", projector=projector)
