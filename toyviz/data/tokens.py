"""A corpus's tokenizer and token ids, made once per (corpus, vocabulary size) and cached: later runs,
every process of a run, and machines without rustbpe read them back."""
from __future__ import annotations

import torch

from toyviz.data import cache_dir
from toyviz.models.tokenizer import Tokenizer, train_tokenizer


def cached_tokenizer(name: str, texts, vocab_size: int, specials: list[str]) -> Tokenizer:
    """Train once per (corpus, vocabulary size); later runs (and machines without rustbpe) reuse it."""
    folder = cache_dir() / "tokenizers"
    stem = f"{name}-{vocab_size}"
    if (folder / f"{stem}.tiktoken").is_file():
        return Tokenizer.load(folder, stem)
    tok = train_tokenizer(texts, vocab_size, specials, name)
    tok.save(folder, stem)
    return tok


def cached_ids(tok: Tokenizer, text: str, key: str) -> torch.Tensor:
    path = cache_dir() / "tokens" / f"{key}.pt"
    if path.is_file():
        return torch.load(path)
    ids = torch.tensor(tok.encode(text), dtype=torch.int32)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(ids, path)
    return ids
