"""How big a transformer is: parameters per component, weight and attention memory, KV cache, FLOPs.

Parameters are counted by instantiating the real model class on PyTorch's "meta" device (no
memory), so the count can never drift from the model code. Building hundreds of layers still
takes seconds, so a config is counted at depth 1 and 2 and every further layer adds the same block.
"""
from __future__ import annotations

from dataclasses import asdict, replace

import torch

from toyviz.models.config import GPTConfig, TranslatorConfig

# GPT-2 as released: learned positions, GELU, pre-norm, biases, LM head tied to the embedding
GPT2 = dict(vocab_size=50257, context=1024, positional="learned", feed_forward="gelu", norm="pre", bias=True,
            tie_head=True)
PRESETS = {
    "gpt2": GPTConfig(**GPT2, n_layer=12, n_head=12, d_model=768),
    "gpt2-medium": GPTConfig(**GPT2, n_layer=24, n_head=16, d_model=1024),
    "gpt2-large": GPTConfig(**GPT2, n_layer=36, n_head=20, d_model=1280),
    "gpt2-xl": GPTConfig(**GPT2, n_layer=48, n_head=25, d_model=1600),
}
# what the papers quoted. The released small model has 124,439,808; the paper's 117M is widely
# described as a miscount (nanoGPT's README calls it an error) — the larger ones are rounded true counts
PAPER_SIZES = {"gpt2": "117M", "gpt2-medium": "345M", "gpt2-large": "762M", "gpt2-xl": "1.5B"}

COMPONENTS = {  # parameter-name fragment → component, first match wins
    "tok_emb": "token_embedding", "src_emb": "token_embedding", "tgt_emb": "token_embedding",
    "pos_emb": "position_embedding", ".attn.": "attention", ".cross.": "attention",
    ".mlp.": "feed_forward", "ln": "norms", "_norm": "norms", "head": "head", "out.": "head",
}


def _model_for(config):
    from toyviz.models.gpt import ToyGPT
    from toyviz.models.translator import ToyTranslator
    with torch.device("meta"):
        return ToyGPT(config) if isinstance(config, GPTConfig) else ToyTranslator(config)


def count_parameters(what) -> dict[str, int]:
    """{component: n, "total": n} for a preset name ("gpt2" …), a GPTConfig/TranslatorConfig, an
    nn.Module (ToyGPT, ToyTranslator), or what `toyviz.load` returns (a GPT or Translator, whose
    `.model` is counted). Shared (tied) tensors count once, under the component that owns them first."""
    if isinstance(what, str):
        if what not in PRESETS:
            raise ValueError(f"unknown preset {what!r}; choose from {sorted(PRESETS)}")
        what = PRESETS[what]
    if isinstance(getattr(what, "model", None), torch.nn.Module) and not isinstance(what, torch.nn.Module):
        what = what.model                                          # toyviz.api.GPT / Translator
    if isinstance(what, torch.nn.Module):
        return _count_model(what)
    if not isinstance(what, (GPTConfig, TranslatorConfig)):
        raise TypeError(f"count_parameters takes a preset name, a GPTConfig/TranslatorConfig, a model or "
                        f"what toyviz.load returns, not {type(what).__name__}")
    depths = [f for f in ("n_layer", "n_encoder_layer", "n_decoder_layer") if hasattr(what, f)]
    shallow = replace(what, **dict.fromkeys(depths, 1))
    base = _count_model(_model_for(shallow))
    counts = dict(base)
    for depth in depths:                                           # identical blocks: one more adds the same
        deeper = _count_model(_model_for(replace(shallow, **{depth: 2})))
        for component in counts:
            counts[component] += (deeper[component] - base[component]) * (getattr(what, depth) - 1)
    return counts


def _count_model(model) -> dict[str, int]:
    counts = dict.fromkeys(["token_embedding", "position_embedding", "attention", "feed_forward", "norms",
                            "head"], 0)
    for name, p in model.named_parameters():                       # named_parameters skips tied duplicates
        component = next(c for fragment, c in COMPONENTS.items() if fragment in "." + name)
        counts[component] += p.numel()
    counts["total"] = sum(counts.values())
    return counts


def memory_report(config: GPTConfig, batch: int = 1, seq_len: int | None = None) -> dict[str, float]:
    """Bytes for weights (fp32, bf16), one layer's attention matrices, and the KV cache; FLOPs per token."""
    T = seq_len or config.context
    counts = count_parameters(config)
    params = counts["total"]
    kv_per_token = 2 * config.n_layer * config.d_model                 # one k and one v per layer
    # forward FLOPs ≈ 2 per weight per token (the head included) + attention's q·k and p·v
    non_embedding = params - counts["token_embedding"] - counts["position_embedding"]
    head = config.vocab_size * config.d_model
    return {
        "params": params,
        "weights_fp32_bytes": 4 * params, "weights_bf16_bytes": 2 * params,
        "attention_bytes_per_layer_fp32": 4 * batch * config.n_head * T * T,
        "kv_cache_bytes_per_token_bf16": 2 * kv_per_token,
        "kv_cache_bytes_full_context_bf16": 2 * kv_per_token * T * batch,
        "flops_per_token": 2 * (non_embedding + head) + 4 * config.n_layer * T * config.d_model,
        "config": asdict(config),
    }


def human_bytes(n: float) -> str:
    """1536 → "1.5 KiB": the unit that keeps a toy model's megabytes from reading "0.00 GiB"."""
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,.0f} bytes" if unit == "bytes" else f"{n:.2f} {unit}"
        n /= 1024
