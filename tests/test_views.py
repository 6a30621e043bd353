"""Tab renderers called directly, as a tool or a notebook would: no Gradio, no server.

The shipped checkpoints are part of the repository, so these tests use them; the tiny random
models cover the cases the shipped ones cannot (no snapshots, a missing no-mask model).
"""
import math
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import torch

import toyviz
from toyviz.app.views.attention import attention_view
from toyviz.app.views.experiments import experiments_view
from toyviz.app.views.features import features_view
from toyviz.app.views.inside import inside_view
from toyviz.app.views.layernorm import layernorm_view
from toyviz.app.views.model import model_view, snapshot_note
from toyviz.app.views.positional import positions_view
from toyviz.app.views.residual import residual_view
from toyviz.app.views.sampling import generate_view, next_token_view, probability_html
from toyviz.app.views.size import LOADED_GPT, LOADED_TRANSLATOR, preset_fields, size_view
from toyviz.app.views.tokens import tokens_view
from toyviz.app.views.translation import translate_view
from toyviz.app.views.why import pair_fields, patching_view, why_choices, why_view
from toyviz.errors import UserError
from toyviz.app.explorer import Explorer
from toyviz.models.size import count_parameters
from toyviz.serving import pacing
from toyviz.settings.controls import RANGES

PROMPT = "To be, or not to be, that is the question"
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def shipped() -> Explorer:
    return Explorer(toyviz.load("gpt", device="cpu"), toyviz.load("translator", device="cpu"))


def title(fig) -> str:
    return fig.layout.title.text


# (view, its arguments after the explorer, what it returns: T text, P figure)
PLAIN = {
    "tokens": (tokens_view, (PROMPT, False), "TPP"),
    "positions": (positions_view, (PROMPT, "cosine", False), "TPPP"),
    "attention": (attention_view, (PROMPT, 1, 2, "probs", ["1.2"], False), "TPPTP"),
    "inside": (inside_view, (PROMPT, 1, 2, -1, "dream", False), "TPPP"),
    "layernorm": (layernorm_view, (PROMPT, "block1.ln2", 3, False), "TPPPP"),
    "residual": (residual_view, (PROMPT, -1, False), "TPPPP"),
    "why": (why_view, (PROMPT, "", False), "TTPPPT"),
    "features": (features_view, (PROMPT, -1, "lord", False), "TPTPPPT"),
    "patching": (patching_view, ("The Duke of York is dead, and the Duke of",
                                       "The Duke of Suffolk is dead, and the Duke of", "York", "Suffolk", False), "TPP"),
    "next_token": (next_token_view, (PROMPT, 0.8, 50, 0.95, False), "TP"),
    "translate": (translate_view, ("The Lord is my shepherd.", 2, "cross", "1", "2", False), "TTPPP"),
    "model": (model_view, (PROMPT, -1, "step", False), "PPPTP"),
    "experiments": (experiments_view, (PROMPT, ["baseline", "rope"], "tokens", False), "TPPPPPT"),
    "size": (size_view, ("gpt2",), "TP"),
}


def values(trace_data) -> np.ndarray:
    return np.asarray(trace_data, dtype=float)


def plain_logits(gpt, prompt: str) -> torch.Tensor:
    """The last position's logits from a plain forward (no trace, no explorer)."""
    ids = torch.tensor([[gpt.bos, *gpt.tokenizer.encode(prompt)]])
    with torch.no_grad():
        return gpt.model(ids)[0][0, -1].float()


# what each renderer's outputs show, worked out from the model itself: its weights, a plain forward,
# a trace, or first principles (a few numbers per view, not every figure)
def shows_tokens(ex, out):
    _, pieces, norms = out
    ids = [ex.gpt.bos, *ex.gpt.tokenizer.encode(PROMPT)]
    assert f"{len(ids)} tokens" in title(pieces)
    assert np.allclose(values(norms.data[0].y), ex.gpt.model.tok_emb.weight[ids].norm(dim=-1).detach(), atol=1e-5)


