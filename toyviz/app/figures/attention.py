"""Attention tab: every head at a glance, one head in detail, and what switching heads off does to the prediction;
the maps' colours and layout, which Inside a head (figures.inside), Translate and the page's sampler draw with too."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.colors import get_colorscale

from toyviz.app.figures import (BASE_FONT, PROJECTOR_HEIGHT, PROJECTOR_SCALE, candidate_label, figure, heatmap,
               numpy, pool, style, token_labels)
from toyviz.i18n import LANGUAGES, catalogue, t
from toyviz.models.names import layer_of
from toyviz.interpret.heads import pattern_name
from toyviz.models.trace import Trace

MODES = ("probs", "scores")
GRID_CELLS = 32                      # each small multiple is pooled to at most 32 × 32 cells
# probabilities are blue on 0..1 everywhere; signed values (scores, q, k, v …) pink–green around 0,
# so that no blue in an attention figure can be read as a probability. As lists, not names: figures
# are built unchecked (figures.figure), which keeps a name as given, and plotly.js knows few of them
SIGNED = get_colorscale("PiYG")     # magenta (negative) – white (0) – green (positive)
PROBS_COLOURS = dict(colorscale=get_colorscale("Blues"), cmin=0.0, cmax=1.0)
SCORES_COLOURS = dict(colorscale=SIGNED, cmid=0.0)


def future_mask(n_query: int, n_key: int) -> np.ndarray:
    """True where query i may not look at key j because j lies in its future (j > i)."""
    return np.triu(np.ones((n_query, n_key), dtype=bool), k=1)


def masked(matrix, causal: bool) -> np.ndarray:
    """float32 copy of an attention matrix with the future cells set to NaN when the pass was
    causal, so they draw as grey instead of as zero."""
    z = numpy(matrix).copy()
    if causal:
        z[future_mask(*z.shape)] = np.nan
    return z


def attention_matrix(trace: Trace, layer: int, head: int, mode: str = "probs") -> np.ndarray:
    """[T, T] probabilities or pre-mask scaled scores of one head, masked cells NaN."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    trace.check_head(layer, head)                                  # a clear message, not an IndexError deep down
    source = trace.attention if mode == "probs" else trace.scores
    return masked(source[layer, head], trace.causal)


def attention_trace(z, *, x, y, mode: str = "probs", coloraxis: str | None = None, showscale: bool = True,
                    hover: str | None = None) -> go.Heatmap:
    """One attention heatmap (rows = queries, columns = keys) in the colours of its mode."""
    colours = PROBS_COLOURS if mode == "probs" else SCORES_COLOURS
    return heatmap(z, x=x, y=y, colorscale=colours["colorscale"], zmin=colours.get("cmin"),
                   zmax=colours.get("cmax"), zmid=colours.get("cmid"), coloraxis=coloraxis, showscale=showscale,
                   colorbar_title=t("figures.probability") if mode == "probs" else t("figures.attention.score_qk"),
                   hover=hover or t("figures.hover.query_key") + f" ({t('figures.attention.' + mode)})")


LABEL_LINE = 1.3                     # a tick label needs about 1.3 × its font size in pixels
MAP_WIDTH = 900                      # pixels an attention map gets across, about (the page sets the width)
MAP_HEIGHT = (380, 1000)             # its height (before the projector's 1.4×) grows with the rows between these


def _every(labels: list[str], pixels: float, line: float) -> list[str]:
    """The labels to print on an axis of `pixels` for len(labels) categories: every one where each gets
    a line of text, else every k-th (explicit ticks: plotly's automatic ones skip every other row)."""
    return labels[::max(1, math.ceil(line * len(labels) / max(pixels, 1.0) - 1e-6))]


