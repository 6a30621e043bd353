"""One answer to "why did the GPT predict this token?": the four methods run on one prompt and
token, the logit lens's verdict on when the token came up, and a paragraph written from those
numbers by rules (no language model), each number tied to the panel it comes from.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from toyviz.api import GPT
from toyviz.i18n import LANGUAGES, Term, current, parts, said, t
from toyviz.interpret.readout import logit_lens, stream_name
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
    sources_reason: str | Exception = ""  # why sources is None (a UserError: said in the event's language)

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
        sources_reason: str | Exception = "no index of the training text was given", steps: int = 32,
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
    return t("why.quoted", piece=piece.replace("\n", "↵"))


def _ordinal(n: int) -> str:
    """n as a rank: 3rd in English; elsewhere the catalogue's why.rank ("3.º")."""
    if current() == LANGUAGES[0]:
        return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"
    return t("why.rank", n=n)


def paragraph(w: Why) -> list[Segment]:
    """The evidence in a few sentences (the catalogues' why.*, in the event's language), each number a segment tied
    to the panel it comes from (the tab turns them into links); the plain text is "".join of the texts."""
    out: list[Segment] = []

    def say(key: str, panels: dict[str, str] = {}, **fields):      # panels: field → the panel it points at
        out.extend((text, panels.get(name)) for text, name in parts("why." + key, **fields))

    def listed(items: list, one):                                    # a, b and c: one(item) says each
        for k, item in enumerate(items):
            one(item)
            say("comma" if k + 2 < len(items) else "and" if k + 2 == len(items) else "stop")

    context = "".join(w.tokens[max(1, w.position - 3): w.position + 1]).replace("\n", "↵")
    say("gives", {"p": "prediction"}, context=context, piece=_quote(w.piece), p=f"{w.probability:.1%}")
    top_id, top_piece, top_p = w.top[0]
    if top_id == w.token:
        say("top_is_it")
    else:
        say("top_other", {"top_p": "prediction"}, top=_quote(top_piece), top_p=f"{top_p:.1%}")

    c = w.components
    say("attribution")
    listed(list(enumerate(c.verified[:PARAGRAPH_COMPONENTS])), lambda item: say(
        "component_falls" if float(c.effect[item[0], 0]) >= 0 else "component_rises",
        {"attribution": "components", "drop": "components"}, name=item[1],
        attribution=f"{float(c.verified_attribution[item[0]]):+.2f}", drop=f"{abs(float(c.effect[item[0], 0])):.2f}"))
    rho = c.spearman[0]
    if rho == rho:                                               # not nan
        say("spearman", {"rho": "components"}, count=len(c.verified), rho=f"{rho:.2f}")
    against = c.disagreements("zero")
    if against:
        say("disagree", names=", ".join(against))

    s = w.saliency
    order = sorted(range(len(s.tokens)), key=lambda t: -abs(float(s.integrated[t])))[:PARAGRAPH_TOKENS]
    say("saliency_bos" if s.baseline == "bos" else "saliency_zero", {"gap": "saliency"}, steps=s.steps,
        gap=f"{s.gap:.2%}")
    listed(order, lambda t: say("salient", {"weight": "saliency"}, token=_quote(s.tokens[t]),
                                weight=f"{float(s.integrated[t]):+.2f}"))

    first = w.first_top_layer
    if first is None:
        say("lens_never", {"rank": "lens"}, rank=_ordinal(w.lens_rank[-1] + 1))
    elif first == w.lens_names[-1]:
        say("lens_last", {"after": "lens"}, after=Term("why.after_last"))
    else:
        say("lens_first", {"layer": "lens"}, layer=stream_name(first))

    if w.sources is None:
        say("no_counts", reason=said(w.sources_reason))
    else:
        seen = [g for g in w.sources if g.count > 0]
        if not seen:
            say("never", {"never": "sources"}, piece=_quote(w.piece), never=Term("why.never_word"),
                last=_quote(w.tokens[w.position]))
        else:
            g = seen[-1]
            context = "".join(w.tokens[w.position - g.n + 1: w.position + 1])
            say("followed_one" if g.count == 1 else "followed", {"count": "sources", "total": "sources"},
                context=_quote(context), piece=_quote(w.piece), count=f"{g.count:,}", total=f"{g.context_count:,}")
            say("only_last" if g.n == 1 else "last_n", n=g.n)
    return out