def shows_positions(ex, out):
    cfg = ex.gpt.config
    assert cfg.positional == "rope" and "RoPE" in title(out[1])       # the shipped GPT turns q and k
    d_head, T = cfg.d_model // cfg.n_head, len(ex.gpt.tokenizer.encode(PROMPT)) + 1
    angles = torch.arange(T)[:, None] * 10000.0 ** (-torch.arange(0, d_head, 2) / d_head)   # RoFormer's θ_i
    assert np.allclose(values(out[1].data[0].z), angles % (2 * math.pi), atol=1e-4)
    cosine = values(out[3].data[0].z)
    assert np.allclose(np.diag(cosine), 1, atol=1e-5)                 # every position is itself


def shows_attention(ex, out):
    _, grid, head, table, ablation = out
    cfg, tr = ex.gpt.config, ex.gpt.trace(PROMPT)
    assert f"{cfg.n_layer} layers × {cfg.n_head} heads" in title(grid)
    assert "layer 1, head 2" in title(head) and head.layout.xaxis.title.text.startswith("key")
    assert np.allclose(np.nan_to_num(values(head.data[0].z)), tr.attention[1, 2].float(), atol=1e-5)
    assert len(table.splitlines()) == 2 + cfg.n_layer * cfg.n_head
    on, off = ablation.data                    # p(next token) with every head on, and with head 1.2 zeroed
    ablated = ex.gpt.model.blocks[1].attn     # from the model with that head's slice of W_O zeroed by hand
    d_head = cfg.d_model // cfg.n_head
    saved = ablated.o.weight.detach().clone()
    try:
        with torch.no_grad():
            ablated.o.weight[:, 2 * d_head: 3 * d_head] = 0
        without = torch.softmax(plain_logits(ex.gpt, PROMPT), -1)
    finally:
        with torch.no_grad():
            ablated.o.weight.copy_(saved)
    with_all = torch.softmax(plain_logits(ex.gpt, PROMPT), -1)
    token = [int(label.rsplit("#", 1)[1].rstrip(")")) for label in on.y]          # "piece (#id)"
    assert np.allclose(values(on.x), with_all[token], atol=1e-5)
    assert np.allclose(values(off.x), without[token], atol=1e-5) and not np.allclose(values(off.x), values(on.x))


def shows_inside(ex, out):
    leak = out[3]
    masked, unmasked = leak.data
    assert masked.name == "with the causal mask" and np.all(values(masked.y) == 0)   # the mask: nothing leaks
    assert values(unmasked.y).max() > 0


def shows_layernorm(ex, out):
    weight, bias = out[3].data
    ln = ex.gpt.model.blocks[1].ln2
    assert np.allclose(values(weight.y), ln.weight.detach().float(), atol=1e-3)
    assert np.allclose(values(bias.y), ln.bias.detach().float(), atol=1e-3)
    assert "block1.ln2" in title(out[4])


def shows_residual(ex, out):
    attribution = out[4]
    logits = plain_logits(ex.gpt, PROMPT)
    top = float(logits.max() - logits.mean())   # the bars split the top token's logit − mean logit among the writes
    assert values(attribution.data[0].y).sum() == pytest.approx(top, abs=1e-3)
    assert f"its logit − mean logit, {top:.2f}" in title(attribution)


def shows_why(ex, out):
    p = torch.softmax(plain_logits(ex.gpt, PROMPT), -1).max()
    assert f"{float(p):.1%}" in out[1]                                # the paragraph quotes the top probability


def shows_features(ex, out):
    _, prompt, text, *_, found = out
    assert len(prompt.data[0].x) == len(ex.gpt.tokenizer.encode(PROMPT)) + 1
    assert text.startswith("### Feature #") and "lord" in found.lower()


