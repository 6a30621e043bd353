"""Model tab: where the parameters are, why attention memory grows with the square of the
sequence length, and how training went."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from toyviz.i18n import LANGUAGES, catalogue, t
from toyviz.app.figures import figure, message, style, subplots


def parameter_bars(counts: dict[str, int] | None, *, projector: bool = False) -> go.Figure:
    """Parameters per component (e.g. toyviz.models.size.count_parameters), with each one's share of
    the total, to show that embeddings dominate a small model and blocks a big one. Whatever it is
    given it draws something: no counts, or a total of 0, give a figure that says so, not an error."""
    counts = dict(counts or {})
    parts = {str(k): int(v) for k, v in counts.items() if k != "total"}
    total = int(counts.get("total", sum(parts.values())))
    if not parts or total <= 0:
        return message(t("figures.model.no_parameters"), t("figures.model.per_component"),
                       filename="toyviz-parameters", projector=projector)
    share = [v / total for v in parts.values()]
    named = [t(f"figures.model.part_{k}") if f"figures.model.part_{k}" in catalogue(LANGUAGES[0]) else k for k in parts]
    fig = figure(go.Bar(x=named, y=list(parts.values()),
                        text=[f"{s:.1%}" for s in share], textposition="outside", cliponaxis=False,
                        hovertemplate="%{x}: " + t("figures.hover.parameters") + "<extra></extra>"))
    # room above the tallest bar for its share, which plotly would otherwise clip at the plot's top
    fig.update_layout(xaxis_title_text=t("figures.model.component"),
                      yaxis=dict(title_text=t("figures.model.parameters"), range=[0, max(parts.values()) * 1.15]))
    return style(fig, t("figures.model.parameters_title", total=f"{total:,}"), filename="toyviz-parameters",
                 projector=projector)


def attention_memory(n_head: int, *, batch: int = 1, n_layer: int = 1, lengths=None, context: int | None = None,
                     projector: bool = False) -> go.Figure:
    """Memory of the attention matrices (batch × heads × T² values, per layer × n_layer) against
    sequence length on log-log axes: a straight line of slope 2, i.e. twice the text costs four
    times the memory. fp32 and bf16 shown; `context` marks the model's own context length."""
    T = np.asarray(lengths if lengths is not None else 2 ** np.arange(4, 17), dtype=np.float64)
    fig = figure([go.Scatter(x=T, y=batch * n_head * n_layer * T ** 2 * size, mode="lines+markers", name=name,
                             hovertemplate="T=%{x:,}: %{y:.3s}B<extra>" + name + "</extra>")
                  for name, size in (("fp32 (4 bytes)", 4), ("bf16 (2 bytes)", 2))])
    if context:
        # on a log axis plotly.js places shapes in data units but annotations in log10 units, so
        # add_vline's joint annotation would land at 10^context and stretch the axis
        fig.add_vline(x=context, line_dash="dot")
        fig.add_annotation(x=np.log10(context), y=1, yref="paper", text=t("figures.model.context", context=context),
                           showarrow=False,
                           xanchor="left", yanchor="top")
    fig.update_layout(xaxis=dict(type="log", title_text=t("figures.model.length")),
                      yaxis=dict(type="log", title_text=t("figures.model.bytes")))
    return style(fig, t("figures.model.memory_one" if n_layer == 1 else "figures.model.memory", batch=batch,
                        heads=n_head, layers=n_layer), filename="toyviz-attention-memory", projector=projector)


# the history's losses, drawn where recorded; copy_loss: short repeated random-token sequences (train --copy-batch)
# (the history's key, the line's name in the catalogues)
LOSSES = (("train_loss", "figures.model.train"), ("val_loss", "figures.model.validation"),
          ("copy_loss", "figures.model.copy"))
TIMELINE_PATTERNS = (("induction", "figures.model.induction_score"), ("previous-token", "figures.model.previous_score"))


def loss_curve(history: list[dict], *, x: str = "step", projector: bool = False) -> go.Figure:
    """Training (and validation, where logged) loss against steps or tokens seen: both falling
    means learning; validation rising while training falls means memorising. Where the history
    recorded head probes, panels below share the time axis: each head's induction and previous-token
    score over the probe set — where an induction head is born, the loss drops with it (most of all the
    loss on repeated random tokens, where the history has it)."""
    probed = [r for r in history if "heads" in r]
    rows = 1 + len(TIMELINE_PATTERNS) * bool(probed)
    fig = subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                   row_heights=[0.4] + [0.6 / (rows - 1)] * (rows - 1) if rows > 1 else None)
    xs = lambda records: np.array([r[x] for r in records], dtype=np.float64)
    x_name = t("figures.model.tokens_seen") if x == "tokens" else t("figures.model.step")
    for key, name in ((key, t(name)) for key, name in LOSSES):
        records = [r for r in history if r.get(key) is not None]
        if records:
            fig.add_trace(go.Scatter(x=xs(records), y=np.array([r[key] for r in records], dtype=np.float32), name=name,
                                     mode="lines+markers" if key == "val_loss" else "lines", legendgroup="loss",
                                     hovertemplate=f"{x_name} %{{x:,}}: %{{y:.3f}}<extra>{name}</extra>"), row=1, col=1)
    fig.update_yaxes(title_text=t("figures.model.loss_nats"), row=1, col=1)
    for row, (pattern, label) in enumerate(TIMELINE_PATTERNS if probed else (), start=2):
        scores = np.array([r["heads"][pattern] for r in probed], dtype=np.float32)     # [time, L, H]
        best = np.unravel_index(scores[-1].argmax(), scores.shape[1:])
        for layer, head in np.ndindex(scores.shape[1:]):
            strongest = (layer, head) == best
            named = t("figures.model.head", head=f"{layer}.{head}", pattern=t(f"figures.heads.{pattern}"))
            fig.add_trace(go.Scatter(
                x=xs(probed), y=scores[:, layer, head], mode="lines",
                name=named, showlegend=strongest,
                line=dict(width=3 if strongest else 1, color=None if strongest else "#b8b8c8"),
                hovertemplate=f"{named}<br>{x_name} %{{x:,}}: %{{y:.2f}}<extra></extra>"),
                row=row, col=1)
        fig.update_yaxes(title_text=t(label), range=[0, 1], row=row, col=1)
    fig.update_xaxes(title_text=x_name, row=rows, col=1)
    title = t("figures.model.loss_and_heads" if probed else "figures.model.loss")
    return style(fig, title, filename="toyviz-loss", projector=projector, height=420 + 220 * (rows - 1))
