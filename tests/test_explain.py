"""toyviz.interpret.explain: each method checked against the model it explains.

Tiny random models (conftest) for the exact identities; the shipped GPT (skipped when absent)
for what only a trained model can show: integrated-gradients completeness and the prepared pairs.
"""
import copy
from pathlib import Path

import numpy as np
import pytest
import torch

from toyviz.interpret import explain as E
from toyviz.interpret.explain import activation_patching as AP
from toyviz.models import names
from toyviz.models.hooks import replace
from toyviz.api import GPT
from toyviz.errors import UserError
from toyviz.models.gpt import ToyGPT
from toyviz.models.layers import Pass

from conftest import tiny_gpt_config

SHIPPED = (Path(__file__).resolve().parent.parent / "checkpoints" / "gpt" / "config.json").is_file()
TEXT = "To be, or not to be, that is the question. Whether 'tis nobler in the mind"
CLEAN, CORRUPTED = "To be, or not to be, that is the question.", "To be, or not to be, that is the earth."


@pytest.fixture(autouse=True)
def one_thread():
    """Two cores and a training job beside us: intra-op threads only wait on each other."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def shipped():
    if not SHIPPED:
        pytest.skip("checkpoints/gpt is missing: train it with `python -m toyviz.train gpt`")
    import toyviz
    return toyviz.load("gpt", device="cpu")


def sharp_gpt(tokenizer, **config) -> GPT:
    """A tiny GPT with weights of unit gain: the conftest init (std 0.02) gives every prompt nearly
    the same logits, too flat to tell a real effect of 1e-4 from float noise."""
    torch.manual_seed(1)
    model = ToyGPT(tiny_gpt_config(tokenizer.vocab_size, **config)).eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, p.shape[-1] ** -0.5)
    return GPT(model, tokenizer)


@pytest.fixture(scope="module")
def sharp(gpt_tokenizer) -> GPT:
    return sharp_gpt(gpt_tokenizer)


VARIANTS = {"rope-post-swiglu": {"positional": "rope", "norm": "post", "feed_forward": "swiglu"},
            "learned-relu-nobias": {"positional": "learned", "feed_forward": "relu", "bias": False}}


@pytest.fixture(scope="module", params=["tiny", *VARIANTS])
def any_gpt(request, gpt_tokenizer) -> GPT:
    """The conftest GPT, and tiny GPTs whose blocks take the other code paths of the composed forward."""
    if request.param == "tiny":
        return request.getfixturevalue("tiny_gpt")
    return sharp_gpt(gpt_tokenizer, **VARIANTS[request.param])


def model_logits(gpt, ids):
    with torch.no_grad():
        return gpt.model(torch.tensor([ids], device=gpt.device))[0][0]


# ------------------------------------------------------------------ the forward with hooks ----

def test_the_explainers_forward_is_the_models(any_gpt):
    gpt = any_gpt
    ids = E.encode(gpt, TEXT)
    ref = model_logits(gpt, ids)
    assert torch.equal(E.run(gpt, ids), ref)                             # no hooks: the plain pass, bit for bit
    cache = AP._cache(gpt, ids)                                          # hooks that only read change nothing
    assert torch.equal(E.run(gpt, ids, {"final": lambda t: t.clone()}), ref)
    torch.testing.assert_close(gpt.model.head(gpt.model.ln_f(cache["final"]))[0], ref, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ 1. components ----

def test_attribution_adds_up_to_the_logit_minus_the_mean_logit(any_gpt):
    gpt = any_gpt
    c = E.components(gpt, TEXT, top_k=0)
    logits = model_logits(gpt, E.encode(gpt, TEXT))[-1].double()
    assert c.target == pytest.approx(float(logits[c.token] - logits.mean()), abs=1e-4)
    assert float(c.attribution.double().sum()) == pytest.approx(c.target, abs=1e-4)
    n = gpt.config.n_layer
    assert len(c.names) == 1 + n * (gpt.config.n_head + 2) + 1 + sum(k.point == "change" for k in gpt.trace(TEXT).residual_parts)


def test_ablation_effects_equal_separate_traced_runs(sharp):
    """Heads: the trace with the model's own `ablate`; embed and MLPs: a trace with a forward hook
    on the module whose output the explainer replaces (a different mechanism for the same removal)."""
    gpt, p = sharp, 9
    c = E.components(gpt, TEXT, position=p, top_k=None)
    assert len(c.verified) == 1 + gpt.config.n_layer * (gpt.config.n_head + 1)
    clean = gpt.trace(TEXT).logits[p].double().log_softmax(-1)[c.token]
    for k, label in enumerate(c.verified):
        for j, kind in enumerate(E.KINDS):
            if label.startswith("L"):
                layer, head = (int(s[1:]) for s in label.split())
                trace = gpt.trace(TEXT, ablate=[(layer, head)], ablation=kind)
            else:
                edit = replace("x", kind)["x"]
                if label == "embed":            # the embed write is the stream entering block 0
                    handle = gpt.model.blocks[0].register_forward_pre_hook(lambda m, args: (edit(args[0]),))
                else:
                    mlp = gpt.model.blocks[names.parse(label).layer].mlp
                    handle = mlp.register_forward_hook(lambda m, args, out: edit(out))
                try:
                    trace = gpt.trace(TEXT)
                finally:
                    handle.remove()
            ablated = trace.logits[p].double().log_softmax(-1)[c.token]
            assert float(c.effect[k, j]) == pytest.approx(float(clean - ablated), abs=1e-4), (label, kind)


def test_components_verify_the_top_k_by_size_and_take_a_named_token(tiny_gpt):
    c = E.components(tiny_gpt, TEXT, token=" the", top_k=3)
    assert c.token == tiny_gpt.tokenizer.encode(" the")[0] and c.effect.shape == (3, 2)
    sizes = [abs(float(a)) for a in c.verified_attribution]
    assert sizes == sorted(sizes, reverse=True)
    others = [abs(float(a)) for n, a in zip(c.names, c.attribution)
              if n not in c.verified and (n == "embed" or n.startswith("mlp.") or " H" in n)]
    assert max(others) <= min(sizes)
    with pytest.raises(UserError, match="tokens"):
        E.components(tiny_gpt, TEXT, token=" question whether")


def test_spearman_with_ties():
    assert E.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1)
    assert E.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1)
    ra, rb = np.array([0, 1.5, 1.5, 3]), np.array([0, 2, 1, 3])         # ranks by hand, ties averaged
    assert E.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(np.corrcoef(ra, rb)[0, 1])
    assert np.isnan(E.spearman([1, 2], [1, 2])) and np.isnan(E.spearman([1, 1, 1], [1, 2, 3]))


# ------------------------------------------------------------------ 2. saliency ----

@pytest.mark.parametrize("baseline", ["bos", "zero"])
def test_saliency_after_the_predicted_position_is_exactly_zero(tiny_gpt, baseline):
    s = E.saliency(tiny_gpt, TEXT, position=6, steps=8, baseline=baseline)
    assert len(s.tokens) > 10
    assert torch.all(s.integrated[7:] == 0) and torch.all(s.grad_x_input[7:] == 0)
    assert s.integrated[:7].abs().sum() > 0 and s.grad_x_input[:7].abs().sum() > 0
    if baseline == "bos":
        assert s.integrated[0] == 0                                       # BOS is its own baseline


def test_saliency_matches_a_plain_autograd_gradient(tiny_gpt):
    """Gradient × input from an independent computation: the model's own forward, with the token
    embedding table's rows for this prompt made a leaf."""
    gpt = tiny_gpt
    ids = E.encode(gpt, TEXT)
    s = E.saliency(gpt, TEXT, steps=2)
    m = gpt.model
    emb = (m.tok_emb.weight[ids] * m.embed_scale).detach().requires_grad_(True)
    x = (emb + m.positional(torch.arange(len(ids), device=emb.device)))[None]
    for i, block in enumerate(m.blocks):
        x = block(x, index=i, run=Pass(causal=True))
    logit = m.head(m.ln_f(x))[0, -1, s.token]
    grad, = torch.autograd.grad(logit, emb)
    torch.testing.assert_close(s.grad_x_input, (grad * emb).sum(-1).detach(), rtol=1e-4, atol=1e-5)
    assert s.logit == pytest.approx(float(logit.detach()), abs=1e-4)