def shows_patching(ex, out):
    clean, corrupted, answer, other = PLAIN["patching"][1][:4]
    logits = plain_logits(ex.gpt, clean)
    metric = float(logits[ex.gpt.tokenizer.encode(" " + answer)[0]] - logits[ex.gpt.tokenizer.encode(" " + other)[0]])
    assert f"clean {metric:+.2f}" in title(out[1])


def shows_next_token(ex, out):
    temperature, top_k, top_p = PLAIN["next_token"][1][1:4]
    settings, plain = out[1].data
    probs = torch.softmax(plain_logits(ex.gpt, PROMPT), -1)
    assert np.allclose(values(plain.x), probs.topk(len(plain.x)).values, atol=1e-5)
    # sampling's candidates from first principles: the top-k, then the fewest whose mass reaches top-p
    tempered = torch.softmax(plain_logits(ex.gpt, PROMPT) / temperature, -1).topk(top_k).values
    kept = int((tempered.cumsum(0) / tempered.sum() < top_p).sum()) + 1
    assert f"→ {kept} candidates" in title(out[1]) and int((values(settings.x) > 0).sum()) == kept
    assert values(settings.x).sum() == pytest.approx(1, abs=1e-4)


def shows_translation(ex, out):
    sentence, beam = PLAIN["translate"][1][:2]
    done = ex.translator.translate(sentence, beam)
    assert out[1] == done.text
    assert np.allclose(np.nan_to_num(values(out[2].data[0].z)), done.trace.cross_attention[1, 2].float(), atol=1e-5)


def shows_model(ex, out):
    bars = out[0]
    total = sum(p.numel() for p in ex.gpt.model.parameters())        # tied weights counted once
    assert values(bars.data[0].y).sum() == total and f"{total:,} in total" in title(bars)


def shows_experiments(ex, out):
    assert {d.name for d in out[1].data} >= {"baseline", "rope"} and "baseline" in out[0]


def shows_size(ex, out):
    V, T, d, L = 50257, 1024, 768, 12                                 # GPT-2 small
    total = V * d + T * d + L * (12 * d * d + 13 * d) + 2 * d         # embeddings, blocks, final norm; tied head
    assert f"**{total:,} parameters**" in out[0] and values(out[1].data[0].y).sum() == total


SHOWS = {"tokens": shows_tokens, "positions": shows_positions, "attention": shows_attention, "inside": shows_inside,
         "layernorm": shows_layernorm, "residual": shows_residual, "why": shows_why, "features": shows_features,
         "patching": shows_patching, "next_token": shows_next_token, "translate": shows_translation,
         "model": shows_model, "experiments": shows_experiments, "size": shows_size}


# a point of the model as figures named it before issue 54 ("mlp.2", "resid_pre.0", "norm.attn.0"):
# every figure now shows the one display form, the name itself ("block2.mlp"; toyviz.models.names)
OLD_LABEL = re.compile(r"\b(mlp|attn|cross|resid_pre|resid_post|norm\.[a-z]+)\.\d+\b|\battn bias\b|ln_f β")


def old_labels(fig) -> set[str]:
    """Every old-style name in a figure's text: titles, tick labels, trace names, annotations, hover templates."""
    def texts(obj):
        if isinstance(obj, str):
            yield obj
        elif isinstance(obj, dict):
            for value in obj.values():
                yield from texts(value)
        elif isinstance(obj, (list, tuple, np.ndarray)):
            for value in obj:
                yield from texts(value)
    return {found.group(0) for text in texts(fig.to_plotly_json()) for found in OLD_LABEL.finditer(text)}


@pytest.mark.parametrize("name", list(PLAIN))
def test_every_renderer_shows_what_the_model_computes_in_the_one_vocabulary(shipped, name):
    view, args, spec = PLAIN[name]
    out = view(shipped, *args)
    assert len(out) == len(spec)
    for value, kind in zip(out, spec):
        if kind == "T":
            assert isinstance(value, str) and not OLD_LABEL.search(value), f"{name}: {value!r}"
        else:
            assert (value.data or value.layout.annotations) and title(value), f"{name}: an empty figure"
            assert not old_labels(value), f"{name}: {title(value)!r} shows {sorted(old_labels(value))}"
    SHOWS[name](shipped, out)


