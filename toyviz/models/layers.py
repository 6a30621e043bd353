"""The pieces both models are built from: positional encodings, multi-head attention,
feed-forward networks and the residual block that wires them together.

Attention has two paths with the same maths: the fused `F.scaled_dot_product_attention`
for plain forward passes and training, and an explicit one (scores → mask → softmax → @V)
that a traced pass takes so it can record every intermediate. Both can switch heads off
(ablation), so an ablated prediction can be checked with or without recording.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from toyviz.models import names

ENCODING_VARIANTS = ("correct", "no_d_model_scaling", "cos_overwrites_sin")


def sinusoidal_encoding(length: int, d_model: int, variant: str = "correct") -> torch.Tensor:
    """[length, d_model] sinusoidal positional encoding of "Attention Is All You Need".

    PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)).
    The two other variants are bugs that circulate in tutorials, kept to show why they break:
    "no_d_model_scaling" forgets to divide 2i by d_model (all but the first few frequencies
    collapse to ~0), "cos_overwrites_sin" writes the cosine over the sine columns (odd columns stay 0).
    """
    if variant not in ENCODING_VARIANTS:
        raise ValueError(f"variant must be one of {ENCODING_VARIANTS}, got {variant!r}")
    pos = torch.arange(length, dtype=torch.float32)[:, None]            # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float32)            # (d/2,)
    exponent = two_i if variant == "no_d_model_scaling" else two_i / d_model
    angle = pos * torch.exp(-math.log(10000.0) * exponent)              # (T, d/2)
    pe = torch.zeros(length, d_model)
    if variant == "cos_overwrites_sin":
        pe[:, 0::2] = torch.cos(angle)
    else:
        pe[:, 0::2] = torch.sin(angle)
        pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return pe


def rope_angles(positions: torch.Tensor, d_head: int, base: float = 10000.0) -> torch.Tensor:
    """[T, d_head/2] rotation angle of each (2i, 2i+1) pair of q/k at each position; positions (B, T)
    (rows at their own positions: a batch of streams) → [B, T, d_head/2]."""
    inv_freq = base ** (-torch.arange(0, d_head, 2, dtype=torch.float32, device=positions.device) / d_head)
    return positions.float()[..., None] * inv_freq


def apply_rope(x: torch.Tensor, angles: torch.Tensor) -> torch.Tensor:
    """Rotate each (2i, 2i+1) pair of x (…, T, d_head) by angles (T, d_head/2), or x (B, nh, T, d_head)
    by one row's angles each (B, T, d_head/2)."""
    if angles.dim() == 3:
        angles = angles[:, None]                                         # (B, 1, T, hs/2): every head alike
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


ABLATIONS = ("zero", "mean")


def ablate_heads(out: torch.Tensor, heads: dict[int, str] | None) -> torch.Tensor:
    """out (B, nh, T, hs) with some heads switched off: {head: "zero"} replaces that head's output
    by zeros, {head: "mean"} by its mean over this pass's positions (so with a KV cache, where a
    step sees one position, "mean" changes nothing)."""
    if not heads:
        return out
    out = out.clone()                                # autograd keeps the attention's output: edit a copy
    for head, kind in heads.items():
        if kind not in ABLATIONS:
            raise ValueError(f"ablation must be one of {ABLATIONS}, got {kind!r}")
        out[:, head] = 0.0 if kind == "zero" else out[:, head].mean(dim=1, keepdim=True)
    return out


