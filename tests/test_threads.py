"""Figures built from many threads at once (issue 17).

Gradio answers each visitor in a worker thread, so a class opening the Space together builds the
same tabs' figures at the same moment, right after the server started. Under 20 concurrent clients
the app raised plotly's `ValueError: Invalid value` (BaseFigure._index_is): the first figures,
built at once, each built the shared house template from the global `pio.templates["plotly_white"]`,
whose child objects plotly creates lazily on first read: threads reading it for the first time
together each made their own children, which then could not find themselves in their parent.

Here 8 threads start together (a barrier) from that cold state — toyviz's templates not built,
plotly_white not yet loaded — and build every tab's figures (the app's render_* calls, with the
shipped GPT and translator, laptop and projector style), for several rounds: no errors, and every
figure's JSON equal to a single-threaded build's.

The same set of every figure checks that figures built without plotly's validation (for speed)
are ones plotly's validation accepts unchanged.
"""
import json
import sys
import threading

import plotly.graph_objects as go
import plotly.io as pio
import pytest
from plotly.io._templates import Lazy   # plotly's "not loaded yet" marker

import toyviz
from toyviz.interpret import explain
from toyviz.app import figures
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.app.figures import attention, experiments, inside, layernorm, mask, message, model as model_figs, positional
from toyviz.app.figures import explain as explain_figs, features as feature_figs, residual, sampling, tokens, translation
from toyviz.interpret import readout
from toyviz.interpret.heads import label_heads
from toyviz.models.size import count_parameters

THREADS = 8
ROUNDS = 3                      # every tab's figures, 8 threads at once
COLD_ROUNDS = 25                # just the first figure of each thread, 8 at once from a cold start
SWITCH_INTERVAL = 2e-4          # s between GIL hand-overs while testing (Python's default: 5 ms)
PROMPT = "To be, or not to be, that is the question"
EDITED = "To be, or not to be, that is the dream"
SENTENCE = "In the beginning God created the heavens and the earth."


