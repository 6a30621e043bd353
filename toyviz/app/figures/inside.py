"""Inside a head: one head's every number for one query, step by step (x → q, k, v → q·kᵀ → ÷√d → mask → softmax →
Σ probs·v → write), and the same head with and without the causal mask."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import torch

from toyviz.app.figures import (BASE_FONT, PROJECTOR_HEIGHT, PROJECTOR_SCALE, heatmap, numpy, style, subplots,
                                token_labels, visible)
from toyviz.app.figures.attention import PROBS_COLOURS, SIGNED, ablation_kind, attention_matrix, attention_trace
from toyviz.i18n import t
from toyviz.models.names import attn
from toyviz.models.trace import Trace

STEPS_HEIGHT = 1100                  # the step-by-step figure on a laptop (PROJECTOR_STEPS: on a projector)


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


STEP_TEXT_CELLS = 24                 # a full-width strip prints its values up to this many cells (laptop)
STEP_TEXT_ROWS = 16                  # … and the k, v matrices up to this many keys
HALF_CAPTION = 55                    # characters a half-width step caption may have (a projector's width)
BAR_LINES = 3                        # a step's colour bar is at least this many lines of text long: its ends' labels
QUARTER_CAPTION = 24                 # … and a quarter-width one (steps 1–4 on a projector)


@dataclass(frozen=True)
class StepGrid:
    """Where the ten steps of `head_steps` stand: `at[i]` is step i+1's (row, column) in a make_subplots grid of
    `specs`; `narrow` is a panel of steps 1–4's share of the width; `height` the figure's (before the projector's
    1.4×). `rows_px`, top down, are the rows' heights and the gaps under them in pixels at the figure's drawn
    height, for a grid whose gaps differ (a gap over a caption only, or over tick labels and a caption); None: the
    rows as make_subplots spaces them."""
    specs: list
    at: list
    narrow: float
    height: int
    row_heights: list | None = None
    rows_px: list | None = None
    vertical_spacing: float = 0.065
    horizontal_spacing: float = 0.13

    def row(self, step: int) -> int:
        return self.at[step - 1][0]

    def col(self, step: int) -> int:
        return self.at[step - 1][1]


FULL = {"colspan": 2}
# a laptop: two columns, steps 5–8 full width below 1–4, so a key's column reads straight down
LAPTOP_STEPS = StepGrid(specs=[[{}, {}], [{}, {}], [FULL, None], [FULL, None], [FULL, None], [FULL, None], [{}, {}]],
                        at=[(1, 1), (1, 2), (2, 1), (2, 2), (3, 1), (4, 1), (5, 1), (6, 1), (7, 1), (7, 2)],
                        narrow=0.43, height=STEPS_HEIGHT, row_heights=[0.09, 0.25, 0.09, 0.09, 0.09, 0.09, 0.09])
# a projector, a wide and short screen: steps 1–4 side by side in one row, then 5–8 full width (a key's column still
# reads straight down), then 9 and 10: six rows at about half the height, so the whole figure fits a 720p screen under
# the header (the seven-row figure, squeezed no further than its text allows, left half its plot below it). The rows
# (px at 1.4 × height): steps 1–4 (x and q a strip at its top), steps 5–8 a strip each, steps 9–10; a gap under a
# row holds the next caption, and under steps 1–4 and 8 their tick labels too
STRIP_PX = 48                        # a one-row strip's height on a projector: its colour bar's two ends fit beside it
WIDE = {"colspan": 4}
HALF = {"colspan": 2}
PROJECTOR_STEPS = StepGrid(specs=[[{}, {}, {}, {}], [WIDE, None, None, None], [WIDE, None, None, None],
                                  [WIDE, None, None, None], [WIDE, None, None, None], [HALF, None, HALF, None]],
                           at=[(1, 1), (1, 2), (1, 3), (1, 4), (2, 1), (3, 1), (4, 1), (5, 1), (6, 1), (6, 3)],
                           narrow=0.175, height=680, horizontal_spacing=0.1,
                           rows_px=[(150, 72), (STRIP_PX, 43), (STRIP_PX, 43), (STRIP_PX, 43), (STRIP_PX, 72),
                                    (STRIP_PX, 0)])
                       # a one-row strip's height on a projector (steps 1 and 2 at the top of their row)


def _place_rows(fig: go.Figure, grid: StepGrid) -> None:
    """The rows' y domains (and their captions over them) from grid.rows_px, top down; steps 1 and 2, one row each,
    a strip at the top of their row."""
    total = sum(h + gap for h, gap in grid.rows_px)
    tops, top = {}, 1.0
    for row, (h, gap) in enumerate(grid.rows_px, start=1):
        tops[row] = (top - h / total, top)
        top -= (h + gap) / total
    for step, ((row, col), caption) in enumerate(zip(grid.at, fig.layout.annotations), start=1):
        low, high = tops[row]
        if step in (1, 2):
            low = high - STRIP_PX / total
        fig.get_subplot(row, col).yaxis.domain = [low, high]
        caption.y = high


def _fits(n_cols: int, share: float, projector: bool, n_rows: int = 1) -> bool:
    """Whether values printed in a panel `share` of the figure wide, n_cols × n_rows cells, stay
    readable (about five characters of CELL_FONT a cell); otherwise they are left to the hover."""
    scale = PROJECTOR_SCALE if projector else 1.0
    return n_cols <= STEP_TEXT_CELLS * share / scale and n_rows <= STEP_TEXT_ROWS


def _cell_text(z: np.ndarray, fmt: str | None = None) -> list:
    """Values as cell text ("" for NaN cells), to two significant digits of the panel's largest
    magnitude (−49, −6.1, 0.021), short enough for a cell; the hover has three decimals."""
    z = numpy(z)
    if fmt is None:
        largest = _symmetric(z)
        fmt = f".{min(max(0, 1 - math.floor(math.log10(largest))), 4)}f"
    return [[format(float(v), fmt) if np.isfinite(v) else "" for v in row] for row in np.atleast_2d(z)]


def _symmetric(*arrays) -> float:
    """The largest |value| over the finite entries of the arrays (at least a tiny positive number)."""
    values = [np.abs(a[np.isfinite(a)]).max() for a in map(numpy, arrays) if np.isfinite(a).any()]
    return max(values + [1e-6])


def head_steps(trace: Trace, layer: int, head: int, query: int, *, projector: bool = False) -> go.Figure:
    """One head unrolled for one query token, one small heatmap per step with its caption, so a
    student can follow a single attention computation from input vector to residual write.

    Colour is honest: one colour scale per quantity, each with its colour bar. The scores of steps
    5–7 (q·k, ÷√d, masked) share one diverging scale centred on 0 and one range, so the ÷√d step is
    visibly paler; the probabilities of step 8 are on 0..1 in blue (the only blue in the figure); q
    and k share a scale, as do v and out (out is an average of the v's). Masked keys are grey (NaN),
    not the most negative colour. Values are printed in the cells where they fit, and always hover.
    Steps 5–8 are stacked full width over the same keys, so a key's column reads straight down. On a projector
    steps 1–4 stand in one row (PROJECTOR_STEPS), the keys of k named by position as step 8's are there."""
    s = head_step_numbers(trace, layer, head, query)
    labels = token_labels(trace.tokens)
    T, d_head = len(labels), s["d_head"]
    ablated = t("figures.steps.ablated", kind=ablation_kind(s["ablated"])) if s["ablated"] else ""
    rotated = s["rope_angles"] is not None                # RoPE: q and k are shown after their rotation
    turn = (t("figures.steps.turn", first=f"{s['rope_angles'][0]:.2f}", last=f"{s['rope_angles'][-1]:.4f}")
            if rotated else "")
    root = s["sqrt_d_head"]
    grid = PROJECTOR_STEPS if projector else LAPTOP_STEPS
    # a half-width caption stays within HALF_CAPTION characters so it fits over its panel on a projector, a quarter-
    # width one (steps 1–4 there) within QUARTER_CAPTION (the title names the query's token, the hover the angles);
    # the colour bars' titles ("q, k", "v, out") say which panels share a scale
    if projector:
        firsts = [t("figures.steps.input_short"), t("figures.steps.query_rotated_short" if rotated else
                                                     "figures.steps.query_short"),
                  t("figures.steps.keys_rotated_short") if rotated else
                  t("figures.steps.keys_short", n=len(s["keys"])), t("figures.steps.values_short")]
    else:
        firsts = [t("figures.steps.input", token=s["token"]), t("figures.steps.query", turn=turn),
                  t("figures.steps.keys_rotated" if rotated else "figures.steps.keys", n=len(s["keys"])),
                  t("figures.steps.values")]
    captions = firsts + [
                t("figures.steps.dot"), t("figures.steps.scaled", d_head=d_head, root=f"{root:.3g}"),
                t("figures.steps.mask" if s["causal"] else "figures.steps.no_mask"),
                t("figures.steps.softmax"), t("figures.steps.out", ablated=ablated), t("figures.steps.write")]
    fig = subplots(rows=len(grid.specs), cols=len(grid.specs[0]), specs=grid.specs, subplot_titles=captions,
                   row_heights=grid.row_heights, vertical_spacing=grid.vertical_spacing,
                   horizontal_spacing=grid.horizontal_spacing)
    if grid.rows_px:
        _place_rows(fig, grid)
    dims = lambda n: np.arange(n)
    row = lambda v: numpy(v)[None, :]
    greyed = lambda v: np.where(np.isinf(s["masked"]), np.nan, v)          # masked keys drawn grey

    def panel(z, x, y, hover, axis, fmt=None, share=1.0):
        z = numpy(z)
        text = _fits(z.shape[1], share, projector, z.shape[0])
        return heatmap(z, x=x, y=y, hover=hover, coloraxis=axis, text=_cell_text(z, fmt) if text else None,
                       texttemplate="%{text}" if text else None)

    score_rows = [row(s["dot"]), row(s["scaled"]), row(greyed(s["masked"]))]
    narrow, half = grid.narrow, 0.43                 # steps 1–4's panels' share of the width, and steps 9–10's
    panels = [
        panel(row(s["x"]), dims(len(s["x"])), ["x"], t("figures.hover.dim"), "coloraxis3", share=narrow),
        panel(row(s["q"]), dims(len(s["q"])), ["q"], t("figures.hover.dim"), "coloraxis4", share=narrow),
        panel(s["k"], dims(d_head), s["keys"], t("figures.hover.k_dim"), "coloraxis4", share=narrow),
        panel(s["v"], dims(d_head), s["keys"], t("figures.hover.v_dim"), "coloraxis5", share=narrow),
        panel(score_rows[0], labels, ["q·k"], t("figures.hover.key") + "q·k = %{z:.3f}", "coloraxis"),
        panel(score_rows[1], labels, ["÷√d"], t("figures.hover.key") + f"q·k ÷ {root:.3g} = %{{z:.3f}}", "coloraxis"),
        panel(score_rows[2], labels, [t("figures.steps.row_masked")], t("figures.hover.key") + "%{z:.3f}", "coloraxis"),
        panel(row(greyed(s["probs"])), labels, ["probs"], t("figures.hover.key") + "p = %{z:.3f}", "coloraxis2", ".2f"),
        panel(row(s["out"]), dims(len(s["out"])), ["out"], t("figures.hover.dim"), "coloraxis5", share=half),
        panel(row(s["write"]), dims(len(s["write"])), [t("figures.steps.row_write")], t("figures.hover.dim"), "coloraxis6",
              share=half),
    ]
    for (r, c), trace_ in zip(grid.at, panels):
        fig.add_trace(trace_, row=r, col=c)

    # one colour axis per quantity, its bar beside the panel(s) that show it, with as many ticks as its length
    # holds: five on a one-row bar overlapped (−0.4 over −0.2) on a projector
    s_ = PROJECTOR_SCALE if projector else 1.0
    plot_px = grid.height * (PROJECTOR_HEIGHT if projector else 1.0) - 160 * s_     # less the margins

    def bar(title, *refs, bound=None):
        """bound: the axis' ±range, whose two ends label a bar too short for three ticks."""
        xs = [fig.layout[f"xaxis{fig.data[i].xaxis[1:]}"].domain for i in refs]
        ys = [fig.layout[f"yaxis{fig.data[i].yaxis[1:]}"].domain for i in refs]
        low, high = min(y[0] for y in ys), max(y[1] for y in ys)
        length = max(high - low, 0.06, BAR_LINES * BASE_FONT * s_ / plot_px)     # room for its two ends' labels
        ticks = int(length * plot_px // (2.5 * BASE_FONT * s_))
        labels = (dict(tickvals=[-bound, bound], ticktext=[f"{-bound:.2g}", f"{bound:.2g}"]) if ticks < 3 and bound
                  else dict(nticks=max(2, min(5, ticks))))
        return dict(title=dict(text=title, side="right"), x=max(x[1] for x in xs) + 0.008, xanchor="left",
                    y=(low + high) / 2, yanchor="middle", len=length, lenmode="fraction", thickness=12, **labels)

    m = _symmetric(*score_rows)
    signed = lambda title, ref, *arrays: dict(colorscale=SIGNED, cmin=-_symmetric(*arrays), cmax=_symmetric(*arrays),
                                              colorbar=bar(title, ref, bound=_symmetric(*arrays)))
    fig.update_layout(
        coloraxis=dict(colorscale=SIGNED, cmin=-m, cmax=m, colorbar=bar(t("figures.attention.score"), 4, 5, 6, bound=m)),
        coloraxis2=dict(PROBS_COLOURS, colorbar=bar(t("figures.probability"), 7)),
        coloraxis3=signed("x", 0, s["x"]),
        coloraxis4=signed("q, k", 1, s["q"], s["k"]),
        coloraxis5=signed("v, out", 3, s["v"], s["out"]),
        coloraxis6=signed(t("figures.steps.write_bar"), 9, s["write"]),
    )
    for caption in fig.layout.annotations:       # a caption clear of the row labels under it ("0: <|endoftext|>")
        caption.yshift = round(6 * s_)
    # no "0" under the keys' corner, where it sat on the last key's label on a projector
    every = max(1, d_head // 3)
    k_at, v_at = grid.at[2], grid.at[3]
    fig.update_xaxes(tickmode="array", tickvals=list(range(every, d_head, every)), row=k_at[0], col=k_at[1])
    fig.update_yaxes(autorange="reversed", row=k_at[0], col=k_at[1])
    fig.update_yaxes(autorange="reversed", showticklabels=False, row=v_at[0], col=v_at[1])   # the keys of k beside it
    if projector:                     # k's keys by position, as under step 8 (their names ran into q's colour bar)
        keys = len(s["keys"])
        step = math.ceil(keys / 6)
        fig.update_yaxes(tickmode="array", tickvals=s["keys"][::step], ticktext=list(range(0, keys, step)),
                         row=k_at[0], col=k_at[1])
    for step in (5, 6, 7):                                         # the four key strips share one key axis
        fig.update_xaxes(showticklabels=False, row=grid.row(step), col=1)
    probs_row = grid.row(8)
    if _fits(T, 1.0, projector):                                   # every key named under step 8
        short = [visible(tok) if len(tok) <= 6 else visible(tok[:5]) + "…" for tok in trace.tokens]
        fig.update_xaxes(tickmode="array", tickvals=labels, ticktext=short, tickangle=0, row=probs_row, col=1)
    else:                                                          # positions; hover names the token
        every = math.ceil(T / 16)
        fig.update_xaxes(tickmode="array", tickvals=labels[::every], ticktext=list(range(0, T, every)),
                         row=probs_row, col=1)
    return style(fig, t("figures.steps.title", layer=layer, head=head, token=s["token"]),
                 filename=f"toyviz-attention-L{layer}-H{head}-q{query}-steps", projector=projector, height=grid.height,
                 maps=True)


def masked_vs_unmasked(causal: Trace, unmasked: Trace, layer: int, head: int, *, projector: bool = False) -> go.Figure:
    """The same head on the same prompt with and without the causal mask: without it every token
    can copy from the future, which is why a model trained that way cannot generate."""
    labels = token_labels(causal.tokens)
    # one query axis for both (the same prompt): the right panel's token names would press into the left map
    fig = subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.04,
                   subplot_titles=[f"causal={tr.causal}" + (t("figures.attention.future_greyed") if tr.causal else "")
                                   for tr in (causal, unmasked)])
    for col, trace in enumerate((causal, unmasked), start=1):
        fig.add_trace(attention_trace(attention_matrix(trace, layer, head), x=labels, y=labels,
                                      coloraxis="coloraxis"), row=1, col=col)
    fig.update_layout(coloraxis=dict(PROBS_COLOURS, colorbar=dict(title=dict(text=t("figures.probability")))))
    fig.update_yaxes(autorange="reversed")
    fig.update_xaxes(title_text=t("figures.key"))
    fig.update_yaxes(title_text=t("figures.query"), col=1)
    return style(fig, t("figures.attention.masked_vs_unmasked", layer=layer, head=head),
                 filename=f"toyviz-mask-comparison-L{layer}-H{head}", projector=projector, height=560, maps=True)