class KVCache:
    """Keys and values of the positions already processed, one entry per attention layer.

    Self-attention keys grow by the new positions each step; cross-attention keys are the
    encoder memory's, the same at every step, so they are computed once and kept.
    """

    def __init__(self):
        self.layers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
        self.memory: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def extend(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        if layer in self.layers:
            past_k, past_v = self.layers[layer]
            k, v = torch.cat((past_k, k), dim=2), torch.cat((past_v, v), dim=2)
        self.layers[layer] = (k, v)
        return k, v

    def select(self, rows: torch.Tensor):
        """Keep (and repeat) these batch rows: beam search continues each hypothesis from its parent's."""
        for store in (self.layers, self.memory):
            for layer, (k, v) in store.items():
                store[layer] = (k[rows], v[rows])

    @property
    def length(self) -> int:
        return next(iter(self.layers.values()))[0].shape[2] if self.layers else 0

    def keep(self, layer: int) -> torch.Tensor | None:
        """Which of the keys `extend` returned are real: all of them here."""
        return None


class StreamsCache(KVCache):
    """The keys and values of several independent sequences decoded together, one row each
    (toyviz.serving.batching): row r holds its own positions 0 … lengths[r] − 1. Rows differ in length, so each
    layer's keys sit in a buffer padded at the end, and `keep` masks the padding. A sequence joins with
    the cache of its own prompt (`put`) and leaves (`drop`) without touching the other rows' keys.
    During a forward every row gets one new position; `advance` then counts it."""

    def __init__(self, capacity: int):
        super().__init__()
        self.capacity = capacity                                         # positions a row can hold
        self.rows = 0
        self.lengths = torch.zeros(0, dtype=torch.long)                  # (rows,)
        self.buffers: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}  # layer → (R, nh, capacity, hs) × 2

    def put(self, row: int, cache: KVCache):
        """Row `row` (an existing one, or `rows` to add one) takes over a one-sequence cache."""
        for layer, (k, v) in cache.layers.items():
            if layer not in self.buffers or row >= self.buffers[layer][0].shape[0]:
                self._grow(layer, k, max(4, 2 * (row + 1)))
            kb, vb = self.buffers[layer]
            kb[row, :, : k.shape[2]], vb[row, :, : v.shape[2]] = k[0], v[0]
        if row == self.rows:
            self.rows += 1
            self.lengths = torch.cat((self.lengths.to(self.buffers[0][0].device), self.lengths.new_zeros(1)))
        self.lengths[row] = cache.length

    def _grow(self, layer: int, like: torch.Tensor, rows: int):
        old = self.buffers.get(layer)
        shape = (rows, like.shape[1], self.capacity, like.shape[3])
        new = (like.new_zeros(shape), like.new_zeros(shape))
        if old is not None:
            for buffer, kept in zip(new, old):
                buffer[: kept.shape[0]] = kept
        self.buffers[layer] = new

    def drop(self, row: int):
        """Remove a row; the last row moves into its place (the caller moves its sequence too)."""
        last = self.rows - 1
        if row != last:
            for kb, vb in self.buffers.values():
                kb[row], vb[row] = kb[last], vb[last]
            self.lengths[row] = self.lengths[last]
        self.rows, self.lengths = last, self.lengths[:last].clone()

    def extend(self, layer: int, k: torch.Tensor, v: torch.Tensor):
        """k, v (rows, nh, 1, hs): each row's newest position, written at its own length."""
        kb, vb = self.buffers[layer]
        rows = torch.arange(self.rows, device=k.device)
        kb[rows, :, self.lengths], vb[rows, :, self.lengths] = k[:, :, 0], v[:, :, 0]
        width = int(self.lengths.max()) + 1
        return kb[: self.rows, :, :width], vb[: self.rows, :, :width]

    def keep(self, layer: int) -> torch.Tensor:
        width = int(self.lengths.max()) + 1
        return torch.arange(width, device=self.lengths.device)[None, :] <= self.lengths[:, None]   # (rows, Tk)

    def advance(self):
        self.lengths += 1

    @property
    def length(self) -> torch.Tensor:
        """(rows,) each row's next position."""
        return self.lengths


class MultiHeadAttention(nn.Module):
    """Multi-head attention with separate Q, K, V and output projections.

    Self-attention when `memory` is None, cross-attention over `memory` otherwise.
    """

    def __init__(self, d_model: int, n_head: int, bias: bool = True, dropout: float = 0.0):
        super().__init__()
        self.n_head, self.d_head = n_head, d_model // n_head
        self.q = nn.Linear(d_model, d_model, bias=bias)
        self.k = nn.Linear(d_model, d_model, bias=bias)
        self.v = nn.Linear(d_model, d_model, bias=bias)
        self.o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout

    def _heads(self, x):  # (B, T, C) -> (B, nh, T, hs)
        B, T, _ = x.shape
        return x.view(B, T, self.n_head, self.d_head).transpose(1, 2)

    def forward(self, x, memory=None, *, causal=False, key_keep=None, rope=None,
                cache: KVCache | None = None, layer: int = 0, ablate: dict[int, str] | None = None,
                rec=None, name: str = "attn"):
        """x: (B, Tq, C); memory: (B, Tk, C) or None; key_keep: (B, Tk) bool, False = padding;
        rope: (Tq, hs/2) angles of the query positions (keys get theirs when first computed);
        ablate: {head: "zero" | "mean"}, heads whose output is replaced (see `ablate_heads`)."""
        B, Tq, C = x.shape
        q = self._heads(self.q(x))
        if memory is not None and cache is not None and layer in cache.memory:
            k, v = cache.memory[layer]                                   # the memory's, computed once
        else:
            source = x if memory is None else memory
            k, v = self._heads(self.k(source)), self._heads(self.v(source))
            if memory is not None and cache is not None:
                cache.memory[layer] = (k, v)
        if memory is None and rope is not None:                          # cross-attention has no rope
            q, k = apply_rope(q, rope), apply_rope(k, rope)
        if memory is None and cache is not None:
            k, v = cache.extend(layer, k, v)                             # (B, nh, Tk, hs)
            padding = cache.keep(layer)                                  # rows of unequal length: (B, Tk)
            key_keep = padding if key_keep is None or padding is None else key_keep & padding
        Tk = k.shape[2]
        allowed = None                                                   # (B or 1, 1, Tq, Tk) bool
        if causal and Tq > 1:
            # queries are the last Tq of Tk positions: query i sees keys up to Tk - Tq + i
            allowed = torch.ones(Tq, Tk, dtype=torch.bool, device=x.device).tril(Tk - Tq)[None, None]
        if key_keep is not None:
            keep = key_keep[:, None, None, :]
            allowed = keep if allowed is None else allowed & keep
        if rec is None:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed,
                                               dropout_p=self.dropout if self.training else 0.0)
            y = ablate_heads(y, ablate)                                  # (B, nh, Tq, hs)
        else:
            y = self._traced(q, k, v, allowed, ablate, rec, name)
        y = y.transpose(1, 2).contiguous().view(B, Tq, C)                # re-assemble heads
        return self.o(y)

    def _traced(self, q, k, v, allowed, ablate, rec, name):
        """The same attention, step by step, recording what a student would want to see."""
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)       # (B, nh, Tq, Tk)
        masked = scores if allowed is None else scores.masked_fill(~allowed, float("-inf"))
        probs = masked.softmax(dim=-1)
        out = ablate_heads(probs @ v, ablate)                            # (B, nh, Tq, hs), what the model used
        # each head's own write: its output through its slice of W_O, (B, nh, Tq, C)
        w_o = self.o.weight.view(-1, self.n_head, self.d_head)           # (C, nh, hs)
        head_writes = torch.einsum("bhtd,chd->bhtc", out, w_o)
        bias = self.o.bias if self.o.bias is not None else torch.zeros_like(self.o.weight[:, 0])
        rec.attention(name, scores=scores, probs=probs, q=q, k=k, v=v, out=out,
                      head_writes=head_writes, bias=bias[None])
        return out


