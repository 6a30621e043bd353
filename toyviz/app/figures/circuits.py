"""Circuits tab: an attribution graph (toyviz.interpret.circuits.nodes) drawn for a student to follow edge by edge.

Rows are layers (the prompt's tokens at the bottom, the target's logit on top), columns positions; the nodes of
one (layer, position) share their cell, most influential first. An edge's width follows |weight|, its colour its
sign (blue excites, red inhibits: the app's promoted / suppressed colours). Every node carries its hover in
`customdata` — [node id, its dashboard as HTML, a one-line summary] — so the page's script (toyviz/app/circuits.js)
shows a feature's dashboard beside the graph without a request, and a click sends the node's id to the intervention.
"""
from __future__ import annotations

import html
import math

import numpy as np
import plotly.graph_objects as go

from toyviz.i18n import t
from toyviz.app.figures import BASE_FONT, PROJECTOR_HEIGHT, PROJECTOR_SCALE, figure, style, visible
from toyviz.app.figures.features import DOWN, UP
from toyviz.interpret.circuits.export import parse
from toyviz.interpret.circuits.intervene import predicted_prob
from toyviz.interpret.circuits.nodes import Node, NodeGraph
from toyviz.interpret.dictionary import Dashboard
from toyviz.interpret.dashboards import said as said_label

MAX_EDGES = 400               # edges drawn: the strongest shares of their target's input (a hairball past that)
PER_LINE = 6                  # nodes side by side in a cell before the next line of them
WIDTHS = (0.6, 1.4, 2.8, 5.0)  # px, edges by |weight| / the largest: < 0.1, < 0.3, < 0.6, the rest
BOUNDS = (0.1, 0.3, 0.6)
CONTEXTS, BEFORE, AFTER = 4, 8, 2     # a hover dashboard's contexts, and its tokens around each peak
LOGIT_ROWS = 5                # promoted and suppressed tokens a hover dashboard lists
KIND_STYLE = {                # marker symbol, colour, legend name, and on a projector (one line: the tab's text explains)
    "feature": ("circle", "#e6550d", "feature (transcoder)", "feature"),          # in English: figures.circuits.<kind>,
    "group": ("hexagon", "#756bb1", "supernode (your group)", "supernode"),       # and <kind>_short, say them
    "error": ("diamond", "#9e9e9e", "error node (what the transcoders miss)", "error node"),
    "token": ("square", "#636363", "token (embedding)", "token"),
    "logit": ("star", "#31a354", "target logit", "target"),
}
PROJECTOR_GRAPH_PX = 750      # the graph's plot area across on a 1280-px projector (the dashboard panel beside it)
LABEL_LINE = 1.2              # an upright label needs about 1.2 × its font size across
PROJECTOR_TOP = 64            # the top margin on a projector (× its scale): the title and the legend's one line
# On a projector the nodes are 1.2× a laptop's (not the text's 1.7×) and the plot as much taller (1.4 × 0.85): the
# rows' nodes stand as far apart for their size as on a laptop, so a hover finds the node under it (at 1.7× on the
# plot's 1.4×, a cell's lines of nodes covered each other), and the plot starts on a 720p first screen
PROJECTOR_MARKERS = 1.2
PROJECTOR_PLOT = 0.85
# in English: figures.circuits.excites / inhibits (and their _short) say them
LINK_STYLE = ((1, UP, "link that excites (+)", "excites"), (-1, DOWN, "link that inhibits (−)", "inhibits"))


def feature_number(node: Node) -> int:
    return parse(node.key).index


# ---------------------------------------------------------------- the graph ------------------

def cells(nodes: list[Node]) -> dict[tuple[int, int], list[Node]]:
    """(row, position) → its nodes, most influential first (a supernode in the cell nearest its members' mean)."""
    grid: dict[tuple[int, int], list[Node]] = {}
    for n in sorted(nodes, key=lambda n: -n.influence):
        grid.setdefault((round(n.row), round(n.position)), []).append(n)
    return grid


