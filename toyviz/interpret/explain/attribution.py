"""1. Components, verified: direct logit attribution (DLA) of the embedding, every head and every
MLP to the chosen token, then a real ablation (zero and mean) of the top components, with the
rank correlation between the two.

DLA is linear: it splits this pass's logit exactly, but a part's share is not what removing the
part would do (the final norm's scale is frozen, later layers would react). Ablation is what
removing it does, on this one prompt, and "zero" and "mean" are two different removals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from toyviz.models import names
from toyviz.models.names import Name
from toyviz.interpret.readout import contributions
from toyviz.api import GPT
from toyviz.interpret.explain.prompt import check_position, encode, pick_token, run
from toyviz.models.hooks import ablation, replace

KINDS = ("zero", "mean")


def ranks(x) -> np.ndarray:
    """Ranks 0…n-1 of x, ties sharing their mean rank."""
    x = np.asarray(x, dtype=np.float64)
    r = np.empty(len(x))
    r[x.argsort(kind="stable")] = np.arange(len(x))
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return np.bincount(inverse, weights=r)[inverse] / counts[inverse]


def spearman(a, b) -> float:
    """Spearman rank correlation (Pearson of the ranks); nan for fewer than 3 points or a constant side."""
    if len(a) < 3:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / denom) if denom > 0 else float("nan")



@dataclass
class Components:
    """Direct logit attribution of every write, and real ablations of the top ones.

    target = logit(token) − mean logit over the vocabulary at `position`. The attributions sum to
    it exactly. For the verified components, `effect[k, j]` is log p(token) in the clean pass minus
    log p(token) with component k removed by KINDS[j] ("zero", "mean"): positive = it helped.
    `effect_target` is the same change measured on the target, in the attribution's own units.
    """
    tokens: list[str]
    position: int
    token: int
    piece: str
    target: float
    logprob: float
    names: list[str]              # the terms' labels: "embed", "L0 H0" …, "block0.attn.bias", "block0.mlp" …, "ln_f.bias"
    attribution: torch.Tensor     # [N] sums to target
    verified: list[str]           # top_k of embed/heads/MLPs by |attribution|
    verified_attribution: torch.Tensor   # [k]
    effect: torch.Tensor          # [k, 2] drop in log p(token): zero, mean ablation
    effect_target: torch.Tensor   # [k, 2] drop in the target
    spearman: tuple[float, float] # rank correlation of attribution and effect (zero, mean)

    def disagreements(self, kind: str = "zero") -> list[str]:
        """Verified components whose ablation moved log p(token) against their attribution's sign."""
        e = self.effect[:, KINDS.index(kind)]
        return [n for n, a, d in zip(self.verified, self.verified_attribution, e) if float(a) * float(d) < 0]


def attribution(trace, model, position: int, token: int) -> tuple[list[Name], torch.Tensor]:
    """(terms, [N]) direct contributions to logit(token) − mean logit at `position`: the Residual
    tab's direct logit attribution against the mean logit, so that a component that raises every
    logit alike scores 0 (it does not make this token more likely). They sum to the target exactly;
    σ of the final norm is frozen at this pass's value, as TransformerLens does."""
    parts = contributions(trace, model, position, token, minus_mean=True)
    return list(parts), torch.tensor(list(parts.values()), dtype=torch.float64)


def ablated_logits(gpt: GPT, ids: list[int], term: Name, kind: str) -> torch.Tensor:
    """Logits [T, V] with one term of the attribution removed, by a hook on the model's own forward: a
    head's output ("block1.attn.heads.3"), the embedding (the stream entering block 0) or an MLP's write
    ("block2.mlp") zeroed or replaced by its mean over positions."""
    if term.head is not None:
        return run(gpt, ids, ablation(gpt.ablation([(term.layer, term.head)], kind)))
    return run(gpt, ids, replace(names.resid_pre(0) if term == names.EMBED else term, kind))


@torch.no_grad()
def components(gpt: GPT, text: str, token=None, *, position: int = -1, top_k: int | None = 8) -> Components:
    """Attribute, then verify: DLA of every write, and zero/mean ablation of the top_k embed/head/MLP
    components by |attribution| (None: all of them). Biases and β are attributed, never ablated.

    Can claim: how much each write adds to the target in this pass (exact, linear), and how much
    log p(token) really drops without each verified component. Cannot claim: that the ranking would
    hold on another prompt, or that components act alone (ablating two at once is not the sum).
    """
    ids = encode(gpt, text)
    trace = gpt.model.trace(ids, pieces=gpt.tokenizer.pieces)
    p = check_position(position, len(ids))
    logits = trace.logits[p]                                          # (V,)
    tok = pick_token(gpt, token, logits)
    terms, attr = attribution(trace, gpt.model, p, tok)
    ablatable = [i for i, n in enumerate(terms) if n == names.EMBED or n.component == "mlp" or n.head is not None]
    ablatable.sort(key=lambda i: -abs(float(attr[i])))
    chosen = ablatable[:top_k] if top_k is not None else ablatable
    clean_lp, clean_t = _logprob_and_target(logits, tok)
    effect, effect_t = torch.zeros(len(chosen), 2), torch.zeros(len(chosen), 2)
    for k, i in enumerate(chosen):
        for j, kind in enumerate(KINDS):
            lp, t = _logprob_and_target(ablated_logits(gpt, ids, terms[i], kind)[p], tok)
            effect[k, j], effect_t[k, j] = clean_lp - lp, clean_t - t
    va = attr[chosen].float()
    labels = [term.label for term in terms]                          # what the figures and the report show
    return Components(trace.tokens, p, tok, gpt.tokenizer.piece(tok), clean_t, clean_lp, labels, attr.float(),
                      [labels[i] for i in chosen], va, effect, effect_t,
                      (spearman(va, effect[:, 0]), spearman(va, effect[:, 1])))


def _logprob_and_target(logits: torch.Tensor, token: int) -> tuple[float, float]:
    """logits (V,) → (log p(token), logit(token) − mean logit)."""
    logits = logits.double()
    return float(logits.log_softmax(-1)[token]), float(logits[token] - logits.mean())

