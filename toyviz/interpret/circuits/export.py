"""A pruned attribution graph as JSON in the schema of Neuronpedia's graph viewer and circuit-tracer, and a
folder of them as circuit-tracer's local server opens it.

The fields are the ones circuit-tracer's pydantic models write (circuit_tracer/frontend/graph_models.py, read
at its main after the issue #78 fix, PR #100, July 2026; Neuronpedia's graph-schema.json is the same):

- metadata: slug, scan (the model: "toyviz-gpt"), transcoder_list ([]), prompt_tokens (each position's
  piece), prompt, node_threshold, schema_version (1); besides, as the schema allows, info (description,
  generator, create_time_ms), pruning_settings (node_threshold, edge_threshold), generation_settings
  (batch_size and what else made the graph) and `scores` (replacement, completeness, the shares of influence
  the pruned graph kept).
- qParams: the viewer's saved state: pinnedIds, supernodes, linkType ("both"), clickedId, sg_pos.
- nodes, every field circuit-tracer writes, in its order: node_id, feature, layer (a string), ctx_idx
  (position), feature_type, token_prob, is_target_logit, run_idx (0), reverse_ctx_idx (0), jsNodeId, clerp
  (label: a feature's from its dashboard, where the transcoders have them), influence, activation (null but
  for features). Per kind, ids as circuit-tracer makes them:
    feature  node_id "<layer>_<feature>_<pos>", feature = Cantor pairing of (layer, feature),
             feature_type "cross layer transcoder" (the viewer's name for any transcoder feature; ours are
             per-layer), jsNodeId "<layer>_<feature>-0"
    error    node_id "<layer>_-1_<pos>", feature -1, feature_type "mlp reconstruction error", jsNodeId
             "<layer>_-1-<pos>" (circuit-tracer wrote "0_<layer>_<pos>" before its issue #78 fix: the id of
             layer 0's feature <layer>; toyviz wrote "err_<layer>_<pos>", which `parse` still reads)
    token    node_id "E_<token id>_<pos>", layer "E", feature = pos, feature_type "embedding",
             jsNodeId "E_<token id>-<pos>"
    logit    node_id "<L+1>_<token id>_<last pos>", layer "<L+1>", feature = token id, feature_type "logit",
             is_target_logit, token_prob, jsNodeId "L_<token id>-<last pos>", clerp 'Output "<piece>" (p=<prob>)'
  Every id but a token's is three integers joined by "_", as circuit-tracer's decode_url_features reads them.
  influence is circuit-tracer's cumulative share: the share of all nodes' influence held by this node and
  every node more influential than it (the viewer prunes on it interactively).
- links: source, target (node_ids), weight (the edge's direct effect; its sign is excitation/inhibition).

`save` writes a graph as <slug>.json into a folder and lists it in the folder's graph-metadata.json (one entry
per slug: the metadata's fields circuit-tracer's Metadata model has), which is what circuit-tracer's local
server (`circuit_tracer.frontend.serve(folder)`) reads to offer the folder's graphs.
"""
from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from toyviz.interpret.circuits.graph import Graph
from toyviz.interpret.circuits.prune import Pruned

SCAN = "toyviz-gpt"
FEATURE_TYPE = "cross layer transcoder"
ERROR_TYPE = "mlp reconstruction error"
ERROR_FEATURE = -1            # an error node's feature slot in its ids (never a real feature's index)
INDEX = "graph-metadata.json"                 # the folder's list of graphs, as circuit-tracer's server reads it
INDEX_FIELDS = ("slug", "scan", "transcoder_list", "prompt_tokens", "prompt", "node_threshold", "schema_version")


def cantor(x: int, y: int) -> int:
    return (x + y) * (x + y + 1) // 2 + y


# ---------------------------------------------------------------- node ids, made and read here only ------------

def feature_id(layer: int, feature: int, position: int) -> str:
    return f"{layer}_{feature}_{position}"


def error_id(layer: int, position: int) -> str:
    return f"{layer}_{ERROR_FEATURE}_{position}"


def token_id(token: int, position: int) -> str:
    return f"E_{token}_{position}"


def logit_id(n_layers: int, token: int, position: int) -> str:
    return f"{n_layers + 1}_{token}_{position}"


@dataclass(frozen=True)
class NodeId:
    kind: str                 # feature | error | token | logit
    layer: int | None         # None for a token; n_layers + 1 for the logit
    index: int | None         # the feature's number, the token's id; None for an error node
    position: int


NODE_ID = re.compile(r"^(E|-?\d+)_(-?\d+)_(\d+)$")
OLD_ERROR_ID = re.compile(r"^err_(\d+)_(\d+)$")          # toyviz's error ids before circuit-tracer's #78 fix