def columns(nodes: list[Node], positions: int) -> list[tuple[float, int]]:
    """Each position's column: (its centre, how many nodes a line of it holds). A position is as wide as its
    most crowded cell (up to PER_LINE nodes side by side): an induction prompt puts dozens of features at two
    positions and none at most others, and equal columns stacked those dozens over the next row."""
    wide = [1] * positions
    for (_, position), members in cells(nodes).items():
        wide[position] = max(wide[position], min(PER_LINE, len(members)))
    starts = np.cumsum([0] + wide[:-1])
    return [(float(start) + w / 2, w) for start, w in zip(starts, wide)]


def places(nodes: list[Node], positions: int) -> dict[str, tuple[float, float]]:
    """(x, y) of each node: its position's column and its row, nodes sharing a cell side by side in lines as wide
    as the column, most influential first, the lines stacked inside the row."""
    centre = columns(nodes, positions)
    xy = {}
    for (row, position), members in cells(nodes).items():
        middle, width = centre[position]
        lines = math.ceil(len(members) / width)
        gap = min(0.2, 0.66 / lines)
        for i, n in enumerate(members):
            line, slot = divmod(i, width)
            across = min(width, len(members) - line * width)
            xy[n.key] = (middle + slot - (across - 1) / 2, row + (line - (lines - 1) / 2) * gap)
    return xy


def labelled(centre: list[tuple[float, int]], apart: float) -> list[int]:
    """The positions whose columns get a label: every column's, but for those closer than `apart` (in columns) to
    one labelled already, the widest (most crowded) columns first: upright labels of neighbouring one-node columns
    lay over each other on a projector."""
    kept: list[int] = []
    for p in sorted(range(len(centre)), key=lambda p: (-centre[p][1], p)):
        if all(abs(centre[p][0] - centre[q][0]) >= apart for q in kept):
            kept.append(p)
    return sorted(kept)


def drawn_edges(view: NodeGraph, limit: int = MAX_EDGES) -> list[tuple[str, str, float]]:
    """The `limit` links holding the largest shares of their targets' input (|weight| / all |weights| into it)."""
    into: dict[str, float] = {}
    for _, target, weight in view.edges:
        into[target] = into.get(target, 0.0) + abs(weight)
    ranked = sorted(view.edges, key=lambda e: -abs(e[2]) / (into[e[1]] or 1.0))
    return ranked[:limit]