def test_what_the_renderers_say(shipped):
    note, grid, head, table, ablation = attention_view(shipped, PROMPT, 1, 2, "probs", ["1.2"], False)
    assert note == "" and "layer 1, head 2" in title(head) and "1.2" in title(ablation)
    cfg = shipped.gpt.config
    assert table.startswith("| head | label |") and len(table.splitlines()) == 2 + cfg.n_layer * cfg.n_head
    assert "13 tokens" in title(tokens_view(shipped, PROMPT)[1])
    assert "block1.ln2" in title(layernorm_view(shipped, PROMPT, "block1.ln2", 3)[3])
    text, bars = size_view(shipped, LOADED_GPT)
    assert f"**{count_parameters(shipped.gpt)['total']:,} parameters**" in text and "MiB in fp32" in text
    text, _ = size_view(shipped, LOADED_TRANSLATOR)
    assert f"**{count_parameters(shipped.translator)['total']:,} parameters**" in text
    assert "354,823,168" in size_view(shipped, "gpt2-medium")[0]
    assert preset_fields(shipped, "gpt2")[:3] == [12, 12, 768] and preset_fields(shipped, "custom") is None
    tr = shipped.translator.config                          # the translator's fields are its own, per stack
    assert preset_fields(shipped, LOADED_TRANSLATOR)[:4] == [tr.n_encoder_layer, tr.n_head, tr.d_model,
                                                                         tr.d_ff]
    results = shipped.experiment_results()                  # shipped: the summary speaks of its variants
    summary, curves, *_ = experiments_view(shipped, PROMPT, ["baseline", "rope"], "tokens", False)
    assert "baseline" in summary and {d.name for d in curves.data} >= {"baseline", "rope"} and results


def test_the_renderers_settle_to_the_controls_ranges_and_say_so(shipped):
    """A value past its range (typed, from the API or a link: the sliders pass it on) is the nearest bound, in the
    figure and in the note (toyviz.settings.controls.settle; every control: tests/test_inputs.py)."""
    cfg = shipped.gpt.config
    note, _, head, *_ = attention_view(shipped, PROMPT, 99, -5, "probs", [], False)
    assert f"layer {cfg.n_layer - 1}, head 0" in title(head)
    assert f"layer 99 is past the last, {cfg.n_layer - 1}" in note and "head -5 is below the first, 0" in note
    note, bars = next_token_view(shipped, PROMPT, -3.0, 10**9, 7.0, False)
    top_k, top_p = RANGES["top_k"][1], RANGES["top_p"][1]
    assert "temperature 0," in title(bars) and f"top-k {top_k}" in title(bars) and f"top-p {top_p:g}" in title(bars)
    assert f"top-k 1000000000 is above the highest, {top_k}: using {top_k}" in note
    assert "top-p 0.05" in title(next_token_view(shipped, PROMPT, 0.8, 50, 0.0001)[1])
    with pytest.raises(UserError, match="layer must be a whole number from 0 to"):
        attention_view(shipped, PROMPT, "one", 0)
    with pytest.raises(UserError, match="NaN"):
        next_token_view(shipped, PROMPT, float("nan"), 50, 0.95)
    with pytest.raises(UserError, match="layer.head"):
        attention_view(shipped, PROMPT, 0, 0, "probs", ["1-2"])
    note, tokens, _ = tokens_view(shipped, "a\ud800b")        # a lone surrogate (JSON cannot carry it)
    assert "tokens" in title(tokens)
    assert translate_view(shipped, "Hello.", 1000)[1]
    note = translate_view(shipped, "Hello.", 1, "encoder", "7")[0]
    assert f"{shipped.translator.config.n_encoder_layer} layers: showing its last" in note


