"""ToyTranslator: the encoder–decoder of "Attention Is All You Need".

Source and target embeddings scaled by √d_model plus sinusoidal positions; encoder blocks
(self-attention over the source, padding masked); decoder blocks (causal self-attention,
cross-attention over the encoder output, feed-forward); output projection tied to the target
embedding; Xavier initialisation. Greedy decoding is beam search with width 1.
"""

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
from huggingface_hub import PyTorchModelHubMixin

from toyviz.models import names
from toyviz.models.config import TranslatorConfig
from toyviz.models.hooks import Record, at, scope
from toyviz.models.layers import Block, KVCache, Pass, dropped, sinusoidal_encoding
from toyviz.models.trace import Pieces, Recorded, TranslatorTrace, numbered


@dataclass
class Hypothesis:
    ids: list[int]          # target ids after BOS, EOS excluded
    logprob: float
    score: float            # logprob normalised by the length penalty
    finished: bool


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's ((5 + length) / 6)^alpha: alpha > 0 stops beam search preferring short outputs."""
    return ((5 + length) / 6) ** alpha


class ToyTranslator(nn.Module, PyTorchModelHubMixin, library_name="toyviz", license="mit",
                    tags=["toyviz", "translation", "education"]):
    def __init__(self, config: TranslatorConfig):
        super().__init__()
        self.config = c = config
        self.tgt_emb = nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.src_emb = self.tgt_emb if c.shared_vocab else nn.Embedding(c.src_vocab_size, c.d_model)
        self.register_buffer("pe", sinusoidal_encoding(c.context, c.d_model), persistent=False)
        self.drop = nn.Dropout(c.dropout)
        block = lambda cross: Block(c.d_model, c.n_head, c.d_ff, c.feed_forward, c.norm, cross=cross,
                                    dropout=c.dropout)
        self.encoder = nn.ModuleList(block(False) for _ in range(c.n_encoder_layer))
        self.decoder = nn.ModuleList(block(True) for _ in range(c.n_decoder_layer))
        # pre-norm leaves the stream un-normalised, so each stack ends with a norm
        self.enc_norm = nn.LayerNorm(c.d_model) if c.norm == "pre" else None
        self.dec_norm = nn.LayerNorm(c.d_model) if c.norm == "pre" else None
        self.out = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        self.out.weight = self.tgt_emb.weight                            # tied, as in the paper (and the
        # source embedding too with a shared vocabulary: the same module, one parameter)

    @torch.no_grad()
    def grow_source(self, vocab_size: int, like: int) -> None:
        """Add source tokens (ids from the old size up to vocab_size), each starting as a copy of token
        `like`'s row: a checkpoint taught new source specials (the registers) keeps its translations at
        the first step, since the new token first reads as `like` (EOS) does."""
        if self.config.shared_vocab:
            raise ValueError("a shared vocabulary grows on both sides: train it with the new tokens from the start")
        old = self.src_emb.weight
        table = nn.Embedding(vocab_size, old.shape[1]).to(old.device, old.dtype)
        table.weight[: len(old)] = old
        table.weight[len(old):] = old[like]
        self.src_emb, self.config.src_vocab_size = table, vocab_size

    def _embed(self, table: nn.Embedding, ids: torch.Tensor, offset: int, hooks) -> torch.Tensor:
        end = offset + ids.shape[1]
        if end > self.config.context:
            raise ValueError(f"{end} tokens exceed the translator's context of {self.config.context}")
        tokens = at(hooks, names.TOKENS, table(ids) * math.sqrt(self.config.d_model))
        return at(hooks, names.EMBED, dropped(self.drop, tokens + self.pe[offset:end]))

    def encode(self, src, src_keep, hooks=None):
        """src (B, S) → memory (B, S, C); src_keep (B, S) is False at padding. Hook points are named with
        names.ENCODER before them ("enc.block0.attn.pattern")."""
        hooks = scope(hooks, names.ENCODER)
        x = self._embed(self.src_emb, src, 0, hooks)
        run = Pass(hooks, keep=src_keep)                                 # padding masked
        for i, block in enumerate(self.encoder):
            x = block(x, index=i, run=run)
        return self._final_norm(x, self.enc_norm, hooks)

    def decode(self, tgt, memory, src_keep, hooks=None, cache: KVCache | None = None):
        """tgt (B, T) decoder inputs → logits (B, T, V_tgt); with a cache, tgt continues the cached positions.
        Hook points are named with names.DECODER before them ("dec.block1.cross.pattern")."""
        hooks = scope(hooks, names.DECODER)
        x = self._embed(self.tgt_emb, tgt, cache.length if cache is not None else 0, hooks)
        run = Pass(hooks, causal=True, cache=cache, memory=memory, memory_keep=src_keep)
        for i, block in enumerate(self.decoder):
            x = block(x, index=i, run=run)
        return self.out(self._final_norm(x, self.dec_norm, hooks))

    @staticmethod
    def _final_norm(x, norm, hooks):
        """Pre-norm leaves the stream un-normalised, so each stack ends with a norm (post-norm: none)."""
        x = at(hooks, names.FINAL, x)
        return x if norm is None else at(hooks, names.LN_F, norm(at(hooks, names.norm_input(names.LN_F), x)))

    def forward(self, src, tgt, src_keep=None, hooks=None):
        src_keep = torch.ones_like(src, dtype=torch.bool) if src_keep is None else src_keep
        return self.decode(tgt, self.encode(src, src_keep, hooks), src_keep, hooks)

    @torch.no_grad()
    def search(self, src_ids: list[int], *, bos: int, eos: int, beam: int = 1, max_len: int | None = None,
               alpha: float = 0.6, use_cache: bool = True) -> Hypothesis:
        """Beam search for one sentence (beam=1 is greedy decoding).

        With the cache each step feeds only the hypotheses' newest tokens and reorders the cached keys
        to follow their parents; without it each step re-reads every prefix. Both give the same result.
        """
        device = self.src_emb.weight.device
        max_len = min(max_len or self.config.context - 1, self.config.context - 1)
        src = torch.tensor([src_ids], device=device)
        keep = torch.ones_like(src, dtype=torch.bool)
        memory = self.encode(src, keep)
        alive, finished, cache = [Hypothesis([], 0.0, 0.0, False)], [], KVCache() if use_cache else None
        for _ in range(max_len):
            n = len(alive)
            if cache is None or cache.length == 0:
                tgt = torch.tensor([[bos] + h.ids for h in alive], device=device)
            else:
                tgt = torch.tensor([[h.ids[-1]] for h in alive], device=device)
            logits = self.decode(tgt, memory.expand(n, -1, -1), keep.expand(n, -1), cache=cache)
            logp = logits[:, -1].log_softmax(-1)
            total = logp + torch.tensor([h.logprob for h in alive], device=device)[:, None]
            values, flat = total.flatten().topk(min(beam * 2, total.numel()))
            candidates, parents = [], []
            for value, index in zip(values.tolist(), flat.tolist()):
                parent, token = divmod(index, total.shape[1])
                ids = alive[parent].ids + ([] if token == eos else [token])
                done = token == eos
                candidates.append(Hypothesis(ids, value, value / length_penalty(len(ids) + done, alpha), done))
                parents.append(parent)
            finished += [h for h in candidates if h.finished][: beam]
            kept = [i for i, h in enumerate(candidates) if not h.finished][:beam]
            alive = [candidates[i] for i in kept]
            best_done = max((h.score for h in finished), default=-math.inf)
            # stop when no open hypothesis can still beat the best finished one
            if not alive or len(finished) >= beam and best_done >= max(h.score for h in alive):
                break
            if cache is not None:
                cache.select(torch.tensor([parents[i] for i in kept], device=device))
        return max(finished or alive, key=lambda h: h.score)

    @torch.no_grad()
    def trace(self, src_ids: list[int], tgt_ids: list[int], *, src_pieces: Pieces = numbered,
              tgt_pieces: Pieces = numbered, next_id: int | None = None) -> TranslatorTrace:
        """Traced pass: encoder over src_ids, decoder fed tgt_ids (BOS + the chosen output) → the
        complete TranslatorTrace.

        The model has no tokenizers: `src_pieces` / `tgt_pieces` name the ids. Each decoder position
        predicts the next input, and the last one `next_id`: the token the search chose there (EOS when
        it finished), or, when None (the search was cut at max_len), the one the model ranks first.
        """
        device = self.src_emb.weight.device
        record = Record()
        src = torch.tensor([src_ids], device=device)
        logits = self(src, torch.tensor([tgt_ids], device=device), hooks=record)
        next_id = int(logits[0, -1].argmax()) if next_id is None else next_id
        pre_norm = self.config.norm == "pre"
        enc = Recorded(record.values, self.encoder, pre_norm, names.ENCODER)
        dec = Recorded(record.values, self.decoder, pre_norm, names.DECODER)
        enc_layers, dec_layers = range(self.config.n_encoder_layer), range(self.config.n_decoder_layer)
        return TranslatorTrace(
            src_tokens=src_pieces(src_ids), src_ids=list(src_ids), tgt_tokens=tgt_pieces(tgt_ids),
            tgt_ids=list(tgt_ids), output_tokens=tgt_pieces(list(tgt_ids[1:]) + [next_id]),
            output_ids=list(tgt_ids[1:]) + [next_id],
            encoder_attention=enc.stacked(enc_layers, "pattern"), decoder_attention=dec.stacked(dec_layers, "pattern"),
            cross_attention=dec.stacked(dec_layers, "pattern", names.cross),
            encoder_parts=enc.writes(), decoder_parts=dec.writes(),
            encoder_final=enc[names.FINAL], decoder_final=dec[names.FINAL],
            layernorms=enc.norms(self.enc_norm) | dec.norms(self.dec_norm), logits=logits[0],
            encoder_scores=enc.stacked(enc_layers, "scores"), decoder_scores=dec.stacked(dec_layers, "scores"),
            positional=self.pe[: max(len(src_ids), len(tgt_ids))])
