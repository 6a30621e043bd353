"""Activation names: how a traced pass names what it recorded, made and read only here.

In forward order, a GPT's residual writes are "embed", then per layer i "attn.i" and "mlp.i"
(under post-norm each followed by "norm.attn.i" / "norm.mlp.i", the change that norm made to
the stream). Its LayerNorms are "block{i}.ln1", "block{i}.ln2" and the final "ln_f". The
translator's decoder blocks add "cross.i" and "block{i}.ln_cross", and its two stacks prefix
every name with ENCODER ("enc.") or DECODER ("dec."). The strings appear in figures, tests and
deep links, so they never change; `parse` reads any of them back.
"""
from __future__ import annotations

from typing import NamedTuple

EMBED = "embed"              # the token embedding (plus positions): the stream's first write
LN_F = "ln_f"                # the norm after the last block
FINAL = "residual"           # the stream that final norm reads (a recorded value, not a write)
ENCODER, DECODER = "enc.", "dec."
NORMS = ("ln1", "ln_cross", "ln2")   # the norm before (pre-norm) or after (post-norm) attn, cross, mlp


def attn(layer: int) -> str:
    """Self-attention of a block: its residual write, and the name its heads are recorded and ablated under."""
    return f"attn.{layer}"


def cross(layer: int) -> str:
    """Cross-attention of a decoder block."""
    return f"cross.{layer}"


def mlp(layer: int) -> str:
    """Feed-forward of a block."""
    return f"mlp.{layer}"


def norm(layer: int, which: str) -> str:
    """A block's LayerNorm, `which` one of NORMS."""
    if which not in NORMS:
        raise ValueError(f"a block's norm is one of {NORMS}, not {which!r}")
    return f"block{layer}.{which}"


def post_norm(write: str) -> str:
    """Under post-norm, the change the norm after `write` made to the stream (itself a write)."""
    return "norm." + write


class Name(NamedTuple):
    stack: str           # "", ENCODER or DECODER
    kind: str            # "embed", "attn", "cross", "mlp", "norm.attn", "ln1", "ln_f", …
    layer: int | None    # None for names outside the blocks


def parse(name: str) -> Name:
    """Any name above → its parts: "dec.cross.1" → Name("dec.", "cross", 1),
    "norm.mlp.0" → Name("", "norm.mlp", 0), "block2.ln1" → Name("", "ln1", 2), "ln_f" → Name("", "ln_f", None)."""
    stack = next((s for s in (ENCODER, DECODER) if name.startswith(s)), "")
    rest = name[len(stack):]
    if rest.startswith("block"):
        block, which = rest.split(".")
        return Name(stack, which, int(block[len("block"):]))
    kind, _, layer = rest.rpartition(".")
    return Name(stack, kind, int(layer)) if layer.isdigit() else Name(stack, rest, None)


def layer_of(name: str) -> int:
    """The layer a name belongs to: "attn.2", "norm.mlp.2", "enc.block2.ln1" → 2; "embed" → -1
    (it comes before layer 0)."""
    parsed = parse(name)
    if parsed.kind == EMBED:
        return -1
    if parsed.layer is None:
        raise ValueError(f"{name!r} belongs to no layer")
    return parsed.layer


def of_stack(entries: dict, stack: str) -> dict:
    """The entries of one stack, its prefix dropped ("" keeps every entry)."""
    return {k[len(stack):]: v for k, v in entries.items() if k.startswith(stack)}
