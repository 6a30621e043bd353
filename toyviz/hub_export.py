"""The shipped GPT as a Hugging Face transformers folder: GPT-NeoX weights and config, and its tokenizer.json.

    toyviz export hf OUT [--checkpoint gpt]

writes OUT/config.json, model.safetensors, generation_config.json (transformers' `save_pretrained`),
tokenizer.json and tokenizer_config.json, so that

    model = transformers.AutoModelForCausalLM.from_pretrained(OUT)
    tokenizer = transformers.AutoTokenizer.from_pretrained(OUT)
    model(**tokenizer("ROMEO:", return_tensors="pt")).logits        # the project's logits

give the project's logits and ids. The architecture is one transformers ships, chosen to match the GPT
exactly, not approximately: GPT-NeoX with the whole head rotary (rotary_pct 1.0, partial_rotary_factor in
transformers 5) and a sequential block (use_parallel_residual False: x + attn(ln1 x), then + mlp(ln2 x)), as the
GPT's pre-norm blocks are; LayerNorm with its bias and eps, biases on every linear map, exact GELU, the head tied
to the token embedding, RoPE's base. What differs is layout only:

    query_key_value  Q, K and V of each head one after another, (n_head, 3, d_head) rows
    rotary           the GPT turns neighbouring pairs (2i, 2i+1) of Q and K, HF's rotate_half the pairs (i, i + r/2):
                     each head's Q and K rows permuted so the same pairs turn by the same angles; q·k, the
                     attention pattern and everything after it are unchanged, V and the output projection untouched

(the reverse of toyviz.models.hub's GPT-NeoX table, which opens such a folder as a GPT again). A configuration
GPT-NeoX cannot express exactly (RMSNorm, SwiGLU, grouped-query attention, learned or sinusoidal positions,
post-norm) is refused, not approximated. A missing bias is written as zeros, which is exact.

The tokenizer: the checkpoint's tiktoken merge ranks as a byte-level BPE `tokenizers` model with the same split
pattern (tiktoken's encoder ranks become merges, as transformers' TikTokenConverter makes them, and a piece that
is a whole token is taken whole, as tiktoken does: ignore_merges); <|endoftext|> is the BOS the GPT reads first,
which the tokenizer's post-processor puts before a text (`add_special_tokens=False` leaves it out). As with the
project's tokenizer, the string "<|endoftext|>" typed in a text is text there, not the special token.
The weights are written in float32 (the checkpoint's fp16 values, exactly), so transformers computes in float32
as toyviz does: 17 MB for the shipped GPT.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from toyviz.api import BOS_GPT as BOS_TOKEN           # "<|endoftext|>": the GPT's first token, and its end of text
from toyviz.errors import UserError, run_command

ACTIVATIONS = {"gelu": "gelu", "gelu_tanh": "gelu_pytorch_tanh", "relu": "relu"}    # ours → transformers' ACT2FN


class NotExpressible(UserError):
    """A GPT whose architecture GPT-NeoX cannot hold exactly."""


# ---------------------------------------------------------------- the model ---------------------------------

def check_expressible(c) -> None:
    refusals = [(c.positional != "rope", f"{c.positional} positions (GPT-NeoX has rotary ones only)"),
                (c.norm != "pre", "post-norm blocks"), (not c.causal, "attention without the causal mask"),
                (c.norm_kind != "layernorm", f"{c.norm_kind} (GPT-NeoX normalises with LayerNorm)"),
                (c.feed_forward not in ACTIVATIONS, f"a {c.feed_forward} feed-forward"),
                (c.n_kv_head != c.n_head, "grouped-query attention")]
    found = [why for wrong, why in refusals if wrong]
    if found:
        raise NotExpressible(f"GPT-NeoX cannot hold this GPT exactly: {', '.join(found)}")


def neox_config(c) -> dict:
    """The GPT's config (toyviz.models.config.GPTConfig) as GPT-NeoX's config.json fields."""
    check_expressible(c)
    return dict(architectures=["GPTNeoXForCausalLM"], model_type="gpt_neox", vocab_size=c.vocab_size,
                hidden_size=c.d_model, num_hidden_layers=c.n_layer, num_attention_heads=c.n_head,
                intermediate_size=c.d_ff, hidden_act=ACTIVATIONS[c.feed_forward], max_position_embeddings=c.context,
                layer_norm_eps=c.norm_eps, use_parallel_residual=c.parallel, attention_bias=c.bias,
                rotary_pct=c.rotary_dims / c.d_head, rotary_emb_base=c.rope_base,
                rope_parameters={"rope_type": "default", "rope_theta": c.rope_base,
                                 "partial_rotary_factor": c.rotary_dims / c.d_head},
                tie_word_embeddings=c.tie_head, attention_dropout=0.0, hidden_dropout=0.0, initializer_range=0.02,
                use_cache=True, dtype="float32")


def rotate_half_order(d_head: int, rotary_dims: int) -> torch.Tensor:
    """(d_head,) which of our rows each of HF's is: HF's pair (i, i + r/2) is our (2i, 2i+1) for i < r/2; the dims
    past the rotary ones stay where they are."""
    return torch.cat((torch.arange(0, rotary_dims, 2), torch.arange(1, rotary_dims, 2), torch.arange(rotary_dims, d_head)))


def neox_state_dict(model) -> dict[str, torch.Tensor]:
    """The GPT's weights (a ToyGPT) under GPT-NeoX's names and layout, float32."""
    c = model.config
    check_expressible(c)
    ours = {k: v.detach().float().cpu() for k, v in model.state_dict().items()}
    order = rotate_half_order(c.d_head, c.rotary_dims)
    zeros = lambda n: torch.zeros(n)

    def bias(name: str, n: int) -> torch.Tensor:
        return ours.get(f"{name}.bias", zeros(n))

    def rotated(t: torch.Tensor) -> torch.Tensor:              # rows (n_head · d_head, …): each head's reordered
        return t.unflatten(0, (c.n_head, c.d_head))[:, order].flatten(0, 1)

    def per_head(q, k, v) -> torch.Tensor:                     # (n_head, 3, d_head, …) rows
        return torch.stack([t.unflatten(0, (c.n_head, c.d_head)) for t in (q, k, v)], dim=1).flatten(0, 2)

    out = {"gpt_neox.embed_in.weight": ours["tok_emb.weight"]}
    for i in range(c.n_layer):
        b, theirs = f"blocks.{i}", f"gpt_neox.layers.{i}"
        out[f"{theirs}.input_layernorm.weight"] = ours[f"{b}.ln1.weight"]
        out[f"{theirs}.input_layernorm.bias"] = bias(f"{b}.ln1", c.d_model)
        q, k, v = (ours[f"{b}.attn.{p}.weight"] for p in "qkv")
        out[f"{theirs}.attention.query_key_value.weight"] = per_head(rotated(q), rotated(k), v)
        if c.bias:
            q, k, v = (ours[f"{b}.attn.{p}.bias"] for p in "qkv")
            out[f"{theirs}.attention.query_key_value.bias"] = per_head(rotated(q), rotated(k), v)
            out[f"{theirs}.attention.dense.bias"] = ours[f"{b}.attn.o.bias"]
        out[f"{theirs}.attention.dense.weight"] = ours[f"{b}.attn.o.weight"]
        out[f"{theirs}.post_attention_layernorm.weight"] = ours[f"{b}.ln2.weight"]
        out[f"{theirs}.post_attention_layernorm.bias"] = bias(f"{b}.ln2", c.d_model)
        out[f"{theirs}.mlp.dense_h_to_4h.weight"] = ours[f"{b}.mlp.up.weight"]
        out[f"{theirs}.mlp.dense_h_to_4h.bias"] = bias(f"{b}.mlp.up", c.d_ff)
        out[f"{theirs}.mlp.dense_4h_to_h.weight"] = ours[f"{b}.mlp.down.weight"]
        out[f"{theirs}.mlp.dense_4h_to_h.bias"] = bias(f"{b}.mlp.down", c.d_model)
    out["gpt_neox.final_layer_norm.weight"] = ours["ln_f.weight"]
    out["gpt_neox.final_layer_norm.bias"] = bias("ln_f", c.d_model)
    out["lm_head.weight"] = ours["head.weight"]
    return out


def hf_model(model):
    """The GPT as a transformers GPTNeoXForCausalLM (float32, eval mode), every weight set from ours."""
    import transformers

    config = neox_config(model.config)
    config.pop("architectures"), config.pop("model_type")
    hf = transformers.GPTNeoXForCausalLM(transformers.GPTNeoXConfig(**config)).float().eval()
    state = neox_state_dict(model)
    missing, unexpected = hf.load_state_dict(state, strict=False)
    tied = {"lm_head.weight"} if model.config.tie_head else set()
    if set(missing) - tied or unexpected:
        raise RuntimeError(f"GPT-NeoX's weights and ours do not match: missing {missing}, unexpected {unexpected}")
    if model.config.tie_head:
        hf.tie_weights()
    return hf


# ---------------------------------------------------------------- the tokenizer -----------------------------

def byte_alphabet() -> dict[int, str]:
    """GPT-2's byte → printable character table, the alphabet of a byte-level BPE's vocabulary."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[b] = chr(b)
        else:
            chars[b] = chr(256 + extra)
            extra += 1
    return chars


