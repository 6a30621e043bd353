"""One answer to "why did the GPT predict this token?": the four methods run on one prompt and
token, the logit lens's verdict on when the token came up, and a paragraph written from those
numbers by rules (no language model), each number tied to the panel it comes from.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from toyviz.api import GPT
from toyviz.interpret.readout import logit_lens
from toyviz.interpret.explain.attribution import Components, components
from toyviz.interpret.explain.prompt import check_position, encode, pick_token
from toyviz.interpret.explain.input_saliency import Saliency, saliency
from toyviz.interpret.explain.ngrams import Ngram, NgramIndex, where_from

# the panels a paragraph's numbers point at (the tab gives its figures these element ids)
PANELS = {"prediction": "why-top", "components": "why-components-plot", "saliency": "why-saliency-plot",
          "lens": "why-lens-plot", "sources": "why-sources"}
TOP_CHOICES = 10              # next tokens offered to pick from
PARAGRAPH_COMPONENTS = 3      # components named in the paragraph
PARAGRAPH_TOKENS = 3          # salient input tokens named in the paragraph


@dataclass
class Why:
    """Everything the tab shows for one (prompt, token): see each field's method for what it can claim."""
    tokens: list[str]
    position: int
    token: int
    piece: str
    probability: float
    top: list[tuple[int, str, float]]     # the TOP_CHOICES most likely next tokens (id, piece, p)
    components: Components
    saliency: Saliency
    lens_names: list[str]                 # "embed", "after layer 0", …
    lens_rank: list[int]                  # the token's rank (0 = first) in the logit lens after each of those
    lens_probability: list[float]
    sources: list[Ngram] | None           # None: no index of the training text here
    sources_reason: str = ""              # why sources is None

    @property
    def first_top_layer(self) -> str | None:
        """The first lens row that ranks the token first, or None if even the output does not."""
        return next((n for n, r in zip(self.lens_names, self.lens_rank) if r == 0), None)


def lens_verdict(trace, model, position: int, token: int) -> tuple[list[str], list[int], list[float]]:
    """(lens row names, the token's rank after each (0 = first), its probability there)."""
    names, probs = logit_lens(trace, model)                           # [L+1, T, V]
    at = probs[:, position]                                           # (L+1, V)
    rank = (at > at[:, token: token + 1]).sum(-1)
    return names, [int(r) for r in rank], at[:, token].tolist()


def top_next(gpt: GPT, logits: torch.Tensor, n: int = TOP_CHOICES) -> list[tuple[int, str, float]]:
    """The n most likely next tokens after logits (V,): (id, piece, probability)."""
    probs = logits.float().softmax(-1)
    values, ids = probs.topk(min(n, len(probs)))
    return [(int(i), gpt.tokenizer.piece(int(i)), float(v)) for v, i in zip(values, ids)]


@torch.no_grad()
def why(gpt: GPT, text: str, token=None, *, position: int = -1, index: NgramIndex | None = None,
        sources_reason: str = "no index of the training text was given", steps: int = 32,
        top_k: int = 8) -> Why:
    """The evidence for `token` (None: the top one; a piece string or an id) after `text` at
    `position`: components verified by ablation (top_k of them), saliency with integrated gradients
    (`steps`), the logit lens, and with an `index` the training-text counts."""
    ids = encode(gpt, text)
    p = check_position(position, len(ids))
    trace = gpt.model.trace(ids, pieces=gpt.tokenizer.pieces)
    tok = pick_token(gpt, token, trace.logits[p])
    names, rank, lens_p = lens_verdict(trace, gpt.model, p, tok)
    probs = trace.logits[p].float().softmax(-1)
    sources = where_from(index, ids[1: p + 1], tok) if index is not None else None
    return Why(trace.tokens, p, tok, gpt.tokenizer.piece(tok), float(probs[tok]),
               top_next(gpt, trace.logits[p]),
               components(gpt, text, tok, position=p, top_k=top_k), saliency(gpt, text, tok, position=p, steps=steps),
               names, rank, lens_p, sources, "" if index is not None else sources_reason)


