"""The attribution graph of one prediction: nodes, and the direct effect of each node on each later one.

Nodes, in circuit-tracer's order: the active transcoder features (layer, position, feature), one error
node per (layer, position), one token node per position, and the target logit. Rows of the adjacency
matrix are targets, columns sources: A[t, s] is the direct effect of s on t in the frozen model
(toyviz.interpret.circuits.frozen), i.e. how much of t's value s contributes along paths that pass
through no other node (only through frozen attention, layer norms and the residual stream):

    A[t, s] = ∂ value_t / ∂ write_s · write_s

where write_s is what s adds to the stream (a feature: its activation × its decoder row at its layer's
MLP output; an error: its vector there; a token: its embedding). Since the frozen model is affine,
value_t = Σ_s A[t, s] + bias_t, where bias_t is t's value with every source zeroed (the transcoders',
attention's and norms' biases); `bias` is computed that way, independently of the edges, so the identity
is a check (tests/test_circuits.py).

One backward pass per target row, `batch` rows at once (torch's batched gradients): a feature row injects
its encoder row at the MLP input it reads, the logit row its unembedding direction; the gradient arrives
at the token embeddings and at every layer's MLP write, and is read off against each source's write.
A batch of rows reading layer l at positions ≤ q runs the frozen model on the prompt's first q + 1
positions only, and back through layers ≤ l only: what comes later cannot reach them.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from toyviz.errors import UserError
from toyviz.interpret.circuits import frozen
from toyviz.interpret.transcoders import TranscoderSet


@dataclass
class Graph:
    prompt: frozen.Prompt
    layer: torch.Tensor        # (n,) each feature node's layer,
    position: torch.Tensor     # (n,) position,
    feature: torch.Tensor      # (n,) index in its transcoder
    adjacency: torch.Tensor    # (N, N) rows targets, columns sources; N = n + L·T + T + 1
    values: torch.Tensor       # (N,) features: activation; errors, tokens: the norm of their vector; logit
    bias: torch.Tensor         # (N,) a target's value with every source zeroed (0 for errors and tokens)

    @property
    def n_features(self) -> int:
        return len(self.layer)

    @property
    def n_layers(self) -> int:
        return len(self.prompt.leaves.errors)

    @property
    def n_positions(self) -> int:
        return len(self.prompt.ids)

    def error_index(self, layer: int, position: int) -> int:
        return self.n_features + layer * self.n_positions + position

    def token_index(self, position: int) -> int:
        return self.n_features + self.n_layers * self.n_positions + position

    @property
    def logit_index(self) -> int:
        return len(self.adjacency) - 1

    def kinds(self) -> torch.Tensor:
        """(N,) 0 feature, 1 error, 2 token, 3 logit."""
        counts = [self.n_features, self.n_layers * self.n_positions, self.n_positions, 1]
        return torch.repeat_interleave(torch.arange(4), torch.tensor(counts))


# the N × N matrices a graph holds at once while it is pruned (the adjacency, its normalised copy, the kept part,
# the edges' influence, their masks): what `attribute` checks before it allocates any
MATRICES_AT_ONCE = 6
MAX_GRAPH_BYTES = 1 << 30


def attribute(model, transcoders: TranscoderSet, ids: list[int], target: int, batch: int = 256,
              max_features: int | None = None) -> Graph:
    """The full (unpruned) graph of the GPT predicting `target` after `ids`, with at most `max_features` feature
    nodes (the rest folded into the errors: frozen.strongest). A graph whose matrices would pass MAX_GRAPH_BYTES is
    refused before they are made (a UserError saying so)."""
    prompt = frozen.record(model, transcoders, ids, target, max_features)
    leaves = prompt.leaves
    layer, position, slot = prompt.active()
    feature = prompt.slots[layer, position, slot]
    n, (L, T, _) = len(layer), leaves.errors.shape
    N = n + L * T + T + 1
    needed = MATRICES_AT_ONCE * N * N * leaves.tokens.element_size()
    if needed > MAX_GRAPH_BYTES:
        raise UserError(f"this graph would have {N:,} nodes and need {needed / 2**20:,.0f} MB, past the "
                        f"{MAX_GRAPH_BYTES / 2**20:,.0f} MB a graph may take: shorten the prompt")
    with torch.no_grad():
        W_dec = torch.stack([t.W_dec for t in transcoders])                   # (L, F, d)
        W_enc = torch.stack([t.W_enc for t in transcoders])                   # (L, d, F)
        decoders = W_dec[torch.arange(L)[:, None, None], prompt.slots]        # (L, T, k, d) each slot's row
        writes = frozen.writes(transcoders, prompt, leaves)
    like = {"dtype": leaves.tokens.dtype, "device": leaves.tokens.device}
    adjacency = torch.zeros(N, N, **like)
    # rows grouped by the layer they read (the logit reads after the last) and batched in position order:
    # a backward pass from layer l at positions ≤ q runs only through the layers below l and the first q + 1
    # positions (causal attention), on the prompt cut there
    for target_layer in range(L + 1):
        rows = (layer == target_layer).nonzero(as_tuple=True)[0] if target_layer < L else torch.tensor([N - 1])
        for chunk in rows.split(batch):                     # node order: by layer, then position
            length = int(position[chunk].max()) + 1 if target_layer < L else T
            part = prompt.prefix(length)
            tokens = part.leaves.tokens.clone().requires_grad_()
            mlp_writes = writes[:, :length].clone().requires_grad_()
            reads, logit, _ = frozen.forward(model, part, tokens, mlp_writes)
            output = reads[target_layer] if target_layer < L else logit
            injected = torch.zeros(len(chunk), *output.shape, **like)
            if target_layer < L:                             # ∂ pre-activation / ∂ MLP input: the encoder row
                injected[torch.arange(len(chunk)), position[chunk]] = W_enc[target_layer, :, feature[chunk]].T
            else:
                injected[:] = 1.0
            g_tokens, g_writes = torch.autograd.grad(output, [tokens, mlp_writes], injected, is_grads_batched=True,
                                                     allow_unused=True)          # layer 0 reads before any write
            g_writes = torch.zeros(len(chunk), *mlp_writes.shape, **like) if g_writes is None else g_writes
            with torch.no_grad():                            # (B, t, d), (B, L, t, d) → each source's share
                to_features = torch.einsum("bltd,ltkd->bltk", g_writes, decoders[:, :length]) * part.leaves.acts
                sources = (position < length).nonzero(as_tuple=True)[0]
                adjacency[chunk[:, None], sources] = to_features[:, layer[sources], position[sources], slot[sources]]
                errors = n + (torch.arange(L)[:, None] * T + torch.arange(length)).flatten()
                adjacency[chunk[:, None], errors] = (g_writes * part.leaves.errors).sum(-1).flatten(1)
                adjacency[chunk, n + L * T: n + L * T + length] = (g_tokens * part.leaves.tokens).sum(-1)
    with torch.no_grad():
        bias_values = frozen.run(model, transcoders, prompt, leaves.zeroed())
        real_logit = prompt.logits[-1, target] - prompt.logits[-1].mean()
        values = torch.cat([leaves.acts[layer, position, slot], leaves.errors.norm(dim=-1).flatten(),
                            leaves.tokens.norm(dim=-1), real_logit[None]])
        bias = torch.cat([bias_values.features, torch.zeros(L * T + T, **like), bias_values.logit[None]])
    return Graph(prompt, layer, position, feature, adjacency, values, bias)
