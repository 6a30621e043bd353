"""What a traced forward pass recorded.

The models compute; a `toyviz.models.hooks.Record` passed as their forward's hooks keeps every
named activation (attention scores and probabilities, per-head outputs, every LayerNorm's input
and output, every write into the residual stream), and `Recorded` reads them back as the fields
of the dataclasses below, which the rest of toyviz reads; the model's `trace` builds each one
whole, and they are frozen. Recording never changes a value the model computes: the record only
keeps references (detached) to tensors the forward pass made anyway.
"""
from __future__ import annotations

import functools
import threading
from dataclasses import dataclass, field
from collections.abc import Mapping
from typing import Callable

import torch

from toyviz.models import names

Pieces = Callable[[list[int]], list[str]]   # token ids → their text pieces (a tokenizer's `pieces`)


def numbered(ids: list[int]) -> list[str]:
    """Pieces for a model traced without its tokenizer: each token named by its id."""
    return [str(i) for i in ids]


class Recorded:
    """What a `toyviz.models.hooks.Record` kept during one pass of batch size 1, read back as the fields
    of a trace. `blocks`: the stack's blocks (their weights give each head's write and each norm's
    scale); `prefix`: the stack's names.ENCODER or names.DECODER in the translator."""

    def __init__(self, values: dict[str, torch.Tensor], blocks, pre_norm: bool, prefix: str = ""):
        # the blocks as a list: a ModuleList's index costs microseconds, and a trace reads it ~30 times
        self.values, self.blocks, self.pre_norm, self.prefix = values, list(blocks), pre_norm, prefix

    def batched(self, name: str) -> torch.Tensor:
        """The point's tensor as recorded, (1, …)."""
        return self.values[names.in_stack(self.prefix, name) if self.prefix else name]

    def __getitem__(self, name: str) -> torch.Tensor:
        return self.batched(name)[0]

    def stacked(self, layers, part: str, attention=names.attn) -> torch.Tensor:
        """[L, ...] one attention point ("pattern", "q", …) of every layer (one cat of the (1, …) tensors)."""
        return torch.cat([self.batched(names.part(attention(i), part)) for i in layers])

    def attn_bias(self, layers) -> torch.Tensor:
        """[L, C] W_O's bias of every layer's attention (zeros if it has none)."""
        o = [self.blocks[i].attn.o for i in layers]
        return torch.stack([m.bias.detach() if m.bias is not None else torch.zeros_like(m.weight[:, 0]) for m in o])

    def attn_inputs(self, layers) -> torch.Tensor:
        """[L, T, C] what each self-attention read: its norm's output (pre-norm) or the stream (post-norm)."""
        return torch.cat([self.batched(names.norm(i, "ln1") if self.pre_norm else names.resid_pre(i)) for i in layers])

    @functools.cached_property
    def sublayers(self) -> list[list[tuple[names.Name, names.Name]]]:
        """(write, norm) of each block's sub-layers, in forward order."""
        def of(i: int, block):
            kinds = [("attn", "ln1")] + ([("cross", "ln_cross")] if block.cross is not None else [])
            return [(getattr(names, kind)(i), names.norm(i, norm)) for kind, norm in kinds + [("mlp", "ln2")]]
        return [of(i, block) for i, block in enumerate(self.blocks)]

    def writes(self) -> dict[str, torch.Tensor]:
        """Residual writes in the order they happened: "embed", "block0.attn", ("block0.ln1.change" under
        post-norm) …"""
        parts = {names.EMBED: self[names.EMBED]}
        for sublayers in self.sublayers:
            for write, norm in sublayers:
                parts[write] = self[write]
                if not self.pre_norm:                   # the change the norm after the add made to the stream
                    parts[names.post_norm(write)] = self[norm] - self[names.norm_input(norm)]
        return parts

    def norms(self, final_norm=None) -> dict[str, NormStats]:
        """Every LayerNorm's input, output, statistics and parameters, by name (prefix included)."""
        modules = [(norm, getattr(block, norm.component))
                   for block, sublayers in zip(self.blocks, self.sublayers) for _, norm in sublayers]
        if final_norm is not None:
            modules.append((names.LN_F, final_norm))
        return {names.in_stack(self.prefix, name): NormStats(module, self[names.norm_input(name)], self[name])
                for name, module in modules}