@pytest.fixture(autouse=True)
def often_switching():
    """Threads hand the GIL over every 0.2 ms instead of every 5, so races show up in a few rounds: the
    template race failed about 1 in 140 cold builds at 5 ms, 1 in 20–40 at 0.2 ms (8 threads, 2 cores)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL)
    yield
    sys.setswitchinterval(before)


def cold():
    """The state right after the server starts: no house template built, plotly_white not loaded.

    Plotly has no public way to unload a template, so this sets its private registry entry back to
    the marker it loads from: if plotly renames either, this raises instead of racing from a warm start."""
    figures._TEMPLATES.clear()
    pio.templates._templates["plotly_white"] = Lazy


@pytest.fixture(scope="module")
def builders():
    """name → function building one figure, as the app's tabs call them (both styles)."""
    gpt, translator = toyviz.load("gpt"), toyviz.load("translator")
    cfg, piece = gpt.config, gpt.tokenizer.piece
    tr, unmasked = gpt.trace(PROMPT), gpt.trace(PROMPT, causal=False)
    edited, edited_open = gpt.trace(EDITED), gpt.trace(EDITED, causal=False)
    ablated = gpt.trace(PROMPT, ablate=((0, 0), (cfg.n_layer - 1, cfg.n_head - 1)))
    out = translator.translate(SENTENCE, 4)
    stacks = {side: out.trace.stack(side) for side in ("encoder", "decoder")}
    labels = label_heads(tr)
    stack_labels = {side: label_heads(view) for side, view in stacks.items()}
    layer, head, position = cfg.n_layer - 1, min(2, cfg.n_head - 1), 3
    norm = list(tr.layernorms)[0]
    encoding = toyviz.sinusoidal_encoding(len(tr.tokens), cfg.d_model)
    table = gpt.model.pos_emb.weight if cfg.positional == "learned" else None
    counts = count_parameters(gpt.model)
    history = json.loads((CHECKPOINTS / "gpt" / "history.json").read_text())
    results = json.loads((CHECKPOINTS / "experiments" / "results.json").read_text())
    steps = [(s.piece, s.prob) for s in gpt.generate(PROMPT, 6, temperature=0.0)]
    answer = explain.why(gpt, PROMPT)
    pair = explain.PAIRS[1]
    patched = explain.patching(gpt, pair.clean, pair.corrupted, pair.clean_answer, pair.corrupted_answer)
    source_saliency = explain.source_saliency(translator, out)
    dictionary = toyviz.load_features(gpt)
    on_prompt, dashboard = dictionary.encode(PROMPT), dictionary.dashboard(dictionary.by_frequency()[0])

    def tab(pj):
        found = {
            # Tokens, Positions
            "token_pieces": lambda: tokens.token_pieces(tr, projector=pj),
            "embedding_norms": lambda: tokens.embedding_norms(tr, projector=pj),
            "model_encoding": lambda: positional.model_encoding(tr, cfg.positional, table=table, projector=pj),
            "dimension_curves": lambda: positional.dimension_curves(encoding, [0, 1, 8, 9], projector=pj),
            "similarity": lambda: positional.similarity_heatmap(encoding, "cosine", tokens=tr.tokens, projector=pj),
            "formula": lambda: positional.formula_explorer(64, 32, projector=pj),
            "spot_the_bug": lambda: positional.spot_the_bug(32, 64, projector=pj),
            # Attention, Inside a head
            "attention_grid": lambda: attention.attention_grid(tr, labels=labels, projector=pj),
            "attention_grid_scores": lambda: attention.attention_grid(tr, mode="scores", labels=labels, projector=pj),
            "attention_head": lambda: attention.attention_head(tr, layer, head, projector=pj),
            "attention_scores": lambda: attention.attention_head(tr, layer, head, mode="scores", projector=pj),
            "ablation": lambda: attention.ablation_comparison(tr, ablated, piece, projector=pj),
            "head_steps": lambda: inside.head_steps(tr, layer, head, position, projector=pj),
            "masked_vs_unmasked": lambda: inside.masked_vs_unmasked(tr, unmasked, layer, head, projector=pj),
            "leak": lambda: mask.leak_figure(tr, edited, unmasked, edited_open, projector=pj),
            # Layer norm, Residual stream
            "ln_heatmaps": lambda: layernorm.layernorm_heatmaps(tr, projector=pj),
            "ln_curves": lambda: layernorm.layernorm_curves(tr, projector=pj),
            "ln_parameters": lambda: layernorm.layernorm_parameters(tr, norm, projector=pj),
            "ln_histogram": lambda: layernorm.layernorm_histogram(tr, norm, position, projector=pj),
            "residual_norms": lambda: residual.residual_norms(tr, position, projector=pj),
            "residual_shares": lambda: residual.residual_shares(tr, projector=pj),
            "logit_lens": lambda: residual.logit_lens(tr, readout.logit_lens_top(tr, gpt.model), piece, projector=pj),
            "logit_attribution": lambda: residual.logit_attribution(
                tr, readout.direct_logit_attribution(tr, gpt.model, position, minus_mean=True), piece, position,
                projector=pj),
            "gpt_only": lambda: message("The logit lens reads the GPT's predictions: pick the GPT.", "Logit lens",
                                        filename="toyviz-logit-lens", projector=pj),
            # Why this token?
            "why_components": lambda: explain_figs.components_figure(answer.components, projector=pj),
            "why_saliency": lambda: explain_figs.saliency_figure(answer.saliency, projector=pj),
            "why_lens": lambda: explain_figs.lens_figure(answer, projector=pj),
            "why_patching": lambda: explain_figs.patching_figures(patched, gpt.tokenizer.piece, projector=pj)[0],
            "why_patching_heads": lambda: explain_figs.patching_figures(patched, gpt.tokenizer.piece, projector=pj)[1],
            # Features
            "prompt_features": lambda: feature_figs.prompt_features(on_prompt, projector=pj),
            "feature_contexts": lambda: feature_figs.top_contexts(dashboard, projector=pj),
            "feature_histogram": lambda: feature_figs.activation_histogram(dashboard, projector=pj),
            "feature_logits": lambda: feature_figs.logit_effects(dashboard, projector=pj),
            # Sampling, Translation
            "next_token_bars": lambda: sampling.next_token_bars(tr.logits[-1], piece, temperature=0.8, top_k=20,
                                                                top_p=0.9, projector=pj),
            "generated_tokens": lambda: sampling.generated_tokens(steps, projector=pj),
            "cross_attention": lambda: translation.translation_attention(out.trace, "cross", None, None,
                                                                         projector=pj),
            "decoder_attention": lambda: translation.translation_attention(out.trace, "decoder", 0, 1,
                                                                           projector=pj),
            "candidates": lambda: translation.decoding_candidates(out.trace, translator.tgt_tok.piece,
                                                                  projector=pj),
            "source_saliency": lambda: translation.saliency_beside_attention(source_saliency, compared="mean",
                                                                            projector=pj),
            # Model, Experiments
            "parameter_bars": lambda: model_figs.parameter_bars(counts, projector=pj),
            "attention_memory": lambda: model_figs.attention_memory(cfg.n_head, n_layer=cfg.n_layer,
                                                                    context=cfg.context, projector=pj),
            "loss_curve": lambda: model_figs.loss_curve(history, x="step", projector=pj),
            "experiment_curves": lambda: experiments.curves(results, None, "tokens", projector=pj),
            "final_bars": lambda: experiments.final_bars(results, projector=pj),
            "extrapolation": lambda: experiments.extrapolation(results, projector=pj),
            "no_mask_bars": lambda: experiments.no_mask_bars(results, projector=pj),
        }
        for side, view in stacks.items():        # the model picker: the translator's stacks in the GPT's tabs
            found.update({
                f"{side}_tokens": lambda v=view: tokens.token_pieces(v, projector=pj),
                f"{side}_grid": lambda v=view, s=side: attention.attention_grid(v, labels=stack_labels[s],
                                                                                 projector=pj),
                f"{side}_head": lambda v=view: attention.attention_head(v, 0, 1, projector=pj),
                f"{side}_layernorm": lambda v=view: layernorm.layernorm_heatmaps(v, projector=pj),
                f"{side}_residual": lambda v=view: residual.residual_shares(v, projector=pj),
            })
        return {f"{name}{'/projector' if pj else ''}": build for name, build in found.items()}

    return {**tab(False), **tab(True)}


