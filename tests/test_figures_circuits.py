"""The Circuits tab's figures (toyviz.app.figures.circuits) on a small graph made by hand
(toyviz.interpret.circuits.nodes): where each node sits, which links are drawn and how, what a hover carries,
supernodes, and the intervention's bars."""
import math

import pytest

from toyviz.app.figures import circuits as cf
from toyviz.interpret.circuits.intervene import Intervention, predicted_prob
from toyviz.interpret.circuits.nodes import Node, NodeGraph, grouped
from toyviz.interpret.dictionary import Context, Dashboard

PIECES = ["<|endoftext|>", "Master", " S"]


def board(feature: int) -> Dashboard:
    return Dashboard(feature, "' S' (75%)", 0.01, 4.0, [Context(["<|endoftext|>", " Master", " S"], [0, 1, 2],
                                                                [0.0, 0.0, 4.0], 2)],
                     [1, 2], [0.0, 2.0, 4.0], [(5, " S", 0.8), (6, "le", 0.5)], [(7, " the", -0.3)])


def small_view() -> NodeGraph:
    """Two tokens' embeddings, three layer-0 features (two in one cell), an error node and the logit."""
    nodes = [Node("E_1_1", "token", 0, 1, "Master", 0.2, 1.0), Node("E_2_2", "token", 0, 2, " S", 0.3, 1.0),
             Node("0_10_2", "feature", 1, 2, "' S' (75%)", 0.25, 3.0),
             Node("0_11_2", "feature", 1, 2, "' S' (100%)", 0.1, 2.0),
             Node("0_12_1", "feature", 1, 1, "Master", 0.05, 1.0),
             Node("0_-1_2", "error", 1, 2, "", 0.1, 0.5), Node("2_5_2", "logit", 3, 2, 'Output " S"', 0.0, 6.0)]
    for n in nodes:
        n.board = board(cf.feature_number(n)) if n.kind == "feature" else None
    edges = [("E_2_2", "0_10_2", 2.0), ("E_2_2", "0_11_2", 1.0), ("E_1_1", "0_12_1", 0.5),
             ("0_10_2", "2_5_2", 3.0), ("0_11_2", "2_5_2", -1.0), ("0_12_1", "0_11_2", 0.2), ("0_-1_2", "2_5_2", 0.4)]
    return NodeGraph(nodes, edges, PIECES, " S", 0.9, 2, 0.8, 0.9, 0.1)


def test_nodes_sit_in_their_layer_and_position_and_never_on_each_other():
    view = small_view()
    xy, centre = cf.places(view.nodes, 3), cf.columns(view.nodes, 3)
    assert [w for _, w in centre] == [1, 1, 3]             # position 2's layer-0 cell holds three nodes
    for n in view.nodes:
        x, y = xy[n.key]
        middle, width = centre[n.position]
        assert abs(x - middle) <= width / 2 and abs(y - n.row) < 0.45, n.key
    assert len({(round(x, 6), round(y, 6)) for x, y in xy.values()}) == len(view.nodes)
    crowded = [Node(f"0_{i}_1", "feature", 1, 1, "", 1 / (i + 1), 1.0) for i in range(20)]
    spots, (_, (middle, width)) = cf.places(crowded, 2), cf.columns(crowded, 2)
    assert width == cf.PER_LINE and len(set(spots.values())) == 20
    assert all(abs(y - 1) < 0.45 and abs(x - middle) <= width / 2 for x, y in spots.values())
    assert spots["0_0_1"][1] == spots["0_1_1"][1] != spots["0_19_1"][1]     # the strongest side by side, first line


def lines(fig):
    return [t for t in fig.data if t.mode == "lines"]


def test_links_are_coloured_by_sign_and_wider_by_weight():
    fig = cf.graph_figure(small_view())
    drawn = lines(fig)
    assert {t.line.color for t in drawn} == {cf.UP, cf.DOWN}
    negative = [t for t in drawn if t.line.color == cf.DOWN]
    assert sum(t.x.count(None) for t in negative) == 1                  # the one inhibiting link
    by_width = {t.line.width: t.x.count(None) for t in drawn if t.line.color == cf.UP}
    assert max(by_width) == cf.WIDTHS[-1]                               # the strongest (3.0) the widest
    assert sum(t.x.count(None) for t in drawn) == 7
    assert sorted(w for w in cf.WIDTHS) == list(cf.WIDTHS)


def test_only_the_strongest_shares_are_drawn_and_the_title_says_so():
    view = small_view()
    kept = cf.drawn_edges(view, limit=3)
    assert len(kept) == 3
    # the logit's input 3.0 of 4.4 and the features' sole inputs (share 1) come before a 0.4 / 4.4 one
    assert ("0_-1_2", "2_5_2", 0.4) not in kept and ("E_1_1", "0_12_1", 0.5) in kept
    fig = cf.graph_figure(view, limit=3)
    assert "3 of 7 links" in fig.layout.title.text
    assert fig.layout.title.subtitle.text.startswith("The 3 strongest links drawn. Hover")
    assert sum(t.x.count(None) for t in lines(fig)) == 3


