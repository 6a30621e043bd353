"""Hugging Face causal LMs opened through toyviz (toyviz.models.hub): GPT-2, GPT-NeoX/Pythia, Llama and a
Qwen2-shaped Llama, each a toy made here with transformers (random weights, a byte-level BPE trained here with
`tokenizers`), saved with save_pretrained and opened with toyviz.load, compared with transformers' own forward:
logits within 1e-4, every head's attention pattern (eager attention) within 1e-5, on toyviz's own token ids,
which end with the model's tokenizer's ids. Nothing is downloaded; the one test that opens `gpt2` from the Hub
runs only with TOYVIZ_HUB_TESTS=1.
"""
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

import toyviz  # noqa: E402
from toyviz.errors import UserError  # noqa: E402
from toyviz.models import hub  # noqa: E402

TEXT = ("To be, or not to be, that is the question. Whether 'tis nobler in the mind to suffer the slings and "
        "arrows of outrageous fortune, or to take arms against a sea of troubles. ") * 30
PROMPT = "To be, or not to be: whether 'tis nobler to suffer the slings of fortune"
EOT = "<|endoftext|>"


def trained_tokenizer(folder, bos_token: str = EOT, eos_token: str = EOT):
    """A byte-level BPE of 400 tokens learned here from TEXT, saved as the folder's tokenizer.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    specials = list(dict.fromkeys([EOT, bos_token, eos_token]))
    tok.train_from_iterator([TEXT], trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=bos_token, eos_token=eos_token)
    fast.save_pretrained(folder)
    return fast


def randomized(model, seed: int = 0):
    """Every weight drawn afresh, large enough that attention is far from uniform (transformers' init, 0.02,
    leaves it near uniform, where a wrong rotary layout could hide); norms' scales near 1."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            p.copy_(1 + 0.1 * noise if ("norm" in name or "ln_" in name) and name.endswith("weight") else 0.25 * noise)
    return model


def toy_config(family: str, vocab: int, bos: int, eos: int):
    shared = dict(vocab_size=vocab, bos_token_id=bos, eos_token_id=eos)
    if family == "gpt2":
        return transformers.GPT2Config(n_positions=64, n_embd=64, n_layer=2, n_head=4, **shared)
    if family == "neox":
        return transformers.GPTNeoXConfig(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                          intermediate_size=256, max_position_embeddings=64, rotary_pct=0.25,
                                          use_parallel_residual=True, tie_word_embeddings=False, **shared)
    llama = dict(hidden_size=64, intermediate_size=160, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6, tie_word_embeddings=False,
                 **shared)
    if family == "llama":
        return transformers.LlamaConfig(**llama)
    return transformers.Qwen2Config(**llama)        # Llama's shape with Q, K, V biases


FAMILIES = ("gpt2", "neox", "llama", "qwen2")


def make_folder(folder, family: str):
    """A toy of the family in `folder` → (transformers' model, eager attention, its tokenizer)."""
    folder.mkdir(parents=True, exist_ok=True)
    tok = trained_tokenizer(folder)
    config = toy_config(family, len(tok), tok.bos_token_id, tok.eos_token_id)
    torch.manual_seed(0)
    model = randomized(transformers.AutoModelForCausalLM.from_config(config, attn_implementation="eager"))
    model.save_pretrained(folder)
    return model.eval(), tok


@pytest.fixture(scope="module", params=FAMILIES)
def opened(request, tmp_path_factory):
    folder = tmp_path_factory.mktemp(request.param)
    theirs, tok = make_folder(folder, request.param)
    return request.param, folder, theirs, tok, toyviz.load(str(folder), device="cpu")


def test_logits_and_every_attention_pattern_equal_transformers(opened):
    family, _, theirs, tok, gpt = opened
    trace = gpt.trace(PROMPT)
    with torch.no_grad():
        out = theirs(torch.tensor([trace.token_ids]), output_attentions=True)
    logit_diff = (trace.logits - out.logits[0]).abs().max().item()
    pattern_diff = (trace.attention - torch.stack([a[0] for a in out.attentions])).abs().max().item()
    print(f"{family}: logits max |diff| {logit_diff:.2e}, attention {pattern_diff:.2e}")
    assert logit_diff <= 1e-4
    assert pattern_diff <= 1e-5
    # the patterns are far from uniform (a wrong rotary layout could not pass for the right one)
    assert trace.attention[:, :, -1].max() > 0.3, trace.attention[:, :, -1].max()
    # toyviz's ids: its first token, then exactly what the model's own tokenizer makes of the text
    own = tok(PROMPT, add_special_tokens=False).input_ids
    assert trace.token_ids[-len(own):] == own and len(trace.token_ids) == len(own) + 1
    assert trace.token_ids[0] == gpt.bos == theirs.config.bos_token_id
    assert "".join(trace.tokens[1:]) == PROMPT


