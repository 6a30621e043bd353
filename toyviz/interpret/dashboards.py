"""What a feature means, in numbers: the dashboard data of every feature of a sparse autoencoder.

Built once from the features' activations on held-out text (text the GPT never trained on):

- top contexts: the tokens around each of its strongest activations (distinct places in the text),
  with its activation at every token of the context;
- a histogram of its nonzero activations, and how often it fires at all (frequency);
- the tokens it promotes and suppresses: its direction in the residual stream v, through the final
  LayerNorm's weight γ and the unembedding, W_U (γ ⊙ (v − mean v)). The norm centres its input and
  scales each dimension by γ (and the whole vector by 1/σ, the same for every token, so the ranking
  does not depend on it); the blocks after the site are skipped, as in Neuronpedia's "logit weights":
  this is the direction's direct effect on the logits, not everything adding it would do;
- an automatic label from those numbers, without a language model (`label`).

Stored as dashboards.safetensors (the arrays) + dashboards.json (labels and sizes), every file small.
"""
from __future__ import annotations

import functools
import json
import re
import string
from collections import Counter
from dataclasses import dataclass, fields
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from toyviz.i18n import LANGUAGES, Term, catalogue, t

BEFORE, AFTER = 16, 4          # tokens shown before and after a context's peak
CONTEXTS = 10                  # top contexts kept per feature
BINS = 24                      # histogram bins between 0 and the feature's largest activation
LOGIT_TOKENS = 10              # promoted and suppressed tokens kept
LABEL_TOP = 20                 # strongest activations a label is built from
DOMINANT, CLASS_DOMINANT = 0.5, 0.8   # shares of LABEL_TOP a token, or a kind of token, needs to name a feature
NO_PATTERN = t("features.label.no_pattern", LANGUAGES[0])
DEAD = t("features.label.dead", LANGUAGES[0])


@dataclass
class Dashboards:
    """Per-feature arrays (F features) and labels; ids −1 mark context slots with no token."""
    frequency: torch.Tensor          # (F,) share of held-out tokens where the feature is active
    max_activation: torch.Tensor     # (F,)
    context_ids: torch.Tensor        # (F, CONTEXTS, BEFORE + 1 + AFTER) int32, the peak at index BEFORE
    context_acts: torch.Tensor       # (F, CONTEXTS, BEFORE + 1 + AFTER) the feature's activation there
    histogram: torch.Tensor          # (F, BINS) int32 counts of nonzero activations in [0, max_activation]
    promoted_ids: torch.Tensor       # (F, LOGIT_TOKENS) int32, strongest first
    promoted_logits: torch.Tensor    # (F, LOGIT_TOKENS)
    suppressed_ids: torch.Tensor     # (F, LOGIT_TOKENS) int32, most suppressed first
    suppressed_logits: torch.Tensor  # (F, LOGIT_TOKENS)
    labels: list[str]
    tokens: int                      # held-out tokens the numbers come from

    def save(self, folder: Path) -> None:
        folder = Path(folder)
        tensors = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("labels", "tokens")}
        save_file({k: v.contiguous() for k, v in tensors.items()}, folder / "dashboards.safetensors")
        (folder / "dashboards.json").write_text(json.dumps({"tokens": self.tokens, "labels": self.labels}))

    @classmethod
    def load(cls, folder: Path) -> "Dashboards":
        folder = Path(folder)
        meta = json.loads((folder / "dashboards.json").read_text())
        return cls(**load_file(folder / "dashboards.safetensors"), **meta)


def by_feature(indices: torch.Tensor, values: torch.Tensor, width: int):
    """Sparse activations, top-k per token: indices, values (N, k) → (feature, token, activation) of
    every nonzero one, sorted by feature and within a feature by activation, strongest first; and
    where each feature's run starts (F + 1,)."""
    k = indices.shape[1]
    token = torch.arange(len(indices)).repeat_interleave(k)
    feature, act = indices.flatten(), values.flatten()
    keep = act > 0
    token, feature, act = token[keep], feature[keep], act[keep]
    order = act.argsort(descending=True, stable=True)
    order = order[feature[order].argsort(stable=True)]
    starts = torch.zeros(width + 1, dtype=torch.long)
    starts[1:] = torch.bincount(feature, minlength=width).cumsum(0)
    return feature[order], token[order], act[order], starts


