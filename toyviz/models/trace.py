"""What a traced forward pass recorded.

The models compute; a `Recorder` passed into their forward collects what they computed
(attention scores and probabilities, per-head outputs and writes, every LayerNorm's input
and output, every write into the residual stream). The dataclasses below are what the rest
of toyviz reads; the model's `trace` builds each one whole, and they are frozen. Recording
never changes a value the model computes: the recorder only keeps references (detached) to
tensors the forward pass made anyway, plus per-head writes. (Ablation is an argument of the
forward itself, not of the recorder.)
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import torch

from toyviz.models import names

Pieces = Callable[[list[int]], list[str]]   # token ids → their text pieces (a tokenizer's `pieces`)


def numbered(ids: list[int]) -> list[str]:
    """Pieces for a model traced without its tokenizer: each token named by its id."""
    return [str(i) for i in ids]


class Recorder:
    """Collects named activations during one forward pass of batch size 1.

    `scope(names.ENCODER)` returns a view that writes into the same storage under a prefix, so
    the translator's encoder and decoder share one recorder.
    """

    def __init__(self, prefix: str = "", store=None):
        self.prefix = prefix
        self.store = store if store is not None else {"attention": {}, "writes": {}, "norms": {}, "inputs": {}, "final": {}}

    def scope(self, prefix: str) -> "Recorder":
        return Recorder(self.prefix + prefix, self.store)

    def attention(self, name: str, **tensors):
        self.store["attention"][self.prefix + name] = {k: v.detach()[0] for k, v in tensors.items()}

    def positions(self, added: torch.Tensor | None, rope: torch.Tensor | None):
        """The positional vectors the forward added to the embeddings and the RoPE angles it used."""
        self.store["positions"] = {"added": added, "rope": rope}

    def write(self, name: str, tensor: torch.Tensor):
        self.store["writes"][self.prefix + name] = tensor.detach()[0]

    def input(self, name: str, tensor: torch.Tensor):
        """What a sub-layer read (its normalised input under pre-norm)."""
        self.store["inputs"][self.prefix + name] = tensor.detach()[0]

    def norm(self, name: str, module: torch.nn.LayerNorm, inp: torch.Tensor, out: torch.Tensor):
        x = inp.detach()[0]
        self.store["norms"][self.prefix + name] = {
            "input": x, "output": out.detach()[0],
            "mean": x.mean(-1), "std": x.var(-1, unbiased=False).add(module.eps).sqrt(),
            "weight": module.weight.detach(),
            "bias": module.bias.detach() if module.bias is not None else torch.zeros_like(module.weight),
        }

    def final(self, tensor: torch.Tensor):
        """The stream the stack's final norm reads."""
        self.store["final"][self.prefix + names.FINAL] = tensor.detach()[0]

    def stacked(self, modules: list[str], key: str) -> torch.Tensor:
        """[len(modules), ...] stack of one recorded attention tensor across attention modules."""
        return torch.stack([self.store["attention"][n][key] for n in modules])

    def parts(self, stack: str = "") -> dict[str, torch.Tensor]:
        """Residual writes of one stack, in the order they happened, prefix stripped."""
        return names.of_stack(self.store["writes"], stack)

    def norms(self, stack: str = "") -> dict[str, dict[str, torch.Tensor]]:
        return names.of_stack(self.store["norms"], stack)


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
    scores: torch.Tensor              # [L, H, T, T] scaled scores before the mask
    q: torch.Tensor                   # [L, H, T, d_head]
    k: torch.Tensor
    v: torch.Tensor
    head_out: torch.Tensor            # [L, H, T, d_head]
    head_writes: torch.Tensor         # [L, H, T, d_model]
    attn_out_bias: torch.Tensor       # [L, d_model] W_O bias (zeros if the model has none)
    attn_inputs: torch.Tensor         # [L, T, d_model]
    residual_parts: dict[str, torch.Tensor]   # "embed", "attn.0", "mlp.0", … each [T, d_model]
    residual_final: torch.Tensor      # [T, d_model] the stream the final norm reads
    layernorms: dict[str, dict[str, torch.Tensor]]
    logits: torch.Tensor              # [T, vocab]
    causal: bool = True
    ablated: dict = field(default_factory=dict)   # the ablate the forward ran with: {"attn.1": {head: kind}}
    truncated: int = 0                # prompt tokens dropped to fit the context
    rope_angles: torch.Tensor | None = None   # [T, d_head/2] angle each q/k pair was turned by (RoPE models)
    described: str = "The prompt as {n} tokens (BOS first)"   # how figures name these tokens

    def head(self, layer: int, head: int) -> HeadView:
        self.check_head(layer, head)
        return HeadView(layer, head, self.attn_inputs[layer], self.q[layer, head], self.k[layer, head],
                        self.v[layer, head], self.scores[layer, head], self.attention[layer, head],
                        self.head_out[layer, head], self.head_writes[layer, head], self.causal)


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
    layernorms: dict[str, dict[str, torch.Tensor]]     # "enc.block0.ln1" … "dec.ln_f"
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
    layernorms: dict[str, dict[str, torch.Tensor]]
    residual_parts: dict[str, torch.Tensor]
    residual_final: torch.Tensor      # [T, d_model] the stream the stack's final norm reads
    positional: torch.Tensor | None
    causal: bool
    described: str
    truncated: int = 0
