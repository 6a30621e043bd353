"""Attribution graphs: one prediction of the GPT traced back through transcoder features.

    circuit = trace(gpt, transcoders, "To be, or not to", target=" be")
    circuit.replacement, circuit.completeness, circuit.to_json("to-be")

frozen: the GPT made linear for the prompt (attention patterns and norm scales fixed, MLPs → features +
errors); graph: the nodes and every direct effect between them, by batched backward passes; prune: influence,
pruning and the replacement / completeness scores; export: Neuronpedia's / circuit-tracer's JSON; intervene:
one feature scaled, the graph's predicted change beside the real GPT's. docs/circuits.md says how to read it.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from toyviz.errors import UserError
from toyviz.interpret.circuits import export
from toyviz.interpret.circuits.graph import Graph, attribute
from toyviz.interpret.circuits.prune import EDGE_THRESHOLD, NODE_THRESHOLD, Pruned, prune, scores
from toyviz.interpret.dashboards import Dashboards
from toyviz.interpret.transcoders import DASHBOARDS, FOLDER, TranscoderSet

BATCH = 512                   # target rows per backward pass (per row 7.0 ms at 256, 4.9 ms at 1,024 on a busy CPU)


@dataclass
class Circuit:
    graph: Graph
    pruned: Pruned
    replacement: float        # share of the tokens' and errors' influence that is the tokens'
    completeness: float       # influence-weighted share of nodes' inputs that come from non-error nodes
    prompt: str
    pieces: list[str]         # each position's text piece (BOS first)
    target_piece: str
    prob: float               # the GPT's probability of the target after the prompt
    settings: dict
    seconds: float            # time to compute it
    labels: list[list[str]] | None = None   # each layer's feature labels (their dashboards'), if known

    def to_json(self, slug: str | None = None) -> dict:
        slug = slug or re.sub(r"[^a-z0-9]+", "-", f"{self.prompt} {self.target_piece}".lower()).strip("-")[:60]
        return export.to_json(self.graph, self.pruned, prompt=self.prompt, pieces=self.pieces,
                              target_piece=self.target_piece, prob=self.prob,
                              scores=(self.replacement, self.completeness), settings=self.settings, slug=slug,
                              labels=self.labels)


def load_transcoders(gpt, folder: str | Path | None = None) -> TranscoderSet:
    """The transcoders shipped with the GPT (<checkpoint>/transcoders), or those in `folder`."""
    folder = Path(folder) if folder else Path(gpt.source) / FOLDER
    if not (folder / "transcoders.json").is_file():
        raise FileNotFoundError(f"no transcoders in {folder}: train them with python -m toyviz.transcoders")
    return TranscoderSet.load(folder, str(gpt.device))


def load_labels(transcoders_folder: str | Path) -> list[list[str]] | None:
    """Each layer's feature labels from the transcoders' dashboards (python -m toyviz.transcoders), or None."""
    layers = sorted((Path(transcoders_folder) / DASHBOARDS).glob("layer*"), key=lambda f: int(f.name[len("layer"):]))
    return [Dashboards.load(folder).labels for folder in layers] or None


def target_id(gpt, target: str | None, logits: torch.Tensor) -> int:
    """The target token: the text given (it must be one token), else the GPT's most likely next token."""
    if target is None:
        return int(logits.argmax())
    ids = gpt.tokenizer.encode(target)
    if len(ids) != 1:
        pieces = " | ".join(gpt.tokenizer.pieces(ids))
        raise UserError(f"the target must be one token; {target!r} is {len(ids)}: {pieces}")
    return ids[0]


def trace(gpt, transcoders: TranscoderSet, prompt: str, target: str | None = None, *,
          node_threshold: float = NODE_THRESHOLD, edge_threshold: float = EDGE_THRESHOLD, batch: int = BATCH,
          labels: list[list[str]] | None = None) -> Circuit:
    """The attribution graph of `target` (a one-token string; default: the GPT's top prediction) after
    `prompt`, pruned by influence; `labels` (load_labels) name its features in the JSON."""
    start = time.time()
    ids, dropped = gpt.encode(prompt)
    if dropped:
        raise UserError(f"the prompt is {dropped} tokens longer than the GPT's context of {gpt.config.context}")
    with torch.no_grad():
        logits = gpt.model(torch.tensor([ids], device=gpt.device))[0][0, -1]
    token = target_id(gpt, target, logits)
    graph = attribute(gpt.model, transcoders, ids, token, batch)
    pruned = prune(graph, node_threshold, edge_threshold)
    replacement, completeness = scores(graph)
    settings = {"node_threshold": node_threshold, "edge_threshold": edge_threshold, "batch_size": batch,
                "target": "logit − mean logit, frozen attention and layer norms"}
    return Circuit(graph, pruned, replacement, completeness, prompt, gpt.tokenizer.pieces(ids),
                   gpt.tokenizer.piece(token), float(logits.softmax(-1)[token]), settings, time.time() - start, labels)
