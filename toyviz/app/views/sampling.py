"""The Sample tab: the next token's distribution, live generation streamed at a reading pace, the KV cache."""
from __future__ import annotations

import html
import re
from typing import Iterator

from toyviz.i18n import t
from toyviz.app.explorer import Explorer, clean_prompt
from toyviz.app.figures import message
from toyviz.app.figures import sampling as sampling_figs
from toyviz.serving.pacing import Pace
from toyviz.settings.controls import context_note, settle


def settled(**values) -> tuple[list, str]:
    """Each control's value settled by the one rule (toyviz.settings.controls.settle), in order, and the notes
    of those it changed."""
    pairs = [settle(name, value) for name, value in values.items()]
    return [value for value, _ in pairs], "".join(note for _, note in pairs)


def next_token_view(explorer: Explorer, prompt, temperature=0.8, top_k=50, top_p=0.95, projector=False):
    tr, note = explorer.caches.trace(prompt)
    (t, k, p), said = settled(temperature=temperature, top_k=top_k, top_p=top_p)
    return note + said, sampling_figs.next_token_bars(tr.logits[-1], explorer.gpt.tokenizer.piece, temperature=t,
                                                      top_k=k, top_p=p, projector=projector)


# control characters other than newline and tab, shown in caret notation as the figures show them (raw, a
# browser draws an empty box); the page's sampler writes the same (web/src/figures.js probabilitySpan)
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


def probability_html(pieces: list[tuple[str, float]]) -> str:
    """Generated text with each token's background as dark as the probability it was drawn with. Only
    spans, no wrapper: each streamed update extends the last one, so Gradio sends just the new spans."""
    caret = lambda m: "^" + chr(ord(m.group()) ^ 0x40)
    return "".join(f'<span class="token-prob" title="p = {p:.3f}" style="background: rgba(99,102,241,'
                   f'{0.12 + 0.6 * p:.2f})">{CONTROL.sub(caret, html.escape(text, quote=False))}</span>'
                   for text, p in pieces)


def steering(explorer: Explorer, feature, alpha) -> tuple[int, float, str]:
    """(the steering feature, its strength, the note) settled by the one rule: a feature past the dictionary's
    last is the last, said in the note. Without a dictionary, generating unsteered still works."""
    alpha, alpha_note = settle("steer_alpha", alpha)
    wanted, below_note = settle("steer_feature", feature, high=2**31 - 1)      # its top needs the dictionary
    if wanted < 0 or alpha == 0:                # no dictionary needed to generate without one
        return -1, alpha, alpha_note + (below_note if wanted < 0 else "")
    feature, feature_note = settle("steer_feature", feature, high=len(explorer.caches.features()) - 1)
    return feature, alpha, alpha_note + feature_note


def generate_view(explorer: Explorer, prompt, temperature=0.8, top_k=50, top_p=0.95, max_new=80, seed=0,
                  projector=False, steer_feature=-1, steer_alpha=0.0) -> Iterator[tuple]:
    """Live sampling: yields (note, text HTML, next-token bars, generated-tokens figure) as tokens arrive,
    None meaning "unchanged": the text as often as its pace allows (toyviz.serving.pacing), the figures
    with the last token. A feature and a strength steer it (the feature's direction added at its layer)."""
    gpt = explorer.models.need_gpt()
    text, note = clean_prompt(prompt)
    (t, k, p, max_new, seed), said = settled(temperature=temperature, top_k=top_k, top_p=top_p, max_new=max_new,
                                             seed=seed)
    feature, alpha, steer_note = steering(explorer, steer_feature, steer_alpha)
    steer, steered = explorer.steering(feature, alpha)
    dropped = gpt.encode(text)[1]                # it writes after the prompt's last context of tokens
    note += said + steer_note + (context_note(gpt.config.context, dropped, "last") if dropped else "") + steered
    pieces, tokens, pace = [], [], Pace()
    with explorer.generations():
        # every stream decodes in the server's one batch (toyviz.serving.batching): a class's streams share a forward
        for step in gpt.generate(text, max_new, temperature=t, top_k=k, top_p=p, seed=seed, steer=steer,
                                 together=True, n_top=0):
            pieces.append((step.text, step.prob))
            tokens.append((step.piece, step.prob))
            streaming = explorer.generations.now
            pace.wait(len(pieces), streaming)
            if pace.due(streaming):
                yield note, probability_html(pieces), None, None
    # at the end: all the text, the last step's next-token bars, the same tokens as a figure (hover, PNG)
    bars = sampling_figs.next_token_bars(step.logits, gpt.tokenizer.piece, temperature=t, top_k=k, top_p=p,
                                         projector=projector)
    yield note, probability_html(pieces), bars, sampling_figs.generated_tokens(tokens, projector=projector)


def generation_pending(projector=False):
    """The next-token bars and the generated-tokens figure while a generation streams, and after Stop:
    cleared with the reason (the last run's figures would pass for this one's)."""
    return (message(t("notes.sampling.pending_bars"), t("notes.sampling.pending_bars_title"),
                    filename="toyviz-sampling", projector=projector),
            message(t("notes.sampling.pending_tokens"), t("notes.sampling.pending_tokens_title"),
                    filename="toyviz-generated", projector=projector))


def kv_cache_view(explorer: Explorer, prompt) -> str:
    r = explorer.kv_cache_benchmark(prompt)
    w, wo = r["with_cache"], r["without_cache"]
    return t("notes.sampling.kv", prompt=r["prompt_tokens"], new=r["new_tokens"],
             with_cache=f"{w['positions_processed']:,}", without=f"{wo['positions_processed']:,}",
             speed_with=w["tokens_per_second"], speed_without=wo["tokens_per_second"])
