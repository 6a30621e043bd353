"""What each tab asks of the models, prompt by prompt: `Explorer`, the one object the renderers
(toyviz.app.views) are given. It holds two parts, one concern each: its `models`, the loaded models and
the checks of a user's input against them (toyviz.app.loaded), and its `caches` of what was computed from
them (toyviz.app.caches); it answers here the prompt-level questions the tabs ask, with a note for the user.
"""
from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager

from toyviz.api import GPT, Translator
from toyviz.errors import UserError
from toyviz.i18n import t
from toyviz.interpret.causal_mask import with_last_word
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.app.caches import Caches
from toyviz.app.loaded import Models, clean_prompt
from toyviz.settings.controls import KV_NEW_TOKENS, LAST_WORD, MODELS, setting
from toyviz.interpret.dashboards import said as said_label

EXPERIMENTS = CHECKPOINTS / "experiments"
BUSY_SEARCHES = 2       # searches running at once before a new beam search is greedy: a class must not queue behind them


class Running:
    """How many jobs of one kind run now, counted by `with running() as before:` (`before`: how many
    were running when this one started); thread-safe."""

    def __init__(self):
        self.now, self.lock = 0, threading.Lock()

    @contextmanager
    def __call__(self):
        with self.lock:
            before = self.now
            self.now += 1
        try:
            yield before
        finally:
            with self.lock:
                self.now -= 1