class PerHead:
    """Every head's q, k, v, scores, output and write of one pass, assembled [L, H, …] from the per-layer
    tensors the model made when a view first reads that kind, then kept. Views read one head (`layer`)
    or one kind, and assembling them all at once cost about a sixth of a traced forward (benchmarks.core),
    so it waits for a reader, as TransformerLens's cache stacks on demand. The scores before the mask
    are computed when first read, by the layer's attention from the q and k it recorded (the same call on
    the same tensors as in the pass: the same numbers), so a traced pass neither makes nor keeps them.
    Building one does no tensor work: it keeps the recorded (1, H, …) tensors as they are."""

    RECORDED = ("q", "k", "v", "heads")                   # as the model computed them, per layer
    KINDS = RECORDED + ("scores", "writes")                # writes: each head's output through its slice of W_O

    def __init__(self, seen: Recorded, layers):
        self.n_layer = len(layers)
        # {kind: [(1, H, …) per layer]}: batch row 0 taken when read
        self.per_layer = {kind: [seen.batched(names.part(names.attn(i), kind)) for i in layers]
                          for kind in self.RECORDED}
        self.attention = [seen.blocks[i].attn for i in layers]
        self.stacked, self.lock = {}, threading.Lock()       # one stacking a kind, many threads reading

    def layer(self, kind: str, i: int) -> torch.Tensor:
        """[H, …] one layer's, stacking nothing ("writes": each head's output through its slice of W_O)."""
        stacked = self.stacked.get(kind)
        if stacked is not None:
            return stacked[i]
        if kind == "scores":
            q, k = self.per_layer["q"][i], self.per_layer["k"][i]
            return self.attention[i].scores(q, k)[0]
        if kind == "writes":
            return head_writes(self.per_layer["heads"][i][0], w_o_of_heads(self.attention[i]))
        return self.per_layer[kind][i][0]

    def __getitem__(self, kind: str) -> torch.Tensor:
        """[L, H, …] every layer's; the per-layer tensors then become views of it (held once)."""
        with self.lock:
            if kind not in self.stacked:
                if kind in self.RECORDED:                  # one cat of the (1, H, …) tensors
                    stacked = torch.cat(self.per_layer[kind])
                    self.per_layer[kind] = list(stacked.split(1))
                else:
                    stacked = torch.stack([self.layer(kind, i) for i in range(self.n_layer)])
                self.stacked[kind] = stacked
            return self.stacked[kind]

    @property
    def nbytes(self) -> int:
        """Bytes it holds once every kind has been read (what a cache should budget for, toyviz.serving.memory)."""
        held = sum(t.nelement() * t.element_size() for tensors in self.per_layer.values() for t in tensors)
        heads = self.per_layer["heads"][0][0]               # (H, T, hs) → writes (H, T, C), scores (H, T, T)
        H, T = heads.shape[:2]
        return held + self.n_layer * H * T * (self.attention[0].o.weight.shape[0] + T) * heads.element_size()


def w_o_of_heads(attn) -> torch.Tensor:
    """(C, nh, hs) the attention's output projection, split by the head whose output each column reads."""
    return attn.o.weight.detach().view(-1, attn.n_head, attn.d_head)


def head_writes(out: torch.Tensor, w_o: torch.Tensor) -> torch.Tensor:
    """(nh, T, hs) each head's output, (C, nh, hs) W_O by head → (nh, T, C) each head's write into the stream."""
    return torch.einsum("htd,chd->htc", out, w_o)


