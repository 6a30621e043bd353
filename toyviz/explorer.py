"""What the app holds between requests: the loaded models, a trace cache, and input checking.

No Gradio here: the app turns `PromptError` into a message in the page. Every value that comes
from a browser or the HTTP API passes through `clamp` or a check before it reaches a model, so a
wrong type or an absurd number gives a message or a clamped value, never a traceback.
"""
from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from pathlib import Path

from .api import GPT, PromptError, Translator
from .checkpoint import CHECKPOINTS

EXPERIMENTS = CHECKPOINTS / "experiments"

MAX_PROMPT_CHARS = 20_000     # longer prompts are cut before tokenising (the context holds far less)
MAX_NEW_TOKENS = 256          # one visitor cannot hold a worker for long
MAX_BEAM = 8
MODELS = ("gpt", "encoder", "decoder")      # what the model picker offers: the GPT or one translator stack


def clamp(value, low, high, kind=float, name="value"):
    """A number from the browser/API forced into [low, high]; junk gives a PromptError."""
    try:
        number = kind(float(value))
    except (TypeError, ValueError):
        raise PromptError(f"{name} must be a number, got {value!r}") from None
    if number != number:                                   # NaN
        raise PromptError(f"{name} must be a number, got NaN")
    return min(max(number, kind(low)), kind(high))


def clean_prompt(text) -> tuple[str, str]:
    """→ (text the model gets, a note for the user or ""). Strips NULs, cuts very long input."""
    if not isinstance(text, str):
        raise PromptError(f"the prompt must be text, not {type(text).__name__}")
    note = ""
    if "\x00" in text:
        text, note = text.replace("\x00", ""), "NUL characters were removed. "
    if len(text) > MAX_PROMPT_CHARS:
        note += f"The prompt was cut from {len(text):,} to {MAX_PROMPT_CHARS:,} characters. "
        text = text[:MAX_PROMPT_CHARS]
    if not text.strip():
        raise PromptError("The prompt is empty: type a few words first.")
    return text, note


class LRU:
    """A small thread-safe least-recently-used cache (the app serves several users at once)."""

    def __init__(self, size: int):
        self.size, self.items, self.lock = size, OrderedDict(), threading.Lock()

    def get(self, key, make):
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = make()                                     # computed outside the lock
        with self.lock:
            self.items[key] = value
            while len(self.items) > self.size:
                self.items.popitem(last=False)
        return value


class Explorer:
    """The models the app shows, and one trace per (model, prompt, options), shared by every tab."""

    def __init__(self, gpt: GPT | None, translator: Translator | None, cache_size: int = 32):
        self.gpt, self.translator = gpt, translator
        self.traces, self.translations = LRU(cache_size), LRU(cache_size)
        self.extra_models = LRU(4)           # training snapshots and the no-mask experiment, loaded on use

    def need_gpt(self) -> GPT:
        if self.gpt is None:
            raise PromptError("no GPT checkpoint is loaded: run `python -m toyviz.train gpt` first")
        return self.gpt

    def need_translator(self) -> Translator:
        if self.translator is None:
            raise PromptError("no translator checkpoint is loaded: run `python -m toyviz.train translator` first")
        return self.translator

    def trace(self, prompt, *, causal: bool = True, ablate: tuple = ()):
        """(trace, note): one traced forward per distinct prompt and options, cached."""
        gpt = self.need_gpt()
        text, note = clean_prompt(prompt)
        key = (id(gpt), text, causal, tuple(sorted(ablate)))
        trace = self.traces.get(key, lambda: gpt.trace(text, causal=causal, ablate=ablate))
        if trace.truncated:
            note += (f"Only the first {len(trace.tokens)} tokens fit the model's context; "
                     f"{trace.truncated} more were left out. ")
        return trace, note

    def view(self, prompt, model: str = "gpt"):
        """(what the Tokens, Positions, Attention, Layer norm and Residual stream tabs draw, note): the
        GPT's trace of the prompt, or the translator's encoder or decoder stack on the prompt read as English
        (translated greedily: these tabs show the stacks, not the search)."""
        if model == "gpt":
            return self.trace(prompt)
        if model not in MODELS:
            raise PromptError(f"model must be one of {', '.join(MODELS)}, not {model!r}")
        out, note = self.translate(prompt, 1)
        how = ("it has no causal mask: every token reads the whole sentence" if model == "encoder" else
               "causal like the GPT, it reads its own Spanish so far")
        return out.trace.stack(model), note + f"The translator's {model} ({how}); its greedy translation: «{out.text}». "

    @staticmethod
    def layer_head(view, layer, head) -> tuple[int, int]:
        """Layer and head clamped to the stack on screen (the sliders are sized for the GPT)."""
        return (clamp(layer, 0, view.n_layer - 1, int, "layer"), clamp(head, 0, view.n_head - 1, int, "head"))

    def translate(self, text, beam):
        translator = self.need_translator()
        text, note = clean_prompt(text)
        beam = clamp(beam, 1, MAX_BEAM, int, "beam")
        out = self.translations.get((text, beam), lambda: translator.translate(text, beam=beam))
        if out.truncated:
            note += f"The sentence was cut to the translator's context ({out.truncated} tokens left out). "
        return out, note

    # ---- training history and snapshots of the GPT, where its checkpoint folder has them ----
    def history(self) -> list[dict]:
        path = Path(self.need_gpt().source) / "history.json"
        return json.loads(path.read_text()) if path.is_file() else []

    def snapshots(self) -> list[Path]:
        """Snapshot folders in training order, then the final checkpoint itself."""
        folder = Path(self.need_gpt().source)
        found = sorted(p for p in (folder / "snapshots").glob("step-*") if (p / "config.json").is_file())
        return found + [folder]

    def snapshot_trace(self, index, prompt):
        from . import load
        paths = self.snapshots()
        path = paths[clamp(index, 0, len(paths) - 1, int, "snapshot")]
        model = self.extra_models.get(str(path), lambda: load(str(path), device=str(self.gpt.device)))
        text, _ = clean_prompt(prompt)
        return path, self.traces.get((str(path), text, True, ()), lambda: model.trace(text))

    def experiment_results(self) -> dict:
        path = EXPERIMENTS / "results.json"
        if not path.is_file():
            raise PromptError("no experiment results yet: run `python -m toyviz.experiments` (about an hour on 2 cores)")
        return json.loads(path.read_text())

    def no_mask_model(self):
        """The GPT trained without the causal mask, loaded on first use."""
        from . import load
        folder = EXPERIMENTS / "no_causal_mask"
        if not (folder / "config.json").is_file():
            raise PromptError("the no-mask model is not there: run `python -m toyviz.experiments`")
        device = str(self.gpt.device) if self.gpt else None          # beside the GPT, or wherever load picks
        return self.extra_models.get(str(folder), lambda: load(str(folder), device=device))

    def kv_cache_benchmark(self, prompt, new_tokens: int = 48) -> dict:
        """Generate the same tokens with and without the KV cache: positions processed and tokens/s."""
        gpt = self.need_gpt()
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

