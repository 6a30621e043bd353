"""Names: the one name type of every point in the models, made and parsed only here.

A name reads like the module tree, outermost first (TransformerLens's order: its `blocks.1.attn.hook_pattern`
is our "block1.attn.pattern"), so a name says where it is before what it is:

    name      := [stack "."] (in_block | outside)
    stack     := "enc" | "dec"                                  the translator's two stacks
    in_block  := "block" LAYER "." component ["." point ["." HEAD]]
    component := resid_pre | attn | cross | mlp | ln1 | ln_cross | ln2 | resid_post
    outside   := embed [".tokens"] | final | ln_f ["." point]

with the points each component has (POINTS). In forward order, a block's residual writes are
"block{i}.attn" (and "block{i}.cross" in a decoder) and "block{i}.mlp", under post-norm each followed
by "block{i}.ln1.change" (the change the norm after the add made to the stream). The hook points
(toyviz.models.hooks), shapes for one stack, B batch rows, T positions, C = d_model, nh heads of hs:

    "embed.tokens"             the token embeddings as the model scales them, before positions  (B, T, C)
    "embed"                    the stream's first write: tokens + positions                       (B, T, C)
    "block{i}.resid_pre"       the stream entering block i                                        (B, T, C)
    "block{i}.attn.q" / ".k" / ".v"  queries, keys, values (after RoPE)                          (B, nh, T, hs)
    "block{i}.attn.scores"     q·k / √hs before the mask                                         (B, nh, T, T)
    "block{i}.attn.pattern"    the attention probabilities                                       (B, nh, T, T)
    "block{i}.attn.heads"      each head's output before W_O (ablation edits here)              (B, nh, T, hs)
    "block{i}.attn"            the attention's write into the stream                              (B, T, C)
    "block{i}.cross…"          the same for a decoder block's cross-attention (keys: the source)
    "block{i}.mlp.hidden"      the feed-forward's hidden activations, what its down-projection reads (B, T, d_ff)
    "block{i}.mlp"             the feed-forward's write                                           (B, T, C)
    "block{i}.ln1.input"       what a norm reads; "block{i}.ln1" what it returns                  (B, T, C)
    "block{i}.resid_post"      the stream leaving block i (steering adds here)                    (B, T, C)
    "final"                    the stream the final norm reads                                    (B, T, C)

Three names are terms of attribution, not hook points: one head's write "block{i}.attn.heads.{h}",
W_O's bias "block{i}.attn.bias" and the final norm's β "ln_f.bias".

A Name is a str (a dict key, JSON, a figure's text as it is); its parts are its attributes and its
`label` is the one display form every figure, export and lesson shows: the name itself ("block2.mlp",
"block1.resid_post", "block0.ln1.change", "ln_f.bias"), except one head of attention, which shows as
the field writes it, "L1 H3" (as the Attention tab's grid and the page's own figures name heads).
`parse` reads every label back (the head's form included), and also opens the forms names had before
issue 42 ("attn.0.pattern", "mlp.1.hidden", "resid_post.1", "norm.attn.0"), which deep links, shipped
dictionaries, stored outputs and older code hold.
"""
from __future__ import annotations

import functools
import re

ENCODER, DECODER = "enc.", "dec."
NORMS = ("ln1", "ln_cross", "ln2")   # the norm before (pre-norm) or after (post-norm) attn, cross, mlp
ATTENTION_PARTS = ("q", "k", "v", "scores", "pattern", "heads")
NORM_POINTS = ("input", "change", "bias")
POINTS = {"resid_pre": (), "resid_post": (), "mlp": ("hidden",),
          "attn": ATTENTION_PARTS + ("bias",), "cross": ATTENTION_PARTS + ("bias",),
          **{norm: NORM_POINTS for norm in NORMS}}
