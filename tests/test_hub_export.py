"""The GPT written as a transformers folder (toyviz.hub_export): transformers' own AutoModelForCausalLM and
AutoTokenizer, reading the folder, give the project's logits and token ids. On the shipped GPT (logits within 1e-4
in float32, the layout exact in float64 up to the rotary frequencies' rounding), on toy GPTs of every option
GPT-NeoX can hold (no biases, partial rotary, a parallel block, tanh GELU, ReLU, an untied head), and on
varied text for the tokenizer: spaces, tabs, newlines, CRLF, digits, contractions, accents, CJK, emoji, the
special token's string typed as text, the docs, and seeded random strings."""
import json
import random
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

import toyviz  # noqa: E402
from toyviz import hub_export  # noqa: E402
from toyviz.models.config import GPTConfig  # noqa: E402
from toyviz.models.gpt import ToyGPT  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = ROOT / "checkpoints" / "gpt"
TEXTS = ["ROMEO:\nWhat light through yonder window breaks?", "To be, or not to be, that is the question",
         "  spaces   and\ttabs\n\n\nnewlines  \r\nCRLF\r\n", "Ünïcödé — “quotes” 日本語 😀 café naïve ﬁ",
         "1234567 3.14159 it's we'll they're I'M DON'T", "<|endoftext|> typed as text", "a", " ", "\n"]


def alphabet() -> list[str]:
    return [chr(c) for c in [*range(9, 14), *range(32, 127), *range(160, 400), 0x2014, 0x201C, 0x201D, 0x3042, 0x65E5,
                             0x1F600, 0x1F468, 0x200D, 0x0301]]


def fuzz(n: int, seed: int = 0) -> list[str]:
    rng, letters = random.Random(seed), alphabet()
    return ["".join(rng.choice(letters) for _ in range(rng.randint(1, 80))) for _ in range(n)]


def logits(model, ids: list[int], dtype=torch.float32) -> torch.Tensor:
    with torch.no_grad():
        out = model.to(dtype)(torch.tensor([ids]))
    model.float()
    return out.logits[0] if hasattr(out, "logits") else out[0][0]


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    if not (SHIPPED / "model.safetensors").is_file():
        pytest.skip("the shipped GPT is missing")
    gpt = toyviz.load("gpt", device="cpu")
    folder = hub_export.main([str(tmp_path_factory.mktemp("hf") / "toyviz-gpt")])["out"]
    return gpt, transformers.AutoModelForCausalLM.from_pretrained(folder), \
        transformers.AutoTokenizer.from_pretrained(folder), Path(folder)


def test_transformers_gives_the_shipped_gpts_logits(shipped):
    gpt, model, tokenizer, folder = shipped
    assert type(model).__name__ == "GPTNeoXForCausalLM" and model.dtype == torch.float32
    config = json.loads((folder / "config.json").read_text())
    assert (config["rotary_pct"], config["use_parallel_residual"], config["tie_word_embeddings"]) == (1.0, False, True)
    held_out = (ROOT / "checkpoints" / "gpt" / "README.md").read_text()[:3000]
    for text in TEXTS[:5] + [held_out]:
        ids = ([gpt.bos] + gpt.tokenizer.encode(text))[:gpt.model.config.context]
        ours, theirs = logits(gpt.model, ids), logits(model, ids)
        assert (ours - theirs).abs().max() < 1e-4, text
        assert torch.equal(ours.argmax(-1), theirs.argmax(-1))
        # in float64 what is left is the rotary frequencies' float32 rounding (HF: 1 / base^x, ours base^-x):
        # a wrong layout would be off by whole units
        assert (logits(gpt.model, ids, torch.float64) - logits(model, ids, torch.float64)).abs().max() < 1e-5