def test_generation_streams_token_by_token_and_ends_with_the_figure(shipped, monkeypatch):
    monkeypatch.setattr(pacing, "TEXT_EVERY_S", 0.0)                # every token its own update
    monkeypatch.setattr(pacing, "UPDATES_PER_S", math.inf)
    monkeypatch.setattr(pacing, "TOKENS_PER_S", 10**6)               # no pacing
    updates = list(generate_view(shipped, PROMPT, 0.8, 50, 0.95, 6, 1, False))
    assert len(updates) == 7 and all(u[3] is None for u in updates[:-1]) and updates[-1][3] is not None
    assert [u[1].count('class="token-prob"') for u in updates] == [1, 2, 3, 4, 5, 6, 6]
    assert all(later[1].startswith(earlier[1]) for earlier, later in zip(updates, updates[1:]))   # append-only
    assert all(u[2] is None for u in updates[:-1]) and updates[-1][2] is not None     # the bars: at the end


def test_a_fast_generation_is_sent_at_a_pace_a_browser_can_draw(shipped, monkeypatch):
    """Tokens every 20 ms: the text goes out at most 13 times a second (tokens grouped, so that a page
    that has drawn every tab keeps up), and the last update carries everything."""
    clock = iter(range(10**6))
    monkeypatch.setattr(pacing.time, "perf_counter", lambda: next(clock) * 0.01)       # 2 calls a token: 20 ms
    monkeypatch.setattr(pacing.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(pacing, "TOKENS_PER_S", 10**6)
    updates = list(generate_view(shipped, PROMPT, 0.8, 50, 0.95, 60, 1, False))
    counts = [u[1].count('class="token-prob"') for u in updates]
    assert 12 <= len(updates) <= 1.2 * 13 + 2 and counts == sorted(counts) and counts[-1] == 60, counts
    assert updates[-1][2] is not None and updates[-1][3] is not None


def test_a_fast_generation_is_shown_at_a_reading_pace(shipped, monkeypatch):
    monkeypatch.setattr(pacing, "TEXT_EVERY_S", 0.0)
    monkeypatch.setattr(pacing, "UPDATES_PER_S", math.inf)
    start = time.perf_counter()
    updates = list(generate_view(shipped, PROMPT, 0.8, 50, 0.95, 16, 1, False))
    assert time.perf_counter() - start >= 16 / pacing.TOKENS_PER_S and len(updates) == 17


def test_the_mask_experiment_changes_only_the_last_word(shipped):
    masked, edited, unmasked, edited_unmasked = shipped.mask_experiment(PROMPT, "dream")
    assert masked.tokens[:-1] == edited.tokens[:-1] and edited.tokens[-1].strip() == "dream"
    assert masked.causal and not unmasked.causal and unmasked.tokens == masked.tokens


def test_the_snapshot_note_names_what_the_slider_reaches():
    assert "no earlier training snapshots" in snapshot_note("final", [])
    note = snapshot_note("step-000340", ["step-000068", "step-000340"])
    assert "**step-000340**" in note and "step-000068, step-000340 and the final model" in note


def test_experiments_draw_the_measurements_when_the_no_mask_model_is_missing(tmp_path, monkeypatch, tiny_gpt):
    """results.json alone is enough for the curves and bars; the no-mask panels say what is missing."""
    import toyviz.app.explorer
    (tmp_path / "results.json").write_bytes((toyviz.app.explorer.EXPERIMENTS / "results.json").read_bytes())
    monkeypatch.setattr(toyviz.app.explorer, "EXPERIMENTS", tmp_path)
    description, curves, bars, extrapolation, no_mask_bars, attention, sample = experiments_view(
        Explorer(tiny_gpt, None), PROMPT, ["baseline", "rope"], "tokens", False)
    assert {d.name for d in curves.data} >= {"baseline", "rope"} and len(bars.data) and len(no_mask_bars.data)
    assert "no-mask model is not there" in sample
    assert "no-mask model is not there" in attention.layout.annotations[0].text


def test_the_app_starts_without_the_training_code():
    code = "import sys, app; assert 'toyviz.training.loop' not in sys.modules, 'app imported the training loop'"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


def test_the_head_table_adds_each_heads_label_over_the_probe_set(shipped, monkeypatch):
    cfg = shipped.gpt.config
    profile = {p: [[0.0] * cfg.n_head for _ in range(cfg.n_layer)] for p in ("previous-token", "first-token", "self")}
    profile["induction"] = [[0.0] * cfg.n_head for _ in range(cfg.n_layer)]
    profile["induction"][1][3], profile["induction_share"] = 0.8, [[1.0] * cfg.n_head for _ in range(cfg.n_layer)]
    monkeypatch.setattr(shipped.caches, "history", lambda: [{"step": 10, "train_loss": 3.0, "heads": profile}])
    table = attention_view(shipped, PROMPT)[3]
    assert "over the probe set" in table.splitlines()[0]
    row = next(line for line in table.splitlines() if line.startswith("| 1.3 |"))
    assert row.endswith("**induction** 0.80, on 100% of probes |")
    assert "over the probe set" not in attention_view(shipped, PROMPT, model="encoder")[3]


def test_the_why_tab_links_each_number_to_a_panel_of_the_page(shipped):
    """Every link in the paragraph points at a panel the page has: a plot of the app, or an element the
    tab's own HTML carries."""
    import re

    import app
    from toyviz.interpret import explain
    note, summary, components, saliency, lens, sources = why_view(shipped, "I thank you, my good", "")
    targets = set(re.findall(r"href='#([\w-]+)'", summary))
    demo = app.build(shipped)
    ids = {getattr(c, "elem_id", None) for c in demo.blocks.values()}
    own = set(re.findall(r"id='([\w-]+)'", summary + sources))
    assert targets and targets <= ids | own, targets - ids - own
    assert set(explain.PANELS.values()) <= ids | own
    assert "“ lord”" in summary and "lord" in title(components) and "why-sources" in sources


def test_the_why_tab_takes_a_typed_word_or_an_id_and_rejects_several_tokens(shipped):
    lord = shipped.gpt.tokenizer.encode(" lord")[0]
    for typed in ("lord", " lord", str(lord)):
        assert shipped.caches.why("I thank you, my good", typed)[0].token == lord
    choices = why_choices(shipped, "I thank you, my good")
    assert choices[0] == ("the top prediction", "") and (f"␣lord  ({shipped.caches.why('I thank you, my good')[0].probability:.1%})",
                                                         " lord") in choices
    with pytest.raises(UserError, match="pick one token"):
        shipped.caches.why("I thank you, my good", "unquestionably incomprehensible")
    assert why_choices(shipped, "   ") == [("the top prediction", "")]      # the tab itself says why


def test_prepared_pairs_fill_the_patching_fields(shipped):
    from toyviz.interpret import explain
    pair = explain.PAIRS[0]
    assert pair_fields(pair.name) == [pair.clean, pair.corrupted, pair.clean_answer, pair.corrupted_answer]
    with pytest.raises(UserError, match="no prepared pair"):
        pair_fields("nonsense")
    with pytest.raises(UserError, match="same number of tokens"):
        patching_view(shipped, "The Duke of York", "The Duke of Yorkshire and Lancaster")


def test_under_load_a_new_beam_search_is_greedy_with_a_note(shipped):
    """A class must not queue behind beam searches: with BUSY_SEARCHES running, a new beam request is
    searched greedily and says so; a beam result already cached is still served as it is."""
    from toyviz.app.explorer import BUSY_SEARCHES
    cached = "The Lord is my shepherd."
    translate_view(shipped, cached, 4)
    shipped.searches.now = BUSY_SEARCHES
    try:
        note, text, *_ = translate_view(shipped, "And the earth was without form, and void.", 4)
        assert "greedy (beam 1) instead of beam 4" in note
        assert text == shipped.translator.translate("And the earth was without form, and void.", beam=1).text
        note, *_ = translate_view(shipped, cached, 4)
        assert "greedy" not in note
    finally:
        shipped.searches.now = 0
    assert translate_view(shipped, "And God saw the light, that it was good.", 4)[0] == ""


def test_generation_paces_itself_alone_and_not_when_a_class_is_streaming(shipped, monkeypatch):
    from toyviz.serving.pacing import BUSY_GENERATIONS
    slept, here, real_sleep = [], threading.get_ident(), pacing.time.sleep
    # time.sleep is patched for every thread: others (the server's memory keeper, left running by an
    # earlier test) sleep as ever, and only this thread's pauses are counted
    monkeypatch.setattr(pacing.time, "sleep",
                        lambda s: slept.append(s) if threading.get_ident() == here else real_sleep(s))
    monkeypatch.setattr(pacing, "TOKENS_PER_S", 0.01)          # a pace no machine falls behind: it must sleep
    tokens = lambda updates: updates[-1][1].count('class="token-prob"')
    assert tokens(list(generate_view(shipped, PROMPT, 0.8, 50, 0.95, 16, 1, False))) == 16
    assert slept and max(slept) > 0                                     # alone: a reading pace
    slept.clear()
    shipped.generations.now = BUSY_GENERATIONS                          # others streaming too
    try:
        assert tokens(list(generate_view(shipped, PROMPT, 0.8, 50, 0.95, 16, 1, False))) == 16
    finally:
        shipped.generations.now = 0
    assert slept == []
    assert shipped.generations.now == 0 and shipped.searches.now == 0   # every job counted out again


def test_the_features_tab_shows_the_prompts_strongest_feature_and_finds_by_word(shipped):
    features = shipped.caches.features()
    found, _ = shipped.caches.prompt_features(PROMPT)
    note, prompt_map, about, contexts, histogram, logits, listing = features_view(shipped, PROMPT, -1, "")
    strongest = found.strongest(1)[0]
    assert f"Feature #{strongest}:" in about and f"#{strongest}" in title(contexts)
    assert "The most frequent features" in listing and f"#{features.by_frequency()[0]}**" in listing
    hits = features.search("lord")
    assert hits and f"**#{hits[0]}**" in features_view(shipped, PROMPT, 5, "lord")[-1]
    assert "Feature #5:" in features_view(shipped, PROMPT, 5, "")[2]
    last = len(features) - 1
    note, _, about, *_ = features_view(shipped, PROMPT, 10**6, "")       # the box still says 10**6: the note says why
    assert f"feature 1000000 is past the last, {last}: showing {last}" in note and f"Feature #{last}:" in about


def test_steering_with_alpha_zero_is_plain_generation_and_a_feature_changes_the_text(shipped, monkeypatch):
    monkeypatch.setattr(pacing, "TOKENS_PER_S", 10**6)
    run = lambda feature, alpha: list(generate_view(shipped, "ROMEO:", 0.8, 50, 0.95, 24, 3, False,
                                                          feature, alpha))[-1]
    plain, off = run(-1, 0.0), run(7, 0.0)
    assert off[1] == plain[1] and "Steered" not in off[0]
    steered = run(shipped.caches.features().search("lord")[0], 15.0)
    assert steered[1] != plain[1] and "Steered: feature #" in steered[0]


def test_generated_text_shows_control_characters_as_the_figures_do():
    """A generated ^U (\\x15) is written in caret notation, as the token labels show it (raw, a browser draws an
    empty box); newlines and tabs stay text, and markup is escaped (issue 44: the page's sampler writes the same)."""
    shown = probability_html([("a\x15", 0.5), ("<b>\n\t", 1.0), ("\x7f", 0.0)])
    assert ">a^U</span>" in shown and ">&lt;b&gt;\n\t</span>" in shown and ">^?</span>" in shown
    assert "\x15" not in shown and "\x7f" not in shown
