"""The GPT made linear for one prompt: the local replacement model an attribution graph is read from.

On the prompt, the real GPT runs once with a `Record` (toyviz.models.hooks). From then on, in the frozen
model:

- every attention pattern is the one recorded (constant: a change upstream moves what a head copies,
  never where it looks);
- every LayerNorm divides by the standard deviation recorded at its position (constant), so it is
  x ↦ (x − mean x) / σ · w + b, affine;
- every MLP's write is its transcoder's features, each its activation × its decoder row, plus the
  transcoder's bias, plus the error: what the transcoder missed at that layer and position (the MLP's real
  output minus the transcoder's prediction). Feature activations are inputs here, not recomputed from the
  stream: that is what makes an edge a *direct* effect.

What is left is affine in the graph's source nodes, the `Leaves`: the token embeddings (T, d), the active
features' activations (L, T, k: each layer's k kept slots per position, 0 where none fired), the errors
(L, T, d). Its outputs, `Values`, are the graph's target nodes: each feature's pre-activation (its encoder
row · the MLP input it reads, + its encoder bias; for a feature that fired, its activation) and the target's
logit minus the mean logit (softmax ignores a shift, as circuit-tracer's target does). At the recorded
leaves it reproduces the GPT's logits (tests/test_circuits.py checks it to float precision).

Position 0 (BOS, the same vector in every prompt; transcoders never trained on it) has no features: its MLP
output is all bias + error. Everything runs through the model's own forward with one hook mapping.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from toyviz.interpret.transcoders import TranscoderSet, mlp_input, mlp_output
from toyviz.models import names
from toyviz.models.hooks import Record


@dataclass(frozen=True)
class Leaves:
    tokens: torch.Tensor      # (T, d) the token embeddings as the model scales them
    acts: torch.Tensor        # (L, T, k) each kept feature slot's activation (0: not active)
    errors: torch.Tensor      # (L, T, d) MLP output − transcoder prediction

    def zeroed(self, part: str | None = None, index=None) -> "Leaves":
        """These leaves with one source zeroed (part "tokens", "acts" or "errors", index into it), or all of
        them (part None): the frozen model is affine, so what is left then is the bias."""
        if part is None:
            return Leaves(*(torch.zeros_like(t) for t in (self.tokens, self.acts, self.errors)))
        changed = getattr(self, part).clone()
        changed[index] = 0
        return replace(self, **{part: changed})


@dataclass(frozen=True)
class Values:
    features: torch.Tensor    # (n,) each active feature's pre-activation, in node order
    logit: torch.Tensor       # () the target's logit minus the mean logit, at the last position
    logits: torch.Tensor      # (T, V) every logit


@dataclass
class Prompt:
    """What the real GPT computed on the prompt: all the frozen model keeps of it."""
    ids: list[int]
    target: int
    patterns: dict[str, torch.Tensor]     # "block{i}.attn.pattern" → (1, nh, T, T)
    scales: dict[str, torch.Tensor]       # a norm's name → (1, T, 1) the σ it divided by
    slots: torch.Tensor                   # (L, T, k) which feature each kept slot is
    leaves: Leaves                        # the sources at their recorded values
    logits: torch.Tensor                  # (T, V) the real GPT's logits
    folded: int = 0                       # active features folded into the errors (record's max_features)

    def prefix(self, length: int) -> "Prompt":
        """The same prompt cut to its first `length` positions: what the model computes there does not
        depend on later positions (causal attention), so its frozen model is this one's first rows."""
        cut = lambda t: t[..., :length, :length]
        return Prompt(self.ids[:length], self.target, {k: cut(v) for k, v in self.patterns.items()},
                      {k: v[:, :length] for k, v in self.scales.items()}, self.slots[:, :length],
                      Leaves(self.leaves.tokens[:length], self.leaves.acts[:, :length], self.leaves.errors[:, :length]),
                      self.logits[:length], self.folded)

    def active(self) -> tuple[torch.Tensor, ...]:
        """The feature nodes, in node order (layer, then position, then slot): their layer, position,
        slot (n,) each."""
        return (self.leaves.acts > 0).nonzero(as_tuple=True)


def norms(model) -> dict[str, torch.nn.LayerNorm]:
    """Every LayerNorm of a pre-norm GPT by its hook name."""
    found = {names.LN_F: model.ln_f}
    for i, block in enumerate(model.blocks):
        found[names.norm(i, "ln1")], found[names.norm(i, "ln2")] = block.ln1, block.ln2
    return found


