"""Transcoders: each block's feed-forward replaced by a sparse sum of learned features.

A transcoder of layer i reads what the MLP reads (the output of the block's second LayerNorm,
"block{i}.ln2") and predicts what the MLP writes into the stream ("block{i}.mlp"):

    f = TopK(x W_enc + b_enc)                  the k largest pre-activations kept (negative ones dropped)
    ŷ = Σ_i f_i d_i + b_dec                    each active feature writes its activation × its direction d_i

It is a sparse autoencoder (toyviz.interpret.sae) whose target is another tensor than its input, so it
keeps that class's TopK, its sparse decoder, its unit-length decoder rows and its dead-feature auxiliary
loss; only the pre-activation (no input centring: input and output live in different spaces) and the loss
(against the MLP's output) differ. A transcoder's features are what attribution graphs are made of
(toyviz.interpret.circuits): unlike an MLP's neurons they are sparse, and unlike an SAE on the stream they
replace a computation, so the path from one feature to a later one is linear once attention is frozen.

`splicing` is the hook mapping (toyviz.models.hooks) that swaps the MLPs of some layers for their
transcoders in a forward pass; `TranscoderSet` saves and loads all layers' transcoders as one folder.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from toyviz.interpret.sae import AUX_WEIGHT, SAEConfig, SparseAutoencoder
from toyviz.models import names

FOLDER = "transcoders"        # inside a GPT's checkpoint folder
DASHBOARDS = "dashboards"     # inside FOLDER: layer<i>/, each feature's dashboard (toyviz.interpret.dashboards)


def mlp_input(layer: int) -> str:
    """The hook point a transcoder reads: the block's second norm's output, what its MLP reads."""
    return names.norm(layer, "ln2")


def mlp_output(layer: int) -> str:
    """The hook point a transcoder predicts (and a splice replaces): the MLP's write into the stream."""
    return names.mlp(layer)


@dataclass
class TranscoderConfig:
    d_model: int              # width of the MLP's input and output
    width: int                # number of features
    k: int                    # features active per token
    layer: int                # the block whose MLP it replaces


class Transcoder(SparseAutoencoder):
    def __init__(self, config: TranscoderConfig):
        super().__init__(SAEConfig(d_in=config.d_model, width=config.width, k=config.k,
                                   site=mlp_output(config.layer)))
        self.transcoder_config = config

    def pre_activations(self, x):  # (N, d) the MLP's input -> (N, F)
        return x @ self.W_enc + self.b_enc

    def forward(self, x, y=None, dead: torch.Tensor | None = None):
        """x (N, d) the MLP's input, y (N, d) its output → prediction (N, d), the features kept
        (activations, ids: (N, k) each) and the training loss: the squared error over y's variance
        (1 − loss: the share of this batch's variance explained), plus the auxiliary loss of the features
        marked in `dead` (F,) bool, which try to predict what the live ones missed."""
        pre = self.pre_activations(x)
        values, indices = self.top(pre, self.config.k)
        y_hat = self.decode(values, indices)
        if y is None:
            return y_hat, values, indices, None
        loss = (y - y_hat).pow(2).sum(-1).mean() / (y - y.mean(0)).pow(2).sum(-1).mean()
        n_dead = int(dead.sum()) if dead is not None else 0
        if n_dead:
            leftover = (y - y_hat).detach()                               # (N, d)
            k_aux = min(n_dead, self.config.d_in // 2)
            guess = self.decode(*self.top(pre.masked_fill(~dead, float("-inf")), k_aux)) - self.b_dec
            loss = loss + AUX_WEIGHT * (leftover - guess).pow(2).sum(-1).mean() / leftover.pow(2).sum(-1).mean()
        return y_hat, values, indices, loss

    def predict(self, x):  # (..., d) -> (..., d): the MLP's output as the transcoder has it
        return self.decode(*self.encode(x.flatten(0, -2))).view_as(x)


class TranscoderSet:
    """One transcoder per layer, saved as <folder>/transcoders.json (their configs) and layer<i>.safetensors."""

    def __init__(self, transcoders: list[Transcoder]):
        self.layers = list(transcoders)

    def __getitem__(self, layer: int) -> Transcoder:
        return self.layers[layer]

    def __len__(self) -> int:
        return len(self.layers)

    def save(self, folder: Path, dtype=torch.float32) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for t in self.layers:
            save_file({k: v.detach().to("cpu", dtype).contiguous() for k, v in t.state_dict().items()},
                      folder / f"layer{t.transcoder_config.layer}.safetensors")
        configs = [asdict(t.transcoder_config) for t in self.layers]
        (folder / "transcoders.json").write_text(json.dumps(configs, indent=2))

    @classmethod
    def load(cls, folder: Path, device: str = "cpu") -> "TranscoderSet":
        folder = Path(folder)
        layers = []
        for config in json.loads((folder / "transcoders.json").read_text()):
            t = Transcoder(TranscoderConfig(**config))
            weights = load_file(folder / f"layer{config['layer']}.safetensors")
            t.load_state_dict({k: v.float() for k, v in weights.items()}, strict=True)
            layers.append(t.to(device).eval())
        return cls(layers)


def splicing(transcoders: TranscoderSet | list[Transcoder], keep_first: bool = False) -> dict:
    """Hooks that replace each given layer's MLP output by its transcoder's prediction from the MLP's
    input in the same pass; keep_first leaves position 0 (a window's BOS, the same vector everywhere)
    as the MLP wrote it."""
    hooks, seen = {}, {}
    for t in transcoders:
        layer = t.transcoder_config.layer

        def stash(x, layer=layer):
            seen[layer] = x

        def replace(out, t=t, layer=layer):                              # out (B, T, C)
            predicted = t.predict(seen.pop(layer))
            return torch.cat([out[:, :1], predicted[:, 1:]], dim=1) if keep_first else predicted
        hooks[mlp_input(layer)], hooks[mlp_output(layer)] = stash, replace
    return hooks
