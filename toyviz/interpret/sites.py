"""Where a sparse autoencoder reads a (pre-norm) GPT, and how its features go back in: two of the
forward's hook points (toyviz.models.names),

    "block<i>.resid_post"    the residual stream leaving block i         (B, T, d_model)
    "block<i>.mlp.hidden"    block i's feed-forward hidden activations  (B, T, d_ff), what its down-projection reads

`read` keeps a site's activations (stopping the pass there); `splice` runs the whole pass with them
replaced (by an autoencoder's reconstruction, or zeros), and is the model's own forward when the
replacement is the identity; `stream_vector` turns a direction at a site into the vector that adding
it amounts to in the stream leaving block i, which steering adds (toyviz.models.hooks.steering).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from toyviz.models import names
from toyviz.models.names import Name


@dataclass(frozen=True)
class Site:
    name: Name      # names.resid_post(i) or names.hidden(i)

    @property
    def layer(self) -> int:
        return self.name.layer

    @property
    def in_stream(self) -> bool:
        """The stream leaving the block (else the MLP's hidden activations)."""
        return self.name.component == "resid_post"

    def width(self, config) -> int:
        return config.d_model if self.in_stream else config.d_ff


def parse(text: str, config) -> Site:
    """"block1.resid_post" / "block1.mlp.hidden" (or their older forms "resid_post.1" / "mlp.1.hidden", which
    shipped dictionaries store) → Site, checked against a GPTConfig."""
    name = names.parse(text)
    if name.layer is None or name not in (names.resid_post(name.layer), names.hidden(name.layer)):
        raise ValueError(f"a site is 'block<layer>.resid_post' or 'block<layer>.mlp.hidden', not {text!r}")
    if not 0 <= name.layer < config.n_layer:
        raise ValueError(f"no layer {name.layer} in a {config.n_layer}-layer model")
    if config.norm != "pre":
        raise ValueError("sites are defined for pre-norm GPTs (a post-norm block normalises the stream itself)")
    return Site(name)


class _Reached(Exception):
    """Raised by `read`'s hook: the blocks after the site need not run."""

    def __init__(self, value: torch.Tensor):
        self.value = value


@torch.no_grad()
def read(model, idx: torch.Tensor, site: Site) -> torch.Tensor:
    """idx (B, T) → the site's activations (B, T, width), running only the blocks up to it."""
    def stop(a):
        raise _Reached(a)
    try:
        model(idx, hooks={site.name: stop})
    except _Reached as reached:
        return reached.value
    raise AssertionError(f"the forward pass never reached {site.name}")


@torch.no_grad()
def splice(model, idx: torch.Tensor, site: Site, replace: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
    """idx (B, T) → logits (B, T, V) with the site's activations a replaced by replace(a)."""
    return model(idx, hooks={site.name: replace})[0]


@torch.no_grad()
def stream_vector(model, site: Site, direction: torch.Tensor) -> torch.Tensor:
    """A direction at the site (width,) → the vector (d_model,) that adding it amounts to in the stream
    leaving block site.layer: itself for a site in the stream; for the MLP's hidden activations its image
    through the down-projection, W_down · direction without the bias, since down(h + d) = down(h) + W_down d."""
    if site.in_stream:
        return direction
    return model.blocks[site.layer].mlp.down.weight @ direction