@torch.no_grad()
def record(model, transcoders: TranscoderSet, ids: list[int], target: int, max_features: int | None = None) -> Prompt:
    """One recorded pass of the real GPT over ids → the frozen model's constants and its leaves. With
    `max_features`, only that many features stay nodes (those writing the most: `strongest`); what the others
    wrote joins the errors, so the frozen model still reproduces the GPT exactly."""
    if len(transcoders) != model.config.n_layer:
        raise ValueError("the frozen model needs a transcoder for every layer")
    rec = Record()
    logits = model(torch.tensor([ids], device=model.tok_emb.weight.device), hooks=rec)[0][0]
    seen = rec.values
    patterns = {names.part(names.attn(i), "pattern"): seen[names.part(names.attn(i), "pattern")]
                for i in range(model.config.n_layer)}
    scales = {name: (spread(seen[names.norm_input(name)], norm) + norm.eps).sqrt()
              for name, norm in norms(model).items()}
    encoded = [t.encode(seen[mlp_input(t.transcoder_config.layer)][0]) for t in transcoders]   # (T, k) each
    acts, slots = torch.stack([values for values, _ in encoded]), torch.stack([slots for _, slots in encoded])
    acts[:, 0] = 0                                                             # BOS has no features
    active = int((acts > 0).sum())
    if max_features is not None:
        acts = strongest(transcoders, acts, slots, max_features)
    errors = torch.stack([seen[mlp_output(t.transcoder_config.layer)][0] - t.decode(acts[i], slots[i])
                          for i, t in enumerate(transcoders)])
    leaves = Leaves(seen[names.TOKENS][0], acts, errors)
    return Prompt(list(ids), target, patterns, scales, slots, leaves, logits, active - int((acts > 0).sum()))


def strongest(transcoders: TranscoderSet, acts: torch.Tensor, slots: torch.Tensor, keep: int) -> torch.Tensor:
    """acts (L, T, k) with all but the `keep` active features writing the most (activation × the norm of
    the decoder row) set to 0. circuit-tracer caps its feature nodes too (`max_feature_nodes`), ranking them
    by influence, which needs the graph first; a feature's write is what it adds to the stream, known now."""
    if int((acts > 0).sum()) <= keep:
        return acts
    row_norms = torch.stack([t.W_dec.norm(dim=-1) for t in transcoders])          # (L, F)
    size = acts * row_norms[torch.arange(len(acts))[:, None, None], slots]       # (L, T, k)
    kept = torch.zeros(size.numel(), dtype=torch.bool, device=acts.device)
    kept[size.flatten().topk(keep).indices] = True
    return torch.where(kept.view_as(acts), acts, torch.zeros_like(acts))


def writes(transcoders: TranscoderSet, prompt: Prompt, leaves: Leaves) -> torch.Tensor:
    """The MLPs' writes (L, T, d) the frozen model adds to the stream: features + bias + error."""
    return torch.stack([t.decode(leaves.acts[i], prompt.slots[i]) + leaves.errors[i]
                        for i, t in enumerate(transcoders)])


def forward(model, prompt: Prompt, tokens: torch.Tensor, mlp_writes: torch.Tensor):
    """The frozen model with these token embeddings (T, d) and MLP writes (L, T, d) (either may require
    grad) → what each layer's MLP reads {layer: (T, d)}, the demeaned target logit () and the logits (T, V)."""
    head = model.head.weight                                                   # (V, d)
    direction = (head[prompt.target] - head.mean(0)).detach()
    stash, normed = {}, {}
    hooks = {names.TOKENS: lambda _: tokens[None]}
    for name, pattern in prompt.patterns.items():
        hooks[name] = lambda _, pattern=pattern: pattern
    for name, norm in norms(model).items():
        def frozen(_, name=name, norm=norm):
            normed[name] = frozen_norm(stash.pop(name), prompt.scales[name], norm)
            return normed[name]
        hooks[names.norm_input(name)] = lambda x, name=name: stash.__setitem__(name, x)
        hooks[name] = frozen
    for layer in range(len(mlp_writes)):
        hooks[mlp_output(layer)] = lambda _, layer=layer: mlp_writes[layer][None]
    logits = model(torch.tensor([prompt.ids], device=head.device), hooks=hooks)[0][0]
    reads = {layer: normed[mlp_input(layer)][0] for layer in range(len(mlp_writes))}
    # the logit from the final norm's output, not from `logits`: its gradient then skips the (T, V) head
    return reads, normed[names.LN_F][0, -1] @ direction, logits


@torch.no_grad()
def run(model, transcoders: TranscoderSet, prompt: Prompt, leaves: Leaves) -> Values:
    """The frozen model at these leaves: every target node's value."""
    reads, logit, logits = forward(model, prompt, leaves.tokens, writes(transcoders, prompt, leaves))
    layer, position, slot = prompt.active()
    feature = prompt.slots[layer, position, slot]
    W_enc = torch.stack([t.W_enc for t in transcoders])                        # (L, d, F)
    b_enc = torch.stack([t.b_enc for t in transcoders])                        # (L, F)
    read = torch.stack([reads[i] for i in range(len(transcoders))])            # (L, T, d)
    pre = (read[layer, position] * W_enc[layer, :, feature]).sum(-1) + b_enc[layer, feature]
    return Values(pre, logit, logits)


def spread(x: torch.Tensor, norm) -> torch.Tensor:
    """(…, 1) what a norm divides by, before eps: the variance (LayerNorm) or the mean square (RMSNorm)."""
    if isinstance(norm, torch.nn.RMSNorm):
        return x.pow(2).mean(-1, keepdim=True)
    return x.var(-1, unbiased=False, keepdim=True)


def frozen_norm(x: torch.Tensor, scale: torch.Tensor, norm: torch.nn.LayerNorm | torch.nn.RMSNorm) -> torch.Tensor:
    """LayerNorm (or RMSNorm, which centres nothing and has no β) with its σ fixed at the recorded one: affine in x."""
    centred = x if isinstance(norm, torch.nn.RMSNorm) else x - x.mean(-1, keepdim=True)
    out = centred / scale * norm.weight
    bias = getattr(norm, "bias", None)
    return out if bias is None else out + bias
