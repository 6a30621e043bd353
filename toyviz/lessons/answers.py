"""The answers a reveal computes: each `answer:` of a lesson (toyviz.lessons.format.ANSWERS) asked of the live GPT on
the step's view, or of the live run a `train:` step started, never read from the file.

The presenter (toyviz.app.presenter) asks once, at the step's first reveal, and hands the answer to the lecture's
store, which only keeps it.
"""
from __future__ import annotations

import json

import torch

from toyviz.api import GPT
from toyviz.i18n import LANGUAGES, Term, catalogue, mistake, t
from toyviz.interpret.causal_mask import first_difference, prediction_shift, with_last_word
from toyviz.interpret.positions import distinguishability
from toyviz.lessons.format import LIVE_ANSWERS, Answer, Step, matches
from toyviz.models.layers import ENCODING_VARIANTS, sinusoidal_encoding
from toyviz.models.sampling import draw, next_token_probs
from toyviz.settings.controls import FORMULA, KV_NEW_TOKENS, LAST_WORD, clamp
from toyviz.training.live import LiveRuns
from toyviz.training.live_answers import BORN_AT, crossing_step

DRAWS = 10                  # "distinct draws": how many next tokens the class imagines drawing


def quoted(piece: str) -> str:
    return json.dumps(piece, ensure_ascii=False)


def last_logits(gpt: GPT, view: dict) -> torch.Tensor:
    return gpt.trace(view["prompt"], causal=True).logits[-1]


def top_token(gpt, view):
    probs = next_token_probs(last_logits(gpt, view))
    p, i = probs.max(0)
    piece = gpt.tokenizer.piece(int(i))
    return piece, ("top_token", {"token": quoted(piece), "p": float(p)})


def top_probability(gpt, view):
    logits, t = last_logits(gpt, view), view["temperature"]
    at_t, at_1 = float(next_token_probs(logits, t).max()), float(next_token_probs(logits).max())
    value = "higher" if at_t > at_1 + 1e-6 else "lower" if at_t < at_1 - 1e-6 else "the same"
    return value, ("top_probability", {"at_t": at_t, "t": t, "at_1": at_1})


def kept_tokens(gpt, view):
    probs = next_token_probs(last_logits(gpt, view), view["temperature"], view["top_k"], view["top_p"])
    kept = int((probs > 0).sum())
    return str(kept), ("kept_tokens", {"kept": kept, "vocab": probs.numel(), "t": view["temperature"],
                                       "top_k": view["top_k"], "top_p": view["top_p"]})


def distinct_draws(gpt, view):
    probs = next_token_probs(last_logits(gpt, view), view["temperature"], view["top_k"], view["top_p"])
    generator = torch.Generator().manual_seed(view["seed"])
    drawn = [gpt.tokenizer.piece(draw(probs, generator)) for _ in range(DRAWS)]
    return str(len(set(drawn))), ("distinct_draws", {"draws": DRAWS, "seed": view["seed"],
                                                     "drawn": ", ".join(map(quoted, drawn))})


def attended_token(gpt, view):
    trace = gpt.trace(view["prompt"], causal=True)
    # clamped to the model as the Attention tab clamps them (a lesson is checked against the model when it opens,
    # and may have been edited since)
    layer = clamp(view["layer"], 0, trace.n_layer - 1, int, "layer")
    head = clamp(view["head"], 0, trace.n_head - 1, int, "head")
    query = clamp(view["query"], -len(trace.tokens), len(trace.tokens) - 1, int, "query") % len(trace.tokens)
    weights = trace.attention[layer, head, query]
    key = int(weights.argmax())
    return trace.tokens[key], ("attended_token", {"head": f"{layer}.{head}", "share": float(weights[key]),
                                                  "query": query, "query_token": quoted(trace.tokens[query]),
                                                  "at": key, "at_token": quoted(trace.tokens[key])})