class NormStats(Mapping):
    """One LayerNorm of a pass: its "input", "output", "weight", "bias", and the "mean" and "std"
    (= √(var + eps)) of each position's input as the norm computed them. An RMSNorm (Llama) centres nothing
    and has no β: its "mean" is 0, its "std" the root mean square √(mean x² + eps) it divides by, its "bias"
    zeros, and `centres` is False. The statistics wait for their
    first reader (the Layer-norm tab, a final-norm readout): a trace's nine norms would otherwise cost
    about 2 % of a traced forward every time, for views that never look at them."""

    KEYS = ("input", "output", "mean", "std", "weight", "bias")

    def __init__(self, module: torch.nn.LayerNorm | torch.nn.RMSNorm, x: torch.Tensor, out: torch.Tensor):
        self.module, self.stats = module, None           # stats: {"mean", "std"} once read
        self.centres = not isinstance(module, torch.nn.RMSNorm)
        self.held = {"input": x, "output": out}          # γ and β: the module's own, read when asked

    def __getitem__(self, key: str) -> torch.Tensor:
        if key == "weight":
            return self.module.weight.detach()
        if key == "bias":
            bias = getattr(self.module, "bias", None)
            return bias.detach() if bias is not None else torch.zeros_like(self.module.weight)
        if key not in ("mean", "std"):
            return self.held[key]
        if self.stats is None and not self.centres:      # RMSNorm: nothing subtracted, divided by the rms
            x = self.held["input"]
            rms = (x.float().pow(2).mean(-1) + self.module.eps).sqrt().to(x.dtype)
            self.stats = {"mean": torch.zeros_like(rms), "std": rms}
        if self.stats is None:                           # two racing readers compute the same numbers
            # LayerNorm's own kernel gives mean and 1/std in one pass: ~5× faster here than `x.var`
            x = self.held["input"]
            _, mean, rstd = torch.native_layer_norm(x, x.shape[-1:], None, None, self.module.eps)
            self.stats = {"mean": mean[..., 0], "std": rstd[..., 0].reciprocal()}
        return self.stats[key]

    def __iter__(self):
        return iter(self.KEYS)

    def __len__(self) -> int:
        return len(self.KEYS)

    @property
    def nbytes(self) -> int:
        """Bytes it holds once the statistics were read (what a cache should budget for)."""
        x = self.held["input"]
        held = sum(self[key].nbytes for key in ("input", "output", "weight", "bias"))
        return held + 2 * x[..., 0].nelement() * x.element_size()


@dataclass(frozen=True)
class HeadView:
    """One head of one layer, unrolled; every tensor is what the model computed."""
    layer: int
    head: int
    x: torch.Tensor       # [T, d_model] the attention's input (after ln1 in a pre-norm block)
    q: torch.Tensor       # [T, d_head] after rotation for RoPE models
    k: torch.Tensor       # [T, d_head]
    v: torch.Tensor       # [T, d_head]
    scores: torch.Tensor  # [T, T] q @ k.T / sqrt(d_head), before the mask
    probs: torch.Tensor   # [T, T] masked softmax of scores
    out: torch.Tensor     # [T, d_head] probs @ v
    write: torch.Tensor   # [T, d_model] out through this head's slice of W_O
    causal: bool


class SelfAttentionStack:
    """What the figures ask of any self-attention stack with an `attention` [L, H, T, T] field."""

    @property
    def n_layer(self) -> int:
        return self.attention.shape[0]

    @property
    def n_head(self) -> int:
        return self.attention.shape[1]

    def check_head(self, layer: int, head: int) -> None:
        if not (0 <= layer < self.n_layer and 0 <= head < self.n_head):
            raise IndexError(f"no head {layer}.{head}: the model has {self.n_layer} layers × {self.n_head} heads")


@dataclass(frozen=True)
class Trace(SelfAttentionStack):
    """Everything one GPT forward pass computed for one prompt (batch size 1)."""
    tokens: list[str]                 # text pieces, BOS first
    token_ids: list[int]
    positional: torch.Tensor | None   # [T, d_model] vector added to the embeddings (None for rope/none)
    attention: torch.Tensor           # [L, H, T, T] probabilities
    per_head: PerHead                 # q, k, v, scores, outputs and writes of every head (the properties below)
    attn_out_bias: torch.Tensor       # [L, d_model] W_O bias (zeros if the model has none)
    attn_inputs: torch.Tensor         # [L, T, d_model]
    residual_parts: dict[str, torch.Tensor]   # "embed", "block0.attn", "block0.mlp", … each [T, d_model]
    residual_final: torch.Tensor      # [T, d_model] the stream the final norm reads
    layernorms: dict[str, NormStats]
    logits: torch.Tensor              # [T, vocab]
    causal: bool = True
    ablated: dict = field(default_factory=dict)   # the ablate the forward ran with: {"block1.attn": {head: kind}}
    truncated: int = 0                # prompt tokens dropped to fit the context
    rope_angles: torch.Tensor | None = None   # [T, d_head/2] angle each q/k pair was turned by (RoPE models)
    described: str = "The prompt as {n} tokens (BOS first)"   # how figures name these tokens

    @property
    def scores(self) -> torch.Tensor:     # [L, H, T, T] scaled scores before the mask
        return self.per_head["scores"]

    @property
    def q(self) -> torch.Tensor:          # [L, H, T, d_head], after the rotation in RoPE models
        return self.per_head["q"]

    @property
    def k(self) -> torch.Tensor:
        return self.per_head["k"]

    @property
    def v(self) -> torch.Tensor:
        return self.per_head["v"]

    @property
    def head_out(self) -> torch.Tensor:   # [L, H, T, d_head]
        return self.per_head["heads"]

    @property
    def head_writes(self) -> torch.Tensor:    # [L, H, T, d_model]
        return self.per_head["writes"]

    def head(self, layer: int, head: int) -> HeadView:
        self.check_head(layer, head)
        one = lambda kind: self.per_head.layer(kind, layer)[head]
        return HeadView(layer, head, self.attn_inputs[layer], one("q"), one("k"), one("v"), one("scores"),
                        self.attention[layer, head], one("heads"), one("writes"), self.causal)


