"""The architecture experiments' variants: small GPTs that differ from BASELINE in exactly one thing.

Pure data (no torch, no training code), so the app can list the variants without importing the
training loop; `toyviz experiments` trains them.
"""
from dataclasses import replace

from toyviz.models.config import GPTConfig

BASELINE = GPTConfig(vocab_size=4096, context=128, n_layer=4, n_head=4, d_model=128, positional="sinusoidal",
                     feed_forward="gelu", norm="pre", causal=True)
# name → (what differs, config overrides, seed offset); SwiGLU's three matrices get 2/3 of 4·d to keep the size
VARIANTS = {
    "baseline": ("nothing: sinusoidal PE, GELU, pre-norm, causal mask", {}, 0),
    "baseline_seed2": ("the baseline with another seed (the seed-to-seed spread)", {}, 1),
    "learned_pe": ("learned absolute positions", {"positional": "learned"}, 0),
    "rope": ("rotary positions on q and k", {"positional": "rope"}, 0),
    "no_pe": ("no positional information at all", {"positional": "none"}, 0),
    "swiglu": ("SwiGLU feed-forward, d_ff = 2/3 · 4d", {"feed_forward": "swiglu", "d_ff": 344}, 0),
    "post_norm": ("LayerNorm after each residual add (the 2017 paper)", {"norm": "post"}, 0),
    "no_causal_mask": ("trained without the causal mask", {"causal": False}, 0),
}
POSITIONAL = ("baseline", "learned_pe", "rope", "no_pe")     # evaluated at 1×, 2×, 4× the context


def variant_config(name: str) -> GPTConfig:
    return replace(BASELINE, **VARIANTS[name][1])
