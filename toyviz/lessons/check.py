"""A parsed lesson against the loaded models: a layer, head, query position, snapshot or feature they have not is a
mistake named at the line that set it, like the file's own mistakes (toyviz.lessons.format)."""
from __future__ import annotations

from pathlib import Path

from toyviz.api import GPT, Translator
from toyviz.interpret.dictionary import load_features
from toyviz.lessons.format import Lesson, Mistakes
from toyviz.models.checkpoint import snapshots


def stack_size(model: str, gpt: GPT, translator: Translator | None) -> tuple[str, int, int] | None:
    """(its name, layers, heads) of the stack a view shows; None when that model is not loaded."""
    if model == "gpt":
        return "the GPT", gpt.config.n_layer, gpt.config.n_head
    if translator is None:
        return None
    config = translator.config
    layers = config.n_encoder_layer if model == "encoder" else config.n_decoder_layer
    return f"the translator's {model}", layers, config.n_head


def check(lesson: Lesson, gpt: GPT, translator: Translator | None = None, features=None) -> Lesson:
    """The lesson's views against the loaded models: a layer, head, query position, snapshot or feature they have
    not raises LessonError naming the line that set each. `features`: how to get the GPT's dictionary, read only
    when a step names a feature (the app passes its cached one; default: loaded from the GPT's checkpoint).
    → the lesson."""
    mistakes, count = Mistakes(lesson.name), len(snapshots(Path(gpt.source)))
    for step in lesson.steps:
        v, limits = step.view, {}
        if stack := stack_size(v["model"], gpt, translator):
            name, layers, heads = stack
            limits = {"layer": (layers, f"{name} has {layers} layers"), "head": (heads, f"{name} has {heads} heads")}
        tokens = len(gpt.encode(v["prompt"])[0])
        limits["query"] = (tokens, f"the prompt is {tokens} tokens (BOS first), positions 0 to {tokens - 1}")
        limits["snapshot"] = (count, f"the GPT has {count} snapshots (the last is the final model)")
        if max(v["feature"], v["steer_feature"]) >= 0:          # the dictionary is loaded only when a step uses it
            size = len(features() if features else load_features(gpt))
            limits["feature"] = limits["steer_feature"] = (size, f"the GPT's dictionary has {size} features")
        for key, (size, why) in limits.items():
            if v[key] >= size:          # a step after the one that set it repeats the mistake: named once
                mistakes.note(f"{key} {v[key]}: {why}", step.origin.get(key, step.line))
    mistakes.raise_any()
    return lesson