class Explorer:
    """The models the app shows (`models`), what was computed from them, one trace per (model, prompt, options)
    shared by every tab (`caches`), and what each tab asks of them."""

    def __init__(self, gpt: GPT | None, translator: Translator | None, cache_size: int = 32,
                 problems: dict[str, str] | None = None):
        self.models = Models(gpt, translator, problems)
        self.caches = Caches(self.models, cache_size)
        self.searches, self.generations = Running(), Running()    # translations searched, generations streaming

    @classmethod
    def load(cls, gpt: str = "gpt", translator: str = "translator", device: str | None = None) -> "Explorer":
        """Load both models once; a missing or broken one leaves its tabs saying why (the path and the
        reason) instead of a crash."""
        from toyviz import CheckpointError, load
        models, problems = {}, {}
        for name, where in (("gpt", gpt), ("translator", translator)):
            try:
                models[name] = load(where, device=device)
            except CheckpointError as err:
                models[name], problems[name] = None, str(err)
        return cls(models["gpt"], models["translator"], problems=problems)

    @property
    def gpt(self) -> GPT | None:
        return self.models.gpt

    @property
    def translator(self) -> Translator | None:
        return self.models.translator

    def view(self, prompt, model: str = "gpt"):
        """(what the Tokens, Positions, Attention, Layer norm and Residual stream tabs draw, note): the
        GPT's trace of the prompt, or the translator's encoder or decoder stack on the prompt read as English
        (translated greedily: these tabs show the stacks, not the search)."""
        if model == "gpt":
            return self.caches.trace(prompt)
        if model not in MODELS:
            raise UserError(f"model must be one of {', '.join(MODELS)}, not {model!r}")
        out, note = self.translate(prompt, 1)
        return out.trace.stack(model), note + t(f"notes.stack.{model}", translation=out.text)

    def mask_experiment(self, prompt, last_word):
        """What the causal mask is for: the prompt and the prompt with its last word replaced, each
        traced with and without the mask → (masked, edited, unmasked, edited unmasked) traces. Without
        the mask the earlier positions' outputs change when a later word does: the future leaks."""
        text, _ = clean_prompt(prompt)
        edited = with_last_word(text, str(last_word or "").strip() or LAST_WORD)
        return (self.caches.trace(text)[0], self.caches.trace(edited)[0], self.caches.trace(text, causal=False)[0],
                self.caches.trace(edited, causal=False)[0])

    def translate(self, text, beam, register=None):
        """(translation, note), cached. Under load a beam search that is not cached runs greedily, with a
        note: a beam of 4 costs several greedy searches, and BUSY_SEARCHES at once already fill the CPU.
        `register`: today's Spanish or the 1909 Bible's (toyviz.api.REGISTERS; None: the translator's default)."""
        translator = self.models.need_translator()
        text, note = clean_prompt(text, "English sentence")
        beam = setting("beam", beam)
        out = self.caches.translations.peek((text, beam, register))
        if out is None:
            with self.searches() as running:
                if beam > 1 and running >= BUSY_SEARCHES:
                    note += t("notes.translation.busy", beam=beam)
                    beam = 1
                out = self.caches.translations.get((text, beam, register),
                                            lambda: translator.translate(text, beam=beam, register=register))
        if out.truncated:
            note += t("notes.translation.cut", count=out.truncated)
        return out, note

    def patching(self, clean, corrupted, clean_answer="", corrupted_answer=""):
        """Activation patching of a pair the user typed or picked; blank answers: each prompt's top token."""
        from toyviz.interpret import explain
        gpt = self.models.need_gpt()
        clean, note = clean_prompt(clean, "clean prompt")
        corrupted, note2 = clean_prompt(corrupted, "corrupted prompt")
        answers = [None if not a else self.models.token_choice(a) for a in (clean_answer, corrupted_answer)]
        return explain.patching(gpt, clean, corrupted, *answers), note + note2

    def steering(self, feature, alpha) -> tuple[dict | None, str]:
        """The generation's `steer` for a feature number and strength (feature -1 or alpha 0: none), and a note."""
        alpha = setting("steer_alpha", alpha)
        if setting("steer_feature", feature, upper=2**31 - 1) < 0 or alpha == 0:
            return None, ""                        # no dictionary needed to generate without one
        features = self.caches.features()
        feature = setting("steer_feature", feature, upper=len(features) - 1)
        return features.steer(feature, alpha), t("notes.sampling.steered", feature=feature,
                                                 label=said_label(features.labels[feature]), alpha=f"{alpha:g}",
                                                 site=features.site.name)

    def kv_cache_benchmark(self, prompt, new_tokens: int = KV_NEW_TOKENS) -> dict:
        """Generate the same tokens with and without the KV cache: positions processed and tokens/s."""
        gpt = self.models.need_gpt()
        text, _ = clean_prompt(prompt)
        result = {}
        for cached in (True, False):
            start = time.perf_counter()
            steps = list(gpt.generate(text, new_tokens, temperature=0.0, use_cache=cached))
            seconds = time.perf_counter() - start
            result["with_cache" if cached else "without_cache"] = {
                "positions_processed": sum(s.positions for s in steps),
                "tokens_per_second": round(len(steps) / seconds, 1)}
        result["prompt_tokens"] = len(gpt.encode(text)[0])
        result["new_tokens"] = new_tokens
        return result

    # ---- the experiments' results and the GPT trained without the causal mask ----
    def experiment_results(self) -> dict:
        path = EXPERIMENTS / "results.json"
        if not path.is_file():
            raise UserError("no experiment results yet: run `toyviz experiments` (about an hour on 2 cores)")
        return json.loads(path.read_text())

    def no_mask_model(self):
        """The GPT trained without the causal mask, loaded on first use."""
        from toyviz import load
        folder = EXPERIMENTS / "no_causal_mask"
        if not (folder / "config.json").is_file():
            raise UserError("the no-mask model is not there: run `toyviz experiments`")
        device = str(self.gpt.device) if self.gpt else None          # beside the GPT, or wherever load picks
        return self.caches.extra_models.get(str(folder), lambda: load(str(folder), device=device))

    def no_mask_sample(self, prompt, new_tokens: int = 40) -> str:
        """The no-mask model's greedy continuation of the prompt: it learned to copy the next token,
        which it can no longer see once it writes on its own."""
        text, _ = clean_prompt(prompt)
        return "".join(s.text for s in self.no_mask_model().generate(text, new_tokens, temperature=0.0))
