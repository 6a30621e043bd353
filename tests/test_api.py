"""The public API: text in, traces and tokens out; save/load; bad input; parameter counts."""
import pytest
import torch

import toyviz
from toyviz.models.size import count_parameters
from toyviz.models.config import GPTConfig, TranslatorConfig
from toyviz.models.gpt import ToyGPT
from toyviz.models.translator import ToyTranslator


def test_trace_api_shapes(tiny_gpt):
    tr = tiny_gpt.trace("To be, or not to be")
    T = len(tr.tokens)
    assert tr.tokens[0] == "<|endoftext|>" and len(tr.token_ids) == T
    assert tr.tokens == tiny_gpt.tokenizer.pieces(tr.token_ids) and tr.truncated == 0 and tr.ablated == {}
    assert tr.attention.shape == (2, 4, T, T)
    assert list(tr.residual_parts) == ["embed", "block0.attn", "block0.mlp", "block1.attn", "block1.mlp"]
    assert tr.logits.shape == (T, tiny_gpt.tokenizer.vocab_size)
    assert set(tr.layernorms) == {"block0.ln1", "block0.ln2", "block1.ln1", "block1.ln2", "ln_f"}
    ln = tr.layernorms["block0.ln1"]
    assert torch.allclose(ln["mean"], ln["input"].mean(-1))
    normalised = (ln["input"] - ln["mean"][:, None]) / ln["std"][:, None] * ln["weight"] + ln["bias"]
    assert torch.allclose(normalised, ln["output"], atol=1e-5)


def test_head_view_is_what_the_model_computed(tiny_gpt):
    tr = tiny_gpt.trace("the slings and arrows of outrageous fortune")
    for layer, head in [(0, 0), (1, 3)]:
        h = tr.head(layer, head)
        assert torch.allclose(h.scores, h.q @ h.k.T / h.q.shape[-1] ** 0.5, atol=1e-5)
        T = h.scores.shape[0]
        masked = h.scores.masked_fill(torch.ones(T, T, dtype=torch.bool, device=h.scores.device).triu(1), float("-inf"))
        assert torch.allclose(h.probs, masked.softmax(-1), atol=1e-6)
        assert torch.equal(h.probs, tr.attention[layer, head])
        assert torch.allclose(h.out, h.probs @ h.v, atol=1e-5)
    with pytest.raises(IndexError):
        tr.head(5, 0)


def test_heads_to_switch_off_become_the_forward_s_ablation(tiny_gpt):
    tr = tiny_gpt.trace("To be, or not to be", ablate=[(0, 1), (1, 3), (1, 0)], ablation="mean")
    assert tr.ablated == {"block0.attn": {1: "mean"}, "block1.attn": {3: "mean", 0: "mean"}}
    with pytest.raises(toyviz.PromptError, match="no head 2.0"):
        tiny_gpt.trace("To be", ablate=[(2, 0)])
    with pytest.raises(toyviz.PromptError, match="ablation must be one of"):
        tiny_gpt.trace("To be", ablate=[(0, 0)], ablation="half")


def test_generate_streams_steps_with_candidates(tiny_gpt):
    steps = list(tiny_gpt.generate("To be", max_new_tokens=8, temperature=0.8, top_k=20, top_p=0.9, seed=3))
    assert len(steps) == 8
    for s in steps:
        assert 0 < s.prob <= 1 and len(s.top) <= 10
        assert abs(sum(p for _, p in s.top) - 1) < 1e-4 or len(s.top) == 10
    again = list(tiny_gpt.generate("To be", max_new_tokens=8, temperature=0.8, top_k=20, top_p=0.9, seed=3))
    assert [s.token for s in steps] == [s.token for s in again]


@pytest.mark.parametrize("text", ["", "   \n\t", None, 42])
def test_empty_or_wrong_prompt_is_a_clear_error(tiny_gpt, text):
    with pytest.raises(toyviz.PromptError):
        tiny_gpt.trace(text)
    with pytest.raises(toyviz.PromptError):
        list(tiny_gpt.generate(text, 3))


@pytest.mark.parametrize("kw,match", [(dict(temperature=-1), "temperature"), (dict(top_k=-3), "top_k"),
                                      (dict(top_p=0), "top_p"), (dict(top_p=1.5), "top_p")])
def test_out_of_range_sampling_settings_are_refused(tiny_gpt, kw, match):
    with pytest.raises(toyviz.PromptError, match=match):
        list(tiny_gpt.generate("To be", 3, **kw))


def test_long_prompt_is_cut_to_the_context_and_says_so(tiny_gpt):
    tr = tiny_gpt.trace("word " * 500)
    assert len(tr.tokens) == tiny_gpt.config.context and tr.truncated > 0