def leak(gpt, view):
    text = view["prompt"]
    edited = with_last_word(text, LAST_WORD)
    masked, changed = gpt.trace(text, causal=True), gpt.trace(edited, causal=True)
    unmasked, changed_unmasked = gpt.trace(text, causal=False), gpt.trace(edited, causal=False)
    upto = first_difference(masked.token_ids, changed.token_ids)
    # upto ≥ 1: both prompts start with the same BOS
    shut = float(prediction_shift(masked, changed, upto).max())
    open_ = float(prediction_shift(unmasked, changed_unmasked, upto).max())
    return ("yes" if open_ > 1e-4 else "no"), ("leak", {"word": quoted(LAST_WORD), "open": open_, "shut": shut})


def kv_speedup(gpt, view):
    positions = {cached: sum(step.positions for step in gpt.generate(view["prompt"], KV_NEW_TOKENS, temperature=0.0,
                                                                     use_cache=cached))
                 for cached in (True, False)}
    w, wo = positions[True], positions[False]
    return str(round(wo / w)), ("kv_speedup", {"new": KV_NEW_TOKENS, "without": wo, "with_cache": w,
                                               "ratio": wo / w})


def confused_encoding(gpt, view):
    length, d_model = FORMULA["length"], FORMULA["d_model"]
    distance = {v: distinguishability(sinusoidal_encoding(length, d_model, v)) for v in ENCODING_VARIANTS}
    worst = min(distance, key=distance.get)
    return worst, ("confused_encoding", {"distances": ", ".join(f"{v} {d:.3f}" for v, d in distance.items())})


def induction_step(runs: LiveRuns | None, view):
    """The step at which the live run's induction head formed (its best head's induction score reached BORN_AT):
    read off the run a `train: induction` step started, as it stands. A run still on its plateau is not an answer
    yet: the reveal is refused with why, and nothing is stored."""
    run = runs.current() if runs is not None else None
    if run is None or run.recipe != "induction":
        raise mistake("errors.lesson.no_induction_run")
    step = crossing_step(run, BORN_AT)
    last = run.records[-1]["step"] if run.records else 0
    if step is None and run.running:
        raise mistake("errors.lesson.still_training", step=last, steps=run.settings["steps"])
    if step is None:
        return "never", ("never_formed", {"score": BORN_AT, "state": Term("notes.watch.state_" + run.state),
                                          "step": last})
    return str(step), ("induction_step", {"score": BORN_AT, "step": step, "seed": run.seed})


# format.ANSWERS' names → what computes each, of the GPT or (LIVE_ANSWERS) of the live runs: (value, (detail, fields)),
# the detail's sentence the catalogues' answers.detail.<detail> (said in the lecture's language, not the visitor's)
COMPUTED = {
    "top token": top_token,
    "top probability": top_probability,
    "kept tokens": kept_tokens,
    "distinct draws": distinct_draws,
    "attended token": attended_token,
    "leak": leak,
    "kv speed-up": kv_speedup,
    "confused encoding": confused_encoding,
    "induction step": induction_step,
}


def answer(step: Step, gpt: GPT | None, runs: LiveRuns | None = None, lang: str = LANGUAGES[0]) -> Answer:
    """The step's question answered on the step's view by the live GPT, or for a live answer by the run
    `runs` holds (the app's shared runs). A value in words ("higher", "yes", "never") is said in the lesson's
    language `lang`, as its choices are written (the catalogues' answers.*); tokens and numbers are as computed."""
    if step.question is None:
        raise ValueError(f"step {step.title!r} asks no question")
    kind = step.question.answer
    if kind not in LIVE_ANSWERS and gpt is None:
        raise mistake("errors.lesson.no_gpt")
    value, (detail, fields) = COMPUTED[kind](runs if kind in LIVE_ANSWERS else gpt, step.view)
    worded = "answers." + value.replace(" ", "_")
    value = t(worded, lang) if worded in catalogue(LANGUAGES[0]) else value
    choice = next((i for i, c in enumerate(step.question.choices) if matches(c, value)), None)
    return Answer(value, t("answers.detail." + detail, lang, **fields), choice)
