"""Where a sparse autoencoder reads a (pre-norm) GPT, and how its features go back in.

    "resid.<i>"         the residual stream after block i          (B, T, d_model)
    "mlp.<i>.hidden"    block i's feed-forward hidden activations  (B, T, d_ff), what its down-projection reads

(Not "mlp.<i>" alone: in a trace that names the feed-forward's write into the stream.)

`read` runs the blocks up to a site; `splice` runs the whole pass with a site's activations
replaced (by an autoencoder's reconstruction, or zeros) and is the model's own forward when the
replacement is the identity; `stream_vector` turns a direction at a site into the vector that
adding it amounts to in the stream after block i, which the forward's `steer` adds. Both passes
are composed from the model's own modules, as explain.py does, so no hooks touch a shared model.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

import torch

PATTERN = re.compile(r"(resid)\.(\d+)$|(mlp)\.(\d+)\.hidden$")


@dataclass(frozen=True)
class Site:
    kind: str       # "resid" or "mlp"
    layer: int

    @property
    def name(self) -> str:
        return f"resid.{self.layer}" if self.kind == "resid" else f"mlp.{self.layer}.hidden"

    def width(self, config) -> int:
        return config.d_model if self.kind == "resid" else config.d_ff


def parse(name: str, config) -> Site:
    """"resid.1" / "mlp.1.hidden" → Site, checked against a GPTConfig."""
    match = PATTERN.match(name)
    if match is None:
        raise ValueError(f"a site is 'resid.<layer>' or 'mlp.<layer>.hidden', not {name!r}")
    kind, layer = (match[1], match[2]) if match[1] else (match[3], match[4])
    if not 0 <= int(layer) < config.n_layer:
        raise ValueError(f"no layer {layer} in a {config.n_layer}-layer model")
    if config.norm != "pre":
        raise ValueError("sites are defined for pre-norm GPTs (a post-norm block normalises the stream itself)")
    return Site(kind, int(layer))


def _run(model, idx: torch.Tensor, site: Site, replace: Callable | None):
    """idx (B, T) → the site's activations if `replace` is None, else the logits (B, T, V) of the
    pass with the site's activations a replaced by replace(a)."""
    causal = model.config.causal
    x, _, rope = model.embed(idx)                                        # (B, T, C)
    for i, block in enumerate(model.blocks):
        if i == site.layer and site.kind == "mlp":                       # Block.forward (pre-norm), opened up
            x = x + block.drop(block.attn(block.ln1(x), causal=causal, rope=rope, layer=i))
            hidden = block.mlp.hidden(block.ln2(x))                      # (B, T, d_ff)
            if replace is None:
                return hidden
            x = x + block.drop(block.mlp.drop(block.mlp.down(replace(hidden))))
            continue
        x = block(x, index=i, causal=causal, rope=rope)
        if i == site.layer:                                              # a "resid" site
            if replace is None:
                return x
            x = replace(x)
    return model.head(model.ln_f(x))


@torch.no_grad()
def read(model, idx: torch.Tensor, site: Site) -> torch.Tensor:
    """idx (B, T) → the site's activations (B, T, width), running only the blocks up to it."""
    return _run(model, idx, site, None)


@torch.no_grad()
def splice(model, idx: torch.Tensor, site: Site, replace: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """idx (B, T) → logits (B, T, V) with the site's activations a replaced by replace(a)."""
    return _run(model, idx, site, replace)


@torch.no_grad()
def stream_vector(model, site: Site, direction: torch.Tensor) -> torch.Tensor:
    """A direction at the site (width,) → the vector (d_model,) that adding it amounts to in the stream
    after block site.layer: itself for "resid"; for "mlp" its image through the down-projection,
    W_down · direction without the bias, since down(h + d) = down(h) + W_down d."""
    if site.kind == "resid":
        return direction
    return model.blocks[site.layer].mlp.down.weight @ direction