def test_translate_api(tiny_translator):
    out = tiny_translator.translate("In the beginning God created the heavens.", beam=2)
    tr = out.trace
    assert isinstance(out.text, str)
    assert tr.cross_attention.shape[2:] == (len(tr.tgt_tokens), len(tr.src_tokens))
    assert tr.tgt_tokens[0] == "<|bos|>" and tr.src_tokens[-1] == "<|eos|>"
    assert len(tr.output_tokens) == len(tr.tgt_tokens)
    # complete as returned: the decoder read BOS + the output, each position predicts the next one
    assert tr.tgt_tokens == tiny_translator.tgt_tok.pieces([tiny_translator.bos] + out.ids)
    assert tr.src_tokens == tiny_translator.src_tok.pieces(tr.src_ids) and tr.output_tokens[:-1] == tr.tgt_tokens[1:]
    with pytest.raises(toyviz.PromptError):
        tiny_translator.translate("hello", beam=0)
    # the untraced translation the evaluation scores is the one the app shows
    assert tiny_translator.translate_text("In the beginning God created the heavens.", beam=2) == out.text
    with pytest.raises(toyviz.PromptError):
        tiny_translator.translate_text("hello", beam=17)


def test_save_load_round_trip_gives_identical_outputs(tiny_checkpoints, tiny_gpt, tiny_translator):
    gpt = toyviz.load(str(tiny_checkpoints["gpt"]), device=str(tiny_gpt.device))
    assert torch.equal(gpt.trace("To be").logits, tiny_gpt.trace("To be").logits)
    mt = toyviz.load(str(tiny_checkpoints["translator"]), device=str(tiny_translator.device))
    assert mt.translate("the earth").ids == tiny_translator.translate("the earth").ids


def test_truncated_weights_give_a_one_line_error(tiny_checkpoints, tmp_path):
    import shutil
    broken = tmp_path / "broken"
    shutil.copytree(tiny_checkpoints["gpt"], broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(toyviz.CheckpointError) as err:
        toyviz.load(str(broken))
    message = str(err.value)
    assert "\n" not in message and message.startswith("cannot load") and "toyviz train" in message


def test_missing_checkpoint_says_what_to_run(tmp_path, monkeypatch):
    with pytest.raises(toyviz.CheckpointError, match="config.json is missing"):
        toyviz.load(str(tmp_path))
    import toyviz.models.checkpoint as ck
    monkeypatch.setattr(ck, "CHECKPOINTS", tmp_path)
    with pytest.raises(toyviz.CheckpointError, match="toyviz train gpt"):
        toyviz.load("gpt")


@pytest.mark.parametrize("preset,total", [("gpt2", 124_439_808), ("gpt2-medium", 354_823_168),
                                          ("gpt2-large", 774_030_080), ("gpt2-xl", 1_557_611_200)])
def test_gpt2_presets_give_the_real_counts(preset, total):
    assert count_parameters(preset)["total"] == total


def _hand_count(c: GPTConfig) -> int:
    """Parameters derived by hand from the architecture, independently of the model code."""
    d, f, V, L, b = c.d_model, c.d_ff, c.vocab_size, c.n_layer, int(c.bias)
    attention = 4 * (d * d + b * d)
    ffn = (3 if c.feed_forward == "swiglu" else 2) * d * f + b * (f * (2 if c.feed_forward == "swiglu" else 1) + d)
    norms = (2 * L + 1) * d * (1 + b)
    positions = c.context * d if c.positional == "learned" else 0
    head = 0 if c.tie_head else V * d
    return V * d + positions + L * (attention + ffn) + norms + head


@pytest.mark.parametrize("kw", [dict(), dict(positional="learned", tie_head=False), dict(positional="rope"),
                                dict(feed_forward="swiglu", bias=False), dict(norm="post", positional="none")])
def test_parameter_counts_match_hand_formula_and_the_model(kw):
    config = GPTConfig(vocab_size=101, context=24, n_layer=3, n_head=4, d_model=32, **kw)
    counted = count_parameters(config)
    assert counted["total"] == _hand_count(config) == sum(p.numel() for p in ToyGPT(config).parameters())
    assert counted["total"] == sum(v for k, v in counted.items() if k != "total")


def test_translator_parameter_count_matches_the_model():
    config = TranslatorConfig(src_vocab_size=50, tgt_vocab_size=60, d_model=32, d_ff=64, n_encoder_layer=2,
                              n_decoder_layer=5)
    assert count_parameters(config)["total"] == sum(p.numel() for p in ToyTranslator(config).parameters())


@pytest.mark.parametrize("config", [GPTConfig(vocab_size=101, context=24, n_layer=6, n_head=4, d_model=32, norm="post"),
                                    TranslatorConfig(src_vocab_size=50, tgt_vocab_size=60, d_model=32, d_ff=64,
                                                     n_encoder_layer=4, n_decoder_layer=1)])
def test_counting_two_depths_gives_each_component_of_the_full_model(config):
    """count_parameters builds depth 1 and 2 only; every component must match the model built whole."""
    assert count_parameters(config) == count_parameters(ToyGPT(config) if isinstance(config, GPTConfig)
                                                        else ToyTranslator(config))