class FeedForward(nn.Module):
    """Position-wise feed-forward: d → d_ff → d with GELU or ReLU, or SwiGLU's gated form."""

    def __init__(self, d_model: int, d_ff: int, kind: str = "gelu", bias: bool = True, dropout: float = 0.0):
        super().__init__()
        self.kind = kind
        self.up = nn.Linear(d_model, d_ff, bias=bias)
        self.gate = nn.Linear(d_model, d_ff, bias=bias) if kind == "swiglu" else None
        self.down = nn.Linear(d_ff, d_model, bias=bias)
        self.drop = nn.Dropout(dropout)

    def hidden(self, x):  # (B, T, C) -> (B, T, d_ff), what `down` reads (a sparse autoencoder's site)
        if self.kind == "swiglu":
            return F.silu(self.gate(x)) * self.up(x)
        return F.gelu(self.up(x)) if self.kind == "gelu" else F.relu(self.up(x))

    def forward(self, x):
        return self.drop(self.down(self.hidden(x)))


class Block(nn.Module):
    """A transformer block: self-attention, optional cross-attention, feed-forward.

    Each sub-layer adds its output to the residual stream. Pre-norm (GPT-2) normalises the
    sub-layer's input; post-norm (the 2017 paper) normalises the stream after the add. Under
    post-norm the norm itself rewrites the stream, so the trace records that change as a write
    too ("norm.attn.0"): the writes then still add up exactly to the final stream.
    `ablate` maps self-attention names ("attn.1") to the heads switched off in them.
    """

    def __init__(self, d_model, n_head, d_ff, feed_forward="gelu", norm="pre", cross=False,
                 bias=True, dropout=0.0):
        super().__init__()
        self.pre_norm = norm == "pre"
        self.ln1 = nn.LayerNorm(d_model, bias=bias)
        self.attn = MultiHeadAttention(d_model, n_head, bias, dropout)
        self.ln_cross = nn.LayerNorm(d_model, bias=bias) if cross else None
        self.cross = MultiHeadAttention(d_model, n_head, bias, dropout) if cross else None
        self.ln2 = nn.LayerNorm(d_model, bias=bias)
        self.mlp = FeedForward(d_model, d_ff, feed_forward, bias, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, *, index: int, causal=False, key_keep=None, memory=None, memory_keep=None,
                rope=None, cache=None, ablate=None, rec=None):
        attn_name, cross_name = names.attn(index), names.cross(index)
        attn = lambda h: self.attn(h, causal=causal, key_keep=key_keep, rope=rope, cache=cache, layer=index,
                                   ablate=(ablate or {}).get(attn_name), rec=rec, name=attn_name)
        x = self._sublayer(x, attn, self.ln1, attn_name, names.norm(index, "ln1"), rec)
        if self.cross is not None:
            cross = lambda h: self.cross(h, memory, key_keep=memory_keep, cache=cache, layer=index, rec=rec,
                                         name=cross_name)
            x = self._sublayer(x, cross, self.ln_cross, cross_name, names.norm(index, "ln_cross"), rec)
        return self._sublayer(x, self.mlp, self.ln2, names.mlp(index), names.norm(index, "ln2"), rec)

    def _sublayer(self, x, fn, norm, write_name, norm_name, rec):
        if self.pre_norm:
            h = norm(x)
            out = self.drop(fn(h))
            new = x + out
            norm_in, norm_out = x, h
        else:
            h = x
            out = self.drop(fn(x))
            norm_in = x + out
            new = norm_out = norm(norm_in)
        if rec is not None:
            rec.norm(norm_name, norm, norm_in, norm_out)
            rec.input(write_name, h)
            rec.write(write_name, out)
            if not self.pre_norm:
                rec.write(names.post_norm(write_name), new - norm_in)
        return new