def together(jobs_per_thread: list[list], run) -> list[tuple[str, str]]:
    """Start THREADS threads at the same moment; each runs its jobs → [(job, error)] of every failure."""
    barrier, failures, lock = threading.Barrier(len(jobs_per_thread)), [], threading.Lock()

    def worker(jobs):
        barrier.wait()
        for job in jobs:
            try:
                run(job)
            except Exception as err:       # noqa: BLE001 — every failure is counted, whatever it is
                with lock:
                    failures.append((str(job), f"{type(err).__name__}: {err}"))

    threads = [threading.Thread(target=worker, args=(jobs,)) for jobs in jobs_per_thread]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a figure builder hung"
    return failures


def test_house_template_from_a_cold_start():
    """The first figures after start-up, 8 at once: the template race, many times over."""
    def first_figure(projector):
        return message("Nothing to draw yet.", "Cold start", filename="toyviz-cold", projector=projector).to_json()

    cold()
    expected = {pj: first_figure(pj) for pj in (False, True)}
    failures, wrong = [], []

    def run(pj):
        if first_figure(pj) != expected[pj]:
            wrong.append(pj)

    for _ in range(COLD_ROUNDS):
        cold()
        failures += together([[i % 2 == 1] for i in range(THREADS)], run)
    assert failures == [] and wrong == [], f"{len(failures)} errors, {len(wrong)} different: {failures[:3]}"
    assert len(figures._TEMPLATES) == 2          # built once per style, not once per thread


def test_every_tab_from_eight_threads(builders):
    """Every tab's figures (both styles), 8 threads at once from a cold start, ROUNDS times: the same
    JSON as one thread builds, no errors."""
    cold()
    expected = {name: build().to_json() for name, build in builders.items()}
    names = list(builders)
    failures, wrong = [], []

    def run(name):
        if builders[name]().to_json() != expected[name]:
            wrong.append(name)

    for r in range(ROUNDS):
        cold()
        order = names[r:] + names[:r]                  # other neighbours each round
        failures += together([order[i::THREADS] for i in range(THREADS)], run)
    assert failures == [], f"{len(failures)} errors in {ROUNDS * len(names)} figures: {failures[:5]}"
    assert wrong == [], f"{len(wrong)} figures differ from the single-threaded build: {sorted(set(wrong))[:10]}"


def test_every_figure_passes_plotly_validation_unchanged(builders):
    """Builders make their figures with plotly's property checks off (`figures.figure`, for speed):
    rebuilding each with the checks on raises nothing and changes nothing (a "title" given as a bare
    string, or an "xaxis_title" shorthand, would come out differently)."""
    def changed(fig) -> bool:
        return json.loads(go.Figure(fig.to_dict()).to_json()) != json.loads(fig.to_json())

    assert [name for name, build in builders.items() if changed(build())] == []
