# no `from __future__ import annotations` here: the Hub mixin reads the real GPTConfig annotation
"""ToyGPT: a decoder-only transformer as in the GPT papers and nanoGPT.

token embedding + positional encoding → n_layer pre-norm blocks (causal self-attention,
feed-forward) → final LayerNorm → LM head tied to the token embedding.
"""

import math
from dataclasses import dataclass
from typing import Iterator

import torch
import torch.nn as nn
import torch.nn.functional as F
from huggingface_hub import PyTorchModelHubMixin

from toyviz.models import names
from toyviz.models.config import GPTConfig
from toyviz.models.hooks import Record, ablation, at, chain, named, steering
from toyviz.models.layers import Block, KVCache, Pass, dropped, make_norm, rope_angles, rotation, sinusoidal_encoding
from toyviz.models.sampling import draw, next_token_probs
from toyviz.models.trace import PerHead, Pieces, Recorded, Trace, numbered


@dataclass
class SampledToken:
    token: int
    prob: float                # probability it was drawn with (after temperature/top-k/top-p)
    probs: torch.Tensor        # (V,) the distribution it was drawn from
    logits: torch.Tensor       # (V,) raw logits, so a UI can re-apply other settings
    positions: int             # token positions the model processed for this step (1 with a warm cache)


class ToyGPT(nn.Module, PyTorchModelHubMixin, library_name="toyviz", license="mit",
             tags=["toyviz", "gpt", "education"]):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        c = config
        self.tok_emb = nn.Embedding(c.vocab_size, c.d_model)
        self.pos_emb = nn.Embedding(c.context, c.d_model) if c.positional == "learned" else None
        # the paper scales embeddings by √d_model so the fixed ±1 sinusoids don't drown the tokens
        self.embed_scale = math.sqrt(c.d_model) if c.positional == "sinusoidal" else 1.0
        self.drop = nn.Dropout(c.dropout)
        if c.positional == "rope":      # every position's rotation, once: a pass reads its rows, a trace its angles
            angles = rope_angles(torch.arange(c.context), c.rotary_dims, c.rope_base)          # (context, r/2)
            self.register_buffer("rope_angle_table", angles, persistent=False)                # not in checkpoints
            self.register_buffer("rope_table", rotation(angles, c.d_head), persistent=False)  # (context, hs/2, 2)
        self.blocks = nn.ModuleList(
            Block(c.d_model, c.n_head, c.d_ff, c.feed_forward, c.norm, bias=c.bias, dropout=c.dropout,
                  norm_kind=c.norm_kind, norm_eps=c.norm_eps, parallel=c.parallel, n_kv_head=c.n_kv_head)
            for _ in range(c.n_layer))
        self.ln_f = make_norm(c.d_model, c.norm_kind, c.bias, c.norm_eps)
        self.head = nn.Linear(c.d_model, c.vocab_size, bias=False)
        if c.tie_head:
            self.head.weight = self.tok_emb.weight
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2: scale the projections that write into the stream
            if name.endswith(("attn.o.weight", "mlp.down.weight")):
                nn.init.normal_(p, 0.0, 0.02 / math.sqrt(2 * c.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, 0.0, 0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def positional(self, positions: torch.Tensor) -> torch.Tensor | None:
        """(T, d_model) vector added to the token embeddings, or None for rope/none; positions (B, T)
        → (B, T, d_model)."""
        kind = self.config.positional
        if kind == "learned":
            last = int(positions.max())
            if last >= self.config.context:
                raise ValueError(f"learned positions stop at {self.config.context}: "
                                 f"the table has no row for position {last}")
            return self.pos_emb(positions)
        if kind == "sinusoidal":
            table = sinusoidal_encoding(int(positions.max()) + 1, self.config.d_model)
            return table.to(self.tok_emb.weight)[positions]
        return None

    def positions(self, T: int, offset: int | torch.Tensor = 0, device=None) -> torch.Tensor:
        """The positions of T new tokens after `offset` earlier ones: (T,), or (B, T) for an offset (B,)
        per row (streams decoded together)."""
        if torch.is_tensor(offset):
            return torch.arange(T, device=device) + offset[:, None]
        return torch.arange(offset, offset + T, device=device)

    def embed(self, idx, offset: int | torch.Tensor = 0, hooks=None):
        """idx (B, T) at positions offset, offset+1, … → the stream entering block 0 (B, T, C) and the
        RoPE rotation every attention layer applies (toyviz.models.layers.rotation), or None."""
        positions = self.positions(idx.shape[1], offset, idx.device)
        x = self.tok_emb(idx)                                            # (B, T, C)
        x = at(hooks, names.TOKENS, x * self.embed_scale if self.embed_scale != 1.0 else x)
        pos = self.positional(positions)
        if pos is not None:
            x = x + pos
        # the last position from the sizes where it can be (an export traces them symbolically: reading the
        # tensor there is a data-dependent branch torch.export refuses); rows of streams read their tensor
        last = None if torch.is_tensor(offset) else offset + idx.shape[1] - 1
        return at(hooks, names.EMBED, dropped(self.drop, x)), self.rope(positions, last)

    def rope(self, positions: torch.Tensor, last: int | None = None) -> torch.Tensor | None:
        """RoPE's rotation at positions (T,) or (B, T): (T or B·T, 1, hs/2, 2), as toyviz.models.layers.rotation
        gives it (1: every head alike), or None without RoPE; `last`: the largest position, if known without
        reading `positions`. Rows of the table of the first `context` positions (a pass at consecutive
        positions reads a slice of it, no copy); positions past it, as the experiments' extrapolation reads,
        are computed."""
        if self.config.positional != "rope":
            return None
        table = self.rope_table
        if (int(positions.max()) if last is None else last) >= len(table):
            return rotation(rope_angles(positions, self.config.rotary_dims, self.config.rope_base),
                            self.config.d_head).unsqueeze(-3)
        if positions.dim() == 1 and last is not None:                   # offset … last: a slice
            return table[last + 1 - positions.shape[0]: last + 1].unsqueeze(-3)
        return table[positions].unsqueeze(-3)

    def forward(self, idx, targets=None, *, causal: bool | None = None, cache: KVCache | None = None, hooks=None):
        """idx (B, T) → logits (B, T, V), and the mean cross-entropy if targets are given.

        hooks: {point: function} read or edit the pass at the points toyviz.models.names lists
        (toyviz.models.hooks: ablation, steering, patching, recording); None leaves it untouched.
        """
        causal = self.config.causal if causal is None else causal
        hooks = named(hooks)
        x, rope = self.embed(idx, cache.length if cache is not None else 0, hooks)
        run = Pass(hooks, causal, rope=rope, cache=cache)                # what every block reads
        for i, block in enumerate(self.blocks):
            x = block(x, index=i, run=run)
        x = at(hooks, names.FINAL, x)
        h = at(hooks, names.LN_F, self.ln_f(at(hooks, names.norm_input(names.LN_F), x)))
        logits = self.head(h)                                            # (B, T, V)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-1)

    @torch.no_grad()
    def trace(self, ids: list[int], *, pieces: Pieces = numbered, truncated: int = 0,
              causal: bool | None = None, ablate: dict[str, dict[int, str]] | None = None) -> Trace:
        """One recorded forward pass over ids (≤ context) → the complete Trace of what it computed;
        `ablate` switches heads off first ({"block1.attn": {0: "zero"}}), so the trace shows what was used.

        The model has no tokenizer: `pieces` names the ids (the API passes its tokenizer's) and
        `truncated` is how many prompt tokens the caller dropped to fit the context.
        """
        causal = self.config.causal if causal is None else causal
        record = Record(passing=("scores", "hidden"))     # PerHead computes the scores when read; no view reads hidden
        idx = torch.tensor([ids], dtype=torch.long, device=self.tok_emb.weight.device)
        logits, _ = self.forward(idx, causal=causal, hooks=chain(ablation(ablate), record) if ablate else record)
        seen = Recorded(record.values, self.blocks, self.config.norm == "pre")
        layers = range(self.config.n_layer)
        positions = self.positions(len(ids), device=idx.device)
        angles = None                                     # RoPE's: rows of the model's table (computed past it)
        if self.config.positional == "rope":
            angles = self.rope_angle_table[:len(ids)] if len(ids) <= len(self.rope_angle_table) else \
                rope_angles(positions, self.config.rotary_dims, self.config.rope_base)
        return Trace(
            tokens=pieces(ids), token_ids=list(ids), positional=self.positional(positions),
            attention=seen.stacked(layers, "pattern"), per_head=PerHead(seen, layers),
            attn_out_bias=seen.attn_bias(layers), attn_inputs=seen.attn_inputs(layers),
            residual_parts=seen.writes(), residual_final=seen[names.FINAL],
            layernorms=seen.norms(self.ln_f), logits=logits[0], causal=causal,
            ablated={names.parse(attention): heads for attention, heads in (ablate or {}).items()},
            truncated=truncated, rope_angles=angles)

    @torch.no_grad()
    def generate_ids(self, ids: list[int], max_new_tokens: int, *, temperature: float = 1.0,
                     top_k: int = 0, top_p: float = 1.0, seed: int | None = None,
                     use_cache: bool = True, steer: dict[int, torch.Tensor] | None = None
                     ) -> Iterator[SampledToken]:
        """Yield max_new_tokens sampled tokens one at a time; `steer` {layer: vector (C,)} is added to the
        stream leaving those blocks at every position of every step (toyviz.models.hooks.steering).

        The model sees a window of at most `context` tokens. When the window overflows it jumps
        forward by half a context, so a cached run only has to re-read the window then; cached
        and uncached runs see exactly the same window at every step, hence the same logits.
        """
        ctx = self.config.context
        device = self.tok_emb.weight.device
        generator = torch.Generator(device=device)
        generator.manual_seed(seed) if seed is not None else generator.seed()
        seq, start, cache = list(ids), max(0, len(ids) - ctx), None
        edits = steering(steer)
        for _ in range(max_new_tokens):
            jumped = window_start(len(seq), start, ctx)
            if jumped != start:                                          # read the new window afresh
                start, cache = jumped, None
            if use_cache and cache is not None:
                new = seq[-1:]                                           # only the newest token
            else:
                cache = KVCache() if use_cache else None
                new = seq[start:]
            logits, _ = self.forward(torch.tensor([new], device=device), cache=cache, hooks=edits)
            step = sample(logits[0, -1], temperature, top_k, top_p, generator, len(new))
            seq.append(step.token)
            yield step


def window_start(length: int, start: int, context: int) -> int:
    """Where the window of a sequence of `length` tokens starts: at `start` while it fits the context,
    else half a context before its end (so a cached run re-reads a window only every context/2 tokens)."""
    return length - context // 2 if length - start > context else start


def sample(logits: torch.Tensor, temperature: float, top_k: int, top_p: float, generator: torch.Generator,
           positions: int) -> SampledToken:
    """One token drawn from next-token logits (V,) with these settings; `positions`: what the step read."""
    logits = logits.float()
    probs = next_token_probs(logits, temperature, top_k, top_p)
    token = int(probs.argmax()) if temperature <= 0 else draw(probs, generator)     # greedy: nothing to draw
    return SampledToken(token, float(probs[token]), probs, logits, positions)
