"""The forward pass, its hooks and every feature built on them still compute what they computed before
the forward was rewritten around one hook mechanism (tests/golden.py recorded it from the old code).

Tolerances: values within 2e-5 (an attention kernel may add in another order), generated tokens and
texts exactly. The outputs were recorded from the shipped checkpoints (their sha256 is in the file): other
weights fail the test, as a missing file does.
"""
import math

import torch

from golden import GOLDEN, checkpoint_hashes, outputs


def recorded() -> dict:
    assert GOLDEN.is_file(), f"no golden outputs at {GOLDEN}: record them with `python -m tests.golden`"
    return torch.load(GOLDEN, weights_only=False)


def test_the_golden_outputs_were_recorded_from_the_shipped_checkpoints():
    """A retrained checkpoint ships with its outputs recorded again from code you trust (`python -m tests.golden`)
    in the same commit, so the comparison below always checks every feature against the weights shipped."""
    changed = [kind for kind, sha in checkpoint_hashes().items() if recorded()["checkpoints"].get(kind) != sha]
    assert not changed, (f"checkpoints/{', '.join(changed)} changed after the golden outputs were recorded: "
                         "record them again with `python -m tests.golden` from code you trust")


def close(a, b) -> bool:
    if isinstance(b, dict):                                   # a tensor's fingerprint
        return (a["shape"] == b["shape"] and abs(a["sum"] - b["sum"]) <= 2e-5 * b["abs_sum"] + 1e-4
                and math.isclose(a["abs_sum"], b["abs_sum"], rel_tol=2e-5, abs_tol=1e-4)
                and torch.allclose(a["sample"], b["sample"], rtol=1e-4, atol=2e-5, equal_nan=True))
    if isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-4, abs_tol=2e-5) or (math.isnan(a) and math.isnan(b))
    return a == b


def test_every_feature_computes_what_it_computed_before_the_rewrite():
    golden, now = recorded()["outputs"], outputs()
    assert now.keys() == golden.keys()
    differ = [key for key in golden if not close(now[key], golden[key])]
    assert not differ, f"{len(differ)} of {len(golden)} outputs changed: {differ[:20]}"
