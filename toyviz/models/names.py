"""Activation names: how the forward pass names the points a hook may read or edit, and what a
trace recorded. Made and read only here: the one naming scheme of toyviz.

In forward order, a GPT's residual writes are "embed", then per layer i "attn.i" and "mlp.i"
(under post-norm each followed by "norm.attn.i" / "norm.mlp.i", the change that norm made to
the stream). Its LayerNorms are "block{i}.ln1", "block{i}.ln2" and the final "ln_f". The
translator's decoder blocks add "cross.i" and "block{i}.ln_cross", and its two stacks prefix
every name with ENCODER ("enc.") or DECODER ("dec."). The strings appear in figures, tests and
deep links, so they never change; `parse` reads any of them back.

Hook points (toyviz.models.hooks), each a tensor on its way through the forward; a hook may
replace it. Shapes for one stack, B batch rows, T positions, C = d_model, nh heads of hs:
    "embed.tokens"       the token embeddings as the model scales them, before positions  (B, T, C)
    "embed"              the stream's first write: tokens + positions                       (B, T, C)
    "resid_pre.i"        the stream entering block i                                        (B, T, C)
    "attn.i.q" / ".k" / ".v"  queries, keys, values (after RoPE)                           (B, nh, T, hs)
    "attn.i.scores"      q·k / √hs before the mask                                         (B, nh, T, T)
    "attn.i.pattern"     the attention probabilities                                       (B, nh, T, T)
    "attn.i.heads"       each head's output before W_O (ablation edits here)              (B, nh, T, hs)
    "attn.i"             the attention's write into the stream                              (B, T, C)
    "cross.i…"           the same for a decoder block's cross-attention (keys: the source)
    "mlp.i.hidden"       the feed-forward's hidden activations, what its down-projection reads (B, T, d_ff)
    "mlp.i"              the feed-forward's write                                           (B, T, C)
    "block{i}.ln1.input" what a norm reads, "block{i}.ln1" what it returns                  (B, T, C)
    "resid_post.i"       the stream leaving block i (steering adds here)                    (B, T, C)
    "final"              the stream the final norm reads                                    (B, T, C)
"""
from __future__ import annotations

from typing import NamedTuple

EMBED = "embed"              # the token embedding (plus positions): the stream's first write
LN_F = "ln_f"                # the norm after the last block
FINAL = "final"              # the stream the final norm reads (a hook point, not a write)
TOKENS = "embed.tokens"      # the scaled token embeddings, before positions are added
ENCODER, DECODER = "enc.", "dec."
NORMS = ("ln1", "ln_cross", "ln2")   # the norm before (pre-norm) or after (post-norm) attn, cross, mlp
ATTENTION_PARTS = ("q", "k", "v", "scores", "pattern", "heads")


def attn(layer: int) -> str:
    """Self-attention of a block: its residual write, and the name its heads are recorded and ablated under."""
    return f"attn.{layer}"


def resid_pre(layer: int) -> str:
    """The stream entering block `layer`."""
    return f"resid_pre.{layer}"


def resid_post(layer: int) -> str:
    """The stream leaving block `layer`."""
    return f"resid_post.{layer}"


def part(attention: str, which: str) -> str:
    """A point inside an attention ("attn.1", "cross.0"): which is q, k, v, scores, pattern or heads."""
    if which not in ATTENTION_PARTS:
        raise ValueError(f"an attention's points are {ATTENTION_PARTS}, not {which!r}")
    return f"{attention}.{which}"


def heads(attention: str) -> str:
    """Each head's output before W_O: where heads are ablated and patched."""
    return part(attention, "heads")


def hidden(layer: int) -> str:
    """A feed-forward's hidden activations (a sparse autoencoder's site)."""
    return f"{mlp(layer)}.hidden"


def norm_input(norm_name: str) -> str:
    """What a LayerNorm reads ("block0.ln1.input", "ln_f.input")."""
    return f"{norm_name}.input"


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
