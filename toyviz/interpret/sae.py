"""A TopK sparse autoencoder: a layer's activations as a sparse sum of learned directions.

    f = TopK((x − b_dec) W_enc + b_enc)        the k largest pre-activations kept (negative ones dropped)
    x̂ = Σ_i f_i d_i + b_dec                    each active feature adds its activation × its direction d_i

TopK (Gao et al. 2024, "Scaling and evaluating sparse autoencoders") rather than ReLU + L1: the
number of active features per token (L0) is at most k, set directly instead of tuned through an
L1 weight, and no L1 penalty shrinks the activations it keeps. Features that stop firing ("dead")
are revived by the paper's auxiliary loss: the dead features' own top-k_aux try to reconstruct
what the live ones left over, so the gradient reaches them again.

The decoder's directions (rows of W_dec here) have unit length, so a feature's activation is its
size along its direction and steering by α adds a vector of length α. After each optimiser step
they are scaled back to length 1; before it, the gradient's component along each direction is
removed, as only a length change lives there and the renormalisation would undo it anyway.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file, save_file

AUX_WEIGHT = 1 / 32           # the paper's weight of the dead-feature loss


@dataclass
class SAEConfig:
    d_in: int                 # width of the activations it reads
    width: int                # number of features
    k: int                    # features active per token
    site: str = ""            # where in the GPT the activations come from: "block1.resid_post" (interpret.sites)


class SparseAutoencoder(nn.Module):
    def __init__(self, config: SAEConfig):
        super().__init__()
        self.config = c = config
        self.W_dec = nn.Parameter(torch.randn(c.width, c.d_in))          # (F, d) one direction per feature
        self.normalise_decoder()
        self.W_enc = nn.Parameter(self.W_dec.detach().T.clone())         # (d, F) starts as the decoder's transpose
        self.b_enc = nn.Parameter(torch.zeros(c.width))                  # (F,)
        self.b_dec = nn.Parameter(torch.zeros(c.d_in))                   # (d,) set to the data's mean before training

    def pre_activations(self, x):  # (N, d) -> (N, F)
        return (x - self.b_dec) @ self.W_enc + self.b_enc

    @staticmethod
    def top(pre, k: int):  # (N, F) -> activations (N, k) ≥ 0, feature ids (N, k): the k kept per token
        values, indices = pre.topk(k, dim=-1)
        return values.relu(), indices

    def encode(self, x):  # (N, d) -> activations (N, k), feature ids (N, k)
        return self.top(self.pre_activations(x), self.config.k)

    def decode(self, values, indices):  # (N, k), (N, k) -> (N, d), reading only the k directions used
        return F.embedding_bag(indices, self.W_dec, per_sample_weights=values, mode="sum") + self.b_dec

    def dense(self, values, indices):  # (N, k), (N, k) -> (N, F), every feature's activation
        return torch.zeros(len(values), self.config.width, device=values.device).scatter(-1, indices, values)

    def forward(self, x, dead: torch.Tensor | None = None):
        """x (N, d) → reconstruction (N, d), the features kept (activations, ids: (N, k) each), and the
        training loss: the squared error over x's variance (1 − loss is the share of this batch's
        variance explained), plus the auxiliary loss of the features marked in `dead` (F,) bool."""
        pre = self.pre_activations(x)
        values, indices = self.top(pre, self.config.k)
        x_hat = self.decode(values, indices)
        variance = (x - x.mean(0)).pow(2).sum(-1).mean()
        loss = (x - x_hat).pow(2).sum(-1).mean() / variance
        n_dead = int(dead.sum()) if dead is not None else 0
        if n_dead:
            leftover = (x - x_hat).detach()                               # (N, d) what the live features missed
            k_aux = min(n_dead, self.config.d_in // 2)
            guess = self.decode(*self.top(pre.masked_fill(~dead, float("-inf")), k_aux)) - self.b_dec
            loss = loss + AUX_WEIGHT * (leftover - guess).pow(2).sum(-1).mean() / leftover.pow(2).sum(-1).mean()
        return x_hat, values, indices, loss

    @torch.no_grad()
    def normalise_decoder(self):
        self.W_dec /= self.W_dec.norm(dim=-1, keepdim=True)

    @torch.no_grad()
    def remove_parallel_gradient(self):
        g, W = self.W_dec.grad, self.W_dec
        g -= (g * W).sum(-1, keepdim=True) * W

    def save(self, folder: Path, dtype=torch.float32) -> None:
        """sae.safetensors (weights in `dtype`) + sae.json (the config)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        save_file({k: v.detach().to("cpu", dtype).contiguous() for k, v in self.state_dict().items()},
                  folder / "sae.safetensors")
        (folder / "sae.json").write_text(json.dumps(asdict(self.config), indent=2))

    @classmethod
    def load(cls, folder: Path, device: str = "cpu") -> "SparseAutoencoder":
        folder = Path(folder)
        sae = cls(SAEConfig(**json.loads((folder / "sae.json").read_text())))
        sae.load_state_dict({k: v.float() for k, v in load_file(folder / "sae.safetensors").items()}, strict=True)
        return sae.to(device).eval()