Segment = tuple[str, str | None]          # (text, the PANELS key its number comes from, or None)


def _quote(piece: str) -> str:
    return "“" + piece.replace("\n", "↵") + "”"


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def paragraph(w: Why) -> list[Segment]:
    """The evidence in a few sentences, each number a segment tied to the panel it comes from (the
    tab turns them into links); the plain text is "".join of the texts."""
    out: list[Segment] = []
    say = lambda text, panel=None: out.append((text, panel))
    context = "".join(w.tokens[max(1, w.position - 3): w.position + 1]).replace("\n", "↵")
    say(f"After “…{context}” the model gives {_quote(w.piece)} ")
    say(f"{w.probability:.1%}", "prediction")
    top_id, top_piece, top_p = w.top[0]
    if top_id == w.token:
        say(", its top choice. ")
    else:
        say(f"; its top choice is {_quote(top_piece)} at ")
        say(f"{top_p:.1%}", "prediction")
        say(". ")

    c = w.components
    named = c.verified[:PARAGRAPH_COMPONENTS]
    say("Direct logit attribution (against the mean logit) credits most ")
    for k, name in enumerate(named):
        drop = float(c.effect[k, 0])
        say(f"{name} (")
        say(f"{float(c.verified_attribution[k]):+.2f}", "components")
        say(f"; zeroed, log p {'falls' if drop >= 0 else 'rises'} by ")
        say(f"{abs(drop):.2f}", "components")
        say(")" + (", " if k + 2 < len(named) else " and " if k + 2 == len(named) else ". "))
    rho = c.spearman[0]
    if rho == rho:                                               # not nan
        say(f"Over the {len(c.verified)} components removed one at a time, attribution and ablation agree in rank "
            "with Spearman ρ = ")
        say(f"{rho:.2f}", "components")
        say(". ")
    against = c.disagreements("zero")
    if against:
        say(f"For {', '.join(against)} they disagree in sign: attribution is linear, the model is not. ")

    s = w.saliency
    order = sorted(range(len(s.tokens)), key=lambda t: -abs(float(s.integrated[t])))[:PARAGRAPH_TOKENS]
    say("By integrated gradients (from the BOS embedding" if s.baseline == "bos" else
        "By integrated gradients (from a zero embedding")
    say(f", {s.steps} steps, completeness gap ")
    say(f"{s.gap:.2%}", "saliency")
    say(") the input tokens that weigh most are ")
    for k, t in enumerate(order):
        say(f"{_quote(s.tokens[t])} (")
        say(f"{float(s.integrated[t]):+.2f}", "saliency")
        say(")" + (", " if k + 2 < len(order) else " and " if k + 2 == len(order) else ". "))

    first = w.first_top_layer
    if first is None:
        say("No layer of the logit lens ranks it first; the output ranks it ")
        say(_ordinal(w.lens_rank[-1] + 1), "lens")
        say(". ")
    elif first == w.lens_names[-1]:
        say("The logit lens ranks it first only ")
        say("after the last layer", "lens")
        say(". ")
    else:
        say("The logit lens already ranks it first ")
        say(first, "lens")
        say(". ")

    if w.sources is None:
        say(f"Training-text counts: {w.sources_reason}.")
    else:
        seen = [g for g in w.sources if g.count > 0]
        if not seen:
            say(f"{_quote(w.piece)} ")
            say("never", "sources")
            say(f" follows {_quote(w.tokens[w.position])} in the training text: here the model generalises "
                "rather than recalls.")
        else:
            g = seen[-1]
            context = "".join(w.tokens[w.position - g.n + 1: w.position + 1])
            say(f"In the training text {_quote(context)} is followed by {_quote(w.piece)} ")
            say(f"{g.count:,}", "sources")
            say(f" time{'s' if g.count != 1 else ''} out of ")
            say(f"{g.context_count:,}", "sources")
            say(" (only the last token: no longer context is followed by it there)." if g.n == 1 else
                f" (the last {g.n} tokens: the longest context it follows there).")
    return out
