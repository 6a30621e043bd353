"""Automatic head labels: measure a few well-known attention patterns in every head of a trace
and name each head after the strongest one.

Scores are mean attention probabilities over the query rows where the pattern is defined (row 0
is skipped: under a causal mask it can only look at itself, which says nothing):

- previous-token: weight on position i-1
- first-token (sink): weight on position 0 (often a "resting place" for heads with nothing to do)
- self: weight on position i
- induction: for a token that appeared before, weight on the token that FOLLOWED its earlier
  occurrence(s) — the copy-the-continuation pattern; only measured when the prompt repeats tokens
- broad/mixed (fallback): mean normalised entropy of the rows (1 = uniform over visible keys)
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from toyviz.i18n import LANGUAGES, Term, catalogue, t

from toyviz.i18n import LANGUAGES, Term, catalogue, t

THRESHOLD = 0.4
PATTERNS = ("previous-token", "first-token", "self", "induction")   # what each does: the catalogues' heads.does.*


@dataclass
class HeadLabel:
    layer: int
    head: int
    label: str                 # one of PATTERNS, or "broad/mixed"
    score: float               # the measured score behind the label, in [0, 1]
    description: str           # one readable sentence with the number, in the event's language
    scores: dict[str, float] = field(default_factory=dict)   # every measured pattern score


def induction_mask(token_ids: list[int]) -> np.ndarray:
    """[T, T] bool: True at (i, j+1) for every earlier position j < i holding the same token as i."""
    ids = np.asarray(token_ids)
    same_earlier = np.tril(ids[:, None] == ids[None, :], k=-1)          # (i, j): j < i, same token
    mask = np.zeros_like(same_earlier)
    mask[:, 1:] = same_earlier[:, :-1]                                  # shift j → j + 1
    return mask


def pattern_scores(probs, token_ids: list[int], causal: bool = True) -> dict[str, float]:
    """Every pattern score of one head's [T, T] attention probabilities (numpy: a few small array
    operations per head, which torch would spread over threads for nothing)."""
    a = probs.detach().cpu().double().numpy() if isinstance(probs, torch.Tensor) else np.asarray(probs, float)
    T = a.shape[0]
    if T < 2:
        return {}
    rows = np.arange(1, T)
    scores = {"previous-token": a[rows, rows - 1].mean(), "first-token": a[rows, 0].mean(),
              "self": a[rows, rows].mean()}
    targets = induction_mask(token_ids)
    repeated = targets.any(-1)                                          # queries whose token appeared before
    if repeated.any():
        scores["induction"] = (a * targets).sum(-1)[repeated].mean()
    visible = rows + 1.0 if causal else np.full(T - 1, float(T))
    entropy = -(a[rows] * np.log(np.clip(a[rows], 1e-12, None))).sum(-1)
    scores["entropy"] = (entropy / np.log(visible)).mean()
    return {k: float(v) for k, v in scores.items()}


def label_head(layer: int, head: int, probs, token_ids: list[int], causal: bool = True,
               threshold: float = THRESHOLD) -> HeadLabel:
    """The pattern with the highest score if it reaches `threshold`, else "broad/mixed"."""
    scores = pattern_scores(probs, token_ids, causal)
    patterns = {k: v for k, v in scores.items() if k in PATTERNS}
    best = max(patterns, key=patterns.get, default=None)
    if best is not None and patterns[best] >= threshold:
        return HeadLabel(layer, head, best, patterns[best],
                         t("heads.on_average", does=Term(f"heads.does.{best}"), share=patterns[best]), scores)
    entropy = scores.get("entropy", 0.0)
    strongest = t("heads.strongest", name=pattern_name(best), score=f"{patterns[best]:.0%}") if best else ""
    return HeadLabel(layer, head, "broad/mixed", entropy, t("heads.no_pattern", strongest=strongest, spread=entropy),
                     scores)


def pattern_name(label: str) -> str:
    """A head's label ("induction", "previous-token", "broad/mixed") in the event's language."""
    key = f"figures.heads.{label}"
    return t(key) if key in catalogue(LANGUAGES[0]) else label


def label_heads(trace, threshold: float = THRESHOLD) -> list[HeadLabel]:
    """One label per head, layer by layer, from a trace's attention [L, H, T, T], token_ids and causal."""
    return [label_head(layer, head, trace.attention[layer, head], trace.token_ids, trace.causal, threshold)
            for layer in range(trace.attention.shape[0]) for head in range(trace.attention.shape[1])]


# ---------------------------------------------------------------- probes over a distribution ----
#
# A label on one prompt says what a head did there; a probe set says what it does in general.
# The fixed set mixes repeated random-token sequences (where only an induction head can predict
# the second copy) with held-out text windows (where previous-token, first-token and self
# patterns are measured on the language the model learned). Training records these scores every
# few steps, so the Model tab can show when each head is born.

