"""Model tab: where the parameters are, why attention memory grows with the square of the
sequence length, and how training went."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from . import style


def parameter_bars(counts: dict[str, int], *, projector: bool = False) -> go.Figure:
    """Parameters per component (e.g. toyviz.size.count_parameters), with each one's share of
    the total, to show that embeddings dominate a small model and blocks a big one."""
    parts = {k: int(v) for k, v in counts.items() if k != "total"}
    total = int(counts.get("total", sum(parts.values())))
    share = [v / total if total else 0.0 for v in parts.values()]
    fig = go.Figure(go.Bar(x=list(parts), y=list(parts.values()),
                           text=[f"{s:.1%}" for s in share], textposition="outside",
                           hovertemplate="%{x}: %{y:,} parameters<extra></extra>"))
    fig.update_layout(xaxis_title="component", yaxis_title="parameters")
    return style(fig, f"Parameters per component — {total:,} in total", filename="toyviz-parameters",
                 projector=projector)


def attention_memory(n_head: int, *, batch: int = 1, n_layer: int = 1, lengths=None, context: int | None = None,
                     projector: bool = False) -> go.Figure:
    """Memory of the attention matrices (batch × heads × T² values, per layer × n_layer) against
    sequence length on log-log axes: a straight line of slope 2, i.e. twice the text costs four
    times the memory. fp32 and bf16 shown; `context` marks the model's own context length."""
    T = np.asarray(lengths if lengths is not None else 2 ** np.arange(4, 17), dtype=np.float64)
    fig = go.Figure([go.Scatter(x=T, y=batch * n_head * n_layer * T ** 2 * size, mode="lines+markers", name=name,
                                hovertemplate="T=%{x:,}: %{y:.3s}B<extra>" + name + "</extra>")
                     for name, size in (("fp32 (4 bytes)", 4), ("bf16 (2 bytes)", 2))])
    if context:
        # on a log axis plotly.js places shapes in data units but annotations in log10 units, so
        # add_vline's joint annotation would land at 10^context and stretch the axis
        fig.add_vline(x=context, line_dash="dot")
        fig.add_annotation(x=np.log10(context), y=1, yref="paper", text=f"context {context}", showarrow=False,
                           xanchor="left", yanchor="top")
    fig.update_layout(xaxis=dict(type="log", title="sequence length T"), yaxis=dict(type="log", title="bytes"))
    return style(fig, f"Attention-matrix memory: batch {batch} × {n_head} heads × {n_layer} layer"
                      f"{'s' * (n_layer != 1)} × T²", filename="toyviz-attention-memory", projector=projector)


def loss_curve(history: list[dict], *, x: str = "step", projector: bool = False) -> go.Figure:
    """Training (and validation, where logged) loss against steps or tokens seen: both falling
    means learning; validation rising while training falls means memorising."""
    fig = go.Figure()
    for key, name in (("train_loss", "train"), ("val_loss", "validation")):
        rows = [r for r in history if r.get(key) is not None]
        if rows:
            fig.add_trace(go.Scatter(x=np.array([r[x] for r in rows], dtype=np.float64),
                                     y=np.array([r[key] for r in rows], dtype=np.float32), name=name,
                                     mode="lines" if key == "train_loss" else "lines+markers",
                                     hovertemplate=f"{x} %{{x:,}}: %{{y:.3f}}<extra>{name}</extra>"))
    fig.update_layout(xaxis_title="tokens seen" if x == "tokens" else "step", yaxis_title="cross-entropy loss (nats)")
    return style(fig, "Training loss", filename="toyviz-loss", projector=projector)