def attention_figure(z, *, rows: list[str], cols: list[str], title: str, filename: str, mode: str = "probs",
                     projector: bool = False) -> go.Figure:
    """A single labelled attention map, queries down, keys across, masked cells grey. The figure grows
    with the rows so that every query and every key is labelled when they fit (also in the PNG); when
    they cannot fit, every k-th is, evenly."""
    s = PROJECTOR_SCALE if projector else 1.0
    grow = PROJECTOR_HEIGHT if projector else 1.0
    font = BASE_FONT * s
    # style's margins (70 above, 50 below) plus the key labels under the map, turned upright at worst
    room = (70 + 50) * s + min(max(map(len, cols), default=0) * 0.6 * font, 200 * s)
    height = min(max(room + len(rows) * LABEL_LINE * font, MAP_HEIGHT[0] * grow), MAP_HEIGHT[1] * grow)
    fig = figure(attention_trace(z, x=cols, y=rows, mode=mode), dict(
        xaxis=dict(title=dict(text=t("figures.attention.key_axis")), tickmode="array",
                   tickvals=_every(cols, MAP_WIDTH, LABEL_LINE * font)),
        yaxis=dict(title=dict(text=t("figures.attention.query_axis")), autorange="reversed", tickmode="array",
                   tickvals=_every(rows, height - room, LABEL_LINE * font))))
    return style(fig, title, filename=filename, projector=projector, height=round(height / grow), maps=True)


TITLE_LINE = 1.5                     # a line of text needs about 1.5 × its font size in pixels


def _title_band(n: int, L: int, height: int, projector: bool, least: int) -> int:
    """Rows of white between two layers' tiles (each n rows) so a panel title fits in the band above
    its tile instead of sitting on the tile above: the plot's height in pixels is the figure's less
    `style`'s margins (110 and 50 with titles, × the projector scale), shared by L·n + (L−1)·band rows."""
    s = PROJECTOR_SCALE if projector else 1.0
    plot = height * (PROJECTOR_HEIGHT if projector else 1.0) - (110 + 50) * s
    line = TITLE_LINE * BASE_FONT * s
    if L < 2:
        return least
    return max(least, math.ceil(line * L * n / max(plot - line * (L - 1), line)))


def ablation_kind(kind: str) -> str:
    """How a head was switched off ("zero", "mean": toyviz.models), in the event's language."""
    key = f"figures.attention.ablation_{kind}"
    return t(key) if key in catalogue(LANGUAGES[0]) else kind


