"""Why this token? Evidence for one GPT prediction, each piece checked against the model.

Four methods, plain functions on a loaded `toyviz.api.GPT` (no figures, no UI):

1. `components` — direct logit attribution (DLA) of the embedding, every head and every MLP to
   the chosen token's logit minus the *mean logit*, then a real ablation (zero and mean) of the
   top components, with the rank correlation between the two.
2. `saliency` — gradient × input and integrated gradients of the chosen token's logit with
   respect to the token embeddings, one number per input token.
3. `patching` — activation patching between a clean and a corrupted prompt: the clean residual
   stream at each layer × position, and each head's output, patched into the corrupted run.
4. `build_index` / `where_from` — how often the last n = 1…4 tokens followed by the predicted token
   occur in the training text (a sorted n-gram index over token ids).

What each can claim, in one line each (the docstrings say more):
- DLA is linear: it splits this pass's logit exactly, but a part's share is not what removing
  the part would do (the final norm's scale is frozen, later layers would react). Ablation is
  what removing it does, on this one prompt, and "zero" and "mean" are two different removals.
- Saliency is local (gradient × input) or path-dependent (integrated gradients: the answer
  depends on the baseline). Neither says the model "looks at" a token.
- Patching shows where information that *distinguishes the two prompts* lives; it says nothing
  about what the prompts share.
- n-gram counts show what the training text makes plausible; the model need not have used them.
- Attention weights are none of the above: attention is not explanation.

`why` gathers them into one answer with a paragraph written from its numbers (no language model).
One module an idea: `prompt` (ids, the token asked about, and the model's own forward with hooks:
every method runs on it), `attribution`, `input_saliency`, `activation_patching`, `ngrams`, `report`
(the answer and its paragraph), and `translation` (the translator's source saliency beside its
cross-attention).
"""
from __future__ import annotations

from toyviz.interpret.explain.activation_patching import PAIRS, Pair, Patching, patch_run, patching
from toyviz.interpret.explain.attribution import KINDS, Components, ablated_logits, components, spearman
from toyviz.interpret.explain.prompt import encode, heads_site, resid_pre, run
from toyviz.interpret.explain.input_saliency import Saliency, saliency
from toyviz.interpret.explain.ngrams import Ngram, NgramIndex, build_index, corpus_ids, example_text, occurrences, where_from
from toyviz.interpret.explain.report import PANELS, TOP_CHOICES, Why, paragraph, top_next, why
from toyviz.interpret.explain.translation import SourceSaliency, source_saliency

__all__ = ["KINDS", "Components", "ablated_logits", "components", "spearman", "encode", "heads_site",
           "resid_pre", "run", "Ngram", "NgramIndex", "build_index", "corpus_ids", "example_text", "occurrences",
           "where_from", "PAIRS", "Pair", "Patching", "patch_run", "patching", "Saliency", "saliency", "Why",
           "paragraph", "why", "PANELS", "TOP_CHOICES", "top_next", "SourceSaliency", "source_saliency"]
