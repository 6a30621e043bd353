"""The forward pass, its hooks and every feature built on them still compute what they computed before
the forward was rewritten around one hook mechanism (tests/golden.py recorded it from the old code).

Tolerances: values within 2e-5 (an attention kernel may add in another order), generated tokens and
texts exactly.
"""
import math

import pytest
import torch

from golden import GOLDEN, checkpoint_hashes, outputs


@pytest.fixture(scope="module")
def golden():
    if not GOLDEN.is_file():
        pytest.skip("no golden outputs recorded")
    saved = torch.load(GOLDEN, weights_only=False)
    if saved["checkpoints"] != checkpoint_hashes():
        pytest.skip("a checkpoint was retrained after the golden outputs were recorded: "
                    "run `python -m tests.golden` with code you trust")
    return saved["outputs"]


def close(a, b) -> bool:
    if isinstance(b, dict):                                   # a tensor's fingerprint
        return (a["shape"] == b["shape"] and abs(a["sum"] - b["sum"]) <= 2e-5 * b["abs_sum"] + 1e-4
                and math.isclose(a["abs_sum"], b["abs_sum"], rel_tol=2e-5, abs_tol=1e-4)
                and torch.allclose(a["sample"], b["sample"], rtol=1e-4, atol=2e-5, equal_nan=True))
    if isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-4, abs_tol=2e-5) or (math.isnan(a) and math.isnan(b))
    return a == b


def test_every_feature_computes_what_it_computed_before_the_rewrite(golden):
    now = outputs()
    assert now.keys() == golden.keys()
    differ = [key for key in golden if not close(now[key], golden[key])]
    assert not differ, f"{len(differ)} of {len(golden)} outputs changed: {differ[:20]}"