def vocab_and_merges(ranks: dict[bytes, int]) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """tiktoken's {token bytes: rank} → a BPE vocabulary and merges: every split of a token into two tokens ranked
    below it is a merge, at the token's rank (ties by the parts' ranks), as transformers' TikTokenConverter does."""
    alphabet = byte_alphabet()
    text = lambda raw: "".join(alphabet[b] for b in raw)
    vocab = {text(token): rank for token, rank in ranks.items()}
    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        splits = [(token[:i], token[i:]) for i in range(1, len(token)) if token[:i] in ranks and token[i:] in ranks]
        merges += sorted(((ranks[left], ranks[right]), left, right) for left, right in splits
                         if ranks[left] < rank and ranks[right] < rank)
    return vocab, [(text(left), text(right)) for _, left, right in merges]


def tokenizers_tokenizer(tokenizer):
    """The project's tokenizer (toyviz.models.tokenizer.Tokenizer) as a `tokenizers.Tokenizer` giving the same ids."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors

    vocab, merges = vocab_and_merges(tokenizer.ranks)
    backend = Tokenizer(models.BPE(vocab, merges, ignore_merges=True, byte_fallback=False, fuse_unk=False))
    backend.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(tokenizer.pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    backend.decoder = decoders.ByteLevel()
    backend.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in tokenizer.specials])
    for s in tokenizer.specials:
        if backend.token_to_id(s) != tokenizer.special(s):
            raise RuntimeError(f"{s} is id {backend.token_to_id(s)} in tokenizers, {tokenizer.special(s)} in ours")
    bos = tokenizer.special(BOS_TOKEN)
    backend.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single=f"{BOS_TOKEN} $A", pair=f"{BOS_TOKEN} $A {BOS_TOKEN} $B",
                                      special_tokens=[(BOS_TOKEN, bos)])])
    backend.encode_special_tokens = True           # "<|endoftext|>" typed in a text is text, as in ours
    return backend


def hf_tokenizer(tokenizer, context: int):
    """The project's tokenizer as a transformers fast tokenizer (bos, eos: <|endoftext|>; special-token strings in
    a text split as text, as ours does)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=tokenizers_tokenizer(tokenizer), bos_token=BOS_TOKEN,
                                   eos_token=BOS_TOKEN, model_max_length=context, split_special_tokens=True,
                                   clean_up_tokenization_spaces=False)


