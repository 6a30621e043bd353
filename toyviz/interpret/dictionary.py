"""A trained feature dictionary of the GPT, loaded: what a UI asks of it.

`toyviz features` trains a sparse autoencoder on one site of the GPT and saves it, with
every feature's dashboard data, in <checkpoint>/features/. Loaded (`load_features`; the app keeps
one per GPT, toyviz.app.caches), it answers:

    features = toyviz.load_features(gpt)
    prompt = features.encode("To be, or not to be")     # every feature at every token
    prompt.top(3), prompt.strongest(10)                 # the strongest at one token, in the prompt
    features.dashboard(17)                              # contexts, histogram, promoted tokens, label
    features.search("lord"), features.by_frequency()    # find features
    gpt.generate("To be", steer=features.steer(17, 8.0))    # its direction × 8 added while generating
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import torch

from toyviz.interpret import sites
from toyviz.api import GPT, load
from toyviz.errors import UserError
from toyviz.models.checkpoint import CheckpointError
from toyviz.interpret.dashboards import BEFORE, Dashboards
from toyviz.interpret.sae import SparseAutoencoder

FOLDER = "features"                # next to the GPT's checkpoint files


@dataclass
class PromptFeatures:
    """The features of one prompt: every feature's activation at every token (zero at BOS)."""
    tokens: list[str]
    token_ids: list[int]
    acts: torch.Tensor               # (T, F)
    labels: list[str]

    def top(self, position: int, n: int = 5) -> list[tuple[int, float, str]]:
        """The n strongest features at one token → (feature, activation, label), active ones only."""
        values, ids = self.acts[position].topk(min(n, self.acts.shape[1]))
        return [(int(i), float(v), self.labels[int(i)]) for v, i in zip(values, ids) if v > 0]

    def strongest(self, n: int = 10) -> list[int]:
        """The n features with the largest activation anywhere in the prompt, strongest first."""
        peak = self.acts.max(0).values
        return [int(i) for i in peak.topk(min(n, len(peak))).indices if peak[i] > 0]


@dataclass
class Context:
    tokens: list[str]
    token_ids: list[int]
    acts: list[float]                # the feature's activation at each token
    peak: int                        # index in `tokens` of the activation this context was chosen for


@dataclass
class Dashboard:
    feature: int
    label: str
    frequency: float                 # share of held-out tokens where it is active
    max_activation: float
    contexts: list[Context]          # strongest first, from held-out text
    histogram: list[int]             # counts of its nonzero activations …
    edges: list[float]               # … between these bin edges
    promoted: list[tuple[int, str, float]]     # (id, piece, effect) of the tokens whose logits its direction
    suppressed: list[tuple[int, str, float]]   # raises most, and lowers most (direct effect, toyviz.interpret.dashboards)


def dashboard(d: Dashboards, feature: int, piece) -> Dashboard:
    """One feature's dashboard read out of the arrays of all of them; piece(id) → the token's text. Shared by the
    dictionary's features and the transcoders' (toyviz.interpret.circuits), whose dashboards are the same arrays."""
    contexts = []
    for ids, acts in zip(d.context_ids[feature].tolist(), d.context_acts[feature].tolist()):
        inside = [i for i, t in enumerate(ids) if t >= 0]
        if not inside:
            break
        kept = [ids[i] for i in inside]
        contexts.append(Context([piece(t) for t in kept], kept, [acts[i] for i in inside], BEFORE - inside[0]))
    top = float(d.max_activation[feature])
    bins = d.histogram.shape[1]
    named = lambda ids, values: [(int(i), piece(int(i)), float(v)) for i, v in zip(ids, values)]
    return Dashboard(feature, d.labels[feature], float(d.frequency[feature]), top, contexts,
                     d.histogram[feature].tolist(), [top * b / bins for b in range(bins + 1)],
                     named(d.promoted_ids[feature], d.promoted_logits[feature]),
                     named(d.suppressed_ids[feature], d.suppressed_logits[feature]))


