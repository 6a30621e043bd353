"""Attention tab: every head at a glance, one head in detail, one head step by step, what
switching heads off does to the prediction, and what the causal mask changes."""
from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from . import candidate_label, grey_background, heatmap, numpy, pool, style, token_labels
from ..names import attn, layer_of
from ..trace import Trace

MODES = ("probs", "scores")
GRID_CELLS = 32                      # each small multiple is pooled to at most 32 × 32 cells
PROBS_COLOURS = dict(colorscale="Blues", cmin=0.0, cmax=1.0)
SCORES_COLOURS = dict(colorscale="RdBu_r", cmid=0.0)


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
                   hover=hover or f"query %{{y}} → key %{{x}}: %{{z:.3f}} ({mode})")


def attention_figure(z, *, rows: list[str], cols: list[str], title: str, filename: str, mode: str = "probs",
                     projector: bool = False) -> go.Figure:
    """A single labelled attention map, queries down, keys across, masked cells grey."""
    fig = go.Figure(attention_trace(z, x=cols, y=rows, mode=mode))
    fig.update_layout(xaxis_title="key (attended to)", yaxis_title="query (attending)", yaxis_autorange="reversed")
    size = 380 + 6 * max(len(rows), len(cols))
    return grey_background(style(fig, title, filename=filename, projector=projector, height=min(size, 900)))