def test_transformers_tokenizer_gives_the_projects_ids(shipped):
    gpt, _, tokenizer, folder = shipped
    docs = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "docs").glob("*.md"))] + [
        (ROOT / "toyviz" / "data" / "everyday_dev.tsv").read_text(encoding="utf-8")]
    for text in TEXTS + docs + fuzz(2000):
        ours = gpt.tokenizer.encode(text)
        assert tokenizer(text)["input_ids"] == [gpt.bos] + ours, text[:60]       # the BOS the GPT reads first
        assert tokenizer(text, add_special_tokens=False)["input_ids"] == ours
        assert tokenizer.decode(ours) == gpt.tokenizer.decode(ours)
    assert tokenizer.bos_token_id == tokenizer.eos_token_id == gpt.bos
    meta = json.loads((folder / "tokenizer_config.json").read_text())
    assert meta["tokenizer_class"] == "PreTrainedTokenizerFast" and meta["model_max_length"] == 256


def test_generation_in_transformers_is_the_gpts(shipped):
    gpt, model, tokenizer, _ = shipped
    prompt = tokenizer("ROMEO:", return_tensors="pt")
    out = model.generate(**prompt, max_new_tokens=12, do_sample=False)
    greedy = [step.token for step in gpt.model.generate_ids(prompt["input_ids"][0].tolist(), 12, temperature=0)]
    assert out[0, prompt["input_ids"].shape[1]:].tolist() == greedy


OPTIONS = [dict(), dict(bias=False), dict(rotary_dims=4), dict(parallel=True), dict(feed_forward="gelu_tanh"),
           dict(feed_forward="relu", tie_head=False, rope_base=500.0)]


@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "plain")
def test_every_option_gpt_neox_holds_is_written_exactly(options, gpt_tokenizer, tmp_path):
    torch.manual_seed(0)
    config = GPTConfig(vocab_size=gpt_tokenizer.vocab_size, context=64, n_layer=2, n_head=4, d_model=32,
                       positional="rope", **options)
    model = ToyGPT(config).eval()
    with torch.no_grad():                            # biases and norms away from their zero / one start
        for name, p in model.named_parameters():
            if name.endswith("bias") or ".ln" in name or name.startswith("ln_f"):
                p.add_(torch.randn_like(p) * 0.1)
    hub_export.export(model, gpt_tokenizer, tmp_path)
    theirs = transformers.AutoModelForCausalLM.from_pretrained(tmp_path)
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path)
    for text in TEXTS[:5]:
        ids = tokenizer(text)["input_ids"][:64]
        assert ids == ([gpt_tokenizer.special("<|endoftext|>")] + gpt_tokenizer.encode(text))[:64]
        assert (logits(model, ids) - logits(theirs, ids)).abs().max() < 1e-5
        assert (logits(model, ids, torch.float64) - logits(theirs, ids, torch.float64)).abs().max() < 1e-9


@pytest.mark.parametrize("options, words", [(dict(positional="learned"), "learned positions"),
                                            (dict(positional="rope", norm_kind="rmsnorm"), "rmsnorm"),
                                            (dict(positional="rope", feed_forward="swiglu"), "swiglu"),
                                            (dict(positional="rope", n_kv_head=2), "grouped-query"),
                                            (dict(positional="rope", norm="post"), "post-norm")])
def test_what_gpt_neox_cannot_hold_is_refused(options, words, tmp_path):
    model = ToyGPT(GPTConfig(vocab_size=300, context=16, n_layer=1, n_head=4, d_model=32, **options))
    with pytest.raises(hub_export.NotExpressible, match=words):
        hub_export.export(model, None, tmp_path)
    assert not any(tmp_path.iterdir())


def test_a_written_folder_opens_in_toyviz_again_bit_for_bit(shipped):
    """toyviz.models.hub's GPT-NeoX table, read the other way, gives back the very weights."""
    pytest.importorskip("toyviz.models.hub")
    gpt, _, _, folder = shipped
    again = toyviz.load(str(folder), device="cpu")
    ids = [gpt.bos] + gpt.tokenizer.encode(TEXTS[0])
    assert [again.bos] + again.tokenizer.encode(TEXTS[0]) == ids
    assert torch.equal(logits(gpt.model, ids), logits(again.model, ids))


def test_the_command_refuses_the_translator(tiny_checkpoints, tmp_path):
    with pytest.raises(toyviz.errors.UserError, match="not a GPT"):
        hub_export.main([str(tmp_path / "out"), "--checkpoint", str(tiny_checkpoints["translator"])])