def test_residual_writes_add_up_to_the_final_stream(opened):
    _, _, _, _, gpt = opened
    trace = gpt.trace(PROMPT)
    assert (sum(trace.residual_parts.values()) - trace.residual_final).abs().max() <= 1e-4
    m = gpt.model
    assert torch.allclose(m.head(m.ln_f(trace.residual_final)), trace.logits, atol=1e-5)


def test_generation_equals_transformers_greedy(opened):
    family, _, theirs, _, gpt = opened
    ours = [s.token for s in gpt.generate(PROMPT, 8, temperature=0)]
    ids = gpt.encode(PROMPT)[0]
    with torch.no_grad():           # greedy by hand: transformers' generate stops at an end of text, ours does not
        for _ in range(8):
            ids.append(int(theirs(torch.tensor([ids])).logits[0, -1].argmax()))
    assert ours == ids[-8:]


def test_the_config_is_what_the_family_has(opened):
    family, _, _, _, gpt = opened
    c = gpt.config
    expected = {"gpt2": dict(positional="learned", feed_forward="gelu_tanh", tie_head=True, parallel=False),
                "neox": dict(positional="rope", rotary_dims=4, parallel=True, tie_head=False, norm_kind="layernorm"),
                "llama": dict(positional="rope", n_kv_head=2, feed_forward="swiglu", norm_kind="rmsnorm", bias=False,
                              norm_eps=1e-6),
                "qwen2": dict(n_kv_head=2, norm_kind="rmsnorm", bias=True)}[family]
    assert {k: getattr(c, k) for k in expected} == expected


def test_tokens_decode_and_stream_as_the_models_tokenizer(opened):
    _, _, _, tok, gpt = opened
    text = "Whether 'tis nobler — naïve café"
    ids = gpt.tokenizer.encode(text)
    assert ids == tok(text, add_special_tokens=False).input_ids
    assert gpt.tokenizer.decode(ids) == text == tok.decode(ids)
    stream = gpt.tokenizer.stream_decoder()
    assert "".join(stream(t) for t in ids) == text
    # a special token's text typed by a user is text, as with toyviz's own tokenizers
    assert gpt.bos not in gpt.tokenizer.encode(f"a {EOT} b")


def test_the_tabs_answer_for_an_opened_model(opened):
    from toyviz.app.explorer import Explorer
    from toyviz.app.views.attention import attention_view
    from toyviz.app.views.inside import inside_view
    from toyviz.app.views.layernorm import layernorm_view
    from toyviz.app.views.positional import positions_view
    from toyviz.app.views.residual import residual_view
    from toyviz.app.views.sampling import generate_view, next_token_view
    from toyviz.app.views.tokens import tokens_view
    from toyviz.app.views.why import why_view
    family, _, _, _, gpt = opened
    ex = Explorer(gpt, None)
    results = {
        "tokens": tokens_view(ex, PROMPT), "positions": positions_view(ex, PROMPT),
        "attention": attention_view(ex, PROMPT, 1, 3), "inside": inside_view(ex, PROMPT, 1, 3),
        "layernorm": layernorm_view(ex, PROMPT, "block1.ln2"), "residual": residual_view(ex, PROMPT),
        "why": why_view(ex, PROMPT), "next": next_token_view(ex, PROMPT),
        "generate": list(generate_view(ex, PROMPT, max_new=4, seed=0))[-1],
    }
    for tab, result in results.items():
        assert result, tab
        assert "went wrong" not in str(result[0]), (tab, result[0])
    assert ("norms are RMSNorms" in results["layernorm"][0]) == (family in ("llama", "qwen2"))


def test_app_serves_an_opened_folder(tmp_path, monkeypatch):
    """`python app.py --gpt FOLDER` on a toy GPT-2 folder: the page's /attention and /generate answer, drawn from
    the converted model (its 4 heads, its own tokens)."""
    from test_app import App, PROMPT as APP_PROMPT, check_shape, figure, title, visible_text
    make_folder(tmp_path / "gpt2", "gpt2")
    a = App.via_main(["--gpt", str(tmp_path / "gpt2"), "--translator", str(tmp_path / "none"), "--device", "cpu",
                      "--workers", "1"], monkeypatch)
    try:
        result = check_shape(a.call(APP_PROMPT, 1, 3, "probs", [], False, api="/attention"), "TPPTP", "/attention")
        assert "layer 1, head 3" in title(figure(result[2]))
        parts = a.stream(APP_PROMPT, 0.8, 50, 0.95, 5, 1, False)
        check_shape(parts[-1], "TTPP", "/generate")
        assert parts[-1][1].count('class="token-prob"') == 5 and visible_text(parts[-1][1]).strip()
    finally:
        a.close()