def graph_figure(view: NodeGraph, *, projector: bool = False, limit: int = MAX_EDGES) -> go.Figure:
    """The graph: positions left to right, layers bottom to top; hover a node for what it is (its dashboard in
    the panel beside), click a feature to intervene on it."""
    T = len(view.pieces)
    xy, centre = places(view.nodes, T), columns(view.nodes, T)
    edges = drawn_edges(view, limit)
    scale = PROJECTOR_SCALE if projector else 1.0
    markers = PROJECTOR_MARKERS if projector else 1.0
    biggest = max((abs(w) for _, _, w in edges), default=1.0) or 1.0
    traces = []
    for sign, colour, _, _ in LINK_STYLE:
        said = "figures.circuits." + ("excites" if sign > 0 else "inhibits")
        name = t(said + "_short" if projector else said)
        for b, width in enumerate(WIDTHS):
            low, high = ([0.0] + list(BOUNDS))[b], (list(BOUNDS) + [math.inf])[b]
            chosen = [(s, t) for s, t, w in edges if (w >= 0) == (sign > 0) and low <= abs(w) / biggest < high]
            if not chosen:
                continue
            x = [v for s, t in chosen for v in (xy[s][0], xy[t][0], None)]
            y = [v for s, t in chosen for v in (xy[s][1], xy[t][1], None)]
            traces.append(go.Scatter(x=x, y=y, mode="lines", line=dict(color=colour, width=width * markers),
                                     opacity=0.55, hoverinfo="skip", name=name, legendgroup=name,
                                     showlegend=not any(t.legendgroup == name for t in traces)))
    top = max((n.influence for n in view.nodes if n.kind != "logit"), default=1.0) or 1.0
    for kind, (symbol, colour, _, _) in KIND_STYLE.items():
        name = t(f"figures.circuits.{kind}_short" if projector else f"figures.circuits.{kind}")
        nodes = [n for n in view.nodes if n.kind == kind]
        if not nodes:
            continue
        size = [(22 if kind == "logit" else 7 + 15 * math.sqrt(n.influence / top)) * markers for n in nodes]
        traces.append(go.Scatter(
            x=[xy[n.key][0] for n in nodes], y=[xy[n.key][1] for n in nodes], mode="markers", name=name,
            marker=dict(symbol=symbol, color=colour, size=size, line=dict(color="white", width=1)),
            customdata=[[n.key, hover(n, view), summary(n, view)] for n in nodes],
            hovertemplate="%{customdata[2]}<extra></extra>"))
    fig = figure(traces)
    labels = [f"{p}: {visible(piece)}" for p, piece in enumerate(view.pieces)]
    right = centre[-1][0] + centre[-1][1] / 2
    # upright on a projector: its larger labels, slanted, ran into their neighbours at the narrow columns; and no
    # closer than a line of text apart on the narrowest graph a projector shows (the hover names every node's token)
    named = labelled(centre, LABEL_LINE * BASE_FONT * scale * (right + 0.6) / PROJECTOR_GRAPH_PX) if projector \
        else range(T)
    fig.update_xaxes(tickvals=[centre[p][0] for p in named], ticktext=[labels[p] for p in named],
                     tickangle=0 if T <= 8 else -90 if projector else -60,
                     range=[-0.3, right + 0.3], showgrid=False, zeroline=False)
    fig.update_yaxes(tickvals=list(range(view.layers + 2)), range=[-0.5, view.layers + 1.5], zeroline=False,
                     ticktext=[t("figures.circuits.tokens")] + [t("figures.circuits.layer", layer=l)
                                                                 for l in range(view.layers)] + ["logit"])
    # the legend above the plot: below it, the tokens' labels (longer on a projector) ran into it
    fig.update_layout(hovermode="closest", clickmode="event", dragmode="pan", hoverlabel_align="left",
                      legend=dict(orientation="h", y=1.0, x=0, yanchor="bottom"))
    shown = (t("figures.circuits.links_of", drawn=f"{len(edges):,}", total=f"{len(view.edges):,}")
             if len(view.edges) > len(edges) else t("figures.circuits.links", drawn=f"{len(edges):,}"))
    title = t("figures.circuits.title", target=visible(view.target), p=f"{view.prob:.3f}", nodes=len(view.nodes),
              shown=shown)
    height = 580 + (90 if T > 8 else 0)                  # a laptop's: 150 px above the plot, 50 under it
    if projector:
        # the title, the legend in one line, the plot (PROJECTOR_PLOT): the two lines a laptop has above the plot
        # left out (the title says how many links are drawn, the panel beside says to hover and click)
        plot = (height - 150 - 50) * PROJECTOR_PLOT
        fig = style(fig, title, filename="toyviz-circuit", projector=True,
                    height=round(plot + (PROJECTOR_TOP + 50) * PROJECTOR_SCALE / PROJECTOR_HEIGHT))
        fig.layout.title.update(yref="container", y=1, yanchor="top", pad_t=round(12 * scale))
        fig.layout.margin.t = round(PROJECTOR_TOP * scale)
        return fig
    fig = style(fig, title, filename="toyviz-circuit", height=height)
    # the title and its subtitle at the top, then the legend (two lines), then the plot
    drawn = t("figures.circuits.strongest", drawn=f"{len(edges):,}") if len(view.edges) > len(edges) else ""
    fig.layout.title.update(subtitle_text=drawn + t("figures.circuits.subtitle"),
                            yref="container", y=1, yanchor="top", pad_t=12)
    fig.layout.margin.t += 80
    return fig