def parse(node_id: str, n_layers: int | None = None) -> NodeId | None:
    """A node id as `node_records` writes it (or an error node's old "err_<layer>_<pos>") → what it names, or None
    for text that is no node id. Feature and logit ids have one form: layer n_layers + 1 is the logit's, so
    without n_layers a logit reads as a feature."""
    text = str(node_id).strip()
    old = OLD_ERROR_ID.match(text)
    if old:
        return NodeId("error", int(old[1]), None, int(old[2]))
    match = NODE_ID.match(text)
    if not match:
        return None
    first, second, position = match[1], int(match[2]), int(match[3])
    if first == "E":
        return NodeId("token", None, second, position) if second >= 0 else None
    layer = int(first)
    if layer < 0:
        return None
    if second == ERROR_FEATURE:
        return NodeId("error", layer, None, position)
    if second < 0:
        return None
    return NodeId("logit" if n_layers is not None and layer == n_layers + 1 else "feature", layer, second, position)


# ---------------------------------------------------------------- the JSON ----------------------------------------

def cumulative(influence: torch.Tensor) -> torch.Tensor:
    """Each node's share of the total influence held by it and all nodes ahead of it."""
    ordered, order = influence.sort(descending=True)
    shares = torch.zeros_like(influence)
    shares[order] = ordered.cumsum(0) / ordered.sum().clamp(min=1e-30)
    return shares


def record(node_id: str, feature: int, layer: str, position: int, feature_type: str, js_id: str, *,
           clerp: str = "", influence: float | None = None, activation: float | None = None,
           token_prob: float = 0.0, is_target_logit: bool = False) -> dict:
    """One node with every field circuit-tracer's Node writes, in its order."""
    return {"node_id": node_id, "feature": feature, "layer": layer, "ctx_idx": position, "feature_type": feature_type,
            "token_prob": token_prob, "is_target_logit": is_target_logit, "run_idx": 0, "reverse_ctx_idx": 0,
            "jsNodeId": js_id, "clerp": clerp, "influence": influence, "activation": activation}


def node_records(graph: Graph, pruned: Pruned, pieces: list[str], target_piece: str, prob: float,
                 labels: list[list[str]] | None = None) -> list[dict]:
    kinds, shares, L, T = graph.kinds(), cumulative(pruned.influence), graph.n_layers, graph.n_positions
    records = []
    for index in pruned.nodes.nonzero(as_tuple=True)[0].tolist():
        kind, share = int(kinds[index]), float(shares[index])
        if kind == 0:
            layer, pos, feature = (int(t[index]) for t in (graph.layer, graph.position, graph.feature))
            records.append(record(feature_id(layer, feature, pos), cantor(layer, feature), str(layer), pos,
                                  FEATURE_TYPE, f"{layer}_{feature}-0", influence=share,
                                  activation=float(graph.values[index]),
                                  clerp=labels[layer][feature] if labels else ""))
        elif kind == 1:
            layer, pos = divmod(index - graph.n_features, T)
            records.append(record(error_id(layer, pos), ERROR_FEATURE, str(layer), pos, ERROR_TYPE,
                                  f"{layer}_{ERROR_FEATURE}-{pos}", influence=share))
        elif kind == 2:
            pos = index - graph.token_index(0)
            token = graph.prompt.ids[pos]
            records.append(record(token_id(token, pos), pos, "E", pos, "embedding", f"E_{token}-{pos}",
                                  clerp=pieces[pos], influence=share))
        else:
            token = graph.prompt.target
            records.append(record(logit_id(L, token, T - 1), token, str(L + 1), T - 1, "logit", f"L_{token}-{T - 1}",
                                  clerp=f'Output "{target_piece}" (p={prob:.3f})', influence=share,
                                  token_prob=prob, is_target_logit=True))
    return records


def to_json(graph: Graph, pruned: Pruned, *, prompt: str, pieces: list[str], target_piece: str, prob: float,
            scores: tuple[float, float], settings: dict, slug: str, labels: list[list[str]] | None = None) -> dict:
    """The pruned graph as one JSON-ready dict (Neuronpedia's schema, fields above)."""
    nodes = node_records(graph, pruned, pieces, target_piece, prob, labels)
    ids = {}
    for node, index in zip(nodes, pruned.nodes.nonzero(as_tuple=True)[0].tolist()):
        ids[index] = node["node_id"]
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


def save(graph: dict, folder: str | Path) -> Path:
    """Write `graph` (to_json's) as <folder>/<slug>.json and list it in <folder>/graph-metadata.json (replacing an
    entry of the same slug), as circuit-tracer's create_graph_files does: the folder then opens in its local
    server. Returns the graph's path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    meta = graph["metadata"]
    path = folder / f"{meta['slug']}.json"
    path.write_text(json.dumps(graph))
    index = folder / INDEX
    graphs = json.loads(index.read_text())["graphs"] if index.is_file() else []
    entry = {key: meta.get(key) for key in INDEX_FIELDS}
    index.write_text(json.dumps({"graphs": [g for g in graphs if g.get("slug") != meta["slug"]] + [entry]}, indent=2))
    return path
