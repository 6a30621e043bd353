"""Which nodes and edges of an attribution graph matter for the target, and how much runs through errors.

Influence (as circuit-tracer defines it): normalise each row of |A| to sum 1, so a row says what share of
a node's inputs each source supplies; a node's influence on the logit is the sum over all paths to it of
the products of those shares, logit_weights · (Â + Â² + Â³ + …), which ends since the graph is acyclic.

Pruning keeps the fewest nodes whose influence adds up to `node_threshold` of the total (tokens and the
logit always stay), then, among edges between kept nodes, the fewest whose influence (a node's influence ×
the share of its input an edge carries) adds up to `edge_threshold` of theirs; nodes left with no edge out
(or, for features, no edge in) go, as in circuit-tracer. Dropping them can take some influence along, so
the cut-offs are then raised until what is left holds at least the configured shares (tests check it).

Scores (circuit-tracer's): the replacement score is the share of the tokens' and errors' influence that is
the tokens' (1: every path from the input to the logit runs through features alone); the completeness
score is the share of each node's input that comes from non-error nodes, averaged over nodes weighted by
their influence (partial credit where features explain most of a node).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from toyviz.interpret.circuits.graph import Graph

NODE_THRESHOLD = 0.8          # circuit-tracer's defaults
EDGE_THRESHOLD = 0.98


def normalised(adjacency: torch.Tensor) -> torch.Tensor:
    """|A| with each row summing to 1 (rows without inputs stay 0). (In place on the one copy: each N × N copy is
    ~80 MB at the circuits' caps.)"""
    a = adjacency.abs()
    return a.div_(a.sum(1, keepdim=True).clamp(min=1e-10))


def influence(adjacency: torch.Tensor, logit_weights: torch.Tensor) -> torch.Tensor:
    """(N,) each node's total influence on the weighted logits through all paths (N, N) → (N,)."""
    shares = normalised(adjacency)
    step = logit_weights @ shares
    total = step.clone()
    for _ in range(len(adjacency)):                  # a path has at most N edges; acyclic, so it ends
        step = step @ shares
        if not step.any():
            return total
        total += step
    raise ValueError("the graph has a cycle: influence does not converge")


def share_threshold(scores: torch.Tensor, share: float) -> torch.Tensor:
    """The smallest score among the fewest top scores whose sum reaches `share` of all of them (0 when none is
    positive). Only the positive scores are sorted: an edge matrix's are a few thousand of N × N, and sorting all
    of them took three times the matrix (its values and their int64 indices)."""
    ordered = scores[scores > 0].sort(descending=True).values
    if not len(ordered):
        return scores.new_zeros(())
    cumulative = ordered.cumsum(0) / ordered.sum()
    index = int(torch.searchsorted(cumulative, torch.tensor(share, dtype=cumulative.dtype)))
    return ordered[min(index, len(ordered) - 1)]


@dataclass
class Pruned:
    nodes: torch.Tensor        # (N,) bool: kept
    edges: torch.Tensor        # (N, N) bool: kept
    influence: torch.Tensor    # (N,) each node's influence on the target
    node_share: float          # share of all nodes' influence that the kept nodes hold
    edge_share: float          # share of the kept nodes' edge influence that the kept edges hold


def logit_weights(graph: Graph) -> torch.Tensor:
    weights = torch.zeros(len(graph.adjacency), dtype=graph.adjacency.dtype)
    weights[graph.logit_index] = 1.0
    return weights


def prune(graph: Graph, node_threshold: float = NODE_THRESHOLD, edge_threshold: float = EDGE_THRESHOLD) -> Pruned:
    """The nodes and edges to keep. Dropping dead ends can take influence with it, so the cut-offs are raised
    (halfway to 1 each time) until the pruned graph holds at least the configured shares."""
    if not (0 <= node_threshold <= 1 and 0 <= edge_threshold <= 1):
        raise ValueError("thresholds are shares of influence, between 0 and 1")
    node_cut, edge_cut = node_threshold, edge_threshold
    while True:
        pruned = prune_once(graph, node_cut, edge_cut)
        short_nodes, short_edges = pruned.node_share < node_threshold, pruned.edge_share < edge_threshold
        if not (short_nodes or short_edges) or min(node_cut, edge_cut) > 1 - 1e-6:
            return pruned
        node_cut = (1 + node_cut) / 2 if short_nodes else node_cut
        edge_cut = (1 + edge_cut) / 2 if short_edges else edge_cut


def prune_once(graph: Graph, node_threshold: float, edge_threshold: float) -> Pruned:
    weights, kinds = logit_weights(graph), graph.kinds()
    node_influence = influence(graph.adjacency, weights)
    nodes = node_influence >= share_threshold(node_influence, node_threshold)
    nodes[kinds >= 2] = True                                         # tokens and the logit always stay
    kept = graph.adjacency.clone()
    kept[~nodes], kept[:, ~nodes] = 0, 0
    edge_influence = normalised(kept).mul_((influence(kept, weights) + weights)[:, None])
    edges = (edge_influence >= share_threshold(edge_influence, edge_threshold)) & (edge_influence > 0)
    droppable = kinds <= 1                                           # features and errors need an edge out,
    while True:                                                      # features one in too
        before = nodes.clone()
        nodes[droppable] &= edges[:, droppable].any(0)
        nodes[kinds == 0] &= edges[kinds == 0].any(1)
        edges &= nodes[:, None] & nodes[None, :]
        if torch.equal(nodes, before):
            break
    node_share = float(node_influence[nodes].sum() / node_influence.sum().clamp(min=1e-30))
    edge_share = float(edge_influence[edges].sum() / edge_influence.sum().clamp(min=1e-30))
    return Pruned(nodes, edges, node_influence, node_share, edge_share)


def scores(graph: Graph) -> tuple[float, float]:
    """(replacement score, completeness score) of the whole graph, both in [0, 1]."""
    weights, kinds = logit_weights(graph), graph.kinds()
    shares = normalised(graph.adjacency)
    node_influence = influence(graph.adjacency, weights)
    tokens, errors = node_influence[kinds == 2].sum(), node_influence[kinds == 1].sum()
    replacement = tokens / (tokens + errors).clamp(min=1e-30)
    non_error = 1 - shares[:, kinds == 1].sum(1)
    output = node_influence + weights
    completeness = (non_error * output).sum() / output.sum()
    return float(replacement), float(completeness)


def logit_error_share(graph: Graph) -> float:
    """The share of the target logit's direct |input| that comes from error nodes."""
    incoming = graph.adjacency[graph.logit_index].abs()
    errors = incoming[graph.kinds() == 1].sum()
    return float(errors / incoming.sum().clamp(min=1e-30))