def summary(node: Node, view: NodeGraph) -> str:
    """A node's hover line: what it is, where, how strong, how much of the target it carries."""
    share = t("figures.circuits.influence", share=f"{node.influence:.1%}")
    if node.kind == "feature":
        named = parse(node.key)
        layer, position = named.layer, named.position
        return t("figures.circuits.feature_hover", layer=layer, feature=feature_number(node), position=position,
                 piece=visible(view.pieces[int(position)]), label=html.escape(said_label(node.label)), value=f"{node.value:.2f}",
                 share=share, id=node.key)
    if node.kind == "error":
        named = parse(node.key)
        layer, position = named.layer, named.position
        return t("figures.circuits.error_hover", layer=layer, position=position, value=f"{node.value:.2f}",
                 share=share)
    if node.kind == "token":
        return t("figures.circuits.token_hover", piece=visible(node.label), position=int(node.position), share=share)
    if node.kind == "group":
        return t("figures.circuits.group_hover", name=html.escape(node.key), n=len(node.members), share=share)
    return t("figures.circuits.logit_hover", target=visible(view.target), p=f"{view.prob:.3f}",
             value=f"{node.value:.2f}")


# ---------------------------------------------------------------- the hover panel ------------

PANEL_HINT = "figures.circuits.hint"       # the panel's first line: "<p><i>{hint}</i></p>"


SHADES = 5                    # activation levels a context's token is shaded in (classes o1 … o5 of PANEL_STYLE)
# the panel's classes: a hundred dashboards travel with every graph, so their HTML names a class, not a style
# a context is one long word (its spaces shown as ␣): it may break anywhere, or it ran out of a narrow panel
PANEL_STYLE = ("<style>.circuit-panel{font-size:0.95em;line-height:1.5}.circuit-head{margin-top:0.5em;font-weight:bold}"
               ".circuit-context{overflow-wrap:anywhere}"
               + "".join(f".circuit-panel .o{i}{{background:rgba(230,85,13,{i / SHADES:.2f})}}" for i in range(1, SHADES + 1))
               + f".circuit-panel .up,.circuit-panel .down{{display:inline-block;height:0.8em}}"
               f".circuit-panel .up{{background:{UP}}}.circuit-panel .down{{background:{DOWN}}}"
               ".circuit-panel table{width:auto;border:none;margin:0}.circuit-panel tr,.circuit-panel td"
               "{border:none!important;padding:0 0.4em!important;background:none!important}</style>")


def shade(act: float, top: float) -> int:
    """A token's shade (0: none … SHADES) by the feature's activation there, as the Features tab's Oranges."""
    return round(SHADES * max(0.0, min(1.0, act / top))) if top > 0 else 0


def shaded(text: str, level: int, peak: bool) -> str:
    """A context's token: plain where the feature is silent (most tokens: the panel's data stays small)."""
    text = f"<b>{text}</b>" if peak else text
    return f"<span class=o{level}>{text}</span>" if level else text


def feature_html(node: Node, feature: int, board: Dashboard | None) -> str:
    """A feature's dashboard as the Features tab draws it, in HTML the panel shows: its label, its strongest
    held-out contexts (each token shaded by the activation there) and the tokens its direction promotes and
    suppresses (blue and red bars)."""
    named = parse(node.key)
    layer, position = named.layer, named.position
    head = (f"<div class='circuit-card'><b>{t('figures.circuits.card_title', layer=layer, feature=feature)}</b> "
            f"{html.escape(said_label(node.label))}<br>" + t("figures.circuits.card_here", position=position,
                                                 value=f"{node.value:.2f}", share=f"{node.influence:.1%}"))
    if board is None:
        return head + f"<br><i>{t('figures.circuits.no_dashboard')}</i></div>"
    head += t("figures.circuits.fires", frequency=f"{board.frequency:.2%}", top=f"{board.max_activation:.2f}")
    rows = []
    for c in board.contexts[:CONTEXTS]:
        first = max(0, c.peak - BEFORE)
        cells = "".join(shaded(visible(t), shade(a, board.max_activation), i == c.peak)
                        for i, (t, a) in enumerate(zip(c.tokens, c.acts)) if first <= i <= c.peak + AFTER)
        rows.append(f"<div class='circuit-context'>{cells} <small>{c.acts[c.peak]:.2f}</small></div>")
    contexts = "".join(rows) or f"<i>{t('figures.circuits.never_fires')}</i>"
    effects = board.promoted[:LOGIT_ROWS] + board.suppressed[:LOGIT_ROWS]
    largest = max((abs(v) for _, _, v in effects), default=1.0) or 1.0
    bars = "".join(
        f"<tr><td>{visible(piece)}<td><i class={'up' if v >= 0 else 'down'} style=width:{5 * abs(v) / largest:.1f}em>"
        f"</i><td>{v:+.2f}" for _, piece, v in effects)
    return (f"{head}<div class='circuit-head'>{t('figures.circuits.fires_hardest')}</div>{contexts}"
            f"<div class='circuit-head'>{t('figures.circuits.promotes')}</div>"
            f"<table class='circuit-logits'>{bars}</table></div>")