OUTSIDE = {"embed": ("tokens",), "final": (), "ln_f": NORM_POINTS}
NORM_AFTER = {"attn": "ln1", "cross": "ln_cross", "mlp": "ln2"}   # under post-norm, the norm after a write
GRAMMAR = ("names read 'block<layer>.<component>[.<point>]' (e.g. 'block1.attn.pattern', 'block0.ln1', "
           "'block2.mlp.hidden') or 'embed', 'embed.tokens', 'final', 'ln_f', optionally after 'enc.' or 'dec.'")


class Name(str):
    """One point of a model, as a str in the grammar above, with its parts:
    stack ("", "enc." or "dec."), layer (None outside the blocks), component, point (None for the
    component's own output) and head (a head's index, for attribution)."""

    stack: str
    layer: int | None
    component: str
    point: str | None
    head: int | None

    def __new__(cls, text: str):
        return _parse_canonical(str(text))

    def __reduce__(self):                 # pickled and unpickled as its text (traces cross processes)
        return Name, (str(self),)

    def __setattr__(self, key, value):
        raise AttributeError("a Name is immutable: make another with toyviz.models.names")

    @property
    def label(self) -> str:
        """The display form a figure shows: the name itself, a head of attention as "L1 H3" ("dec.L1 H3"
        in the translator's decoder)."""
        if self.head is not None:
            return f"{self.stack}L{self.layer} H{self.head}"
        return str(self)


@functools.lru_cache(maxsize=4096)
def _made(stack: str, layer: int | None, component: str, point: str | None = None, head: int | None = None) -> Name:
    """The one place a Name's text is written from its parts (checked, then cached: the forward asks often)."""
    allowed = POINTS if layer is not None else OUTSIDE
    if component not in allowed:
        where = "inside a block" if layer is not None else "outside the blocks"
        raise ValueError(f"no component {component!r} {where}: {GRAMMAR}")
    if point is not None and point not in allowed[component]:
        raise ValueError(f"{component!r} has the points {allowed[component]}, not {point!r}")
    if head is not None and point != "heads":
        raise ValueError("only an attention's 'heads' point takes a head's index")
    text = "".join([stack, f"block{layer}." if layer is not None else "", component,
                    f".{point}" if point else "", f".{head}" if head is not None else ""])
    name = str.__new__(Name, text)
    for key, value in dict(stack=stack, layer=layer, component=component, point=point, head=head).items():
        object.__setattr__(name, key, value)
    return name


CANONICAL = re.compile(r"(?:(enc|dec)\.)?(?:block(\d+)\.)?([a-z_]+\d?)(?:\.([a-z]+))?(?:\.(\d+))?")
OLD = re.compile(r"(?:(enc|dec)\.)?(norm\.)?(attn|cross|mlp|resid_pre|resid_post)\.(\d+)(?:\.([a-z]+))?")
HEAD = re.compile(r"(?:(enc|dec)\.)?L(\d+) H(\d+)")        # a head's label


@functools.lru_cache(maxsize=4096)
def _parse_canonical(text: str) -> Name:
    match = CANONICAL.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a name: {GRAMMAR}")
    stack, layer, component, point, head = match.groups()
    try:
        return _made(f"{stack}." if stack else "", None if layer is None else int(layer), component, point,
                     None if head is None else int(head))
    except ValueError as why:
        raise ValueError(f"{text!r} is not a name: {why}") from None


def parse(text: str) -> Name:
    """A name's text → the Name, in this grammar, as a label ("L1 H3" → "block1.attn.heads.3") or in the
    forms before issue 42 ("attn.0.pattern" → "block0.attn.pattern", "norm.mlp.1" → "block1.ln2.change");
    ValueError, saying the grammar, for anything else."""
    if isinstance(text, Name):
        return text
    if (label := HEAD.fullmatch(text)) is not None:
        stack, layer, index = label.groups()
        return _made(f"{stack}." if stack else "", int(layer), "attn", "heads", int(index))
    old = OLD.fullmatch(text)
    if old is None:
        return Name(text)
    stack, norm, component, layer, point = old.groups()
    if norm and (point is not None or component not in NORM_AFTER):        # "norm.attn.0" alone
        raise ValueError(f"{text!r} is not a name: {GRAMMAR}")
    if norm:
        component, point = NORM_AFTER[component], "change"
    try:
        return _made(f"{stack}." if stack else "", int(layer), component, point)
    except ValueError as why:
        raise ValueError(f"{text!r} is not a name: {why}") from None


