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
from toyviz.models.layers import Block, KVCache, rope_angles, sinusoidal_encoding
from toyviz.models.sampling import draw, next_token_probs
from toyviz.models.trace import Pieces, Recorder, Trace, numbered


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
        self.blocks = nn.ModuleList(
            Block(c.d_model, c.n_head, c.d_ff, c.feed_forward, c.norm, bias=c.bias, dropout=c.dropout)
            for _ in range(c.n_layer))
        self.ln_f = nn.LayerNorm(c.d_model, bias=c.bias)
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

    def embed(self, idx, offset: int | torch.Tensor = 0):
        """idx (B, T) at positions offset, offset+1, … → the stream entering block 0 (B, T, C),
        the positional vectors added to it (T, C) or None, and the RoPE angles (T, hs/2) or None.
        offset (B,), one per row (streams decoded together), makes those (B, T, C) and (B, T, hs/2)."""
        positions = torch.arange(idx.shape[1], device=idx.device)
        positions = positions + (offset[:, None] if torch.is_tensor(offset) else offset)        # (T,) or (B, T)
        x = self.tok_emb(idx) * self.embed_scale                         # (B, T, C)
        pos = self.positional(positions)
        if pos is not None:
            x = x + pos
        rope = rope_angles(positions, self.config.d_head) if self.config.positional == "rope" else None
        return self.drop(x), pos, rope

    def forward(self, idx, targets=None, *, causal: bool | None = None, cache: KVCache | None = None,
                ablate: dict[str, dict[int, str]] | None = None, steer: dict[int, torch.Tensor] | None = None,
                rec: Recorder | None = None):
        """idx (B, T) → logits (B, T, V), and the mean cross-entropy if targets are given.

        ablate switches heads off, e.g. {"attn.1": {0: "zero", 3: "mean"}}: a head's output is replaced
        by zeros or by its mean over the positions. steer adds a vector to the stream after a block at
        every position, {layer: (C,) vector} (a feature's direction, see toyviz.interpret.dictionary); `trace`
        takes none, so recorded writes always add up. rec, if given, records the pass and changes nothing.
        """
        causal = self.config.causal if causal is None else causal
        x, pos, rope = self.embed(idx, cache.length if cache is not None else 0)
        if rec is not None:
            rec.positions(pos, rope)
            rec.write(names.EMBED, x)
        for i, block in enumerate(self.blocks):
            x = block(x, index=i, causal=causal, rope=rope, cache=cache, ablate=ablate, rec=rec)
            if steer is not None and i in steer:
                x = x + steer[i]
        h = self.ln_f(x)
        if rec is not None:
            rec.final(x)
            rec.norm(names.LN_F, self.ln_f, x, h)
        logits = self.head(h)                                            # (B, T, V)
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-1)

    @torch.no_grad()
    def trace(self, ids: list[int], *, pieces: Pieces = numbered, truncated: int = 0,
              causal: bool | None = None, ablate: dict[str, dict[int, str]] | None = None) -> Trace:
        """One traced forward pass over ids (≤ context) → the complete Trace of what it computed.

        The model has no tokenizer: `pieces` names the ids (the API passes its tokenizer's) and
        `truncated` is how many prompt tokens the caller dropped to fit the context.
        """
        causal = self.config.causal if causal is None else causal
        rec = Recorder()
        idx = torch.tensor([ids], dtype=torch.long, device=self.tok_emb.weight.device)
        logits, _ = self.forward(idx, causal=causal, ablate=ablate, rec=rec)
        attns = [names.attn(i) for i in range(self.config.n_layer)]
        att = rec.store["attention"]
        return Trace(
            tokens=pieces(ids), token_ids=list(ids), positional=rec.store["positions"]["added"],
            attention=rec.stacked(attns, "probs"), scores=rec.stacked(attns, "scores"),
            q=rec.stacked(attns, "q"), k=rec.stacked(attns, "k"), v=rec.stacked(attns, "v"),
            head_out=rec.stacked(attns, "out"), head_writes=rec.stacked(attns, "head_writes"),
            attn_out_bias=torch.stack([att[n]["bias"] for n in attns]),
            attn_inputs=torch.stack([rec.store["inputs"][n] for n in attns]),
            residual_parts=rec.parts(), residual_final=rec.store["final"][names.FINAL],
            layernorms=rec.norms(), logits=logits[0], causal=causal, ablated=ablate or {},
            truncated=truncated, rope_angles=rec.store["positions"]["rope"])

    @torch.no_grad()
    def generate_ids(self, ids: list[int], max_new_tokens: int, *, temperature: float = 1.0,
                     top_k: int = 0, top_p: float = 1.0, seed: int | None = None,
                     use_cache: bool = True, steer: dict[int, torch.Tensor] | None = None
                     ) -> Iterator[SampledToken]:
        """Yield max_new_tokens sampled tokens one at a time (`steer` as in `forward`, at every step).

        The model sees a window of at most `context` tokens. When the window overflows it jumps
        forward by half a context, so a cached run only has to re-read the window then; cached
        and uncached runs see exactly the same window at every step, hence the same logits.
        """
        ctx = self.config.context
        device = self.tok_emb.weight.device
        generator = torch.Generator(device=device)
        generator.manual_seed(seed) if seed is not None else generator.seed()
        seq, start, cache = list(ids), max(0, len(ids) - ctx), None
        for _ in range(max_new_tokens):
            jumped = window_start(len(seq), start, ctx)
            if jumped != start:                                          # read the new window afresh
                start, cache = jumped, None
            if use_cache and cache is not None:
                new = seq[-1:]                                           # only the newest token
            else:
                cache = KVCache() if use_cache else None
                new = seq[start:]
            logits, _ = self.forward(torch.tensor([new], device=device), cache=cache, steer=steer)
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
    token = draw(probs, generator)
    return SampledToken(token, float(probs[token]), probs, logits, positions)