def test_integrated_gradients_are_the_same_whatever_steps_a_pass_takes(tiny_gpt, monkeypatch):
    """The path's rows go through the model STEPS_AT_ONCE at a time (memory bounded); all at once or three at a
    time, every number is the same."""
    import toyviz.interpret.explain.input_saliency as input_saliency
    monkeypatch.setattr(input_saliency, "STEPS_AT_ONCE", 1000)
    whole = E.saliency(tiny_gpt, TEXT, steps=8)
    monkeypatch.setattr(input_saliency, "STEPS_AT_ONCE", 3)
    parts = E.saliency(tiny_gpt, TEXT, steps=8)
    torch.testing.assert_close(parts.integrated, whole.integrated, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(parts.grad_x_input, whole.grad_x_input, rtol=1e-5, atol=1e-6)
    assert parts.baseline_logit == pytest.approx(whole.baseline_logit, abs=1e-5) and parts.gap == pytest.approx(
        whole.gap, abs=1e-5)


@pytest.mark.parametrize("baseline", ["bos"])          # the default; "zero" needs far more steps on the RoPE GPT
def test_integrated_gradients_complete_within_5_percent_on_the_shipped_gpt(shipped, baseline):
    for text in ("KING RICHARD.\nNorfolk, for thee remains a heavier doom,\nWhich I with some unwillingness",
                 "ROMEO.\nBut soft, what light through yonder window breaks? It is the east, and Juliet is the"):
        s = E.saliency(shipped, text, baseline=baseline)
        assert s.steps == 32
        total = float(s.integrated.sum())
        assert abs(total - (s.logit - s.baseline_logit)) <= 0.05 * abs(s.logit - s.baseline_logit), (text, s.gap)
        assert s.gap < 0.05
        print(f"IG completeness gap ({baseline}): {s.gap:.2%}")


# ------------------------------------------------------------------ 3. patching ----

@pytest.fixture(scope="module")
def pair(sharp):
    """(the swapped position, the answers that tell the two prompts apart best)."""
    a, b = E.encode(sharp, CLEAN), E.encode(sharp, CORRUPTED)
    assert len(a) == len(b)
    differ = [t for t in range(len(a)) if a[t] != b[t]]
    assert len(differ) == 1                                               # one token swapped
    d = E.run(sharp, a)[-1] - E.run(sharp, b)[-1]
    return differ[0], int(d.argmax()), int(d.argmin())


def test_patching_the_whole_clean_stream_reproduces_the_clean_logits(any_gpt):
    gpt = any_gpt
    clean = model_logits(gpt, E.encode(gpt, CLEAN))
    for site in [E.resid_pre(i) for i in range(gpt.config.n_layer)] + ["final"]:
        torch.testing.assert_close(E.patch_run(gpt, CLEAN, CORRUPTED, site), clean, rtol=1e-5, atol=1e-5)
    corrupted = model_logits(gpt, E.encode(gpt, CORRUPTED))
    for site in (E.resid_pre(0), "final", E.heads_site(0)):               # patching nothing is the corrupted run
        torch.testing.assert_close(E.patch_run(gpt, CLEAN, CORRUPTED, site, positions=[]), corrupted,
                                   rtol=1e-5, atol=1e-5)


def test_patching_effects_are_one_where_everything_is_patched_and_zero_where_nothing_is(sharp, pair):
    d, ca, cb = pair
    P = E.patching(sharp, CLEAN, CORRUPTED, ca, cb)
    L, T = sharp.config.n_layer, len(P.clean_tokens)
    assert P.resid.shape == (L + 1, T) and P.heads.shape == (L, sharp.config.n_head)
    # at block 0's input the streams differ only at the swapped token: patching it is patching all
    assert float(P.resid[0, d]) == pytest.approx(1, abs=1e-4)
    assert float(P.resid[L, T - 1]) == pytest.approx(1, abs=1e-4)        # the whole final stream the metric reads
    # nothing differs where the patch changes nothing: other positions at the input, earlier positions
    # at every layer (causal), and every position but the last in the final stream
    assert torch.all(P.resid[0, [t for t in range(T) if t != d]].abs() < 1e-4)
    assert torch.all(P.resid[:, :d].abs() < 1e-4)
    assert torch.all(P.resid[L, :-1].abs() < 1e-4)


def test_patching_grids_equal_single_patched_runs(sharp, pair):
    d, ca, cb = pair
    P = E.patching(sharp, CLEAN, CORRUPTED, ca, cb)
    norm = lambda logits: (float(logits[-1, ca] - logits[-1, cb]) - P.corrupted_metric) / (
        P.clean_metric - P.corrupted_metric)
    L, T = sharp.config.n_layer, len(P.clean_tokens)
    for i, site in enumerate(P.resid_names):
        for t in (d, d + 1, T - 1):
            assert float(P.resid[i, t]) == pytest.approx(norm(E.patch_run(sharp, CLEAN, CORRUPTED, site, [t])),
                                                         abs=1e-4)
    for layer in range(L):
        for h in range(sharp.config.n_head):
            single = E.patch_run(sharp, CLEAN, CORRUPTED, E.heads_site(layer), head=h)
            assert float(P.heads[layer, h]) == pytest.approx(norm(single), abs=1e-4)


def test_patching_refuses_what_it_cannot_measure(tiny_gpt):
    with pytest.raises(UserError, match="same number of tokens"):
        E.patching(tiny_gpt, CLEAN, "To be, or not to be")
    with pytest.raises(UserError, match="different answers"):
        E.patching(tiny_gpt, CLEAN, CORRUPTED, " the", " the")


def test_prepared_pairs_fit_the_shipped_gpt(shipped):
    """Same token length, one-token answers, and a metric that tells the prompts apart (the clean prompt
    prefers the clean answer by at least 1.5 logits more than the corrupted prompt does)."""
    for pair in E.PAIRS:
        a, b = AP._pair_ids(shipped, pair.clean, pair.corrupted)
        assert len(a) == len(b), pair.name
        for answer in (pair.clean_answer, pair.corrupted_answer):
            assert len(shipped.tokenizer.encode(answer)) == 1, (pair.name, answer)
        P = E.patching(shipped, pair.clean, pair.corrupted, pair.clean_answer, pair.corrupted_answer)
        assert float(P.resid[-1, -1]) == pytest.approx(1, abs=1e-4)       # the whole clean stream: clean
        assert P.clean_metric - P.corrupted_metric > 1.5, (pair.name, P.clean_metric, P.corrupted_metric)


# ------------------------------------------------------------------ 4. n-grams ----

def brute(ids: list[int], gram: list[int]) -> list[int]:
    k = len(gram)
    return [i for i in range(len(ids) - k + 1) if ids[i: i + k] == gram]


@pytest.mark.parametrize("vocab", [5, 4096])
def test_ngram_counts_equal_a_brute_force_count(vocab):
    rng = np.random.default_rng(vocab)
    ids = rng.integers(0, vocab, 600).tolist()
    ids[-5:] = ids[10:15]                                                 # a gram that also ends the corpus
    index = E.build_index(ids)
    grams = [ids[s: s + k] for k in range(1, 6) for s in rng.integers(0, len(ids) - k + 1, 40)]
    grams += [ids[-k:] for k in range(1, 6)] + [rng.integers(0, vocab, k).tolist() for k in range(1, 6)]
    for g in grams:
        assert E.occurrences(index, g).tolist() == brute(ids, g), g
    context, token = ids[10:14], ids[14]
    for ng in E.where_from(index, context, token, examples=3):
        assert ng.context == context[-ng.n:]
        assert ng.count == len(brute(ids, ng.context + [token]))
        assert ng.context_count == len(brute(ids, ng.context))
        assert 1 <= len(ng.examples) <= 3 and all(ids[p: p + ng.n + 1] == ng.context + [token] for p in ng.examples)
    assert [ng.n for ng in E.where_from(index, context[-2:], token)] == [1, 2]


def test_ngram_index_edge_cases():
    index = E.build_index([1, 2, 3])                                      # shorter than a window
    assert E.occurrences(index, [2, 3]).tolist() == [1] and E.occurrences(index, [3, 1]).tolist() == []
    assert E.occurrences(index, [9]).tolist() == []
    with pytest.raises(ValueError):
        E.occurrences(index, [1] * 6)
    ng = E.where_from(E.build_index([4, 4, 4]), [4], 7)[0]
    assert (ng.count, ng.context_count, ng.examples) == (0, 3, []) and ng.share == 0


def test_ngram_examples_read_back_as_text(gpt_tokenizer):
    from conftest import ENGLISH
    ids = gpt_tokenizer.encode(ENGLISH)
    index = E.build_index(ids)
    context = gpt_tokenizer.encode("To be, or not to")
    token = gpt_tokenizer.encode(" be")[0]
    top = E.where_from(index, context, token)[-1]
    assert top.n == 4 and top.count == top.context_count == len(brute(ids, top.context + [token])) > 0
    left, match, right = E.example_text(gpt_tokenizer, index, top.examples[0], top.n + 1)
    assert match == gpt_tokenizer.decode(top.context + [token]) and "\n" not in left + right


def test_the_shipped_corpus_index_counts_like_numpy(shipped):
    from toyviz.data import cache_dir
    if not (cache_dir() / "tokens" / f"shakespeare-{shipped.config.vocab_size}-train.pt").is_file():
        pytest.skip("the trainer's token cache is absent (it is written by `python -m toyviz.train gpt`)")
    ids = E.corpus_ids(shipped)
    index = E.build_index(ids)
    gram = shipped.tokenizer.encode(" my good lord")
    windows = np.lib.stride_tricks.sliding_window_view(ids, len(gram))
    expected = np.flatnonzero((windows == np.asarray(gram)).all(axis=1))
    assert len(expected) > 10 and E.occurrences(index, gram).tolist() == expected.tolist()


# ------------------------------------------------------------------ the answer and its paragraph ----

def test_the_answer_gathers_the_methods_and_its_paragraph_quotes_them(shipped):
    prompt = "I thank you, my good"
    ids = E.encode(shipped, prompt)
    logits = E.run(shipped, ids)[-1]
    index = E.build_index((ids[1:] + [int(logits.argmax())]) * 3)          # a corpus: the prompt and its answer, thrice
    w = E.why(shipped, prompt, index=index)
    assert w.token == int(logits.argmax()) and w.top[0][0] == w.token
    assert w.probability == pytest.approx(float(logits.softmax(-1)[w.token]), rel=1e-4)
    assert w.lens_rank[-1] == 0 and w.lens_probability[-1] == pytest.approx(w.probability, rel=1e-4)
    assert w.first_top_layer == w.lens_names[w.lens_rank.index(0)]
    assert w.components.verified == E.components(shipped, prompt).verified
    text = "".join(t for t, _ in E.paragraph(w))
    linked = [(t, panel) for t, panel in E.paragraph(w) if panel]
    assert {panel for _, panel in linked} == set(E.PANELS)                 # every panel is cited
    assert f"{w.probability:.1%}" in text and f"{w.saliency.gap:.2%}" in text
    assert f"{float(w.components.verified_attribution[0]):+.2f}" in text
    assert w.sources[-1].count == 3 and "3 times out of 3" in text         # the longest context it follows


def test_a_source_of_one_token_is_worded_as_one(shipped):
    prompt = "I thank you, my good"
    ids = E.encode(shipped, prompt)
    answer = int(E.run(shipped, ids)[-1].argmax())
    w = E.why(shipped, prompt, index=E.build_index([ids[-1], answer] * 2))    # never after the longer context
    text = "".join(t for t, _ in E.paragraph(w))
    assert [g.n for g in w.sources if g.count] == [1]
    assert "only the last token" in text and "the last 1" not in text


def test_without_an_index_the_answer_says_why_there_are_no_counts(shipped):
    w = E.why(shipped, "I thank you, my good", " friend", sources_reason="no corpus here")
    assert w.sources is None and w.token == shipped.tokenizer.encode(" friend")[0]
    text = "".join(t for t, _ in E.paragraph(w))
    assert "no corpus here" in text and "its top choice is" in text
    never = E.why(shipped, "I thank you, my good", " friend", index=E.build_index([1, 2, 3]))
    assert ("never", "sources") in E.paragraph(never)


# ------------------------------------------------------------------ 6. the translator ----

@pytest.mark.parametrize("rows_at_once", [2, 16])
def test_source_saliency_is_the_gradient_of_each_output_tokens_log_probability(tiny_translator, rows_at_once,
                                                                                monkeypatch):
    """Checked by finite differences through the model's plain forward, not by a backward pass like the
    code's: gradient × input is the derivative of log p(output t) along source token i's own embedding,
    so scaling that embedding by 1 ± ε moves log p by ±ε·saliency[t, i]. The compared attention is the
    trace's own cross-attention. Whether the output tokens are differentiated in one backward pass or in
    several (ROWS_AT_ONCE: memory bounded), the answer is the same."""
    import toyviz.interpret.explain.translation as translation_explain
    monkeypatch.setattr(translation_explain, "ROWS_AT_ONCE", rows_at_once)
    out = tiny_translator.translate("In the beginning God created", 1, max_len=6)
    s = E.source_saliency(tiny_translator, out, layer=0, head=1)
    trace = out.trace
    model = copy.deepcopy(tiny_translator.model).cpu().double()     # float64: the differences stay exact
    src, tgt = torch.tensor([trace.src_ids]), torch.tensor([trace.tgt_ids])
    outputs = torch.arange(len(trace.output_ids)), trace.output_ids

    def log_p(position: int, scale: float) -> torch.Tensor:
        """log p of each output token with the source embedding at `position` times `scale`."""
        def scaled(module, args, emb):
            if args[0] is not src:                   # a shared vocabulary embeds the target with it too
                return emb
            emb = emb.clone()
            emb[:, position] *= scale
            return emb
        handle = model.src_emb.register_forward_hook(scaled)
        try:
            with torch.no_grad():
                return model(src, tgt).log_softmax(-1)[0][outputs]
        finally:
            handle.remove()

    eps = 1e-4
    numeric = torch.stack([(log_p(i, 1 + eps) - log_p(i, 1 - eps)) / (2 * eps) for i in range(src.shape[1])], 1)
    assert numeric.abs().max() > 0.01                                      # something to compare
    assert torch.allclose(s.saliency.double(), numeric, atol=1e-5)
    assert torch.equal(s.attention, trace.cross_attention[0, 1].float())
    assert -1 <= s.agreement <= 1 and 0 <= s.top_match <= 1 and s.saliency.shape == (len(s.output), len(s.source))
