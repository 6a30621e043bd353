"""Why-this-token tab: each method's evidence as a figure — attribution beside real ablation, the
prompt coloured by integrated gradients, the logit lens's verdict on the chosen token, and the
activation-patching grids. Pure functions of `toyviz.interpret.explain` results.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from toyviz.i18n import t
from toyviz.app.figures import (figure, grid_axes, heatmap, numpy, style, subplots, token_grid, token_labels, tokens_per_row,
               visible)
from toyviz.interpret.readout import stream_name
from toyviz.interpret.explain import Components, Patching, Saliency, Why

HELPED, HURT = "#2166ac", "#b2182b"          # blue: raised the token; red: lowered it (as in the Residual tab)
ABLATION_COLOURS = {"attribution (DLA)": "#999999", "zeroed: real drop": "#2166ac", "mean-ablated: real drop": "#67a9cf"}
SERIES_KEYS = {"attribution (DLA)": "figures.why.attribution", "zeroed: real drop": "figures.why.zeroed",
               "mean-ablated: real drop": "figures.why.mean_ablated"}      # each series' name in the catalogues
PATCH_TEXT_COLUMNS = 24                      # the patching grid prints its numbers up to this many positions


def components_figure(c: Components, *, projector: bool = False) -> go.Figure:
    """Left: each verified component's attribution beside the real drop of the same quantity
    (logit − mean logit) when it is zeroed or mean-ablated — equal bars mean the linear story holds.
    Right: the real drop in log p(token), the quantity a student cares about."""
    names = list(reversed(c.verified))                                  # the largest on top
    rows = np.arange(len(names))[::-1]
    fig = subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04, column_widths=[0.6, 0.4],
                   subplot_titles=(t("figures.why.attribution_vs_removal"), t("figures.why.drop_on_removal")))
    series = {"attribution (DLA)": numpy(c.verified_attribution), "zeroed: real drop": numpy(c.effect_target[:, 0]),
              "mean-ablated: real drop": numpy(c.effect_target[:, 1])}
    for name, values in series.items():
        fig.add_trace(go.Bar(y=names, x=values[rows], orientation="h", name=t(SERIES_KEYS[name]),
                             marker_color=ABLATION_COLOURS[name],
                             hovertemplate="%{y}: %{x:+.3f}<extra>" + t(SERIES_KEYS[name]) + "</extra>"), 1, 1)
    for j, kind in enumerate(("zeroed", "mean_ablated")):
        fig.add_trace(go.Bar(y=names, x=numpy(c.effect[:, j])[rows], orientation="h", showlegend=False,
                             marker_color=list(ABLATION_COLOURS.values())[j + 1],
                             hovertemplate=t("figures.hover.drops") + f"<extra>{t('figures.hover.' + kind)}</extra>"), 1, 2)
    fig.update_layout(barmode="group", legend=dict(orientation="h", y=-0.12, x=0), bargap=0.25)
    fig.update_xaxes(zeroline=True, zerolinecolor="#444")
    rho = " / ".join(t("figures.why.not_available") if r != r else f"{r:.2f}" for r in c.spearman)
    return style(fig, t("figures.why.components", piece=repr(visible(c.piece)), rho=rho),
                 filename="toyviz-why-components", projector=projector, height=160 + 46 * len(names))


def saliency_figure(s: Saliency, *, projector: bool = False) -> go.Figure:
    """The prompt laid out like text, each token coloured by its integrated-gradients share of
    logit(input) − logit(baseline): blue raised the token, red lowered it; hover gives grad × input."""
    ig, gxi = numpy(s.integrated), numpy(s.grad_x_input)
    bound = float(np.abs(ig).max()) or 1.0
    texts = [visible(t) for t in s.tokens]
    hover = [t("figures.hover.saliency", token=token, ig=f"{a:+.3f}", gxi=f"{b:+.3f}") for token, a, b in zip(texts, ig, gxi)]
    per_row = tokens_per_row(projector)
    fig = figure(token_grid(texts, ig, hover_values=hover, colorscale="RdBu", zmin=-bound, zmax=bound,
                            per_row=per_row, colorbar_title="IG"))
    rows = -(-len(texts) // per_row)
    base = t("figures.why.bos_baseline") if s.baseline == "bos" else t("figures.why.zero_baseline")
    return style(grid_axes(fig), t("figures.why.saliency", piece=repr(visible(s.piece)), base=base, steps=s.steps,
                                   change=f"{s.logit - s.baseline_logit:+.2f}", gap=f"{s.gap:.2%}"),
                 filename="toyviz-why-saliency", projector=projector, height=150 + 34 * rows)


def lens_figure(w: Why, *, projector: bool = False) -> go.Figure:
    """The chosen token's probability if the model stopped after each layer (logit lens), with its
    rank written on each bar: where in depth the answer appears."""
    ranks = [t("figures.why.rank", rank=r + 1) for r in w.lens_rank]
    fig = figure(go.Bar(x=[stream_name(n) for n in w.lens_names], y=w.lens_probability, text=ranks, textposition="outside",
                        marker_color=[HELPED if r == 0 else "#9ecae1" for r in w.lens_rank],
                        hovertemplate="%{x}: p = %{y:.3f}, %{text}<extra></extra>"))
    fig.update_layout(yaxis=dict(title_text="p(token)", range=[0, 1.15]), xaxis_title_text=t("figures.residual.read_after"))
    return style(fig, t("figures.why.lens", piece=repr(visible(w.piece))),
                 filename="toyviz-why-lens", projector=projector, height=340)


def _cells(z) -> list[list[str]]:
    """Cell text with two decimals (float32 values would print as 0.0099999998)."""
    return [[f"{v:.2f}" for v in row] for row in numpy(z)]


def patching_figures(pt: Patching, piece, *, projector: bool = False) -> tuple[go.Figure, go.Figure]:
    """Normalised effect of patching clean activations into the corrupted run (0 = corrupted,
    1 = clean; below 0 or above 1 overshoots): the residual stream at each layer × position, and
    each head's whole output. `piece(id)` names the two answers."""
    x = token_labels([a if a == b else f"{a}→{b}" for a, b in zip(pt.clean_tokens, pt.corrupted_tokens)])
    text = _cells(pt.resid) if len(x) <= PATCH_TEXT_COLUMNS else None
    resid = figure(heatmap(pt.resid, x=x, y=[n.label for n in pt.resid_names], colorscale="RdBu", zmin=-1, zmax=1,
                           zmid=0, text=text, texttemplate="%{text}" if text is not None else None,
                           hover=t("figures.hover.clean_effect"), colorbar_title=t("figures.why.effect")))
    resid.update_layout(xaxis_title_text=t("figures.why.patch_positions"), yaxis_autorange="reversed")
    L, H = pt.heads.shape
    heads = figure(heatmap(pt.heads, x=[f"H{h}" for h in range(H)], y=[t("figures.why.layer", layer=i) for i in range(L)],
                           colorscale="RdBu", zmin=-1, zmax=1, zmid=0, text=_cells(pt.heads),
                           texttemplate="%{text}", hover="%{y} %{x}: " + t("figures.hover.effect"), colorbar_title=t("figures.why.effect")))
    heads.update_layout(yaxis_autorange="reversed")
    answers = t("figures.why.metric", clean_answer=visible(piece(pt.clean_answer)),
                corrupted_answer=visible(piece(pt.corrupted_answer)), clean=f"{pt.clean_metric:+.2f}",
                corrupted=f"{pt.corrupted_metric:+.2f}")
    return (style(resid, t("figures.why.patching_stream", metric=answers),
                  filename="toyviz-why-patching-stream", projector=projector, height=200 + 40 * len(pt.resid_names)),
            style(heads, t("figures.why.patching_heads"),
                  filename="toyviz-why-patching-heads", projector=projector, height=180 + 40 * L))
