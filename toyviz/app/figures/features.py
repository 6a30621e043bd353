"""Features tab: what a sparse autoencoder finds in the GPT's activations (toyviz.interpret.dictionary).

A prompt's tokens against the features most active on it; and one feature's dashboard: the
held-out contexts where it fires hardest, how its activations are spread, and which next tokens
its direction pushes up and down.
"""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from toyviz.i18n import t
from toyviz.app.figures import (candidate_label, cell_chars, cell_text, figure, heatmap, message, numpy, style,
                                 token_labels, visible)
from toyviz.interpret.dictionary import Dashboard, PromptFeatures
from toyviz.interpret.dashboards import said as said_label

UP, DOWN = "#2166ac", "#b2182b"           # promoted and suppressed, as the residual tab's attributions
LABEL_CHARS = 40                          # feature labels on an axis are cut to this many characters
CELL_CHARS = 6                            # a context cell shows this much of its token (hover: the whole piece)


def feature_name(feature: int, label: str) -> str:
    """An axis label: "#17 'Lord' (85%)", cut to LABEL_CHARS."""
    name = f"#{feature} {said_label(label)}"
    return name if len(name) <= LABEL_CHARS else name[: LABEL_CHARS - 1] + "…"


def prompt_features(features: PromptFeatures, n: int = 12, *, projector: bool = False) -> go.Figure:
    """Token × feature heatmap of the n features most active anywhere in the prompt: which feature
    fires where (hover names the feature; the first row is the strongest)."""
    chosen = features.strongest(n)
    if not chosen:
        return message(t("figures.features.none_fires"), t("figures.features.of_prompt"), filename="toyviz-features-prompt",
                       projector=projector)
    z = numpy(features.acts[:, chosen].T)                              # (n, T)
    names = [feature_name(f, features.labels[f]) for f in chosen]
    fig = figure(heatmap(np.where(z > 0, z, np.nan), x=token_labels(features.tokens), y=names,
                         colorscale="Oranges", zmin=0, hover=t("figures.hover.at"),
                         colorbar_title=t("figures.features.activation")))
    fig.update_layout(xaxis_title_text=t("figures.token"), yaxis_autorange="reversed")
    return style(fig, t("figures.features.most_active", n=len(chosen)),
                 filename="toyviz-features-prompt", projector=projector, height=200 + 26 * len(chosen))


def top_contexts(dashboard: Dashboard, *, projector: bool = False) -> go.Figure:
    """The held-out contexts where the feature fires hardest, one row each, every token coloured by the
    feature's activation there; contexts are aligned on the token each was chosen for."""
    filename = f"toyviz-feature-{dashboard.feature}-contexts"
    if not dashboard.contexts:
        return message(t("figures.features.never_fires", feature=dashboard.feature), t("figures.features.where"),
                       filename=filename, projector=projector)
    # as many columns as leave CELL_CHARS to a cell (a projector's larger font: fewer), two thirds before the peak
    columns = next(n for n in range(64, 0, -1) if n == 1 or cell_chars(n, projector) >= CELL_CHARS)
    before = min(max(c.peak for c in dashboard.contexts), max(1, 2 * columns // 3))
    after = min(max(len(c.tokens) - c.peak for c in dashboard.contexts), columns - before)
    rows = len(dashboard.contexts)
    z = np.full((rows, before + after), np.nan, dtype=np.float32)
    text = np.full((rows, before + after), "", dtype=object)
    for r, c in enumerate(dashboard.contexts):
        first, last = max(0, c.peak - before), min(len(c.tokens), c.peak + after)
        start = before - (c.peak - first)
        z[r, start: start + last - first] = c.acts[first:last]
        text[r, start: start + last - first] = [visible(t) for t in c.tokens[first:last]]
    shown = [[cell_text(t, cell_chars(before + after, projector)) for t in row] for row in text.tolist()]
    fig = figure(heatmap(z, x=[str(i - before) for i in range(before + after)],
                         y=[f"{r + 1}: {c.acts[c.peak]:.2f}" for r, c in enumerate(dashboard.contexts)],
                         colorscale="Oranges", zmin=0,
                         zmax=dashboard.max_activation or None, text=shown, texttemplate="%{text}",
                         hover="%{customdata}: %{z:.2f}", colorbar_title=t("figures.features.activation")))
    fig.update_traces(xgap=2, ygap=2, customdata=text.tolist())     # plotly's cell text reads only `text`
    fig.update_layout(xaxis_title_text=t("figures.features.from_chosen"),
                      yaxis_title_text=t("figures.features.context"), yaxis_autorange="reversed")
    return style(fig, t("figures.features.contexts", feature=feature_name(dashboard.feature, dashboard.label)),
                 filename=filename, projector=projector, height=160 + 34 * rows)


def activation_histogram(dashboard: Dashboard, *, projector: bool = False) -> go.Figure:
    """How strongly the feature fires when it fires, on held-out tokens (it is zero on the others)."""
    edges = np.asarray(dashboard.edges)
    fig = figure(go.Bar(x=(edges[:-1] + edges[1:]) / 2, y=dashboard.histogram, width=np.diff(edges),
                        marker_color="#e6550d", hovertemplate=t("figures.hover.around") + "<extra></extra>"))
    fig.update_layout(xaxis_title_text=t("figures.features.activation"), yaxis_title_text=t("figures.features.held_out"),
                      bargap=0.05)
    # the x axis starts a little left of 0: both axes' "0" at the corner covered each other on a projector
    fig.update_xaxes(range=[edges[0] - 0.05 * (edges[-1] - edges[0]), edges[-1]])
    return style(fig, t("figures.features.histogram", feature=dashboard.feature, share=f"{dashboard.frequency:.2%}"),
                 filename=f"toyviz-feature-{dashboard.feature}-histogram", projector=projector, height=320)


def logit_effects(dashboard: Dashboard, *, projector: bool = False) -> go.Figure:
    """The tokens whose logits the feature's direction raises and lowers most, directly (through the
    final norm's weight and the unembedding; the blocks after its site are skipped)."""
    rows = dashboard.promoted + dashboard.suppressed[::-1]              # most promoted on top, most suppressed last
    values = np.array([v for _, _, v in rows], dtype=np.float32)
    fig = figure(go.Bar(y=[candidate_label(p, t) for t, p, _ in rows], x=values, orientation="h",
                        marker_color=np.where(values >= 0, UP, DOWN).tolist(),
                        hovertemplate="%{y}: %{x:+.3f}<extra></extra>"))
    fig.update_layout(xaxis_title_text=t("figures.features.direct_effect"), yaxis_autorange="reversed")
    return style(fig, t("figures.features.logits", feature=dashboard.feature),
                 filename=f"toyviz-feature-{dashboard.feature}-logits", projector=projector,
                 height=140 + 22 * len(rows))
