"""A pruned attribution graph as a reader follows it: its kept nodes, each with its share of the influence on the
target, and their links, in the ids of the graph's JSON (`Circuit.to_json`, the endpoint's), so a figure's hover and
the JSON name a node alike; and the same graph with features grouped by hand into supernodes, a group's links the
sums of its members'. No figures: toyviz.app.figures.circuits draws a NodeGraph.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from toyviz.interpret.circuits.prune import logit_error_share
from toyviz.interpret.dictionary import Dashboard


@dataclass
class Node:
    key: str                  # the graph JSON's node_id ("2_1465_21", error "0_-1_8", "E_262_8", "5_83_21"), a group's name
    kind: str                 # feature | error | token | logit | group
    row: float                # 0 tokens, 1 + layer, layers + 1 the logit (a group: its members' mean)
    position: float
    label: str                # a feature's dashboard label, a token's piece
    influence: float          # share of all nodes' influence on the target
    value: float              # activation (feature), vector norm (error, token), logit − mean logit (logit)
    board: Dashboard | None = None          # a feature's dashboard, where the transcoders ship one
    members: tuple[Node, ...] = ()          # a supernode's features


@dataclass
class NodeGraph:
    """The pruned graph's nodes and links, and the numbers a reader is told in words."""
    nodes: list[Node]
    edges: list[tuple[str, str, float]]   # (source key, target key, weight)
    pieces: list[str]
    target: str
    prob: float
    layers: int
    replacement: float
    completeness: float
    logit_errors: float       # share of the logit's direct |input| that comes from error nodes
    unknown: list[str] = field(default_factory=list)   # supernode members that are no kept node

    @property
    def error_share(self) -> float:
        """The errors' share of the influence reaching the target from the graph's sources (tokens and errors):
        1 − the replacement score."""
        return 1 - self.replacement


def node_graph(circuit, dashboard=None) -> NodeGraph:
    """A Circuit (toyviz.interpret.circuits.trace) as nodes and links; dashboard(layer, feature) → its Dashboard
    (toyviz.interpret.dictionary) or None."""
    graph, pruned = circuit.graph, circuit.pruned
    data = circuit.to_json()
    kept = pruned.nodes.nonzero(as_tuple=True)[0].tolist()
    total = float(pruned.influence.sum()) or 1.0
    L = graph.n_layers
    nodes = []
    for record, index in zip(data["nodes"], kept):
        kind = {"embedding": "token", "logit": "logit", "mlp reconstruction error": "error"}.get(
            record["feature_type"], "feature")
        layer = record["layer"]
        row = 0 if kind == "token" else L + 1 if kind == "logit" else int(layer) + 1
        node = Node(record["node_id"], kind, row, record["ctx_idx"], record.get("clerp", ""),
                    float(pruned.influence[index]) / total, float(graph.values[index]))
        if kind == "feature" and dashboard:
            node.board = dashboard(int(layer), int(graph.feature[index]))
        nodes.append(node)
    return NodeGraph(nodes, [(link["source"], link["target"], link["weight"]) for link in data["links"]],
                     circuit.pieces, circuit.target_piece, circuit.prob, L, circuit.replacement,
                     circuit.completeness, logit_error_share(graph))


def grouped(view: NodeGraph, groups: dict[str, list[str]]) -> NodeGraph:
    """The graph with each group of nodes (by key) as one supernode at its members' mean place, its links the sums
    of its members' (links inside a group dropped). Keys that are no kept feature go to `unknown`."""
    by_key = {n.key: n for n in view.nodes}
    owner, unknown, supernodes = {}, [], []
    for name, keys in groups.items():
        members = [by_key[k] for k in keys if k in by_key and by_key[k].kind == "feature" and k not in owner]
        unknown += [k for k in keys if k not in by_key or by_key[k].kind != "feature"]
        if not members:
            continue
        for m in members:
            owner[m.key] = name
        supernodes.append(Node(name, "group", float(np.mean([m.row for m in members])),
                               float(np.mean([m.position for m in members])), name, sum(m.influence for m in members),
                               sum(m.value for m in members), members=tuple(members)))
    edges: dict[tuple[str, str], float] = {}
    for source, target, weight in view.edges:
        pair = (owner.get(source, source), owner.get(target, target))
        if pair[0] != pair[1]:
            edges[pair] = edges.get(pair, 0.0) + weight
    return replace(view, nodes=[n for n in view.nodes if n.key not in owner] + supernodes,
                   edges=[(s, t, w) for (s, t), w in edges.items()], unknown=unknown)
