"""The translator too: for each output token, which source tokens its log-probability is sensitive
to (gradient × input on the source token embeddings), beside the cross-attention it paid them.

Attention says where a head *read*; saliency says what the output *depends on*. Where the two rank
the source tokens alike, the attention map is a fair first picture of the alignment; where they
differ, it is not (attention is not explanation) — this measures which it is, per sentence.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from toyviz.api import Translation, Translator
from toyviz.interpret.explain.attribution import spearman
from toyviz.interpret.explain.prompt import capture
from toyviz.models import names


@dataclass
class SourceSaliency:
    source: list[str]             # source pieces (EOS last)
    output: list[str]             # output pieces, one per decoder position (EOS last when it finished)
    saliency: torch.Tensor        # [T, S] gradient × input of log p(output t) per source token
    attention: torch.Tensor       # [T, S] the compared cross-attention (one head, or a mean)
    agreement: float              # mean over output tokens of Spearman(|saliency| row, attention row)
    top_match: float              # share of output tokens whose most salient source token is their most attended


ROWS_AT_ONCE = 16     # output tokens differentiated per backward pass: all 128 at once held ~1 GB (issue 51)


@torch.inference_mode(False)
def source_gradients(translator: Translator, translation: Translation) -> torch.Tensor:
    """[T, S] gradient × input of each output token's log-probability with respect to the source token
    embeddings (scaled as the model scales them; the positional vectors stay fixed), by batched backward
    passes of ROWS_AT_ONCE output tokens (row t of a batch differentiates output t only).

    Can claim: a first-order, local measure of how much each source token's identity moves that output
    token. Cannot claim: that a source token with a small score is unused (gradients saturate)."""
    model, trace = translator.model, translation.trace
    src = torch.tensor([trace.src_ids], device=model.src_emb.weight.device)
    tgt = torch.tensor([trace.tgt_ids], device=src.device)
    targets = torch.tensor(trace.output_ids, device=src.device)             # (T,)
    point = names.in_stack(names.ENCODER, names.TOKENS)
    seen = {}
    with torch.no_grad():
        model.encode(src, torch.ones_like(src, dtype=torch.bool), hooks=capture(seen, point))
    scores = []
    for rows in torch.arange(len(targets), device=src.device).split(ROWS_AT_ONCE):
        with torch.enable_grad():
            tokens = seen[point].expand(len(rows), -1, -1).clone().requires_grad_(True)   # (B, S, C): one per row
            logp = model(src, tgt.expand(len(rows), -1), hooks={point: lambda t: tokens}).log_softmax(-1)  # (B, T, V)
            grads, = torch.autograd.grad(logp[torch.arange(len(rows)), rows, targets[rows]].sum(), tokens)
        scores.append((grads * tokens.detach()).sum(-1).float().cpu())       # (B, S)
    return torch.cat(scores)                                                 # (T, S)


def source_saliency(translator: Translator, translation: Translation, layer: int | None = None,
                    head: int | None = None, gradients: torch.Tensor | None = None) -> SourceSaliency:
    """`source_gradients` (or the `gradients` already computed for this translation: they do not depend
    on the layer and head) compared with the cross-attention of `layer`/`head` (None: the mean)."""
    trace = translation.trace
    saliency = source_gradients(translator, translation) if gradients is None else gradients
    cross = trace.cross_attention.float()
    cross = cross.mean(0) if layer is None else cross[layer]
    attention = (cross.mean(0) if head is None else cross[head]).cpu()       # (T, S)
    magnitude = saliency.abs()
    rhos = [spearman(magnitude[t], attention[t]) for t in range(len(magnitude))]
    rhos = [r for r in rhos if r == r]
    top = (magnitude.argmax(-1) == attention.argmax(-1)).float().mean()
    return SourceSaliency(trace.src_tokens, trace.output_tokens, saliency, attention,
                          float(np.mean(rhos)) if rhos else float("nan"), float(top))