def attention_grid(trace: Trace, *, mode: str = "probs", labels=None, projector: bool = False) -> go.Figure:
    """Every layer × head as a small map (pooled to ≤ 32×32 cells for long prompts), so a student
    can spot the heads with a clear pattern before opening one; `labels` (from
    toyviz.heads.label_heads) names each panel.

    The panels are tiles of ONE heatmap separated by white lines: a single trace builds and
    serialises an order of magnitude faster than L × H subplots."""
    L, H, T = trace.n_layer, trace.n_head, len(trace.token_ids)
    names = {(h.layer, h.head): h.label for h in labels or []}
    tiles = [[pool(attention_matrix(trace, layer, head, mode), GRID_CELLS, GRID_CELLS)[0] for head in range(H)]
             for layer in range(L)]
    n = tiles[0][0].shape[0]
    gap = max(1, n // 10)                                   # a white band between tiles
    z = np.full((L * (n + gap) - gap, H * (n + gap) - gap), np.nan, dtype=np.float32)
    for layer in range(L):
        for head in range(H):
            z[layer * (n + gap): layer * (n + gap) + n, head * (n + gap): head * (n + gap) + n] = tiles[layer][head]
    colours = PROBS_COLOURS if mode == "probs" else SCORES_COLOURS
    fig = go.Figure(heatmap(z, hover=f"{mode} %{{z:.3f}}", coloraxis="coloraxis"))
    bands = [dict(type="rect", x0=-0.5, x1=z.shape[1] - 0.5, y0=i * (n + gap) - gap - 0.5, y1=i * (n + gap) - 0.5)
             for i in range(1, L)]
    bands += [dict(type="rect", y0=-0.5, y1=z.shape[0] - 0.5, x0=i * (n + gap) - gap - 0.5, x1=i * (n + gap) - 0.5)
              for i in range(1, H)]
    titles = [dict(x=head * (n + gap) + n / 2, y=layer * (n + gap) - 0.5, yanchor="bottom", showarrow=False,
                   text=f"L{layer} H{head}" + (f" · {names[layer, head]}" if (layer, head) in names else ""))
              for layer in range(L) for head in range(H)]
    fig.update_layout(coloraxis=dict(colorbar=dict(title=dict(text=mode)), **colours),
                      shapes=[dict(b, fillcolor="white", line_width=0, layer="above") for b in bands],
                      annotations=titles,
                      xaxis=dict(showticklabels=False, showgrid=False, zeroline=False, constrain="domain"),
                      yaxis=dict(showticklabels=False, showgrid=False, zeroline=False, autorange="reversed"))
    pooled = f" (blocks of {math.ceil(T / GRID_CELLS)} tokens averaged)" if T > GRID_CELLS else ""
    fig = style(fig, f"All heads: attention {mode}, {L} layers × {H} heads{pooled}",
                filename=f"toyviz-attention-grid-{mode}", projector=projector, height=140 + 170 * L)
    return grey_background(fig)


def attention_head(trace: Trace, layer: int, head: int, *, mode: str = "probs", projector: bool = False) -> go.Figure:
    """One head large: which earlier token each token looks at (probs), or the raw scaled scores
    q·k/√d before the mask and softmax (scores); grey cells are the future the mask hides."""
    labels = token_labels(trace.tokens)
    return attention_figure(attention_matrix(trace, layer, head, mode), rows=labels, cols=labels, mode=mode,
                            title=f"Attention {mode} — layer {layer}, head {head}",
                            filename=f"toyviz-attention-L{layer}-H{head}-{mode}", projector=projector)


def ablation_comparison(trace: Trace, ablated: Trace, piece, *, position: int = -1, n: int = 10,
                        projector: bool = False) -> go.Figure:
    """Next-token probabilities with all heads vs. with some heads switched off, side by side, so
    a student sees what those heads contributed to this prediction. `piece(id)` names a token."""
    p0, p1 = (numpy(t.logits[position].float().softmax(-1)) for t in (trace, ablated))
    top = np.argsort(-np.maximum(p0, p1), kind="stable")[:n]
    names = [candidate_label(piece(int(i)), i) for i in top]
    off = ", ".join(f"{layer_of(name)}.{h} ({kind})" for name, heads in ablated.ablated.items()
                    for h, kind in heads.items())
    fig = go.Figure([go.Bar(y=names, x=p0[top], orientation="h", name="all heads",
                            hovertemplate="%{y}: %{x:.3f}<extra>all heads</extra>"),
                     go.Bar(y=names, x=p1[top], orientation="h", name=f"without {off or 'any head'}",
                            hovertemplate="%{y}: %{x:.3f}<extra>ablated</extra>")])
    after = token_labels(trace.tokens)[position]
    fig.update_layout(barmode="group", xaxis_title="probability", yaxis_autorange="reversed",
                      yaxis_title=f"next token after {after}")
    title = f"Switching off heads {off}" if off else "All heads on: pick heads to switch off and compare"
    return style(fig, title, filename="toyviz-ablation", projector=projector,
                 height=200 + 36 * len(top))


def head_step_numbers(trace: Trace, layer: int, head: int, query: int) -> dict:
    """Every number of one head for one query position, in the order the model computes them:
    x → q (and the visible k, v) → q·kᵀ → ÷√d_head → mask → softmax → Σ probs·v → write through W_O.

    Arrays are float32 numpy: x [d_model], q [d_head], k and v [visible, d_head], dot / scaled /
    masked / probs [T] over every key (masked entries -inf in `masked`, 0 in `probs`), out [d_head]
    (what the model used: all zeros or the mean when the head was ablated), write [d_model].
    """
    hv = trace.head(layer, head)
    T, d_head = hv.q.shape
    if not 0 <= query < T:
        raise IndexError(f"query position {query} outside the prompt's {T} tokens")
    visible = torch.arange(T, device=hv.q.device) <= query if hv.causal else torch.ones(T, dtype=torch.bool,
                                                                                       device=hv.q.device)
    q = hv.q[query].float()
    dot = hv.k.float() @ q
    scaled = dot / math.sqrt(d_head)
    masked_row = scaled.masked_fill(~visible, float("-inf"))
    probs = masked_row.softmax(-1)
    return {
        "layer": layer, "head": head, "query": query, "token": token_labels(trace.tokens)[query],
        "keys": [label for label, keep in zip(token_labels(trace.tokens), visible.tolist()) if keep],
        "d_head": d_head, "sqrt_d_head": math.sqrt(d_head), "causal": hv.causal,
        "ablated": trace.ablated.get(attn(layer), {}).get(head),
        "x": numpy(hv.x[query]), "q": numpy(q), "k": numpy(hv.k[visible]), "v": numpy(hv.v[visible]),
        "dot": numpy(dot), "scaled": numpy(scaled), "masked": numpy(masked_row), "probs": numpy(probs),
        "out": numpy(hv.out[query]), "write": numpy(hv.write[query]),
        "rope_angles": None if trace.rope_angles is None else numpy(trace.rope_angles[query]),
    }


def head_steps(trace: Trace, layer: int, head: int, query: int, *, projector: bool = False) -> go.Figure:
    """One head unrolled for one query token, one small heatmap per step with its caption, so a
    student can follow a single attention computation from input vector to residual write."""
    s = head_step_numbers(trace, layer, head, query)
    labels = token_labels(trace.tokens)
    # spread over many keys every prob is small: scale to the largest, or the panel looks empty
    top_p = max(float(numpy(s["probs"]).max()), 1e-6)
    ablated = f" — ablated ({s['ablated']}), so out is replaced" if s["ablated"] else ""
    rotated = s["rope_angles"] is not None                # RoPE: q and k are shown after their rotation
    turn = (f", rotated {s['rope_angles'][0]:.2f} … {s['rope_angles'][-1]:.4f} rad" if rotated else "")
    captions = [f"1. input x of {s['token']} (normalised)", f"2. its query q = x·W_Q{turn}",
                f"3. keys k of the {len(s['keys'])} visible tokens" + (", each rotated by its position" * rotated),
                "4. their values v",
                "5. scores q·kᵀ", f"6. ÷ √d_head = {s['sqrt_d_head']:.2f}",
                "7. mask: future keys → −∞ (grey)", f"8. softmax → attention probs (darkest = {top_p:.2f})",
                "9. out = Σ probs · v" + ablated, "10. write into the stream = out·W_O (this head's slice)"]
    fig = make_subplots(rows=5, cols=2, subplot_titles=captions, row_heights=[0.1, 0.38, 0.1, 0.1, 0.1],
                        vertical_spacing=0.085, horizontal_spacing=0.08)
    dims = lambda n: np.arange(n)
    row = lambda v: numpy(v)[None, :]
    greyed = lambda v: np.where(np.isinf(s["masked"]), np.nan, v)          # masked keys drawn grey
    vector = dict(colorscale="RdBu_r", zmid=0, showscale=False)
    panels = [
        (1, 1, heatmap(row(s["x"]), x=dims(len(s["x"])), y=["x"], hover="dim %{x}: %{z:.3f}", **vector)),
        (1, 2, heatmap(row(s["q"]), x=dims(len(s["q"])), y=["q"], hover="dim %{x}: %{z:.3f}", **vector)),
        (2, 1, heatmap(s["k"], x=dims(s["d_head"]), y=s["keys"], hover="k of %{y}, dim %{x}: %{z:.3f}", **vector)),
        (2, 2, heatmap(s["v"], x=dims(s["d_head"]), y=s["keys"], hover="v of %{y}, dim %{x}: %{z:.3f}", **vector)),
        (3, 1, heatmap(row(s["dot"]), x=labels, y=["q·k"], hover="key %{x}: %{z:.3f}", **vector)),
        (3, 2, heatmap(row(s["scaled"]), x=labels, y=["÷√d"], hover="key %{x}: %{z:.3f}", **vector)),
        (4, 1, heatmap(row(greyed(s["masked"])), x=labels, y=["masked"],
                       hover="key %{x}: %{z:.3f}", **vector)),
        (4, 2, heatmap(row(greyed(s["probs"])), x=labels, y=["probs"],
                       colorscale="Blues", zmin=0, zmax=top_p,
                       showscale=False, hover="key %{x}: %{z:.3f}")),
        (5, 1, heatmap(row(s["out"]), x=dims(len(s["out"])), y=["out"], hover="dim %{x}: %{z:.3f}", **vector)),
        (5, 2, heatmap(row(s["write"]), x=dims(len(s["write"])), y=["write"], hover="dim %{x}: %{z:.3f}",
                       **vector)),
    ]
    for r, c, panel in panels:
        fig.add_trace(panel, row=r, col=c)
    fig.update_yaxes(autorange="reversed", row=2)
    fig.update_yaxes(showticklabels=False, row=2, col=2)           # same keys as the k panel beside it
    fig.update_xaxes(showticklabels=False, row=3)
    every = math.ceil(len(labels) / 16)              # key positions as short ticks; hover names the token
    fig.update_xaxes(tickmode="array", tickvals=labels[::every], ticktext=list(range(0, len(labels), every)),
                     title_text="key position", title_standoff=2, row=4)
    fig = style(fig, f"Layer {layer}, head {head}, step by step for query {s['token']}",
                filename=f"toyviz-attention-L{layer}-H{head}-q{query}-steps", projector=projector, height=1000)
    return grey_background(fig)


def masked_vs_unmasked(causal: Trace, unmasked: Trace, layer: int, head: int, *, projector: bool = False) -> go.Figure:
    """The same head on the same prompt with and without the causal mask: without it every token
    can copy from the future, which is why a model trained that way cannot generate."""
    labels = token_labels(causal.tokens)
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.14,
                        subplot_titles=[f"causal={t.causal}" + (" (future greyed)" if t.causal else "")
                                        for t in (causal, unmasked)])
    for col, trace in enumerate((causal, unmasked), start=1):
        fig.add_trace(attention_trace(attention_matrix(trace, layer, head), x=labels, y=labels,
                                      coloraxis="coloraxis"), row=1, col=col)
    fig.update_layout(coloraxis=PROBS_COLOURS)
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text="key")
    fig.update_yaxes(title_text="query", col=1)
    fig = style(fig, f"Masked vs. unmasked — layer {layer}, head {head}",
                filename=f"toyviz-mask-comparison-L{layer}-H{head}", projector=projector, height=560)
    return grey_background(fig)
