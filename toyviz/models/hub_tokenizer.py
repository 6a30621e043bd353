"""A Hugging Face model's own tokenizer (its tokenizer.json, read by `tokenizers`) with the interface of the
project's (toyviz.models.tokenizer.Tokenizer), so the Tokens tab, sampling and every view read an opened model's
tokens as they read the shipped GPT's (toyviz.models.hub opens the model beside it).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

from toyviz.errors import HubError

TOKENIZER = "tokenizer.json"

@lru_cache(maxsize=1)
def byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet read back: the printable character that stands for each byte → the byte."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


class HubTokenizer:
    """A model's own tokenizer (its tokenizer.json, through `tokenizers`) with the interface of
    toyviz.models.tokenizer.Tokenizer: encode, decode, piece(s), stream_decoder, special, vocab_size.
    `bos` is the token the GPT puts first: the model's BOS, else its end-of-text (GPT-2's and Pythia's
    <|endoftext|>). As with toyviz's own tokenizers, special-token strings typed in a text are plain text."""

    def __init__(self, backend, bos: int, name: str = ""):
        import tokenizers
        self.backend, self.bos, self.name = backend, bos, name
        backend.encode_special_tokens = True
        vocab = backend.get_vocab(with_added_tokens=True)                   # {token string: id}
        added = {i: t.content for i, t in backend.get_added_tokens_decoder().items()}
        byte_level = isinstance(backend.decoder, tokenizers.decoders.ByteLevel)
        self.raw = [b""] * (max(vocab.values(), default=-1) + 1)             # each id's bytes
        for token, i in vocab.items():
            self.raw[i] = added[i].encode() if i in added else token_bytes(token, byte_level)
        self.specials = [t.content for t in backend.get_added_tokens_decoder().values() if t.special]

    @classmethod
    def load(cls, folder: Path, hf_config=None) -> "HubTokenizer":
        import tokenizers
        folder = Path(folder)
        try:
            if (folder / TOKENIZER).is_file():
                backend = tokenizers.Tokenizer.from_file(str(folder / TOKENIZER))
            else:                          # vocab.json + merges.txt, or a SentencePiece model: converted
                from transformers import AutoTokenizer
                backend = AutoTokenizer.from_pretrained(str(folder)).backend_tokenizer
        except Exception as err:
            raise HubError(f"cannot read {folder.name}'s tokenizer ({type(err).__name__}: "
                           f"{str(err).strip().splitlines()[0][:120] if str(err).strip() else ''}); "
                           f"a Hugging Face folder needs its tokenizer.json") from None
        size = backend.get_vocab_size(with_added_tokens=True)
        candidates = [getattr(hf_config, "bos_token_id", None), getattr(hf_config, "eos_token_id", None),
                      backend.token_to_id("<|endoftext|>")]
        candidates += [backend.token_to_id(t) for t in tokenizer_config_tokens(folder)]
        bos = next((c for c in candidates if isinstance(c, int) and 0 <= c < size), None)
        if bos is None:
            raise HubError(f"{folder.name}'s tokenizer has no beginning- or end-of-text token to start a text with")
        return cls(backend, bos, folder.name)

    @property
    def vocab_size(self) -> int:
        return len(self.raw)

    def special(self, name: str) -> int:
        token = self.backend.token_to_id(name)
        if token is None:
            raise KeyError(f"no special token {name!r} in this tokenizer")
        return token

    def encode(self, text: str) -> list[int]:
        """User text → ids, without the specials a tokenizer's post-processor adds (the GPT puts `bos` first)."""
        return self.backend.encode(text, add_special_tokens=False).ids

    def decode(self, ids) -> str:
        return b"".join(self.bytes(t) for t in ids).decode("utf-8", errors="replace")

    def bytes(self, token: int) -> bytes:
        return self.raw[token] if 0 <= token < len(self.raw) else b""

    def piece(self, token: int) -> str:
        """Readable text of one token; bytes that are not whole UTF-8 characters shown as <0xNN>; an id the
        model has and the tokenizer does not (a vocabulary padded to a round size) as <unused N>."""
        raw = self.bytes(token)
        if not raw:
            return f"<unused {token}>"
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return "".join(chr(b) if b < 128 else f"<0x{b:02X}>" for b in raw)

    def pieces(self, ids) -> list[str]:
        return [self.piece(t) for t in ids]

    def stream_decoder(self):
        """A function token → newly completed text, holding back bytes of an unfinished character."""
        import codecs
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        return lambda token: decoder.decode(self.bytes(token))


def token_bytes(token: str, byte_level: bool) -> bytes:
    """A vocabulary entry's bytes: GPT-2's byte alphabet read back, or SentencePiece's ▁ as a space and its
    byte-fallback tokens <0xNN> as that byte."""
    if byte_level:
        table = byte_decoder()
        return bytes(table[ch] for ch in token) if all(ch in table for ch in token) else token.encode()
    fallback = re.fullmatch(r"<0x([0-9A-Fa-f]{2})>", token)
    return bytes([int(fallback.group(1), 16)]) if fallback else token.replace("▁", " ").encode()


def tokenizer_config_tokens(folder: Path) -> list[str]:
    """The bos and eos tokens tokenizer_config.json names, if it does."""
    try:
        meta = json.loads((folder / "tokenizer_config.json").read_text())
    except (OSError, json.JSONDecodeError):
        return []
    found = []
    for key in ("bos_token", "eos_token"):
        token = meta.get(key)
        token = token.get("content") if isinstance(token, dict) else token
        if isinstance(token, str):
            found.append(token)
    return found