class Features:
    """A trained dictionary of one GPT: encode prompts, read dashboards, search, steer."""

    def __init__(self, gpt: GPT, sae: SparseAutoencoder, dashboards: Dashboards, metrics: dict):
        self.gpt, self.sae, self.data, self.metrics = gpt, sae, dashboards, metrics
        self.site = sites.parse(sae.config.site, gpt.config)
        self.labels = dashboards.labels
        self._words: list[str] | None = None
        if sae.config.d_in != self.site.width(gpt.config):
            raise CheckpointError(f"the dictionary reads {sae.config.d_in} numbers at {self.site.name}, "
                                  f"where this GPT has {self.site.width(gpt.config)}: it belongs to another GPT")

    def __len__(self) -> int:
        return self.sae.config.width

    @torch.no_grad()
    def encode(self, text: str) -> PromptFeatures:
        ids, _ = self.gpt.encode(text)
        a = sites.read(self.gpt.model, torch.tensor([ids], device=self.gpt.device), self.site)[0]
        acts = self.sae.dense(*self.sae.encode(a)).cpu()             # (T, F)
        acts[0] = 0                                                  # BOS: not what the dictionary learned
        return PromptFeatures(self.gpt.tokenizer.pieces(ids), ids, acts, self.labels)

    def dashboard(self, feature: int) -> Dashboard:
        return dashboard(self.data, feature, self.gpt.tokenizer.piece)

    def search(self, word: str, limit: int = 20) -> list[int]:
        """Features whose label, strongest tokens (the context peaks) or promoted tokens contain `word`
        (case-insensitive), most matches first, then the most frequent."""
        word = word.strip().lower()
        if not word:
            return []
        d = self.data
        if self._words is None:                                      # every token's text, lower-case, once
            self._words = [p.strip().lower() for p in self.gpt.tokenizer.pieces(range(self.gpt.config.vocab_size))]
        peaks = d.context_ids[:, :, BEFORE]
        scores = []
        for f in range(len(self)):
            tokens = [t for t in peaks[f].tolist() if t >= 0] + d.promoted_ids[f].tolist()
            score = sum(word in self._words[t] for t in tokens) + (word in self.labels[f].lower())
            if score:
                scores.append((-score, -float(d.frequency[f]), f))
        return [f for *_, f in sorted(scores)[:limit]]

    def by_frequency(self) -> list[int]:
        """Every feature that fired on held-out text, most frequent first."""
        order = self.data.frequency.argsort(descending=True, stable=True)
        return [int(f) for f in order if self.data.frequency[f] > 0]

    def steer(self, feature: int, alpha: float) -> dict[int, torch.Tensor]:
        """The GPT forward's `steer` that adds feature `feature`'s direction × alpha at its site, at
        every position: as if the feature fired alpha more strongly everywhere (decoder directions have
        length 1, so alpha is in the units of the feature's activations; see max_activation)."""
        if not 0 <= feature < len(self):
            raise UserError(f"no feature {feature}: the dictionary has {len(self)}")
        direction = self.sae.W_dec[feature].detach()
        return {self.site.layer: alpha * sites.stream_vector(self.gpt.model, self.site, direction)}


def for_this(gpt: GPT) -> str:
    """The `--gpt FOLDER` a training command needs for this GPT: none for the shipped one."""
    from toyviz.models.checkpoint import CHECKPOINTS
    shipped = Path(gpt.source).resolve() == (CHECKPOINTS / "gpt").resolve() if gpt.source else True
    return "" if shipped else f" --gpt {gpt.source}"


def load_features(gpt: GPT | str = "gpt", folder: str | Path | None = None) -> Features:
    """The dictionary trained by `toyviz features`: gpt a loaded GPT or what toyviz.load
    takes; folder by default <the GPT's checkpoint>/features."""
    gpt = gpt if isinstance(gpt, GPT) else load(gpt)
    folder = Path(folder) if folder is not None else Path(gpt.source) / FOLDER
    if not (folder / "sae.json").is_file():
        raise CheckpointError(f"no feature dictionary in {folder}: run `toyviz features"
                              f"{for_this(gpt)}` to train one")
    sae = SparseAutoencoder.load(folder, str(gpt.device))
    return Features(gpt, sae, Dashboards.load(folder), json.loads((folder / "metrics.json").read_text()))