def hover(node: Node, view: NodeGraph) -> str:
    """What the panel shows for a node: a feature's dashboard, a supernode's members, what another node is."""
    if node.kind == "feature":
        return feature_html(node, feature_number(node), node.board)
    return group_html(node) if node.kind == "group" else other_html(node, view)


def other_html(node: Node, view: NodeGraph) -> str:
    """The panel for a node that is no feature: what it is, in words."""
    text = summary(node, view)
    if node.kind == "error":
        text += "<br>" + t("figures.circuits.error_card")
    return f"<div class='circuit-card'>{text}</div>"


def group_html(node: Node) -> str:
    members = node.members
    listed = "".join(f"<li>{html.escape(m.key)}: {html.escape(said_label(m.label) if m.kind == 'feature' else m.label)} "
                     f"({m.influence:.1%})</li>" for m in members)
    return (f"<div class='circuit-card'><b>{t('figures.circuits.group_title', name=html.escape(node.key))}</b>: "
            + t("figures.circuits.group_card", n=len(members), share=f"{node.influence:.1%}")
            + f"<ul>{listed}</ul></div>")


def panel(view: NodeGraph) -> str:
    """The panel's first content: the hint, then the most influential feature's dashboard."""
    features = sorted((n for n in view.nodes if n.kind in ("feature", "group")), key=lambda n: -n.influence)
    first = hover(features[0], view) if features else ""
    return f"{PANEL_STYLE}<div class='circuit-panel'><p><i>{t(PANEL_HINT)}</i></p>{first}</div>"


# ---------------------------------------------------------------- an intervention ------------

def intervention_figure(node: str, scale: float, target: str, result, *, projector: bool = False) -> go.Figure:
    """The target's probability before, as the graph predicts it after the feature is scaled, and as the real
    GPT gives it; the logit changes on the bars. `result`: toyviz.interpret.circuits.intervene.Intervention."""
    what = t("figures.circuits.ablated") if scale == 0 else t("figures.circuits.scaled", scale=f"{scale:g}")
    predicted = predicted_prob(result.prob_before, result.predicted_logit_change)
    names = [t("figures.circuits.before"), t("figures.circuits.predicts"), t("figures.circuits.real")]
    probs = [result.prob_before, predicted, result.prob_after]
    changes = ["", f"logit {result.predicted_logit_change:+.2f}", f"logit {result.real_logit_change:+.2f}"]
    fig = figure(go.Bar(y=names, x=probs, orientation="h", marker_color=["#bdbdbd", "#e6550d", "#2166ac"],
                        text=[f"p = {p:.3f} {c}" for p, c in zip(probs, changes)], textposition="outside",
                        cliponaxis=False, hovertemplate="%{y}: %{x:.4f}<extra></extra>"))
    fig.update_xaxes(range=[0, 1.25], title_text=t("figures.circuits.probability_of", target=visible(target)))
    fig.update_yaxes(autorange="reversed")
    title = t("figures.circuits.intervention", what=what, node=node, target=visible(target),
              before=f"{result.prob_before:.3f}", after=f"{result.prob_after:.3f}")
    return style(fig, title, filename=f"toyviz-circuit-{node}", projector=projector, height=260)