def test_an_attribution_graph_stays_exact_for_the_family(opened):
    """The circuits' frozen model (toyviz.interpret.circuits.frozen) with random transcoders, in float64: with the
    errors added back it is the opened model (an RMSNorm frozen as an RMSNorm, a parallel block's MLP reading the
    stream before attention wrote), and every target is its incoming edges plus its bias."""
    import copy
    from toyviz.interpret.circuits import frozen
    from toyviz.interpret.circuits.graph import attribute
    from toyviz.interpret.transcoders import Transcoder, TranscoderConfig, TranscoderSet
    _, _, _, _, gpt = opened
    torch.manual_seed(0)
    layers = [Transcoder(TranscoderConfig(gpt.config.d_model, 64, 4, layer)) for layer in range(gpt.config.n_layer)]
    with torch.no_grad():
        for t in layers:
            t.b_dec.normal_(0, 0.1), t.b_enc.normal_(0, 0.1)
    model = copy.deepcopy(gpt.model).double().eval()
    transcoders = TranscoderSet([t.double().eval() for t in layers])
    ids = gpt.encode(PROMPT)[0][:12]
    with torch.no_grad():
        target = int(model(torch.tensor([ids]))[0][0, -1].argmax())
    prompt = frozen.record(model, transcoders, ids, target)
    values = frozen.run(model, transcoders, prompt, prompt.leaves)
    torch.testing.assert_close(values.logits, prompt.logits, rtol=1e-10, atol=1e-10)
    graph = attribute(model, transcoders, ids, target, batch=7)
    kinds = graph.kinds()
    targets = (kinds == 0) | (kinds == 3)
    rebuilt = graph.adjacency.sum(1) + graph.bias
    torch.testing.assert_close(rebuilt[targets], graph.values[targets], rtol=1e-9, atol=1e-9)


def test_an_unsupported_architecture_is_one_line(tmp_path):
    config = transformers.BertConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=64)
    transformers.BertForMaskedLM(config).save_pretrained(tmp_path)
    with pytest.raises(UserError) as err:
        toyviz.load(str(tmp_path), device="cpu")
    message = str(err.value)
    assert "'bert'" in message and "GPT-2, GPT-NeoX/Pythia and Llama" in message and "\n" not in message
    assert isinstance(err.value, toyviz.CheckpointError)


def test_a_folder_without_weights_or_with_strange_weights_says_so(tmp_path):
    tok = trained_tokenizer(tmp_path)
    config = toy_config("gpt2", len(tok), tok.bos_token_id, tok.eos_token_id)
    config.save_pretrained(tmp_path)
    with pytest.raises(UserError, match="no weights"):
        toyviz.load(str(tmp_path), device="cpu")
    from safetensors.torch import save_file
    save_file({"wte.weight": torch.zeros(len(tok), 64), "h.0.attn.c_attn.weight": torch.zeros(64, 192),
               "mystery.weight": torch.zeros(3)}, str(tmp_path / "model.safetensors"))
    with pytest.raises(UserError, match=r"not a GPT-2 checkpoint toyviz can convert \(weights toyviz has no place "
                                        r"for: mystery.weight; missing: blocks.0.attn.o.weight"):
        toyviz.load(str(tmp_path), device="cpu")


def test_gpt2_weights_as_the_hub_stores_them(tmp_path):
    """The Hub's gpt2 stores its weights without the "transformer." prefix and with each layer's causal-mask
    buffers (h.{i}.attn.bias, .masked_bias): they open, to the same logits."""
    from safetensors.torch import save_file
    theirs, _ = make_folder(tmp_path, "gpt2")
    stored = {k.removeprefix("transformer."): v.contiguous() for k, v in theirs.state_dict().items()
              if k != "lm_head.weight"}
    for i in range(theirs.config.n_layer):
        stored[f"h.{i}.attn.bias"] = torch.tril(torch.ones(1, 1, 64, 64))
        stored[f"h.{i}.attn.masked_bias"] = torch.tensor(-1e4)
    save_file(stored, str(tmp_path / "model.safetensors"))
    gpt = toyviz.load(str(tmp_path), device="cpu")
    trace = gpt.trace(PROMPT)
    with torch.no_grad():
        assert (trace.logits - theirs(torch.tensor([trace.token_ids])).logits[0]).abs().max() <= 1e-4


