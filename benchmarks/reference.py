"""A reference forward of the GPT's shape written the nanoGPT way, to measure toyviz's forward against.

Pre-norm blocks, `F.scaled_dot_product_attention(is_causal=True)`, a GELU MLP, the tied head, logits
at every position (as the app needs them), RoPE's cos/sin computed once. It reads the weights of a
ToyGPT (separate q, k, v as toyviz stores them), so it also checks the shipped model's maths from
outside: `benchmarks.core` prints how far apart the two logits are.
"""
import torch
import torch.nn.functional as F

from toyviz.models.layers import rope_angles


def reference_forward(model, idx: torch.Tensor) -> torch.Tensor:
    """idx (B, T) → logits (B, T, V) of a pre-norm RoPE GPT with `model`'s weights."""
    c = model.config
    B, T = idx.shape
    angles = rope_angles(torch.arange(T, device=idx.device), c.d_head)
    cos, sin = angles.cos(), angles.sin()                               # (T, hs/2)

    def rotate(t):                                                      # (B, nh, T, hs)
        even, odd = t[..., 0::2], t[..., 1::2]
        return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)

    def heads(t):
        return t.view(B, T, c.n_head, c.d_head).transpose(1, 2)

    x = model.tok_emb(idx)
    for block in model.blocks:
        h = block.ln1(x)
        a = block.attn
        q, k, v = rotate(heads(a.q(h))), rotate(heads(a.k(h))), heads(a.v(h))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + a.o(y.transpose(1, 2).reshape(B, T, c.d_model))
        x = x + block.mlp.down(F.gelu(block.mlp.up(block.ln2(x))))
    return model.head(model.ln_f(x))