EMBED = _made("", None, "embed")          # the token embedding (plus positions): the stream's first write
TOKENS = _made("", None, "embed", "tokens")   # the scaled token embeddings, before positions are added
FINAL = _made("", None, "final")          # the stream the final norm reads (a hook point, not a write)
LN_F = _made("", None, "ln_f")            # the norm after the last block


def attn(layer: int) -> Name:
    """Self-attention of a block: its residual write, and the name its heads are recorded and ablated under."""
    return _made("", layer, "attn")


def cross(layer: int) -> Name:
    """Cross-attention of a decoder block."""
    return _made("", layer, "cross")


def mlp(layer: int) -> Name:
    """Feed-forward of a block."""
    return _made("", layer, "mlp")


def resid_pre(layer: int) -> Name:
    """The stream entering block `layer`."""
    return _made("", layer, "resid_pre")


def resid_post(layer: int) -> Name:
    """The stream leaving block `layer`."""
    return _made("", layer, "resid_post")


def norm(layer: int, which: str) -> Name:
    """A block's LayerNorm, `which` one of NORMS."""
    if which not in NORMS:
        raise ValueError(f"a block's norm is one of {NORMS}, not {which!r}")
    return _made("", layer, which)


@functools.lru_cache(maxsize=4096)
def part(name: str, point: str) -> Name:
    """A point of a component: part(attn(1), "pattern") → "block1.attn.pattern" (cached: a traced forward
    asks ~50 times)."""
    name = parse(name)
    return _made(name.stack, name.layer, name.component, point)


def heads(attention: str) -> Name:
    """Each head's output before W_O: where heads are ablated and patched."""
    return part(attention, "heads")


def head(layer: int, index: int) -> Name:
    """One head of block `layer`'s self-attention, as a term of attribution ("block1.attn.heads.3")."""
    return _made("", layer, "attn", "heads", index)


def bias(name: str) -> Name:
    """A component's bias as a term of attribution: W_O's ("block1.attn.bias"), the final norm's β ("ln_f.bias")."""
    return part(name, "bias")


def hidden(layer: int) -> Name:
    """A feed-forward's hidden activations (a sparse autoencoder's site)."""
    return part(mlp(layer), "hidden")


def norm_input(norm_name: str) -> Name:
    """What a LayerNorm reads ("block0.ln1.input", "ln_f.input")."""
    return part(norm_name, "input")


def post_norm(write: str) -> Name:
    """Under post-norm, the change the norm after `write` made to the stream (itself a write)."""
    write = parse(write)
    return _made(write.stack, write.layer, NORM_AFTER[write.component], "change")


def in_stack(stack: str, name: str) -> Name:
    """The name inside one of the translator's stacks: in_stack(DECODER, cross(1)) → "dec.block1.cross"."""
    name = parse(name)
    return _made(stack, name.layer, name.component, name.point, name.head)


def layer_of(name: str) -> int:
    """The layer a name belongs to: "block2.attn", "block2.ln2.change", "enc.block2.ln1" → 2; "embed" → -1
    (it comes before layer 0)."""
    name = parse(name)
    if name.component == "embed":
        return -1
    if name.layer is None:
        raise ValueError(f"{name!r} belongs to no layer")
    return name.layer


def of_stack(entries: dict, stack: str) -> dict:
    """The entries of one stack, its prefix dropped ("" keeps every entry)."""
    if not stack:
        return entries
    return {in_stack("", k): v for k, v in entries.items() if parse(k).stack == stack}
