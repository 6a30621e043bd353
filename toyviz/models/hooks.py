"""One way to edit and record a forward pass: a mapping from hook-point names to functions.

Both models pass every named activation (toyviz.models.names lists the points) through `at`:

    x = at(hooks, names.resid_pre(2), x)         # the point "block2.resid_pre"

and go on with whatever the hook returned (None: the value unchanged). The mapping is an argument of
each call, never state on the module, so one shared model serves many threads, each with its own
edits. An empty or absent mapping leaves the forward exactly as it is without hooks. Everything
that reads or changes a pass is built on this: recording a trace (`Record`), ablating heads,
steering, activation patching, integrated gradients, a sparse autoencoder's read and splice, and the
translator's source saliency.

A mapping may be any object with `get(name)` and `in`: `Record` answers every point, `scoped` adds a
stack's prefix ("enc.", "dec."), `chain` runs several mappings' hooks one after another. A caller's
plain dict is read through `named` where the models take it, so its keys may be any form
toyviz.models.names parses (the older "attn.1.pattern" too), and a malformed one is refused.
"""
from __future__ import annotations

from typing import Callable, Mapping

import torch

from toyviz.models import names

Hook = Callable[[torch.Tensor], "torch.Tensor | None"]
Hooks = Mapping[str, Hook]


def at(hooks: Hooks | None, name: str, x: torch.Tensor) -> torch.Tensor:
    """x, or what the hook at `name` made of it."""
    if not hooks:
        return x
    hook = hooks.get(name)
    if hook is None:
        return x
    out = hook(x)
    return x if out is None else out


def named(hooks: Hooks | None) -> Hooks | None:
    """A caller's {name: hook} keyed by Names (old forms read, a malformed name refused); the mappings
    below ask by Name already and pass as they are."""
    if isinstance(hooks, dict):
        return {names.parse(name): hook for name, hook in hooks.items()}
    return hooks


def wants(hooks: Hooks | None, *points: str) -> bool:
    """Whether any of these points has a hook (the attention then computes its pattern explicitly)."""
    return bool(hooks) and any(p in hooks for p in points)


class Record:
    """A hook at every point that keeps what passed (detached) and changes nothing: after a forward,
    `values` maps each point the pass went through to its tensor. `passing`: kinds of point (a Name's
    point, "scores", "hidden") it leaves alone, so the pass need not make or keep them (a trace computes
    the scores from q and k when read, and reads no hidden activations)."""

    def __init__(self, passing: tuple[str, ...] = ()):
        self.values: dict[str, torch.Tensor] = {}
        self.passing = passing

    def __contains__(self, name: str) -> bool:
        return names.parse(name).point not in self.passing

    def __bool__(self) -> bool:
        return True

    def get(self, name: str) -> Hook | None:
        if name not in self:
            return None

        def keep(x: torch.Tensor):
            self.values[name] = x.detach() if x.requires_grad else x     # (no_grad: nothing to detach from)
        return keep


class scoped:
    """The hooks of one stack of the translator: point `name` is `prefix + name` in `hooks`."""

    def __init__(self, hooks: Hooks | None, prefix: str):
        self.hooks, self.prefix = named(hooks), prefix

    def __contains__(self, name: str) -> bool:
        return names.in_stack(self.prefix, name) in self.hooks

    def __bool__(self) -> bool:
        return bool(self.hooks)

    def get(self, name: str) -> Hook | None:
        return self.hooks.get(names.in_stack(self.prefix, name))


def scope(hooks: Hooks | None, prefix: str) -> Hooks | None:
    return scoped(hooks, prefix) if hooks else None


class chain:
    """Several mappings as one: at each point their hooks run in order, each on the last one's result
    (an ablation first, then a Record: the trace keeps what the model used)."""

    def __init__(self, *mappings: Hooks | None):
        self.mappings = [named(m) for m in mappings if m]

    def __contains__(self, name: str) -> bool:
        return any(name in m for m in self.mappings)

    def __bool__(self) -> bool:
        return bool(self.mappings)

    def get(self, name: str) -> Hook | None:
        hooks = [h for h in (m.get(name) for m in self.mappings) if h is not None]
        if len(hooks) < 2:               # none, or one to call as it is (a trace without ablation: the Record's)
            return hooks[0] if hooks else None

        def run(x):
            for hook in hooks:
                out = hook(x)
                x = x if out is None else out
            return x
        return run


# ---------------------------------------------------------------- the edits toyviz makes ------

ABLATIONS = ("zero", "mean")


def ablate_heads(out: torch.Tensor, heads: dict[int, str]) -> torch.Tensor:
    """out (B, nh, T, hs) with some heads switched off: {head: "zero"} replaces that head's output
    by zeros, {head: "mean"} by its mean over this pass's positions (so with a KV cache, where a
    step sees one position, "mean" changes nothing)."""
    out = out.clone()                                # autograd keeps the attention's output: edit a copy
    for head, kind in heads.items():
        if kind not in ABLATIONS:
            raise ValueError(f"ablation must be one of {ABLATIONS}, got {kind!r}")
        out[:, head] = 0.0 if kind == "zero" else out[:, head].mean(dim=1, keepdim=True)
    return out


def ablation(ablate: dict[str, dict[int, str]] | None) -> dict[str, Hook]:
    """{"block1.attn": {0: "zero", 3: "mean"}} → hooks that switch those heads off."""
    for heads in (ablate or {}).values():
        for kind in heads.values():
            if kind not in ABLATIONS:
                raise ValueError(f"ablation must be one of {ABLATIONS}, got {kind!r}")
    return {names.heads(attn): (lambda out, heads=heads: ablate_heads(out, heads))
            for attn, heads in (ablate or {}).items() if heads}


def steering(steer: dict[int, torch.Tensor] | None) -> dict[str, Hook]:
    """{layer: vector (C,) or (B, 1, C)} → hooks that add it to the stream leaving that block, at every
    position (a feature's direction: toyviz.interpret.dictionary)."""
    return {names.resid_post(layer): (lambda x, v=vector: x + v) for layer, vector in (steer or {}).items()}


def replace(name: str, kind: str, value: torch.Tensor | None = None) -> dict[str, Hook]:
    """A hook at `name` that zeroes its tensor ("zero"), replaces it by its mean over positions, dim -2
    ("mean"), or by `value` ("value")."""
    if kind == "zero":
        return {name: torch.zeros_like}
    if kind == "mean":
        return {name: lambda t: t.mean(dim=-2, keepdim=True).expand_as(t)}
    return {name: lambda t: value.expand_as(t)}
