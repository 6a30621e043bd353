"""LayerNorm tab: what each LayerNorm receives (mean and spread per token), what it hands on,
the γ and β it learned, and one token's values before and after normalising.

Norm names are the trace's: "block0.ln1" (before attention in a pre-norm block, after the add in
a post-norm one), "block0.ln2" (feed-forward), …, "ln_f" (the final norm before the head).
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from toyviz.i18n import t
from toyviz.app.figures import figure, heatmap, numpy, slug, style, subplots, token_labels
from toyviz.models.trace import Trace


def _norm(trace: Trace, name: str) -> dict:
    if name not in trace.layernorms:
        raise KeyError(f"no LayerNorm {name!r}; this trace has {list(trace.layernorms)}")
    return trace.layernorms[name]


def norm_statistics(trace: Trace) -> dict[str, np.ndarray]:
    """[n_norms, T] arrays: input mean, input std (with eps, as the norm divides by it), output mean,
    output std — rounded to 4 decimals, so float noise (an output mean of 1e-8) does not get a colour."""
    norms = list(trace.layernorms.values())
    outputs = [n["output"].float() for n in norms]
    stats = {"input mean": [n["mean"] for n in norms], "input std": [n["std"] for n in norms],
             "output mean": [o.mean(-1) for o in outputs], "output std": [o.std(-1, unbiased=False) for o in outputs]}
    return {k: np.stack([numpy(v) for v in rows]).round(4) for k, rows in stats.items()}


def stat_name(stat: str) -> str:
    """A statistic's name ("input std", a key of norm_statistics) in the event's language."""
    return t("figures.layernorm." + stat.replace(" ", "_"))


def layernorm_heatmaps(trace: Trace, *, projector: bool = False) -> go.Figure:
    """Token × norm heatmaps of the mean and spread going in and coming out: the input std grows
    layer by layer as writes pile up in the stream, the output is brought back to a fixed scale."""
    stats = norm_statistics(trace)
    names, labels = list(trace.layernorms), token_labels(trace.tokens)
    # on a projector two by two, inputs left and outputs right: half as tall, for a 720-px screen (issue 55)
    rows, cols = (2, 2) if projector else (4, 1)
    fig = subplots(rows=rows, cols=cols, subplot_titles=[stat_name(k) for k in (list(stats) if cols == 1 else
                   ["input mean", "output mean", "input std", "output std"])], shared_xaxes=True,
                   vertical_spacing=0.06 if cols == 1 else 0.14, horizontal_spacing=0.16)
    for i, (stat, z) in enumerate(stats.items()):
        r, c = (i + 1, 1) if cols == 1 else (1 + i % 2, 1 + i // 2)
        diverging = "mean" in stat
        fig.add_trace(heatmap(z, x=labels, y=names, colorscale="RdBu_r" if diverging else "Viridis",
                              zmid=0 if diverging else None, hover="%{y}, %{x}: " + stat_name(stat) + " %{z:.3f}"),
                      row=r, col=c)
        beside = {} if cols == 1 else dict(x=fig.get_subplot(r, c).xaxis.domain[1] + 0.01, xanchor="left")
        fig.data[-1].colorbar.update(len=0.8 / rows, y=1 - (r - 0.5) / rows, yanchor="middle", thickness=12, **beside)
    # every norm named (plotly would drop every other name where rows are close), with a row tall enough for it
    fig.update_yaxes(autorange="reversed", tickmode="array", tickvals=names, ticktext=names)
    return style(fig, t("figures.layernorm.heatmaps"), filename="toyviz-layernorm-stats",
                 projector=projector, height=200 + rows * (40 + 22 * len(names)))


def layernorm_curves(trace: Trace, position: int | None = None, *, projector: bool = False) -> go.Figure:
    """Average input mean and std and output std at each norm, through the depth of the model
    (dashed: one chosen token), to show how much the norms rescale the stream."""
    stats = norm_statistics(trace)
    names = list(trace.layernorms)
    fig = figure()
    for stat in ("input std", "input mean", "output std"):
        fig.add_trace(go.Scatter(x=names, y=stats[stat].mean(axis=1), mode="lines+markers",
                                 name=t("figures.layernorm.mean_over_tokens", stat=stat_name(stat))))
        if position is not None:
            fig.add_trace(go.Scatter(x=names, y=stats[stat][:, position], mode="lines+markers",
                                     line=dict(dash="dash"),
                                     name=f"{stat_name(stat)}, {token_labels(trace.tokens)[position]}"))
    fig.update_layout(xaxis_title_text=t("figures.layernorm.in_order"), yaxis_title_text=t("figures.value"))
    return style(fig, t("figures.layernorm.curves"), filename="toyviz-layernorm-curves",
                 projector=projector)


def layernorm_parameters(trace: Trace, name: str, *, projector: bool = False) -> go.Figure:
    """The learned scale γ and shift β of one norm per dimension: after normalising to mean 0,
    std 1 the model re-stretches each dimension by γ and moves it by β."""
    norm = _norm(trace, name)
    fig = subplots(rows=2, cols=1, shared_xaxes=True,
                   subplot_titles=[t("figures.layernorm.gamma"), t("figures.layernorm.beta")],
                   vertical_spacing=0.12)
    for r, key in enumerate(("weight", "bias"), start=1):
        values = numpy(norm[key])
        fig.add_trace(go.Bar(x=np.arange(len(values)), y=values, name=key, showlegend=False,
                             hovertemplate=t("figures.hover.dim_y") + "<extra></extra>"), row=r, col=1)
    fig.update_xaxes(title_text=t("figures.dimension"), row=2)
    return style(fig, t("figures.layernorm.parameters", name=name), filename=f"toyviz-layernorm-params-{slug(name)}",
                 projector=projector, height=480)


def layernorm_histogram(trace: Trace, name: str, position: int, *, projector: bool = False) -> go.Figure:
    """One token's values across all dimensions: as the norm receives them, after subtracting the
    mean and dividing by the std (mean 0, std 1), and after γ and β."""
    norm = _norm(trace, name)
    x = norm["input"][position].float()
    normalised = (x - norm["mean"][position]) / norm["std"][position]
    series = {t("figures.layernorm.input"): x, t("figures.layernorm.normalised"): normalised,
              t("figures.layernorm.output"): norm["output"][position]}
    fig = figure([go.Histogram(x=numpy(v), name=k, opacity=0.55, nbinsx=40) for k, v in series.items()])
    fig.update_layout(barmode="overlay", xaxis_title_text=t("figures.value"),
                      yaxis_title_text=t("figures.layernorm.dimensions"))
    return style(fig, t("figures.layernorm.histogram", name=name, token=token_labels(trace.tokens)[position]),
                 filename=f"toyviz-layernorm-hist-{slug(name)}-t{position % len(trace.tokens)}",
                 projector=projector)