def test_every_node_carries_its_hover_and_a_feature_its_dashboard():
    view = small_view()
    fig = cf.graph_figure(view, projector=True)
    markers = {t.name: t for t in fig.data if t.mode == "markers"}
    assert set(markers) == {cf.KIND_STYLE[k][3] for k in ("token", "feature", "error", "logit")}   # a projector's names
    carried = {c[0]: c for t in markers.values() for c in t.customdata}
    assert set(carried) == {n.key for n in view.nodes}
    key, dashboard, line = carried["0_10_2"]
    assert "Where it fires hardest" in dashboard and "&lt;|endoftext|&gt;" in dashboard   # escaped, shown
    assert "<b>␣S</b>" in dashboard and "class=o5" in dashboard                             # the peak, fully shaded
    assert "class=up" in dashboard and "class=down" in dashboard and "+0.80" in dashboard
    assert "id 0_10_2" in line and "activation 3.00" in line
    assert fig.layout.clickmode == "event" and fig.layout.hovermode == "closest"
    assert list(fig.layout.yaxis.ticktext) == ["tokens", "layer 0", "layer 1", "logit"]
    assert list(fig.layout.xaxis.ticktext) == ["0: &lt;|endoftext|&gt;", "1: Master", "2: ␣S"]
    assert cf.PANEL_STYLE in cf.panel(view) and dashboard in cf.panel(view)        # the top feature's, at first


def test_on_a_projector_the_graph_has_its_title_and_a_one_line_legend_above_it():
    """The subtitle and the legend's long names leave the projector's graph (the title counts the links, the panel
    says to hover), its nodes 1.2× a laptop's; neighbouring one-node columns' labels stand a line apart."""
    view = small_view()
    laptop, projector = cf.graph_figure(view), cf.graph_figure(view, projector=True)
    assert laptop.layout.title.subtitle.text and not projector.layout.title.subtitle.text
    assert {t.name for t in projector.data} <= {style[3] for style in cf.KIND_STYLE.values()} | {
        link[3] for link in cf.LINK_STYLE}
    assert projector.layout.margin.t < laptop.layout.margin.t * cf.PROJECTOR_SCALE / 2
    size = lambda fig: max(max(t.marker.size) for t in fig.data if t.mode == "markers" and t.name.startswith("feat"))
    assert size(projector) == pytest.approx(cf.PROJECTOR_MARKERS * size(laptop))
    # columns one apart, labels needing 1.5 columns: the crowded column's label first, then every other
    centre = [(0.5, 1), (1.5, 1), (2.5, 1), (4.5, 3), (6.5, 1), (7.5, 1)]
    assert cf.labelled(centre, 1.5) == [0, 2, 3, 4]
    assert cf.labelled(centre, 0.5) == list(range(6))


def test_supernodes_merge_their_members_and_sum_their_links():
    view = grouped(small_view(), {"S copy": ["0_10_2", "0_11_2", "E_2_2", "9_9_9"]})
    assert view.unknown == ["E_2_2", "9_9_9"]              # tokens are not grouped; unknown ids said
    keys = {n.key for n in view.nodes}
    assert "S copy" in keys and not keys & {"0_10_2", "0_11_2"}
    group = next(n for n in view.nodes if n.key == "S copy")
    assert group.kind == "group" and [m.key for m in group.members] == ["0_10_2", "0_11_2"]
    assert group.row == 1 and group.position == 2 and group.influence == pytest.approx(0.35)
    links = {(s, t): w for s, t, w in view.edges}
    assert links[("E_2_2", "S copy")] == pytest.approx(3.0) and links[("S copy", "2_5_2")] == pytest.approx(2.0)
    assert links[("0_12_1", "S copy")] == pytest.approx(0.2)
    assert "Supernode S copy" in cf.hover(group, view)
    assert any(t.name == cf.KIND_STYLE["group"][2] for t in cf.graph_figure(view).data)


def test_the_intervention_shows_the_graphs_prediction_beside_the_gpt():
    result = Intervention(predicted_logit_change=-2.0, real_logit_change=-0.5, prob_before=0.9, prob_after=0.85)
    predicted = predicted_prob(0.9, -2.0)
    assert predicted == pytest.approx(0.9 * math.exp(-2) / (0.1 + 0.9 * math.exp(-2)))
    fig = cf.intervention_figure("0_10_2", 0.0, " S", result)
    bars = fig.data[0]
    assert list(bars.y) == ["before", "the graph predicts", "the real GPT"]
    assert list(bars.x) == pytest.approx([0.9, predicted, 0.85])
    assert "logit -2.00" in bars.text[1] and "logit -0.50" in bars.text[2]
    assert fig.layout.title.text.startswith("Ablated: feature 0_10_2") and "0.900 → 0.850" in fig.layout.title.text
    assert cf.intervention_figure("0_10_2", 2.0, " S", result).layout.title.text.startswith("Scaled × 2")
