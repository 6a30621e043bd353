"""The pieces both models are built from: positional encodings, multi-head attention, the KV cache,
feed-forward networks and the residual block that wires them together.

Every named activation passes through `toyviz.models.hooks.at`, so one mapping of hooks, passed per
call, reads or edits any of them (toyviz.models.names lists the points). Attention has two paths
with the same maths: the fused `F.scaled_dot_product_attention` for plain passes and training, and
an explicit one (scores → mask → softmax → @V) taken when a hook wants a point only it computes.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from toyviz.models import names
from toyviz.models.hooks import Hooks, at, wants

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


def rotation(angles: torch.Tensor, d_head: int | None = None) -> torch.Tensor:
    """RoPE angles (…, T, r/2) → the table every attention layer turns q and k by, made once per model
    (toyviz.models.gpt keeps every position's): (…, T, d_head/2, 2), each pair's (cos, sin). A rotation
    narrower than the head (r < d_head dims: Pythia's partial rotary) turns the first r dims only: the
    pairs after them get (1, 0), the identity."""
    table = torch.stack((angles.cos(), angles.sin()), dim=-1)           # (…, T, r/2, 2)
    still = (d_head or angles.shape[-1] * 2) // 2 - angles.shape[-1]
    if still:
        table = torch.cat((table, table.new_tensor([1.0, 0.0]).expand(*table.shape[:-2], still, 2)), dim=-2)
    return table


def apply_rope(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """Rotate each (2i, 2i+1) pair (a, b) of x (…, T, d_head) to (a·cos − b·sin, a·sin + b·cos), by the
    angles whose `rotation` is table (…, T, d_head/2, 2). Each pair is a complex number a + ib, so in fp32
    the rotation is one complex product (a + ib)(cos + i·sin) over views, no copy (Meta's Llama code);
    an export (torch.export, ONNX has no complex numbers) and other dtypes write the products out."""
    pairs = x.unflatten(-1, (-1, 2))                                     # (…, T, d_head/2, 2)
    if x.dtype == table.dtype == torch.float32 and pairs_align(x) and not torch.compiler.is_compiling():
        return torch.view_as_real(torch.view_as_complex(pairs) * torch.view_as_complex(table)).flatten(-2)
    (a, b), (cos, sin) = pairs.unbind(-1), table.to(x.dtype).unbind(-1)
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2)


def pairs_align(x: torch.Tensor) -> bool:
    """Whether x's (2i, 2i+1) pairs can be read as complex numbers in place (what `torch.view_as_complex` needs)."""
    return x.stride(-1) == 1 and x.storage_offset() % 2 == 0 and all(s % 2 == 0 for s in x.stride()[:-1])


def dropped(drop: nn.Dropout, x: torch.Tensor) -> torch.Tensor:
    """x through `drop` in training; outside it x as is, the module not even called (a module call costs ~2 µs,
    and a generated token passes 13 of them)."""
    return drop(x) if drop.training else x


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
        """Which of the keys `extend` returned are real: all of them here (a batch of streams of
        unequal length masks some: toyviz.serving.batching.StreamsCache)."""
        return None


def causal_allowed(Tq: int, Tk: int, device: torch.device) -> torch.Tensor:
    """(1, 1, Tq, Tk) bool, queries the last Tq of Tk positions: query i sees keys up to Tk - Tq + i. Made
    once per shape and shared (never written to), not once per layer and pass; an export (torch.export,
    `toyviz export web`) traces the operations instead, for any number of positions."""
    return triangle(Tq, Tk, device) if torch.compiler.is_compiling() else cached_triangle(Tq, Tk, device)


def triangle(Tq: int, Tk: int, device: torch.device) -> torch.Tensor:
    return torch.ones(Tq, Tk, dtype=torch.bool, device=device).tril(Tk - Tq)[None, None]


@functools.lru_cache(maxsize=32)
def cached_triangle(Tq: int, Tk: int, device: torch.device) -> torch.Tensor:
    with torch.inference_mode(False):                # an ordinary tensor, though first asked for in inference mode
        return triangle(Tq, Tk, device)


@functools.lru_cache(maxsize=32)
def causal_bias(Tq: int, Tk: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """(1, 1, Tq, Tk): 0 where `causal_allowed`, −inf elsewhere; scores + this = the masked scores, the
    same numbers as selecting −inf (~6× faster than torch.where here). Made once per shape, shared."""
    with torch.inference_mode(False):
        return torch.zeros(Tq, Tk, dtype=dtype, device=device).masked_fill(~triangle(Tq, Tk, device)[0, 0],
                                                                           float("-inf"))[None, None]


@dataclass(frozen=True)
class Pass:
    """What every layer of one forward pass reads besides its input, the same for all of them (the model
    makes one a pass; a layer's own name says which hooks and which cache entry are its)."""
    hooks: Hooks | None = None              # {point: function} reading or editing the pass (toyviz.models.hooks)
    causal: bool = False                    # each position sees itself and the positions before it
    keep: torch.Tensor | None = None        # (B, T) False at padding: keys no query may read
    rope: torch.Tensor | None = None        # the positions' `rotation` (T or B·T, 1, hs/2, 2), or None
    cache: KVCache | None = None            # the keys and values of the positions before these
    memory: torch.Tensor | None = None      # (B, S, C) a decoder's: the encoder output cross-attention reads
    memory_keep: torch.Tensor | None = None  # (B, S) False at the memory's padding


PLAIN = Pass()


class MultiHeadAttention(nn.Module):
    """Multi-head attention with Q, K, V and output projections (q, k, v, o: the checkpoint's names).

    Self-attention, or (cross=True) a decoder's cross-attention over the pass's memory. Self-attention outside
    training reads q, k and v with one matmul, their weights stacked once (`stacked`, as nanoGPT's c_attn;
    the checkpoint keeps them apart), and RoPE turns q and k together. Without hooks on its inner points it
    runs the fused `F.scaled_dot_product_attention` (its causal kernel when the mask is the plain triangle);
    a hook on q, k, v, scores or pattern makes it compute the same maths step by step (scores → mask →
    softmax → @V) so each can be read or edited.
    """

    def __init__(self, d_model: int, n_head: int, bias: bool = True, dropout: float = 0.0, n_kv_head: int = 0,
                 cross: bool = False):
        super().__init__()
        self.n_head, self.d_head, self.is_cross = n_head, d_model // n_head, cross
        self.n_kv_head = n_kv_head or n_head     # fewer: grouped-query attention (Llama-family models)
        self.q = nn.Linear(d_model, d_model, bias=bias)
        self.k = nn.Linear(d_model, self.n_kv_head * self.d_head, bias=bias)
        self.v = nn.Linear(d_model, self.n_kv_head * self.d_head, bias=bias)
        self.o = nn.Linear(d_model, d_model, bias=bias)
        self.dropout = dropout
        self._stacked = None                     # (what it was made from, W (q+k+v rows, C), b): `stacked`

    def _heads(self, x):  # (B, T, C) -> (B, nh, T, hs)
        B, T, _ = x.shape
        return x.view(B, T, -1, self.d_head).transpose(1, 2)

    def _group(self, x):  # (B, nkv, T, hs) -> (B, nh, T, hs): each K/V head repeated for its group of queries
        group = self.n_head // self.n_kv_head
        return x if group == 1 else x.repeat_interleave(group, dim=1)

    def stacked(self):
        """(W, b): q's, k's and v's weights and biases one above the other, for one matmul; None where the
        three must stay apart (training: their gradients; an export: each weight named after its parameter).
        Made on first use and again whenever a weight changed (loaded, moved, edited in place: its version)."""
        if torch.is_grad_enabled() and self.q.weight.requires_grad or torch.compiler.is_compiling():
            return None
        parts = [p for m in (self.q, self.k, self.v) for p in (m.weight, m.bias) if p is not None]
        made_from = [(p.data_ptr(), p._version, p.dtype) for p in parts]
        stacked = self._stacked
        if stacked is None or stacked[0] != made_from:
            with torch.inference_mode(False), torch.no_grad():   # ordinary tensors, though first asked for in one
                weight = torch.cat([self.q.weight, self.k.weight, self.v.weight])
                bias = torch.cat([self.q.bias, self.k.bias, self.v.bias]) if self.q.bias is not None else None
            stacked = self._stacked = (made_from, weight, bias)
        return stacked[1], stacked[2]

    def project(self, x, rope=None):
        """Self-attention's x (B, T, C) → q (B, nh, T, hs), k, v (B, nh, T, hs), q and k turned by the
        `rotation` rope (T or B·T, 1, hs/2, 2) when given."""
        B, T, _ = x.shape
        stacked = self.stacked()
        if stacked is None:
            q, k, v = (m(x).view(B, T, -1, self.d_head) for m in (self.q, self.k, self.v))   # (B, T, heads, hs)
            if rope is not None:
                q, k = apply_rope(q, rope), apply_rope(k, rope)
        else:
            nh, nkv = self.n_head, self.n_kv_head
            qkv = F.linear(x, *stacked).view(B, T, nh + 2 * nkv, self.d_head)          # one matmul
            if rope is not None:                                                          # q and k turned at once
                qk = apply_rope(qkv[:, :, :nh + nkv], rope)
                q, k, v = qk[:, :, :nh], qk[:, :, nh:], qkv[:, :, nh + nkv:]
            else:
                q, k, v = qkv.split((nh, nkv, nkv), dim=2)
        return q.transpose(1, 2), self._group(k.transpose(1, 2)), self._group(v.transpose(1, 2))

    def forward(self, x, run: Pass = PLAIN, name: names.Name | None = None):
        """x (B, Tq, C) → (B, Tq, C). `name` ("block1.attn") names its hook points (".q", … ".pattern",
        ".heads": toyviz.models.names) and, by its layer, its entry in run.cache."""
        B, Tq, C = x.shape
        layer, cache = name.layer if name is not None else 0, run.cache
        if self.is_cross:                                                # keys: the memory's, computed once
            q, (k, v), causal, keep = self._heads(self.q(x)), self._memory_kv(run.memory, cache, layer), False, \
                run.memory_keep
        else:
            q, k, v = self.project(x, run.rope)                          # (B, nh, Tq, hs) each
            causal, keep = run.causal, run.keep
            if cache is not None:
                k, v = cache.extend(layer, k, v)                         # (B, nh, Tk, hs)
                padding = cache.keep(layer)                              # rows of unequal length: (B, Tk)
                keep = padding if keep is None or padding is None else keep & padding
        y = self.attend(q, k, v, causal, keep, run.hooks, name)          # (B, nh, Tq, hs)
        y = y.transpose(1, 2).reshape(y.shape[0], Tq, C)                # re-assemble heads (a hook may batch them)
        return self.o(y)

    def _memory_kv(self, memory, cache: KVCache | None, layer: int):
        """Cross-attention's k, v (B, nh, S, hs) of the encoder's memory (B, S, C), kept in the cache."""
        if cache is not None and layer in cache.memory:
            return cache.memory[layer]
        kv = self._group(self._heads(self.k(memory))), self._group(self._heads(self.v(memory)))
        if cache is not None:
            cache.memory[layer] = kv
        return kv

    def attend(self, q, k, v, causal: bool, keep, hooks, name):
        """softmax(q·kᵀ/√hs, masked) @ v: (B, nh, Tq, hs), k and v (B, nh, Tk, hs) → (B, nh, Tq, hs), each
        head's output (the point ".heads"). SDPA unless a hook wants a point only the explicit path computes."""
        Tq, Tk = q.shape[2], k.shape[2]
        dropout = self.dropout if self.training else 0.0
        if wants(hooks, *(names.part(name, p) for p in ("q", "k", "v", "scores", "pattern"))):
            y = self._explicit(q, k, v, causal, keep, hooks, name)
        elif causal and Tq == Tk and Tq > 1 and keep is None:
            # the plain triangle: SDPA's fused causal kernel (an explicit mask keeps it off that kernel)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=self._allowed(causal, keep, Tq, Tk, q.device),
                                               dropout_p=dropout)
        return at(hooks, names.heads(name), y) if hooks else y

    @staticmethod
    def _allowed(causal, keep, Tq: int, Tk: int, device):
        """(B or 1, 1, Tq, Tk) bool: which keys each query may see, or None for all."""
        allowed = causal_allowed(Tq, Tk, device) if causal and Tq > 1 else None
        if keep is not None:
            keys = keep[:, None, None, :]
            allowed = keys if allowed is None else allowed & keys
        return allowed

    def _explicit(self, q, k, v, causal, keep, hooks, name):
        """The same attention, step by step, each step a hook point (no dropout: a look inside is eval)."""
        q, k, v = (at(hooks, names.part(name, p), t) for p, t in (("q", q), ("k", k), ("v", v)))
        Tq, Tk = q.shape[2], k.shape[2]
        triangle = causal and keep is None and Tq > 1 and not torch.compiler.is_compiling()
        if triangle and names.part(name, "scores") not in hooks:
            # nobody reads the scores before the mask (a trace computes them when read: PerHead): the mask's
            # 0 / −inf added as the matmul writes them, the same numbers as the add below
            masked = self.scores(q, k, causal_bias(Tq, Tk, q.device, q.dtype))  # (B, nh, Tq, Tk)
        else:
            scores = at(hooks, names.part(name, "scores"), self.scores(q, k))     # (B, nh, Tq, Tk)
            Tq, Tk = scores.shape[-2:]
            if triangle:
                masked = scores + causal_bias(Tq, Tk, scores.device, scores.dtype)  # the plain triangle: one add
            else:
                allowed = self._allowed(causal, keep, Tq, Tk, scores.device)
                masked = scores if allowed is None else torch.where(allowed, scores, float("-inf"))
        probs = at(hooks, names.part(name, "pattern"), masked.softmax(dim=-1))   # (B, nh, Tq, Tk)
        return probs @ v                                                 # (B, nh, Tq, hs)

    def scores(self, q, k, mask=None):
        """q (B, nh, Tq, hs), k (B, nh, Tk, hs) → q·k / √hs (B, nh, Tq, Tk), plus `mask` (1, 1, Tq, Tk) if
        given (causal_bias: 0 or −inf)."""
        if q.shape[:-2] != k.shape[:-2] or torch.compiler.is_compiling():  # (an edit broadcast them; an export)
            scores = (q @ k.transpose(-2, -1)).div_(math.sqrt(self.d_head))
            return scores if mask is None else scores.add_(mask)
        # one batched matmul that scales as it goes, reading q and k where they lie (matmul would copy them)
        q3, kt3, alpha = q.flatten(0, -3), k.flatten(0, -3).transpose(1, 2), 1 / math.sqrt(self.d_head)
        if mask is None:                                                  # beta=0: the empty start is never read
            scores = q3.new_empty(q3.shape[0], q3.shape[1], kt3.shape[2]).baddbmm_(q3, kt3, beta=0, alpha=alpha)
        else:                                                             # the mask, broadcast over the heads
            scores = torch.baddbmm(mask[0], q3, kt3, alpha=alpha)         # (B·nh, Tq, Tk)
        return scores.view(*q.shape[:-1], kt3.shape[2])


class FeedForward(nn.Module):
    """Position-wise feed-forward: d → d_ff → d with GELU (exact, or GPT-2's tanh approximation) or ReLU, or
    SwiGLU's gated form."""

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
        if self.kind == "gelu_tanh":
            return F.gelu(self.up(x), approximate="tanh")
        return F.gelu(self.up(x)) if self.kind == "gelu" else F.relu(self.up(x))

    def forward(self, x, hooks=None, name: str | None = None):  # (B, T, C) -> (B, T, C); name: "block{i}.mlp"
        h = self.hidden(x)
        if hooks:
            h = at(hooks, names.part(name, "hidden"), h)
        return dropped(self.drop, self.down(h))


def make_norm(d_model: int, kind: str = "layernorm", bias: bool = True, eps: float = 1e-5) -> nn.Module:
    """LayerNorm γ ⊙ (x − mean) / √(var + eps) + β, or RMSNorm γ ⊙ x / √(mean x² + eps) (Llama: no centring, no β)."""
    return nn.RMSNorm(d_model, eps=eps) if kind == "rmsnorm" else nn.LayerNorm(d_model, eps=eps, bias=bias)


class Block(nn.Module):
    """A transformer block: self-attention, optional cross-attention, feed-forward.

    Each sub-layer adds its output to the residual stream. Pre-norm (GPT-2) normalises the
    sub-layer's input; post-norm (the 2017 paper) normalises the stream after the add, so there
    the norm itself rewrites the stream (a trace records that change as a write too, "block0.ln1.change",
    and the writes still add up exactly to the final stream). A parallel block (GPT-NeoX) feeds attention
    and feed-forward the same stream and adds both writes: x + attn(ln1(x)) + mlp(ln2(x)).
    """

    def __init__(self, d_model, n_head, d_ff, feed_forward="gelu", norm="pre", cross=False,
                 bias=True, dropout=0.0, *, norm_kind="layernorm", norm_eps=1e-5, parallel=False, n_kv_head=0):
        super().__init__()
        self.pre_norm, self.parallel = norm == "pre", parallel
        make = lambda: make_norm(d_model, norm_kind, bias, norm_eps)
        self.ln1 = make()
        self.attn = MultiHeadAttention(d_model, n_head, bias, dropout, n_kv_head)
        self.ln_cross = make() if cross else None
        self.cross = MultiHeadAttention(d_model, n_head, bias, dropout, cross=True) if cross else None
        self.ln2 = make()
        self.mlp = FeedForward(d_model, d_ff, feed_forward, bias, dropout)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, *, index: int, run: Pass = PLAIN):
        """x (B, T, C) → (B, T, C): the stream entering block `index` → the stream leaving it (x alone is
        positional: a torch forward pre-hook may replace it)."""
        hooks, attn_name, mlp_name = run.hooks, names.attn(index), names.mlp(index)
        x = at(hooks, names.resid_pre(index), x)
        attn = lambda h: self.attn(h, run, attn_name)
        mlp = lambda h: self.mlp(h, hooks, mlp_name)
        if self.parallel:                # both read x: their writes add to it together
            attn_write = self._branch(x, attn, self.ln1, attn_name, names.norm(index, "ln1"), hooks)
            x = x + attn_write + self._branch(x, mlp, self.ln2, mlp_name, names.norm(index, "ln2"), hooks)
            return at(hooks, names.resid_post(index), x)
        x = self._sublayer(x, attn, self.ln1, attn_name, names.norm(index, "ln1"), hooks)
        if self.cross is not None:
            cross_name = names.cross(index)
            cross = lambda h: self.cross(h, run, cross_name)
            x = self._sublayer(x, cross, self.ln_cross, cross_name, names.norm(index, "ln_cross"), hooks)
        x = self._sublayer(x, mlp, self.ln2, mlp_name, names.norm(index, "ln2"), hooks)
        return at(hooks, names.resid_post(index), x)

    def _sublayer(self, x, fn, norm, write_name, norm_name, hooks):
        """Pre-norm x + f(norm(x)); post-norm norm(x + f(x)). The write and the norm are hook points."""
        if self.pre_norm:
            return x + self._branch(x, fn, norm, write_name, norm_name, hooks)
        normed = lambda t: at(hooks, norm_name, norm(at(hooks, names.norm_input(norm_name), t)))
        return normed(x + at(hooks, write_name, dropped(self.drop, fn(x))))

    def _branch(self, x, fn, norm, write_name, norm_name, hooks):
        """A pre-norm sub-layer's write f(norm(x)) (B, T, C); the write and the norm are hook points."""
        normed = at(hooks, norm_name, norm(at(hooks, names.norm_input(norm_name), x)))
        return at(hooks, write_name, dropped(self.drop, fn(normed)))