PROBE_PATTERNS = ("previous-token", "induction", "first-token", "self")


@dataclass
class ProbeSet:
    repeats: list[list[int]]   # BOS + r + r, r random tokens: induction is measured here
    period: int                # len(r)
    texts: list[list[int]]     # BOS + held-out text: the other patterns are measured here


def make_probe_set(bos: int, vocab_size: int, held_out_ids, *, n: int = 8, period: int = 50,
                   text_len: int = 128, seed: int = 0) -> ProbeSet:
    """n repeated random sequences (tokens drawn from the non-special vocabulary) and n windows of
    held-out text, the same for every call with the same arguments."""
    gen = np.random.default_rng(seed)
    repeats = []
    for _ in range(n):
        r = gen.integers(0, vocab_size, size=period)
        r[r == bos] = (bos + 1) % vocab_size
        repeats.append([bos] + r.tolist() + r.tolist())
    held_out = list(map(int, held_out_ids))
    span = max(1, len(held_out) - text_len)
    texts = [[bos] + held_out[s: s + text_len - 1] for s in gen.integers(0, span, size=n).tolist()]
    return ProbeSet(repeats, period, texts)


def repeat_induction_score(probs, period: int) -> float:
    """Mean attention from each token of the second copy (of BOS + r + r) to the token after its
    first occurrence: query q = 1 + period + k looks at key q - period + 1."""
    a = probs.detach().cpu().double().numpy() if isinstance(probs, torch.Tensor) else np.asarray(probs, float)
    queries = np.arange(1 + period, 1 + 2 * period)
    return float(a[queries, queries - period + 1].mean())


def probe_scores(model, probes: ProbeSet) -> dict[str, list[list[float]]]:
    """{pattern: [layer][head] mean score over the probe set} and {pattern + "_share": [layer][head]
    share of the probe sequences on which that score reaches THRESHOLD}: whether a head does it in
    general, not on one prompt. Induction is measured on the repeated sequences, the other patterns
    on the held-out text."""
    per_probe = {p: [] for p in PROBE_PATTERNS}                            # pattern → list of [L, H]
    for ids in probes.repeats:
        att = model.trace(ids).attention                                  # [L, H, T, T]
        per_probe["induction"].append([[repeat_induction_score(a, probes.period) for a in layer] for layer in att])
    for ids in probes.texts:
        att = model.trace(ids).attention
        scores = [[pattern_scores(a, ids) for a in layer] for layer in att]
        for p in ("previous-token", "first-token", "self"):
            per_probe[p].append([[head[p] for head in layer] for layer in scores])
    result = {}
    for p, values in per_probe.items():
        values = np.asarray(values)                                       # [N, L, H]
        result[p] = np.round(values.mean(0), 4).tolist()
        result[f"{p}_share"] = np.round((values >= THRESHOLD).mean(0), 4).tolist()
    return result


def general_pattern(profile: dict, layer: int, head: int) -> tuple[str, float]:
    """A head's strongest pattern over the probe set and its mean score there ("broad/mixed" when none
    reaches THRESHOLD, with the strongest one's score)."""
    scores = {p: profile[p][layer][head] for p in PROBE_PATTERNS if p in profile}
    best = max(scores, key=scores.get)
    return (best if scores[best] >= THRESHOLD else "broad/mixed"), scores[best]


def general_label(profile: dict, layer: int, head: int) -> str:
    """A head's label over the probe set (the strongest pattern reaching THRESHOLD there), with its
    mean score and, where recorded, the share of probe sequences on which it holds."""
    scores = {p: profile[p][layer][head] for p in PROBE_PATTERNS if p in profile}
    best = max(scores, key=scores.get)
    if scores[best] < THRESHOLD:
        return pattern_name("broad/mixed") + t("heads.strongest", name=pattern_name(best), score=f"{scores[best]:.2f}")
    share = profile.get(f"{best}_share")
    return f"**{pattern_name(best)}** {scores[best]:.2f}" + (t("heads.on_probes", share=share[layer][head]) if share
                                                              else "")


def why_labels_differ(label: HeadLabel, profile: dict) -> str:
    """Why a head's label on this prompt is not the pattern it shows over the probe set ("" when they agree,
    or when this prompt only brings out a pattern where the probes show none): a student comparing the two
    columns must not be left to guess which one is wrong."""
    general, score = general_pattern(profile, label.layer, label.head)
    if general in (label.label, "broad/mixed"):       # the same, or a pattern this prompt brings out: no conflict
        return ""
    here = label.scores.get(general)
    if here is None:
        return t("heads.no_repeat", pattern=pattern_name(general))
    return t("heads.takes", pattern=pattern_name(general), here=here, score=score,
             probes=t("heads.random_probes") if general == "induction" else "")
