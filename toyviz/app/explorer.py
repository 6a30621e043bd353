"""What the app holds between requests: the loaded models, a trace cache, and input checking.

No Gradio here: the app turns `PromptError` into a message in the page. Every value that comes
from a browser or the HTTP API passes through `controls.clamp` or a check before it reaches a model,
so a wrong type or an absurd number gives a message or a clamped value, never a traceback.
"""
from __future__ import annotations

import json
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

from toyviz.api import GPT, PromptError, Translator
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.app.controls import MAX_PROMPT_CHARS, MODELS, clamp, setting
from toyviz.serving.memory import LRU, MB

EXPERIMENTS = CHECKPOINTS / "experiments"
BUSY_SEARCHES = 2       # searches running at once before a new beam search is greedy: a class must not queue behind them
# generations streaming at once beyond which they stop pacing themselves to a reading speed: a paced stream
# holds its worker while it sleeps, and a class must not queue for a first token behind sleeping streams
BUSY_GENERATIONS = 2


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
    """The models the app shows, and one trace per (model, prompt, options), shared by every tab."""

    def __init__(self, gpt: GPT | None, translator: Translator | None, cache_size: int = 32,
                 problems: dict[str, str] | None = None):
        self.gpt, self.translator = gpt, translator
        self.problems = problems or {}       # "gpt"/"translator" → why it could not be loaded
        # bounded in bytes too: a full-context trace holds ~25 MB, and a class must not grow the server
        # by gigabytes (issue 17: RSS growth ≤ 150 MB); a re-trace costs ~25 ms
        self.traces, self.translations = LRU(cache_size, 32 * MB), LRU(cache_size, 16 * MB)
        self.extra_models = LRU(4)           # training snapshots and the no-mask experiment, loaded on use
        self.histories = LRU(2)              # history.json of the GPT, parsed once
        self.searches, self.generations = Running(), Running()    # translations searched, generations streaming
        self.indexes = LRU(1)                # the n-gram index of the GPT's training text, built on first use
        self.source_gradients = LRU(cache_size, 8 * MB)   # per translation: the Translate tab redraws it per layer/head
        self.explanations = LRU(8, 16 * MB)  # "why this token?" answers: the costliest tab, redrawn on tab switches
        self.feature_maps = LRU(cache_size, 8 * MB)  # a prompt's features

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

    def sizes(self) -> SimpleNamespace:
        """What the controls are sized for: the layer and head sliders serve the GPT and both translator
        stacks (so the largest of them), position sliders the GPT's context, the translate tab's pickers
        the translator, the snapshot slider the GPT's saved snapshots."""
        gpt = self.gpt.config if self.gpt else None
        tr = self.translator.config if self.translator else None
        depths = [gpt.n_layer] if gpt else []
        depths += [tr.n_encoder_layer, tr.n_decoder_layer] if tr else []
        return SimpleNamespace(
            layers=max(depths, default=1), heads=max([c.n_head for c in (gpt, tr) if c], default=1),
            # without a GPT the controls are those of a 1×1 model, so a request still reaches "no GPT loaded"
            gpt_heads=[f"{l}.{h}" for l in range(gpt.n_layer if gpt else 1) for h in range(gpt.n_head if gpt else 1)],
            context=gpt.context if gpt else 2,
            translator_layers=max(tr.n_encoder_layer, tr.n_decoder_layer) if tr else 1,
            translator_heads=tr.n_head if tr else 1, snapshots=len(self.snapshots()) if gpt else 1)

    def need_gpt(self) -> GPT:
        if self.gpt is None:
            raise PromptError("no GPT checkpoint is loaded: " + self.problems.get(
                "gpt", "run `python -m toyviz.train gpt` first"))
        return self.gpt

    def need_translator(self) -> Translator:
        if self.translator is None:
            raise PromptError("no translator checkpoint is loaded: " + self.problems.get(
                "translator", "run `python -m toyviz.train translator` first"))
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
        """Layer and head clamped to the stack on screen (the sliders are sized for the largest stack)."""
        return (clamp(layer, 0, view.n_layer - 1, int, "layer"), clamp(head, 0, view.n_head - 1, int, "head"))

    @staticmethod
    def position(view, position, name: str = "position") -> int:
        """A token position (negative counts from the end) clamped to the prompt on screen."""
        T = len(view.tokens)
        return clamp(position, -T, T - 1, int, name) % T

    def ablated_heads(self, choices) -> tuple[tuple[int, int], ...]:
        """The ablation checkboxes' "layer.head" strings → (layer, head) pairs of the GPT."""
        heads = []
        for choice in choices or []:
            layer, _, head = str(choice).partition(".")
            if not (layer.isdigit() and head.isdigit()):
                raise PromptError(f"heads to switch off are written layer.head (e.g. 1.3), not {choice!r}")
            heads.append((int(layer), int(head)))
        return tuple(heads)

    def mask_experiment(self, prompt, last_word):
        """What the causal mask is for: the prompt and the prompt with its last word replaced, each
        traced with and without the mask → (masked, edited, unmasked, edited unmasked) traces. Without
        the mask the earlier positions' outputs change when a later word does: the future leaks."""
        text, _ = clean_prompt(prompt)
        words = text.rsplit(maxsplit=1)
        edited = (words[0] + " " if len(words) > 1 else "") + (str(last_word or "").strip() or "dream")
        return (self.trace(text)[0], self.trace(edited)[0], self.trace(text, causal=False)[0],
                self.trace(edited, causal=False)[0])

    def translator_layer(self, kind: str, layer) -> tuple[int | None, str]:
        """The translate tab's layer choice ("average" or a number) for the stack `kind` shows → (layer
        or None for the average, a note when the number was past that stack's depth)."""
        if layer in (None, "average"):
            return None, ""
        config = self.need_translator().config
        depth = config.n_encoder_layer if kind == "encoder" else config.n_decoder_layer
        layer = clamp(layer, 0, 10**6, int, "layer")
        if layer < depth:
            return layer, ""
        stack = "encoder" if kind == "encoder" else "decoder"
        return depth - 1, f"The {stack} has {depth} layers: showing its last. "

    def translate(self, text, beam):
        """(translation, note), cached. Under load a beam search that is not cached runs greedily, with a
        note: a beam of 4 costs several greedy searches, and BUSY_SEARCHES at once already fill the CPU."""
        translator = self.need_translator()
        text, note = clean_prompt(text)
        beam = setting("beam", beam)
        out = self.translations.peek((text, beam))
        if out is None:
            with self.searches() as running:
                if beam > 1 and running >= BUSY_SEARCHES:
                    note += (f"Many translations are running: this one is greedy (beam 1) instead of beam {beam}; "
                             "ask again in a moment for the beam search. ")
                    beam = 1
                out = self.translations.get((text, beam), lambda: translator.translate(text, beam=beam))
        if out.truncated:
            note += f"The sentence was cut to the translator's context ({out.truncated} tokens left out). "
        return out, note

    def source_saliency(self, translation, layer: int | None, head: int | None):
        """A translation's source saliency beside its cross-attention (toyviz.interpret.explain.translation)."""
        from toyviz.interpret.explain.translation import source_gradients, source_saliency
        translator = self.need_translator()
        key = (tuple(translation.trace.src_ids), tuple(translation.trace.tgt_ids))
        gradients = self.source_gradients.get(key, lambda: source_gradients(translator, translation))
        return source_saliency(translator, translation, layer, head, gradients)

    # ---- training history and snapshots of the GPT, where its checkpoint folder has them ----
    def history(self) -> list[dict]:
        """The GPT's training history, read once (the Attention tab's head profile asks on every redraw)."""
        path = Path(self.need_gpt().source) / "history.json"
        return self.histories.get(str(path), lambda: json.loads(path.read_text()) if path.is_file() else [])

    def head_profile(self) -> dict | None:
        """The GPT's head scores over its probe set, as training last recorded them (None if it did not)."""
        return next((r["heads"] for r in reversed(self.history()) if "heads" in r), None)

    def snapshots(self) -> list[Path]:
        """Snapshot folders in training order, then the final checkpoint itself."""
        folder = Path(self.need_gpt().source)
        found = sorted(p for p in (folder / "snapshots").glob("step-*") if (p / "config.json").is_file())
        return found + [folder]

    def snapshot_trace(self, index, prompt):
        from toyviz import load
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
        from toyviz import load
        folder = EXPERIMENTS / "no_causal_mask"
        if not (folder / "config.json").is_file():
            raise PromptError("the no-mask model is not there: run `python -m toyviz.experiments`")
        device = str(self.gpt.device) if self.gpt else None          # beside the GPT, or wherever load picks
        return self.extra_models.get(str(folder), lambda: load(str(folder), device=device))

    def no_mask_sample(self, prompt, new_tokens: int = 40) -> str:
        """The no-mask model's greedy continuation of the prompt: it learned to copy the next token,
        which it can no longer see once it writes on its own."""
        text, _ = clean_prompt(prompt)
        return "".join(s.text for s in self.no_mask_model().generate(text, new_tokens, temperature=0.0))

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

    # ---- "why this token?" ----
    def token_choice(self, token) -> str | int | None:
        """The token to explain, as the picker or the API gives it: ""/None → the top one; an id; or a
        piece, where a typed word also matches the token with its leading space ("lord" → " lord")."""
        if token is None or (isinstance(token, str) and token == ""):
            return None
        if isinstance(token, (int, float)) or (isinstance(token, str) and token.strip().isdigit()):
            return int(clamp(token, 0, self.need_gpt().config.vocab_size - 1, int, "token id"))
        if not isinstance(token, str):
            raise PromptError(f"the token must be text or an id, not {type(token).__name__}")
        tokenizer = self.need_gpt().tokenizer
        for candidate in (token, " " + token.strip(), token.strip()):
            if len(tokenizer.encode(candidate)) == 1:
                return candidate
        raise PromptError(f"{token!r} is {len(tokenizer.encode(token))} tokens "
                          f"({' | '.join(tokenizer.pieces(tokenizer.encode(token)))}): pick one token")

    def training_index(self):
        """(the n-gram index of the GPT's training text, "") or (None, why there is none). Built once from
        this machine's copy of the text (the trainer's cache); the app never downloads it."""
        def build():
            from toyviz.interpret import explain
            try:
                return explain.build_index(explain.corpus_ids(self.need_gpt(), fetch=False)), ""
            except PromptError as err:
                return None, str(err)
        return self.indexes.get(id(self.need_gpt()), build)

    def why(self, prompt, token=None):
        """(the evidence for one next token after the prompt, note), cached per (prompt, token)."""
        from toyviz.interpret import explain
        gpt = self.need_gpt()
        text, note = clean_prompt(prompt)
        choice = self.token_choice(token)
        index, reason = self.training_index()
        answer = self.explanations.get((text, choice), lambda: explain.why(gpt, text, choice, index=index,
                                                                           sources_reason=reason))
        dropped = gpt.encode(text)[1]
        if dropped:
            note += f"Only the first {len(answer.tokens)} tokens fit the model's context; {dropped} more were left out. "
        return answer, note

    def patching(self, clean, corrupted, clean_answer="", corrupted_answer=""):
        """Activation patching of a pair the user typed or picked; blank answers: each prompt's top token."""
        from toyviz.interpret import explain
        gpt = self.need_gpt()
        clean, note = clean_prompt(clean)
        corrupted, note2 = clean_prompt(corrupted)
        answers = [None if not a else self.token_choice(a) for a in (clean_answer, corrupted_answer)]
        return explain.patching(gpt, clean, corrupted, *answers), note + note2

    # ---- sparse-autoencoder features ----
    def features(self):
        """The GPT's feature dictionary (loaded once, by the GPT); a PromptError that says how to train one
        when there is none."""
        from toyviz.models.checkpoint import CheckpointError
        try:
            return self.need_gpt().dictionary()
        except CheckpointError as err:
            raise PromptError(str(err)) from None

    def prompt_features(self, prompt):
        """(every feature's activation at every token of the prompt, note), cached per prompt."""
        features = self.features()
        text, note = clean_prompt(prompt)
        return self.feature_maps.get(text, lambda: features.encode(text)), note

    def steering(self, feature, alpha) -> tuple[dict | None, str]:
        """The generation's `steer` for a feature number and strength (feature -1 or alpha 0: none), and a note."""
        alpha = setting("steer_alpha", alpha)
        if setting("steer_feature", feature, upper=2**31 - 1) < 0 or alpha == 0:
            return None, ""                        # no dictionary needed to generate without one
        features = self.features()
        feature = setting("steer_feature", feature, upper=len(features) - 1)
        return features.steer(feature, alpha), (f"Steered: feature #{feature} ({features.labels[feature]}) added "
                                                f"× {alpha:g} at {features.site.name}, at every position. ")