def test_a_context_longer_than_a_trace_can_hold_is_cut(tmp_path):
    """A GPT-2 with 4,096 learned positions opens with the context that keeps one trace within hub.TRACE_BUDGET
    (its position table's first rows); a prompt within it gets transformers' logits."""
    tok = trained_tokenizer(tmp_path)
    config = transformers.GPT2Config(n_positions=4096, n_embd=64, n_layer=2, n_head=4, vocab_size=len(tok),
                                     bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    theirs = randomized(transformers.GPT2LMHeadModel(config)).eval()
    theirs.save_pretrained(tmp_path)
    gpt = toyviz.load(str(tmp_path), device="cpu")
    assert gpt.config.context == hub.traceable_context(2, 4, 64) == gpt.model.pos_emb.weight.shape[0] < 4096
    trace = gpt.trace(PROMPT)
    with torch.no_grad():
        assert (trace.logits - theirs(torch.tensor([trace.token_ids])).logits[0]).abs().max() <= 1e-4
    assert hub.traceable_context(12, 12, 768) == 320                # GPT-2 small


def test_a_sentencepiece_style_tokenizer_reads_as_its_bytes(tmp_path):
    """Llama 2's kind of tokenizer.json (▁ for a space, byte-fallback tokens <0xNN>, a post-processor that adds
    <s>): toyviz's ids are the tokenizer's own with <s> first; pieces and streamed text come from the bytes."""
    from tokenizers import Tokenizer, decoders, models, normalizers, processors, trainers
    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    tok.train_from_iterator([TEXT], trainers.BpeTrainer(vocab_size=600, special_tokens=["<unk>", "<s>", "</s>"]))
    learned = json.loads(tok.to_str())["model"]                 # + the 256 byte tokens, ordinary vocabulary entries
    vocab = {**learned["vocab"], **{f"<0x{b:02X}>": len(learned["vocab"]) + b for b in range(256)}}
    tok.model = models.BPE(vocab, [tuple(m) for m in learned["merges"]], byte_fallback=True, unk_token="<unk>")
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                                unk_token="<unk>")
    fast.save_pretrained(tmp_path)
    config = toy_config("llama", len(fast), fast.bos_token_id, fast.eos_token_id)
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(tmp_path)
    gpt = toyviz.load(str(tmp_path), device="cpu")
    text = "Whether 'tis nobler — naïve café"                   # é, ï and — are not in the merges: bytes
    ids = gpt.encode(text)[0]
    assert ids == fast(text).input_ids and ids[0] == fast.bos_token_id == gpt.bos
    pieces = gpt.tokenizer.pieces(ids[1:])
    assert pieces[0].startswith(" ") and any(p.startswith("<0x") for p in pieces)   # ▁ is a space; é its bytes
    stream = gpt.tokenizer.stream_decoder()
    assert "".join(stream(t) for t in ids[1:]) == " " + text
    assert fast.decode(ids[1:]) == text


def test_rotary_order_pairs_halves_as_neighbours():
    assert hub.rotary_order(8, 8).tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    assert hub.rotary_order(8, 4).tolist() == [0, 2, 1, 3, 4, 5, 6, 7]


@pytest.mark.skipif(os.environ.get("TOYVIZ_HUB_TESTS") != "1", reason="opens gpt2 from the Hub: TOYVIZ_HUB_TESTS=1")
def test_gpt2_from_the_hub():
    gpt = toyviz.load("gpt2", device="cpu")
    theirs = transformers.AutoModelForCausalLM.from_pretrained(gpt.source, attn_implementation="eager").eval()
    trace = gpt.trace(PROMPT)
    with torch.no_grad():
        out = theirs(torch.tensor([trace.token_ids]), output_attentions=True)
    assert (trace.logits - out.logits[0]).abs().max() <= 1e-3       # 124M parameters: float32 sums of 768
    assert (trace.attention - torch.stack([a[0] for a in out.attentions])).abs().max() <= 1e-5
    assert json.loads((Path(gpt.source) / "config.json").read_text())["model_type"] == "gpt2"
    assert gpt.tokenizer.encode(" Hello world") == [18435, 995]             # GPT-2's own ids