def attention_grid(trace: Trace, *, mode: str = "probs", labels=None, projector: bool = False) -> go.Figure:
    """Every layer × head as a small map (pooled to ≤ 32×32 cells for long prompts), so a student
    can spot the heads with a clear pattern before opening one; `labels` (from
    toyviz.interpret.heads.label_heads) names each panel.

    The panels are tiles of ONE heatmap separated by white lines: a single trace builds and
    serialises an order of magnitude faster than L × H subplots."""
    L, H, T = trace.n_layer, trace.n_head, len(trace.token_ids)
    names = {(h.layer, h.head): pattern_name(h.label) for h in labels or []}
    tiles = [[pool(attention_matrix(trace, layer, head, mode), GRID_CELLS, GRID_CELLS)[0] for head in range(H)]
             for layer in range(L)]
    n = tiles[0][0].shape[0]
    gap = max(1, n // 10)                                   # a white band between the heads' tiles
    height = 140 + 170 * L
    vgap = _title_band(n, L, height, projector, gap)        # and one tall enough for the next layer's titles
    z = np.full((L * (n + vgap) - vgap, H * (n + gap) - gap), np.nan, dtype=np.float32)
    for layer in range(L):
        for head in range(H):
            z[layer * (n + vgap): layer * (n + vgap) + n, head * (n + gap): head * (n + gap) + n] = tiles[layer][head]
    colours = PROBS_COLOURS if mode == "probs" else SCORES_COLOURS
    bands = [dict(type="rect", x0=-0.5, x1=z.shape[1] - 0.5, y0=i * (n + vgap) - vgap - 0.5, y1=i * (n + vgap) - 0.5)
             for i in range(1, L)]
    bands += [dict(type="rect", y0=-0.5, y1=z.shape[0] - 0.5, x0=i * (n + gap) - gap - 0.5, x1=i * (n + gap) - 0.5)
              for i in range(1, H)]
    # each title stands on its own tile's top edge, inside the band above it (layer 0's in the top margin)
    titles = [dict(x=head * (n + gap) + n / 2, y=layer * (n + vgap) - 0.5, yanchor="bottom", showarrow=False,
                   text=f"L{layer} H{head}" + (f" · {names[layer, head]}" if (layer, head) in names else ""))
              for layer in range(L) for head in range(H)]
    fig = figure(heatmap(z, hover=t("figures.attention." + mode) + " %{z:.3f}", coloraxis="coloraxis"), dict(
        coloraxis=dict(colorbar=dict(title=dict(text=t(f"figures.attention.{mode}"))), **colours),
        shapes=[dict(b, fillcolor="white", line=dict(width=0), layer="above") for b in bands],
        annotations=titles,
        xaxis=dict(showticklabels=False, constrain="domain"),
        yaxis=dict(showticklabels=False, autorange="reversed")))
    pooled = t("figures.attention.pooled", n=math.ceil(T / GRID_CELLS)) if T > GRID_CELLS else ""
    return style(fig, t(f"figures.attention.grid_{mode}", layers=L, heads=H, pooled=pooled),
                 filename=f"toyviz-attention-grid-{mode}", projector=projector, height=height, maps=True)


def attention_head(trace: Trace, layer: int, head: int, *, mode: str = "probs", projector: bool = False) -> go.Figure:
    """One head large: which earlier token each token looks at (probs), or the raw scaled scores
    q·k/√d before the mask and softmax (scores); grey cells are the future the mask hides."""
    labels = token_labels(trace.tokens)
    return attention_figure(attention_matrix(trace, layer, head, mode), rows=labels, cols=labels, mode=mode,
                            title=t(f"figures.attention.head_{mode}", layer=layer, head=head),
                            filename=f"toyviz-attention-L{layer}-H{head}-{mode}", projector=projector)


ABLATE_CONTROL = "switch heads off"    # the page's checkbox group ("switch heads off (layer.head)") the title names


def ablation_comparison(trace: Trace, ablated: Trace, piece, *, position: int = -1, n: int = 10,
                        projector: bool = False) -> go.Figure:
    """Next-token probabilities with all heads vs. with some heads switched off, side by side, so
    a student sees what those heads contributed to this prediction. `piece(id)` names a token.
    With no head switched off there is nothing to compare: only the model's prediction is drawn,
    and the title says which control switches heads off."""
    off = ", ".join(f"{layer_of(name)}.{h} ({ablation_kind(kind)})" for name, heads in ablated.ablated.items()
                    for h, kind in heads.items())
    p0 = numpy(trace.logits[position].float().softmax(-1))
    p1 = numpy(ablated.logits[position].float().softmax(-1)) if off else p0
    top = np.argsort(-np.maximum(p0, p1), kind="stable")[:n]
    names = [candidate_label(piece(int(i)), i) for i in top]
    series = [(p0, t("figures.attention.all_on") if off else t("figures.attention.prediction"))]
    series += [(p1, t("figures.attention.heads_off", heads=off))] if off else []
    bars = [go.Bar(y=names, x=p[top], orientation="h", name=name, hovertemplate="%{y}: %{x:.3f}<extra>" + name + "</extra>")
            for p, name in series]
    after = token_labels(trace.tokens)[position]
    fig = figure(bars, dict(barmode="group", xaxis=dict(title=dict(text=t("figures.probability"))),
                            showlegend=bool(off), yaxis=dict(autorange="reversed",
                                                             title=dict(text=t("figures.attention.after", token=after)))))
    title = (t("figures.attention.switching_off", heads=off) if off else
             t("figures.attention.every_head_on"))
    return style(fig, title, filename="toyviz-ablation", projector=projector,
                 height=200 + 36 * len(top))
