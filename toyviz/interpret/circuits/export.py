"""A pruned attribution graph as JSON in the schema of Neuronpedia's graph viewer and circuit-tracer.

The fields (Neuronpedia's graph-schema.json, the JSON circuit-tracer's create_graph_files writes):

- metadata: slug, scan (the model: "toyviz-gpt"), transcoder_list ([]), prompt_tokens (each position's
  piece), prompt, node_threshold, schema_version (1); optional info (description, generator,
  create_time_ms), pruning_settings (node_threshold, edge_threshold), generation_settings (free keys:
  batch_size and what else made the graph). Ours also has `scores` (replacement, completeness, and the
  shares of influence the pruned graph kept), which the schema allows as an extra key.
- qParams: the viewer's saved state: pinnedIds, supernodes, linkType ("both"), clickedId, sg_pos.
- nodes: node_id, feature, layer (a string), ctx_idx (position), feature_type, jsNodeId, clerp (label: a
  feature's from its dashboard, where the transcoders have them),
  influence, activation, token_prob, is_target_logit. Per kind, as circuit-tracer makes them:
    feature  node_id "<layer>_<feature>_<pos>", feature = Cantor pairing of (layer, feature),
             feature_type "cross layer transcoder" (the viewer's name for any transcoder feature; ours are
             per-layer), jsNodeId "<layer>_<feature>-0"
    error    feature -1, feature_type "mlp reconstruction error"; node_id "err_<layer>_<pos>" (circuit-tracer
             writes "0_<layer>_<pos>", which collides with a layer-0 feature's id) and jsNodeId alike
    token    node_id "E_<token id>_<pos>", layer "E", feature = pos, feature_type "embedding"
    logit    node_id "<L+1>_<token id>_<last pos>", layer "<L+1>", feature = token id, feature_type "logit",
             is_target_logit, token_prob, clerp 'Output "<piece>" (p=<prob>)'
  influence is circuit-tracer's cumulative share: the share of all nodes' influence held by this node and
  every node more influential than it (the viewer prunes on it interactively).
- links: source, target (node_ids), weight (the edge's direct effect; its sign is excitation/inhibition).
"""
from __future__ import annotations

import time

import torch

from toyviz.interpret.circuits.graph import Graph
from toyviz.interpret.circuits.prune import Pruned

SCAN = "toyviz-gpt"
FEATURE_TYPE = "cross layer transcoder"


def cantor(x: int, y: int) -> int:
    return (x + y) * (x + y + 1) // 2 + y


def cumulative(influence: torch.Tensor) -> torch.Tensor:
    """Each node's share of the total influence held by it and all nodes ahead of it."""
    ordered, order = influence.sort(descending=True)
    shares = torch.zeros_like(influence)
    shares[order] = ordered.cumsum(0) / ordered.sum().clamp(min=1e-30)
    return shares


def node_records(graph: Graph, pruned: Pruned, pieces: list[str], target_piece: str, prob: float,
                 labels: list[list[str]] | None = None) -> list[dict]:
    kinds, shares, L, T = graph.kinds(), cumulative(pruned.influence), graph.n_layers, graph.n_positions
    records = []
    for index in pruned.nodes.nonzero(as_tuple=True)[0].tolist():
        kind, share = int(kinds[index]), float(shares[index])
        if kind == 0:
            layer, pos, feature = (int(t[index]) for t in (graph.layer, graph.position, graph.feature))
            record = {"node_id": f"{layer}_{feature}_{pos}", "feature": cantor(layer, feature), "layer": str(layer),
                      "ctx_idx": pos, "feature_type": FEATURE_TYPE, "jsNodeId": f"{layer}_{feature}-0",
                      "activation": float(graph.values[index]), "clerp": labels[layer][feature] if labels else ""}
        elif kind == 1:
            layer, pos = divmod(index - graph.n_features, T)
            record = {"node_id": f"err_{layer}_{pos}", "feature": -1, "layer": str(layer), "ctx_idx": pos,
                      "feature_type": "mlp reconstruction error", "jsNodeId": f"err_{layer}_{pos}-0"}
        elif kind == 2:
            pos = index - graph.token_index(0)
            token = graph.prompt.ids[pos]
            record = {"node_id": f"E_{token}_{pos}", "feature": pos, "layer": "E", "ctx_idx": pos,
                      "feature_type": "embedding", "jsNodeId": f"E_{token}-{pos}", "clerp": pieces[pos]}
        else:
            token = graph.prompt.target
            record = {"node_id": f"{L + 1}_{token}_{T - 1}", "feature": token, "layer": str(L + 1), "ctx_idx": T - 1,
                      "feature_type": "logit", "jsNodeId": f"L_{token}-{T - 1}", "is_target_logit": True,
                      "token_prob": prob, "clerp": f'Output "{target_piece}" (p={prob:.3f})'}
        records.append({"clerp": "", "influence": share, **record})
    return records


def to_json(graph: Graph, pruned: Pruned, *, prompt: str, pieces: list[str], target_piece: str, prob: float,
            scores: tuple[float, float], settings: dict, slug: str, labels: list[list[str]] | None = None) -> dict:
    """The pruned graph as one JSON-ready dict (Neuronpedia's schema, fields above)."""
    nodes = node_records(graph, pruned, pieces, target_piece, prob, labels)
    ids = {}
    for record, index in zip(nodes, pruned.nodes.nonzero(as_tuple=True)[0].tolist()):
        ids[index] = record["node_id"]
    targets, sources = pruned.edges.nonzero(as_tuple=True)
    links = [{"source": ids[s], "target": ids[t], "weight": float(graph.adjacency[t, s])}
             for t, s in zip(targets.tolist(), sources.tolist())]
    replacement, completeness = scores
    return {
        "metadata": {
            "slug": slug, "scan": SCAN, "transcoder_list": [], "prompt_tokens": pieces, "prompt": prompt,
            "node_threshold": settings["node_threshold"], "schema_version": 1,
            "info": {"description": f"toyviz attribution graph: replacement score {replacement:.3f}, "
                                    f"completeness score {completeness:.3f}",
                     "generator": {"name": "toyviz.circuits", "version": "1"},
                     "create_time_ms": int(time.time() * 1000)},
            "pruning_settings": {k: settings[k] for k in ("node_threshold", "edge_threshold")},
            "generation_settings": {k: v for k, v in settings.items() if k not in ("node_threshold", "edge_threshold")},
            "scores": {"replacement": replacement, "completeness": completeness,
                       "node_influence_kept": pruned.node_share, "edge_influence_kept": pruned.edge_share},
        },
        "qParams": {"pinnedIds": [], "supernodes": [], "linkType": "both", "clickedId": "", "sg_pos": ""},
        "nodes": nodes,
        "links": links,
    }
