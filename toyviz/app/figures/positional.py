"""Positions tab: what the positional encoding looks like, how positions relate to each other,
and why two common implementation bugs make positions hard to tell apart."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import torch

from toyviz.i18n import t
from toyviz.app.figures import figure, heatmap, message, numpy, pool, style, subplots, token_labels
from toyviz.interpret.positions import distinguishability
from toyviz.models.layers import ENCODING_VARIANTS, rope_angles, sinusoidal_encoding
from toyviz.models.trace import Trace

MAX_ROWS, MAX_COLS = 128, 256        # bigger matrices are average-pooled before they are sent


def _axis(n: int, block: int, tokens: list[str] | None) -> list | np.ndarray:
    """Row/column coordinates: token labels at full resolution, else the first position of each block."""
    if tokens is not None and block == 1:
        return token_labels(tokens)
    return np.arange(0, n, block)


def encoding_heatmap(pe, *, tokens: list[str] | None = None, title: str | None = None,
                     filename: str = "toyviz-positional", projector: bool = False) -> go.Figure:
    """Heatmap of a [positions, d_model] encoding: each row is the vector added to the token at
    that position, so stripes of different widths are the different frequencies."""
    z, br, bc = pool(pe, MAX_ROWS, MAX_COLS)
    T, d = numpy(pe).shape
    fig = figure(heatmap(z, x=np.arange(0, d, bc), y=_axis(T, br, tokens), colorscale="RdBu_r", zmid=0,
                         hover=t("figures.hover.position_dim")))
    note = t("figures.positions.averaged", rows=br, cols=bc) if br * bc > 1 else ""
    fig.update_layout(xaxis_title_text=t("figures.dimension") + note, yaxis_title_text=t("figures.position"),
                      yaxis_autorange="reversed")
    return style(fig, title or t("figures.positions.encoding"), filename=filename, projector=projector, height=520)


def rope_heatmap(length: int, d_head: int, *, base: float = 10000.0, projector: bool = False) -> go.Figure:
    """RoPE adds nothing to the embeddings; it rotates each (2i, 2i+1) pair of q and k by an angle
    that grows with position — shown here modulo 2π, so fast pairs wrap around often, slow ones barely turn."""
    angles = rope_angles(torch.arange(length), d_head, base) % (2 * math.pi)
    z, br, bc = pool(angles, MAX_ROWS, MAX_COLS)
    fig = figure(heatmap(z, x=np.arange(0, d_head // 2, bc), y=np.arange(0, length, br), colorscale="Twilight",
                         zmin=0, zmax=2 * math.pi, colorbar_title=t("figures.positions.angle"),
                         hover=t("figures.hover.position_pair")))
    fig.update_layout(xaxis_title_text=t("figures.positions.pair"), yaxis_title_text=t("figures.position"),
                      yaxis_autorange="reversed")
    return style(fig, t("figures.positions.rope", d_head=d_head), filename="toyviz-rope-angles",
                 projector=projector, height=520)


def model_encoding(trace: Trace, kind: str, *, table=None, projector: bool = False) -> go.Figure:
    """The positional information this model really uses: the vectors it added (sinusoidal or
    learned — pass `table`, every row the model adds, to see the whole learned table), RoPE's
    rotation angles, or a note that the model has none."""
    T = len(trace.token_ids)
    if kind == "rope":
        return rope_heatmap(T, trace.q.shape[-1], projector=projector)
    if kind == "learned" and table is not None:
        return encoding_heatmap(table, title=t("figures.positions.learned_table"),
                                filename="toyviz-positional-learned", projector=projector)
    if trace.positional is None:
        return message(t("figures.positions.none_note"), t("figures.positions.none"), filename="toyviz-positional",
                       projector=projector)
    title = t(f"figures.positions.{kind}_prompt") if kind in ("learned", "sinusoidal") else \
        t("figures.positions.prompt", kind=kind.capitalize())
    return encoding_heatmap(trace.positional, tokens=trace.tokens, title=title,
                            filename=f"toyviz-positional-{kind}", projector=projector)


def dimension_curves(pe, dims: list[int], *, projector: bool = False) -> go.Figure:
    """Chosen dimensions of an encoding plotted against position: low dimensions oscillate fast,
    high ones slowly, like the hands of a clock."""
    values = numpy(pe)
    positions = np.arange(values.shape[0])
    fig = figure([go.Scatter(x=positions, y=values[:, d], mode="lines", name=t("figures.positions.dim", d=d))
                  for d in dims])
    fig.update_layout(xaxis_title_text=t("figures.position"), yaxis_title_text=t("figures.value"))
    return style(fig, t("figures.positions.curves"), filename="toyviz-positional-curves", projector=projector)


def similarity(pe, metric: str = "cosine") -> np.ndarray:
    """[T, T] dot products or cosine similarities between the encodings of every two positions."""
    x = torch.as_tensor(numpy(pe))
    if metric == "cosine":
        x = torch.nn.functional.normalize(x, dim=-1)
    elif metric != "dot":
        raise ValueError(f"metric must be 'cosine' or 'dot', got {metric!r}")
    return (x @ x.T).numpy()


def similarity_heatmap(pe, metric: str = "cosine", *, tokens: list[str] | None = None,
                       projector: bool = False) -> go.Figure:
    """How alike the encodings of two positions are: a good encoding is most similar to itself
    and fades smoothly with distance, so the model can read off relative position."""
    z, b, _ = pool(similarity(pe, metric), MAX_ROWS, MAX_ROWS)
    axis = _axis(len(numpy(pe)), b, tokens)
    cosine = metric == "cosine"
    fig = figure(heatmap(z, x=axis, y=axis, colorscale="RdBu_r", zmid=0, zmin=-1 if cosine else None,
                         zmax=1 if cosine else None, hover="%{y} · %{x}: %{z:.3f}"))
    fig.update_layout(xaxis_title_text=t("figures.position"), yaxis_title_text=t("figures.position"),
                      yaxis_autorange="reversed")
    return style(fig, t("figures.positions.similarity", metric=t(f"labels.{metric}")),
                 filename=f"toyviz-positional-{metric}",
                 projector=projector, height=560)


def formula_explorer(d_model: int, length: int, *, projector: bool = False) -> go.Figure:
    """The sinusoidal formula for any size: PE[pos, 2i] = sin(pos/10000^(2i/d)), PE[pos, 2i+1] = cos(…)."""
    return encoding_heatmap(sinusoidal_encoding(length, d_model),
                            title=t("figures.positions.formula", d_model=d_model, length=length),
                            filename=f"toyviz-sinusoidal-d{d_model}-T{length}", projector=projector)


def spot_the_bug(length: int = 128, d_model: int = 64, *, projector: bool = False) -> go.Figure:
    """The correct encoding next to two bugs from tutorials (top: the encoding, bottom: cosine
    similarity between positions), each titled with its smallest distance between two positions."""
    titles, panels = [], []
    for variant in ENCODING_VARIANTS:
        pe = sinusoidal_encoding(length, d_model, variant)
        titles.append(t("figures.positions.variant", variant=variant, distance=f"{distinguishability(pe):.3f}"))
        panels.append(pe)
    fig = subplots(rows=2, cols=3, subplot_titles=titles + [""] * 3, vertical_spacing=0.1,
                   horizontal_spacing=0.05)
    for col, pe in enumerate(panels, start=1):
        z, br, bc = pool(pe, MAX_ROWS, MAX_COLS)
        fig.add_trace(heatmap(z, x=np.arange(0, d_model, bc), y=np.arange(0, length, br), coloraxis="coloraxis",
                              hover=t("figures.hover.position_dim")), row=1, col=col)
        s, b, _ = pool(similarity(pe), 64, 64)
        axis = np.arange(0, length, b)
        fig.add_trace(heatmap(s, x=axis, y=axis, coloraxis="coloraxis", hover="%{y} · %{x}: %{z:.3f}"),
                      row=2, col=col)
    fig.update_layout(coloraxis=dict(colorscale="RdBu_r", cmin=-1, cmax=1))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text=t("figures.dimension"), row=1)
    fig.update_xaxes(title_text=t("figures.position"), row=2)
    fig.update_yaxes(title_text=t("figures.position"), col=1)
    return style(fig, t("figures.positions.spot_the_bug"),
                 filename=f"toyviz-spot-the-bug-d{d_model}", projector=projector, height=760)
