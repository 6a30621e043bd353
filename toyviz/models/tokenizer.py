"""Byte-level BPE tokenizers trained by this project: rustbpe learns the merges, tiktoken encodes.

The merge ranks are saved as a `.tiktoken` file (one `base64(bytes) rank` line per token) next
to a checkpoint, with a small JSON file naming the split pattern and the special tokens. Nothing
is ever downloaded.
"""
from __future__ import annotations

import base64
import codecs
import json
from pathlib import Path
from typing import Iterable

import tiktoken

# GPT-4-style pre-tokenisation, with digits split in pairs so numbers don't eat the vocabulary
SPLIT_PATTERN = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]++[\r\n]*"""
                 r"""|\s*[\r\n]|\s+(?!\S)|\s+""")


class Tokenizer:
    """A tiktoken Encoding plus the names of its special tokens."""

    def __init__(self, name: str, ranks: dict[bytes, int], specials: list[str], pattern: str = SPLIT_PATTERN):
        self.name, self.ranks, self.specials, self.pattern = name, ranks, list(specials), pattern
        self.encoding = tiktoken.Encoding(
            name=name, pat_str=pattern, mergeable_ranks=ranks,
            special_tokens={s: len(ranks) + i for i, s in enumerate(self.specials)})

    @property
    def vocab_size(self) -> int:
        return self.encoding.n_vocab

    def special(self, name: str) -> int:
        return self.encoding._special_tokens[name]

    def encode(self, text: str) -> list[int]:
        """User text → ids. Special-token strings in the text are plain text here, never control tokens."""
        return self.encoding.encode(text, allowed_special=set(), disallowed_special=())

    def decode(self, ids: Iterable[int]) -> str:
        return self.encoding.decode(list(ids), errors="replace")

    def piece(self, token: int) -> str:
        """Readable text of one token; bytes that are not whole UTF-8 characters shown as <0xNN>."""
        raw = self.encoding.decode_single_token_bytes(token)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return "".join(chr(b) if b < 128 else f"<0x{b:02X}>" for b in raw)

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.piece(t) for t in ids]

    def stream_decoder(self):
        """A function token → newly completed text, holding back bytes of an unfinished character."""
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return lambda token: decoder.decode(self.encoding.decode_single_token_bytes(token))

    def save(self, folder: Path, stem: str = "tokenizer") -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        lines = (f"{base64.b64encode(tok).decode()} {rank}" for tok, rank in
                 sorted(self.ranks.items(), key=lambda kv: kv[1]))
        (folder / f"{stem}.tiktoken").write_text("\n".join(lines) + "\n")
        (folder / f"{stem}.json").write_text(json.dumps(
            {"name": self.name, "pattern": self.pattern, "special_tokens": self.specials}, indent=2))

    @classmethod
    def load(cls, folder: Path, stem: str = "tokenizer") -> "Tokenizer":
        folder = Path(folder)
        meta = json.loads((folder / f"{stem}.json").read_text())
        return cls(meta["name"], read_ranks(folder / f"{stem}.tiktoken"), meta["special_tokens"], meta["pattern"])


def read_ranks(path: Path) -> dict[bytes, int]:
    """A .tiktoken file's `base64(bytes) rank` lines. Read here, not with tiktoken's load_tiktoken_bpe: that
    keeps a copy of every file it reads in a temp-folder cache keyed by the path alone, so a tokenizer
    retrained into the same folder came back as the old one (and the copies piled up under /tmp)."""
    return {base64.b64decode(token): int(rank)
            for token, rank in (line.split() for line in Path(path).read_bytes().splitlines() if line)}


def train_tokenizer(texts: Iterable[str], vocab_size: int, specials: list[str], name: str) -> Tokenizer:
    """Learn byte-level BPE merges so that ranks + specials give exactly vocab_size tokens."""
    import rustbpe  # only needed when training

    if vocab_size < 256 + len(specials):
        raise ValueError(f"vocab_size must be at least {256 + len(specials)} (256 bytes + specials)")
    bpe = rustbpe.Tokenizer()
    bpe.train_from_iterator(iter(texts), vocab_size - len(specials), pattern=SPLIT_PATTERN)
    ranks = {bytes(b): r for b, r in bpe.get_mergeable_ranks()}
    return Tokenizer(name, ranks, specials, bpe.get_pattern())
