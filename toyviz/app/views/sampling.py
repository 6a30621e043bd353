"""The Sample tab: the next token's distribution, live generation streamed at a reading pace, the KV cache."""
from __future__ import annotations

import html
import re
import time
from typing import Iterator

from toyviz.app.controls import checked, setting
from toyviz.app.explorer import BUSY_GENERATIONS, Explorer, clean_prompt
from toyviz.app.figures import message
from toyviz.app.figures import sampling as sampling_figs
from toyviz.errors import UserError


def sampling_settings(temperature, top_k, top_p) -> tuple[float, int, float]:
    """The sampling sliders' values clamped to their ranges (controls.RANGES)."""
    return setting("temperature", temperature), setting("top_k", top_k), setting("top_p", top_p)


def next_token_view(explorer: Explorer, prompt, temperature=0.8, top_k=50, top_p=0.95, projector=False):
    tr, note = explorer.trace(prompt)
    t, k, p = sampling_settings(temperature, top_k, top_p)
    return note, sampling_figs.next_token_bars(tr.logits[-1], explorer.gpt.tokenizer.piece, temperature=t, top_k=k,
                                               top_p=p, projector=projector)


# Live sampling shows the tokens at a reading pace, at most TOKENS_PER_S (a fast CPU flashes 64 tokens up
# in under a second, which hides that the model writes one token at a time; not when more than
# BUSY_GENERATIONS stream at once, where a queue waits for the workers the sleeping streams hold), sends the
# text at most TEXT_EVERY_S apart (tokens that come faster go together) and the figures with the last token
# only. A page sent more updates than it can draw falls behind the server: it freezes, and Stop arrives
# after the generation is over.
# What a page can draw: Gradio's page, for every streamed update, re-reads the value of every component
# that any event has shown a progress for (a structured clone each), so an update costs more with every
# tab a visitor has opened (found with Chromium's CPU profiler). After opening every tab, one update cost
# the page ~45 ms on this 2-core machine: at 32 updates/s the page showed 128 tokens 1.3-1.7 s after they
# arrived, at 12/s it kept up, also with the CPU slowed 2x (a student's laptop; benchmarks.stream.keeping_up).
# So TEXT_EVERY_S is a little under two paced tokens: every update shows two new tokens, 12 a second.
# The server also sends at most UPDATES_PER_S in all, so with many streams each one's interval grows with
# their number: every update costs the server's event loop (Gradio rebuilds every output an update leaves
# unchanged), and a class's 16 streams at 40 a second each kept it busy enough to delay every answer
# (profiled under benchmarks.load).
TOKENS_PER_S, TEXT_EVERY_S, UPDATES_PER_S = 24, 1 / 13, 80


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


def steering_feature(explorer: Explorer, feature, alpha) -> int:
    """The steering box's feature number if the dictionary has it (-1: off); a number past it is refused,
    not steered with the nearest feature. Without a dictionary, generating unsteered still works."""
    off = " (-1 = off)"
    try:
        upper = len(explorer.features()) - 1
    except UserError:
        if setting("steer_alpha", alpha) != 0 and checked("steer_feature", feature, 2**31 - 1, off) >= 0:
            raise
        upper = 2**31 - 1
    return checked("steer_feature", feature, upper=upper, meaning=off)


def generate_view(explorer: Explorer, prompt, temperature=0.8, top_k=50, top_p=0.95, max_new=80, seed=0,
                  projector=False, steer_feature=-1, steer_alpha=0.0) -> Iterator[tuple]:
    """Live sampling: yields (note, text HTML, next-token bars, generated-tokens figure) as tokens arrive,
    None meaning "unchanged": the text at most every TEXT_EVERY_S and at most TOKENS_PER_S, the figures
    with the last token. A feature and a strength steer it (the feature's direction added at its layer)."""
    gpt = explorer.need_gpt()
    text, note = clean_prompt(prompt)
    t, k, p = sampling_settings(temperature, top_k, top_p)
    max_new, seed = setting("max_new", max_new), setting("seed", seed)
    steer, steered = explorer.steering(steering_feature(explorer, steer_feature, steer_alpha), steer_alpha)
    note += steered
    pieces, tokens, sent, start = [], [], -1.0, time.perf_counter()
    with explorer.generations():
        # every stream decodes in the server's one batch (toyviz.serving.batching): a class's streams share a forward
        for step in gpt.generate(text, max_new, temperature=t, top_k=k, top_p=p, seed=seed, steer=steer,
                                 together=True, n_top=0):
            pieces.append((step.text, step.prob))
            tokens.append((step.piece, step.prob))
            streaming = explorer.generations.now
            if streaming <= BUSY_GENERATIONS:                      # a class waiting: no time to sleep
                time.sleep(max(0.0, start + len(pieces) / TOKENS_PER_S - time.perf_counter()))
            if time.perf_counter() - sent >= max(TEXT_EVERY_S, streaming / UPDATES_PER_S):
                sent = time.perf_counter()
                yield note, probability_html(pieces), None, None
    # at the end: all the text, the last step's next-token bars, the same tokens as a figure (hover, PNG)
    bars = sampling_figs.next_token_bars(step.logits, gpt.tokenizer.piece, temperature=t, top_k=k, top_p=p,
                                         projector=projector)
    yield note, probability_html(pieces), bars, sampling_figs.generated_tokens(tokens, projector=projector)


def generation_pending(projector=False):
    """The next-token bars and the generated-tokens figure while a generation streams, and after Stop:
    cleared with the reason (the last run's figures would pass for this one's)."""
    when = "when a generation runs to its end (Stop leaves this empty)"
    return (message(f"Drawn {when}:<br>the probabilities after its last token.", "Next token after the generated text",
                    filename="toyviz-sampling", projector=projector),
            message(f"Drawn {when}:<br>each token coloured by its probability.", "The generated tokens",
                    filename="toyviz-generated", projector=projector))


def kv_cache_view(explorer: Explorer, prompt) -> str:
    r = explorer.kv_cache_benchmark(prompt)
    w, wo = r["with_cache"], r["without_cache"]
    return (f"Prompt {r['prompt_tokens']} tokens + {r['new_tokens']} new (greedy): the model processed "
            f"**{w['positions_processed']:,}** token positions with the KV cache and **{wo['positions_processed']:,}** "
            f"without; **{w['tokens_per_second']}** vs **{wo['tokens_per_second']}** tokens/s on this machine. "
            "The cache keeps each layer's keys and values, so a new token only computes its own.")