@dataclass(frozen=True)
class TranslatorTrace:
    """One encoder–decoder pass: source sentence in, decoder fed the chosen output."""
    src_tokens: list[str]
    src_ids: list[int]
    tgt_tokens: list[str]             # decoder inputs: BOS, y1 … yn
    tgt_ids: list[int]
    output_tokens: list[str]          # what each decoder position predicts: y1 … yn, EOS
    output_ids: list[int]
    encoder_attention: torch.Tensor   # [L_enc, H, S, S]
    decoder_attention: torch.Tensor   # [L_dec, H, T, T]
    cross_attention: torch.Tensor     # [L_dec, H, T, S]
    encoder_parts: dict[str, torch.Tensor]
    decoder_parts: dict[str, torch.Tensor]
    encoder_final: torch.Tensor       # [S, d_model]
    decoder_final: torch.Tensor       # [T, d_model]
    layernorms: dict[str, NormStats]     # "enc.block0.ln1" … "dec.ln_f"
    logits: torch.Tensor              # [T, tgt_vocab]
    encoder_scores: torch.Tensor | None = None   # [L_enc, H, S, S] scaled scores before the mask
    decoder_scores: torch.Tensor | None = None   # [L_dec, H, T, T]
    positional: torch.Tensor | None = None       # [max(S, T), d_model] sinusoidal vectors added to both inputs

    def stack(self, side: str) -> "StackView":
        """The encoder's or the decoder's self-attention stack, in the shape the GPT's Tokens,
        Positions, Attention, Layer norm and residual-stream figures read (cross-attention stays in
        its own view; the decoder's cross-attention writes are among its residual parts)."""
        if side not in ("encoder", "decoder"):
            raise ValueError(f"side must be 'encoder' or 'decoder', not {side!r}")
        enc = side == "encoder"
        tokens, ids = (self.src_tokens, self.src_ids) if enc else (self.tgt_tokens, self.tgt_ids)
        stack = names.ENCODER if enc else names.DECODER
        return StackView(
            tokens=tokens, token_ids=ids,
            attention=self.encoder_attention if enc else self.decoder_attention,
            scores=self.encoder_scores if enc else self.decoder_scores,
            layernorms=names.of_stack(self.layernorms, stack),
            residual_parts=self.encoder_parts if enc else self.decoder_parts,
            residual_final=self.encoder_final if enc else self.decoder_final,
            positional=None if self.positional is None else self.positional[: len(ids)],
            causal=not enc,
            described=("The English sentence as {n} tokens (EOS last), the encoder's input" if enc else
                       "The Spanish output as {n} tokens (BOS first), the decoder's input"))


@dataclass(frozen=True)
class StackView(SelfAttentionStack):
    """One self-attention stack of the translator with the fields a GPT Trace has for it."""
    tokens: list[str]
    token_ids: list[int]
    attention: torch.Tensor           # [L, H, T, T]
    scores: torch.Tensor
    layernorms: dict[str, NormStats]
    residual_parts: dict[str, torch.Tensor]
    residual_final: torch.Tensor      # [T, d_model] the stream the stack's final norm reads
    positional: torch.Tensor | None
    causal: bool
    described: str
    truncated: int = 0
