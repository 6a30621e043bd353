"""Text in, traces and tokens out: the objects `toyviz.load` returns.

`GPT` and `Translator` hold a model and its tokenizer(s); they validate user text, add the
special tokens the models were trained with, and hand the models what they need to build
complete traces (token pieces, tokens dropped, heads to switch off).
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from typing import Iterator

import torch

from toyviz.errors import UserError
from toyviz.models import names
from toyviz.serving.batching import Streams
from toyviz.models.checkpoint import load_folder, resolve
from toyviz.models.hooks import ABLATIONS
from toyviz.models.sampling import top_candidates
from toyviz.models.trace import Trace, TranslatorTrace

BOS_GPT = "<|endoftext|>"                          # document separator, and the GPT's first token
BOS, EOS, PAD = "<|bos|>", "<|eos|>", "<|pad|>"    # the translator's specials
TRANSLATOR_SPECIALS = [BOS, EOS, PAD]
# The translator's registers, each a source token just before EOS (the words keep the positions the
# 1909-only checkpoints learned them at); the first is the default. A checkpoint without these tokens
# translates into the 1909 Bible's Spanish only.
REGISTERS = {"today": "<|today|>", "1909": "<|1909|>"}
REGISTER_NAMES = {"today": "today's Spanish", "1909": "the 1909 Bible"}


def resolve_device(device: str | None = None) -> str:
    """Explicit argument, else TOYVIZ_DEVICE, else CUDA when present."""
    device = device or os.environ.get("TOYVIZ_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError("TOYVIZ_DEVICE asks for CUDA but torch sees no GPU")
    return device


def check_text(text) -> str:
    if not isinstance(text, str):
        raise UserError(f"text must be a string, not {type(text).__name__}")
    if not text.strip():
        raise UserError("the text is empty: type a few words first")
    return text


def check_sampling(max_new_tokens, temperature, top_k, top_p):
    if not 0 <= int(max_new_tokens):
        raise UserError("max_new_tokens must be 0 or more")
    if not 0 <= float(temperature):
        raise UserError("temperature must be 0 (greedy) or more")
    if not 0 <= int(top_k):
        raise UserError("top_k must be 0 (off) or more")
    if not 0 < float(top_p) <= 1:
        raise UserError("top_p must be in (0, 1]")


@dataclass
class Step:
    """One generated token, as a UI wants it."""
    text: str                          # newly completed text (may be "" mid-character)
    token: int
    piece: str                         # the token's own text piece
    prob: float                        # probability it was drawn with
    top: list[tuple[str, float]]       # the most likely candidates at this step
    logits: torch.Tensor               # (V,) raw next-token logits
    positions: int                     # positions the model processed for this step


class GPT:
    def __init__(self, model, tokenizer, source: str = ""):
        self.model, self.tokenizer, self.source = model, tokenizer, source
        self.config = model.config
        # a Hugging Face model's tokenizer says its own first token (toyviz.models.hub_tokenizer.HubTokenizer.bos)
        self.bos = getattr(tokenizer, "bos", None)
        self.bos = tokenizer.special(BOS_GPT) if self.bos is None else self.bos
        self._streams, self._streams_lock = None, threading.Lock()

    @property
    def device(self) -> torch.device:
        return self.model.tok_emb.weight.device

    def encode(self, text: str) -> tuple[list[int], int]:
        """BOS + tokens, cut to the context; → (ids, number of tokens dropped)."""
        ids = [self.bos] + self.tokenizer.encode(check_text(text))
        dropped = max(0, len(ids) - self.config.context)
        return ids[: self.config.context], dropped

    def streams(self):
        """The batch this GPT's generations with together=True share (its thread starts with the first)."""
        with self._streams_lock:
            if self._streams is None:
                self._streams = Streams(self.model)
            return self._streams

    def ablation(self, heads, kind: str = "zero") -> dict[str, dict[int, str]]:
        """[(layer, head), …] → {"block<layer>.attn": {head: kind}}, the form the model's forward takes."""
        if kind not in ABLATIONS:
            raise UserError(f"ablation must be one of {ABLATIONS}, got {kind!r}")
        ablate: dict[str, dict[int, str]] = {}
        for layer, head in heads:
            if not (0 <= layer < self.config.n_layer and 0 <= head < self.config.n_head):
                raise UserError(f"no head {layer}.{head} in a {self.config.n_layer}×{self.config.n_head} model")
            ablate.setdefault(names.attn(int(layer)), {})[int(head)] = kind
        return ablate

    def trace(self, text: str, *, causal: bool | None = None, ablate=(), ablation: str = "zero") -> Trace:
        """Traced forward pass over the prompt; `ablate` lists (layer, head) pairs to switch off."""
        ids, dropped = self.encode(text)
        return self.model.trace(ids, pieces=self.tokenizer.pieces, truncated=dropped, causal=causal,
                                ablate=self.ablation(ablate, ablation))

    def generate(self, text: str, max_new_tokens: int = 50, *, temperature: float = 1.0, top_k: int = 0,
                 top_p: float = 1.0, seed: int | None = None, use_cache: bool = True, n_top: int = 10,
                 steer: dict[int, torch.Tensor] | None = None, together: bool = False) -> Iterator[Step]:
        """Sample max_new_tokens after the prompt; `steer` adds vectors to the stream at every position, e.g. a
        feature's direction: `steer=toyviz.load_features(gpt).steer(feature, alpha)` (toyviz.interpret.dictionary).
        together: decoded in one batch with the other generations streaming now (toyviz.serving.batching), as a
        server wants; the same tokens (always with the KV cache: use_cache is for the uncached comparison)."""
        check_sampling(max_new_tokens, temperature, top_k, top_p)
        ids = [self.bos] + self.tokenizer.encode(check_text(text))
        decode = self.tokenizer.stream_decoder()
        settings = dict(temperature=float(temperature), top_k=int(top_k), top_p=float(top_p), seed=seed, steer=steer)
        if together:
            sampled = self.streams().generate_ids(ids, int(max_new_tokens), **settings)
        else:
            sampled = self.model.generate_ids(ids, int(max_new_tokens), use_cache=use_cache, **settings)
        for s in sampled:
            top = [(self.tokenizer.piece(t), p) for t, p in top_candidates(s.probs, n_top)]
            yield Step(decode(s.token), s.token, self.tokenizer.piece(s.token), s.prob, top, s.logits, s.positions)


