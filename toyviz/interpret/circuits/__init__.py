"""Attribution graphs: one prediction of the GPT traced back through transcoder features.

    circuit = trace(gpt, transcoders, "To be, or not to", target=" be")
    circuit.replacement, circuit.completeness, circuit.to_json("to-be")

frozen: the GPT made linear for the prompt (attention patterns and norm scales fixed, MLPs → features +
errors); graph: the nodes and every direct effect between them, by batched backward passes; prune: influence,
pruning and the replacement / completeness scores; export: Neuronpedia's / circuit-tracer's JSON; nodes: the
pruned graph as the nodes and links a reader follows, supernodes; intervene: one feature scaled, the graph's
predicted change beside the real GPT's. docs/circuits.md says how to read it.
"""
from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from toyviz.errors import UserError
from toyviz.i18n import t
from toyviz.interpret.circuits import export
from toyviz.interpret.circuits.graph import Graph, attribute
from toyviz.interpret.circuits.prune import EDGE_THRESHOLD, NODE_THRESHOLD, Pruned, prune, scores
from toyviz.interpret.dashboards import Dashboards
from toyviz.interpret.transcoders import DASHBOARDS, FOLDER, TranscoderSet

BATCH = 512                   # target rows per backward pass (per row 7.0 ms at 256, 4.9 ms at 1,024 on a busy CPU)
# A graph's cost grows with the prompt twice over: its nodes (~120 active features a token) and each backward pass's
# length. Uncapped, 96 tokens took 22 s and 2.3 GB, 250 tokens ran a worker out of memory (issue 51). So a graph
# covers the prompt's last MAX_TOKENS tokens, keeps at most MAX_FEATURE_NODES features as nodes (circuit-tracer's
# `max_feature_nodes`; the rest join the error nodes, so it stays exact), and batches fewer rows the longer the
# prompt, ROW_POSITIONS rows × positions a pass: docs/deploying.md has what the worst case costs
MAX_TOKENS = 64
MAX_FEATURE_NODES = 4096
ROW_POSITIONS = 8192


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
    cut: int = 0              # tokens of the prompt left out before the graph's (MAX_TOKENS)
    folded: int = 0           # active features folded into the error nodes (MAX_FEATURE_NODES)

    def limits_note(self) -> str:
        """What the caps changed, in words, in the event's language ("" when nothing)."""
        caps = self.settings
        note = t("notes.circuits.cut", tokens=caps["max_tokens"], cut=self.cut) if self.cut else ""
        if self.folded:
            note += t("notes.circuits.folded", folded=f"{self.folded:,}", kept=f"{caps['max_feature_nodes']:,}")
        return note

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
        from toyviz.interpret.dictionary import for_this
        raise FileNotFoundError(f"no transcoders in {folder}: train them with `toyviz transcoders`"
                                f"{for_this(gpt)}")
    return TranscoderSet.load(folder, str(gpt.device))


def load_labels(transcoders_folder: str | Path) -> list[list[str]] | None:
    """Each layer's feature labels from the transcoders' dashboards (`toyviz transcoders`), or None."""
    layers = sorted((Path(transcoders_folder) / DASHBOARDS).glob("layer*"), key=lambda f: int(f.name[len("layer"):]))
    return [Dashboards.load(folder).labels for folder in layers] or None


def target_id(gpt, target: str | int | None, logits: torch.Tensor) -> int:
    """The target token: the id or the text given (it must be one token), else the GPT's most likely next token."""
    if target is None:
        return int(logits.argmax())
    if isinstance(target, int):
        if not 0 <= target < len(logits):
            raise UserError(f"the target token id must be between 0 and {len(logits) - 1}, not {target}")
        return target
    ids = gpt.tokenizer.encode(target)
    if len(ids) != 1:
        pieces = " | ".join(gpt.tokenizer.pieces(ids))
        raise UserError(f"the target must be one token; {target!r} is {len(ids)}: {pieces}")
    return ids[0]


def trace(gpt, transcoders: TranscoderSet, prompt: str, target: str | int | None = None, *,
          node_threshold: float = NODE_THRESHOLD, edge_threshold: float = EDGE_THRESHOLD,
          max_tokens: int = MAX_TOKENS, max_features: int = MAX_FEATURE_NODES,
          labels: list[list[str]] | None = None) -> Circuit:
    """The attribution graph of `target` (a token id or one-token string; default: the GPT's top prediction) after the
    last `max_tokens` tokens of `prompt`, with at most `max_features` feature nodes, pruned by influence;
    `labels` (load_labels) name its features in the JSON."""
    start = time.time()
    if not isinstance(prompt, str) or not prompt.strip():
        raise UserError("the prompt is empty: type a few words first")
    text_ids = gpt.tokenizer.encode(prompt)
    kept = text_ids[max(0, len(text_ids) - (max_tokens - 1)):]           # BOS and the last tokens: the prediction's
    ids = [gpt.bos] + kept
    with torch.no_grad():
        logits = gpt.model(torch.tensor([ids], device=gpt.device))[0][0, -1]
    token = target_id(gpt, target, logits)
    batch = max(1, ROW_POSITIONS // len(ids))
    graph = attribute(gpt.model, transcoders, ids, token, batch, max_features)
    pruned = prune(graph, node_threshold, edge_threshold)
    replacement, completeness = scores(graph)
    settings = {"node_threshold": node_threshold, "edge_threshold": edge_threshold, "batch_size": batch,
                "max_feature_nodes": max_features, "max_tokens": max_tokens,
                "target": "logit − mean logit, frozen attention and layer norms"}
    return Circuit(graph, pruned, replacement, completeness, gpt.tokenizer.decode(kept), gpt.tokenizer.pieces(ids),
                   gpt.tokenizer.piece(token), float(logits.softmax(-1)[token]), settings, time.time() - start, labels,
                   len(text_ids) - len(kept), graph.prompt.folded)
