"""Golden outputs of every feature that edits or records a forward pass, on the shipped checkpoints.

Recorded once before the forward pass was rewritten around one hook mechanism (issue #30), so the
rewrite is checked against what the code computed before it, not against itself:

    python -m tests.golden          # writes tests/golden/shipped.pt (only when the code is trusted)

`tests/test_golden.py` recomputes everything here and compares. The file records the sha256 of the
checkpoints it was made from: when a checkpoint is retrained, the test fails and says so (record again).
"""
from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Mapping
from pathlib import Path

import torch

import toyviz
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.models import names
from toyviz.models.names import Name
from toyviz.models.trace import PerHead

GOLDEN = Path(__file__).resolve().parent / "golden" / "shipped.pt"
PROMPT = "To be, or not to be, that is the question"
REPEATED = "ROMEO: O Romeo, Romeo! wherefore art thou Romeo? ROMEO: O"
SENTENCE = "In the beginning God created the heavens and the earth."


def checkpoint_hashes() -> dict[str, str]:
    return {kind: hashlib.sha256((CHECKPOINTS / kind / "model.safetensors").read_bytes()).hexdigest()
            for kind in ("gpt", "translator")}


def as_recorded(x):
    """A name, or a figure's label of one, as the outputs were recorded, before issue 42 gave names their
    grammar and issue 54 showed them on figures ("attn.0", "block0.ln1", "resid_pre.0", "norm.attn.0",
    "L0 attn bias", "ln_f β"); anything else as it is."""
    if not isinstance(x, str):
        return x
    try:
        x = names.parse(x)
    except ValueError:
        return x
    if x.head is not None:
        return x.label
    if x.point == "bias":
        return f"L{x.layer} {x.component} bias" if x.layer is not None else f"{x.component} β"
    if x.component in names.NORMS:
        write = next(w for w, n in names.NORM_AFTER.items() if n == x.component)
        return f"{x.stack}norm.{write}.{x.layer}" if x.point == "change" else str(x)
    if x.layer is None:
        return str(x)
    return ".".join([f"{x.stack}{x.component}", str(x.layer)] + ([x.point] if x.point else []))


def flatten(obj, prefix: str = "") -> dict:
    """Every tensor, number and string in nested dataclasses, mappings, lists and tuples → {path: value}."""
    if isinstance(obj, PerHead):                   # a trace's per-head tensors, under their old field names
        return flatten({"scores": obj["scores"], "q": obj["q"], "k": obj["k"], "v": obj["v"],
                        "head_out": obj["heads"], "head_writes": obj["writes"]}, prefix[: -len("per_head.")])
    if dataclasses.is_dataclass(obj):
        obj = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, Mapping):                   # dicts, and a trace's NormStats
        return {k: v for key, value in obj.items() for k, v in flatten(value, f"{prefix}{as_recorded(key)}.").items()}
    if isinstance(obj, (list, tuple)) and not all(isinstance(x, (int, float, str)) for x in obj):
        return {k: v for i, value in enumerate(obj) for k, v in flatten(value, f"{prefix}{i}.").items()}
    if isinstance(obj, list):
        obj = [as_recorded(x) for x in obj]
    if isinstance(obj, torch.Tensor):
        obj = fingerprint(obj)
    return {prefix.rstrip("."): obj}


def fingerprint(t: torch.Tensor, size: int = 128) -> dict:
    """A tensor, kept small: its shape, its sum and absolute sum in float64, and `size` values spread
    evenly over it (a change anywhere moves a sum; a change of pattern moves the samples)."""
    flat = t.detach().double().cpu().flatten()
    step = max(1, len(flat) // size)
    return {"shape": tuple(t.shape), "sum": float(flat.sum()), "abs_sum": float(flat.abs().sum()),
            "sample": flat[::step][:size].float().clone()}


def outputs() -> dict:
    """What every feature computes on fixed inputs, flattened."""
    from toyviz.interpret import explain

    gpt, translator = toyviz.load("gpt", device="cpu"), toyviz.load("translator", device="cpu")
    features = toyviz.load_features(gpt)
    ids = torch.tensor([gpt.encode(PROMPT)[0]])
    steer = features.steer(features.encode(PROMPT).strongest(1)[0], 6.0)
    translation = translator.translate(SENTENCE, beam=4)
    pair = explain.PAIRS[0]
    return flatten({
        "forward": gpt.model(ids)[0],
        "trace": gpt.trace(PROMPT),
        "trace_repeated": gpt.trace(REPEATED),
        "trace_not_causal": gpt.trace(PROMPT, causal=False),
        "trace_ablated_zero": gpt.trace(PROMPT, ablate=[(0, 1), (3, 2)]),
        "trace_ablated_mean": gpt.trace(PROMPT, ablate=[(1, 0), (2, 3)], ablation="mean"),
        "generate": [s.token for s in gpt.generate(PROMPT, 24, temperature=0.8, seed=3)],
        "generate_uncached": [s.token for s in gpt.generate(PROMPT, 24, temperature=0.8, seed=3, use_cache=False)],
        "generate_steered": [s.token for s in gpt.generate(PROMPT, 24, temperature=0.8, seed=3, steer=steer)],
        "generate_steered_together": [s.token for s in gpt.generate(PROMPT, 24, temperature=0.8, seed=3,
                                                                    steer=steer, together=True)],
        "components": explain.components(gpt, PROMPT),
        "saliency": explain.saliency(gpt, PROMPT),
        "patching": explain.patching(gpt, pair.clean, pair.corrupted, pair.clean_answer, pair.corrupted_answer),
        "patch_run_head": explain.patch_run(gpt, pair.clean, pair.corrupted, explain.heads_site(2), head=1),
        "features": features.encode(PROMPT),
        "steer": steer,
        "translation": translation.trace,
        "translation_text": translation.text,
        "translation_greedy": translator.translate_text(SENTENCE),
        "source_saliency": explain.source_saliency(translator, translation),
    })


def main():
    GOLDEN.parent.mkdir(exist_ok=True)
    torch.save({"checkpoints": checkpoint_hashes(), "outputs": outputs()}, GOLDEN)
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