def distinct_peaks(tokens: torch.Tensor, window: int, n: int) -> list[int]:
    """Up to n of `tokens` (strongest first) whose contexts do not overlap: no two in one window
    within BEFORE tokens of each other."""
    chosen: list[int] = []
    for t in tokens.tolist():
        if all(t // window != c // window or abs(t - c) > BEFORE for c in chosen):
            chosen.append(t)
            if len(chosen) == n:
                break
    return chosen


def context_slots(peaks: list[int], window: int) -> torch.Tensor:
    """Token numbers (len(peaks), BEFORE + 1 + AFTER) around each peak, −1 outside the peak's window."""
    offsets = torch.arange(-BEFORE, AFTER + 1)
    slots = torch.tensor(peaks, dtype=torch.long)[:, None] + offsets
    same_window = slots.div(window, rounding_mode="floor") == torch.tensor(peaks)[:, None] // window
    return torch.where(same_window & (slots >= 0), slots, -1)


def logit_effects(stream_directions: torch.Tensor, ln_weight: torch.Tensor, unembedding: torch.Tensor):
    """Directions in the stream (F, C) → each one's direct effect on the logits (F, V):
    W_U (γ ⊙ (v − mean v)) (module docstring)."""
    centred = stream_directions - stream_directions.mean(-1, keepdim=True)
    return (centred * ln_weight) @ unembedding.T


@torch.no_grad()
def build(ids: torch.Tensor, window: int, indices: torch.Tensor, values: torch.Tensor, width: int,
          effects: torch.Tensor, piece) -> Dashboards:
    """ids (N,) the tokens the GPT read, in windows of `window` (each window's first token its BOS);
    indices, values (N, k) the features active at each token; effects (F, V) from `logit_effects`;
    piece(id) → the token's text. A window's first token, its BOS, is left out: it is the same vector
    in every window (the autoencoder is not trained on it either)."""
    values = values.clone()
    values[::window] = 0
    feature, token, act, starts = by_feature(indices, values, width)
    shape = (width, CONTEXTS, BEFORE + 1 + AFTER)
    context_ids = torch.full(shape, -1, dtype=torch.int32)
    context_acts = torch.zeros(shape)
    histogram = torch.zeros(width, BINS, dtype=torch.int32)
    max_activation = torch.zeros(width)
    labels = []
    for f in range(width):
        tokens, acts = token[starts[f]: starts[f + 1]], act[starts[f]: starts[f + 1]]
        if not len(tokens):
            labels.append(DEAD)
            continue
        max_activation[f] = acts[0]
        histogram[f] = torch.histc(acts, BINS, 0, float(acts[0])).int()
        slots = context_slots(distinct_peaks(tokens, window, CONTEXTS), window)
        inside = slots >= 0
        here = slots.clamp(min=0)
        context_ids[f, : len(slots)] = torch.where(inside, ids[here], -1).int()
        context_acts[f, : len(slots)] = torch.where(inside, (values[here] * (indices[here] == f)).sum(-1), 0)
        top = tokens[:LABEL_TOP]
        before = [piece(int(ids[t - 1])) if t % window else "" for t in top.tolist()]
        labels.append(label([piece(int(ids[t])) for t in top.tolist()], before))
    promoted, suppressed = effects.topk(LOGIT_TOKENS, dim=-1), (-effects).topk(LOGIT_TOKENS, dim=-1)
    read = len(ids) - len(values[::window])                          # tokens other than BOS
    frequency = torch.bincount(feature, minlength=width).float() / read
    return Dashboards(frequency, max_activation, context_ids, context_acts, histogram,
                      promoted.indices.int(), promoted.values, suppressed.indices.int(), -suppressed.values,
                      labels, read)


def kind_of_piece(piece: str) -> str:
    """A token's kind: a key of the catalogues' features.kind, the words a label uses."""
    word = piece.strip()
    if "\n" in piece:
        return "line_breaks"
    if not word:
        return "spaces"
    if not any(c.isalnum() for c in word):
        return "punctuation"
    if word.isalpha() and word.isupper() and len(word) > 1:
        return "all_caps"
    if word[0].isupper():
        return "capitalised"
    if not piece[0].isspace() and word.isalpha():
        return "endings"
    return "lower_case"


def quoted(piece: str) -> str:
    """A piece inside a label: quotes show its leading space, a newline shows as \\n."""
    return "'" + piece.replace("\n", "\\n") + "'"


def label(top: list[str], before: list[str]) -> str:
    """A name for a feature from its strongest activations: `top` the pieces it fired on, `before`
    the piece before each (strongest first). The first that holds: one token is at least half of
    them; two tokens are, together, with each at least a fifth; one token precedes at least half;
    one kind of token (`kind_of_piece`) is at least 80 %; else "no clear pattern"."""
    if not top:
        return DEAD
    n = len(top)
    english = lambda key, **fields: t(f"features.label.{key}", LANGUAGES[0], **fields)     # stored: said()
    counts = Counter(top).most_common(2)
    if counts[0][1] >= DOMINANT * n:
        return english("one", piece=quoted(counts[0][0]), share=f"{counts[0][1] / n:.0%}")
    if len(counts) == 2 and counts[1][1] >= 0.2 * n and counts[0][1] + counts[1][1] >= DOMINANT * n:
        return english("two", first=quoted(counts[0][0]), second=quoted(counts[1][0]),
                       share=f"{(counts[0][1] + counts[1][1]) / n:.0%}")
    prev, times = Counter(before).most_common(1)[0]
    if times >= DOMINANT * n and prev:
        return english("after", piece=quoted(prev), share=f"{times / n:.0%}")
    kind, times = Counter(map(kind_of_piece, top)).most_common(1)[0]
    if times >= CLASS_DOMINANT * n:
        return english("kind", kind=Term(f"features.kind.{kind}"), share=f"{times / n:.0%}")
    return NO_PATTERN


# what each field of a stored label can be, to read it back: a quoted piece, a share, a kind's English
_SHAPES = {"piece": "'.*'", "first": "'.*?'", "second": "'.*'", "share": r"\d+%"}


@functools.cache
def _kinds() -> dict[str, str]:
    """A kind's English words → its key (features.kind.*)."""
    return {t(key, LANGUAGES[0]): key for key in catalogue(LANGUAGES[0]) if key.startswith("features.kind.")}


@functools.cache
def _readers() -> list[tuple[str, re.Pattern]]:
    """(form, the regular expression of its English), for every form a label takes but the two fixed ones."""
    shapes = _SHAPES | {"kind": "|".join(map(re.escape, _kinds()))}
    readers = []
    for form in ("two", "after", "kind", "one"):               # the narrower first: "'a' or 'b' (80%)" is two, not one
        english = t(f"features.label.{form}", LANGUAGES[0])
        pattern = "".join(re.escape(literal) + (f"(?P<{name}>{shapes[name]})" if name else "")
                          for literal, name, _, _ in string.Formatter().parse(english))
        readers.append((form, re.compile(pattern + "$")))
    return readers


def said(label: str) -> str:
    """A stored label (English, as `label` wrote it, in a checkpoint's dashboards.json) in the event's language."""
    if label in (DEAD, NO_PATTERN):
        return t("features.label.dead" if label == DEAD else "features.label.no_pattern")
    for form, reader in _readers():
        if read := reader.match(label):
            found = read.groupdict()
            if "kind" in found:
                found["kind"] = Term(_kinds()[found["kind"]])
            return t(f"features.label.{form}", **found)
    return label                                  # a form this code never wrote (a hand-edited file): as it is