@dataclass
class Translation:
    text: str
    ids: list[int]                     # target ids, without BOS/EOS
    score: float                       # length-normalised log-probability
    trace: TranslatorTrace             # decoder fed BOS + ids, so the trace explains this output
    truncated: int = 0


class Translator:
    def __init__(self, model, source_tokenizer, target_tokenizer, source: str = ""):
        self.model, self.src_tok, self.tgt_tok, self.source = model, source_tokenizer, target_tokenizer, source
        self.config = model.config
        self.bos, self.eos = target_tokenizer.special(BOS), target_tokenizer.special(EOS)
        self.src_eos = source_tokenizer.special(EOS)
        # the registers this checkpoint was trained with, the default first ("1909" alone: no register tokens)
        self.registers = tuple(r for r, token in REGISTERS.items() if token in source_tokenizer.specials) or ("1909",)

    @property
    def device(self) -> torch.device:
        return self.model.src_emb.weight.device

    def register_tokens(self, register: str | None) -> list[int]:
        """The source token that asks for `register` (None: the default), or none on a 1909-only checkpoint."""
        register = self.registers[0] if register is None else register
        if register not in self.registers:
            raise UserError(f"register must be one of {', '.join(map(repr, self.registers))}, got {register!r}")
        return [self.src_tok.special(REGISTERS[register])] if REGISTERS[register] in self.src_tok.specials else []

    def encode(self, text: str, register: str | None = None) -> tuple[list[int], int]:
        """Source ids: the text, the register's token, EOS, the text cut to fit the context; → (ids, dropped)."""
        ids, tail = self.src_tok.encode(check_text(text)), self.register_tokens(register) + [self.src_eos]
        keep = self.config.context - len(tail)
        return ids[:keep] + tail, max(0, len(ids) - keep)

    def _search(self, text: str, beam: int, max_len: int | None = None, alpha: float = 0.6,
                register: str | None = None):
        if not 1 <= int(beam) <= 16:
            raise UserError("beam must be between 1 and 16")
        src, dropped = self.encode(text, register)
        return src, dropped, self.model.search(src, bos=self.bos, eos=self.eos, beam=int(beam), max_len=max_len,
                                               alpha=alpha)

    def translate_text(self, text: str, beam: int = 1, register: str | None = None) -> str:
        """The translation alone: what the evaluation scores, without the cost of a traced pass."""
        return self.tgt_tok.decode(self._search(text, beam, register=register)[2].ids)

    def translate(self, text: str, beam: int = 1, *, max_len: int | None = None, alpha: float = 0.6,
                  register: str | None = None) -> Translation:
        """`register`: "today" (today's Spanish) or "1909" (the 1909 Bible's), None for the checkpoint's
        default (`registers[0]`)."""
        src, dropped, hyp = self._search(text, beam, max_len, alpha, register)
        # the last position predicted EOS only if the search finished; otherwise it was cut at max_len
        trace = self.model.trace(src, [self.bos] + hyp.ids, src_pieces=self.src_tok.pieces,
                                 tgt_pieces=self.tgt_tok.pieces, next_id=self.eos if hyp.finished else None)
        return Translation(self.tgt_tok.decode(hyp.ids), hyp.ids, hyp.score, trace, dropped)


def load(name_or_path: str = "gpt", device: str | None = None):
    """Load "gpt", "translator", a checkpoint folder or a Hub repo id → GPT or Translator."""
    folder = resolve(name_or_path)
    kind, model, toks = load_folder(folder, resolve_device(device))
    if kind == "gpt":
        return GPT(model, toks["tokenizer"], str(folder))
    return Translator(model, toks["source"], toks["target"], str(folder))