# ---------------------------------------------------------------- the folder --------------------------------

def export(model, tokenizer, out: str | Path) -> Path:
    """Write the GPT (a ToyGPT) and its tokenizer as a transformers folder; returns it."""
    out = Path(out)
    hf = hf_model(model)
    bos = tokenizer.special(BOS_TOKEN)
    hf.config.bos_token_id = hf.config.eos_token_id = bos
    hf.generation_config.bos_token_id = hf.generation_config.eos_token_id = bos
    hf.save_pretrained(out)
    hf_tokenizer(tokenizer, model.config.context).save_pretrained(out)
    # what transformers 4.x reads besides (circuit-tracer, TransformerLens and nnsight pin 4.x): the rotary's
    # share and base under their old names (4.x's default share is Pythia's 0.25), the tokenizer's class by a
    # name both know, the dtype under its old name
    legacy = {"rotary_pct": model.config.rotary_dims / model.config.d_head, "rotary_emb_base": model.config.rope_base,
              "torch_dtype": "float32"}
    amend(out / "config.json", legacy)
    amend(out / "tokenizer_config.json", {"tokenizer_class": "PreTrainedTokenizerFast"})
    return out


def amend(path: Path, fields: dict) -> None:
    path.write_text(json.dumps({**json.loads(path.read_text()), **fields}, indent=2, sort_keys=True) + "\n")


def main(argv=None) -> dict:
    from toyviz.models.checkpoint import CheckpointError, load_folder, resolve

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", type=Path, help="the folder to write (made if missing)")
    p.add_argument("--checkpoint", default="gpt", help="checkpoint name or folder (default: the shipped GPT)")
    args = p.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        folder = resolve(args.checkpoint)
        _, model, tokenizers = load_folder(folder)
    except (CheckpointError, FileNotFoundError) as err:
        raise UserError(str(err)) from None
    if not hasattr(model, "tok_emb") or "tokenizer" not in tokenizers:
        raise UserError(f"{folder} is not a GPT checkpoint (the translator has no transformers architecture here)")
    start = time.perf_counter()
    out = export(model, tokenizers["tokenizer"], args.out)
    summary = {"out": str(out), "architecture": "GPTNeoXForCausalLM",
               "files": sorted(p.name for p in out.iterdir()),
               "megabytes": round(sum(p.stat().st_size for p in out.iterdir()) / 1e6, 1),
               "seconds": round(time.perf_counter() - start, 1)}
    print(json.dumps(summary))
    return summary


if __name__ == "__main__":
    run_command(main)
