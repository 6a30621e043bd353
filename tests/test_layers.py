import math

import pytest
import torch

from toyviz.models import names
from toyviz.models.hooks import Record, ablation, chain
from toyviz.models.layers import MultiHeadAttention, Pass, apply_rope, rope_angles, rotation, sinusoidal_encoding


@pytest.mark.parametrize("pos,i", [(0, 0), (1, 0), (7, 3), (50, 10), (127, 31)])
def test_sinusoidal_matches_formula(pos, i):
    d = 64
    pe = sinusoidal_encoding(128, d)
    angle = pos / 10000 ** (2 * i / d)
    assert pe[pos, 2 * i].item() == pytest.approx(math.sin(angle), abs=1e-5)      # sin on even dims
    assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(angle), abs=1e-5)  # cos on odd dims


def test_buggy_encoding_variants_match_their_formulas():
    d, pos, i = 16, 5, 3
    no_scaling = sinusoidal_encoding(8, d, "no_d_model_scaling")
    assert no_scaling[pos, 2 * i].item() == pytest.approx(math.sin(pos * math.exp(-2 * i * math.log(10000))), abs=1e-6)
    overwritten = sinusoidal_encoding(8, d, "cos_overwrites_sin")
    assert overwritten[pos, 2 * i].item() == pytest.approx(math.cos(pos / 10000 ** (2 * i / d)), abs=1e-6)
    assert torch.all(overwritten[:, 1::2] == 0)


def _attention(causal, key_keep=None, T=6, ablate=None):
    """→ what a Record kept of batch row 0 ({"pattern": (nh, T, T), "heads": …}), the explicit path's
    output (a Record wants the pattern) and the fused path's (only the ablation's hook on the heads)."""
    torch.manual_seed(0)
    attn = MultiHeadAttention(32, 4).eval()
    x = torch.randn(2, T, 32)
    record, edits = Record(), ablation({names.attn(0): ablate} if ablate else None)
    traced = attn(x, Pass(chain(edits, record), causal, key_keep), names.attn(0))
    fused = attn(x, Pass(edits, causal, key_keep), names.attn(0))
    return {name.point: value[0] for name, value in record.values.items()}, traced, fused


def test_causal_rows_sum_to_one_and_never_look_ahead():
    recorded, traced, fused = _attention(causal=True)
    probs = recorded["pattern"]                                   # (nh, T, T) of batch row 0
    assert torch.allclose(probs.sum(-1), torch.ones(probs.shape[:-1]), atol=1e-6)
    above = torch.triu(torch.ones(6, 6, dtype=torch.bool), diagonal=1)
    assert torch.all(probs[:, above] == 0)                      # exactly zero, not merely small


def test_explicit_attention_equals_fused():
    for causal in (False, True):
        _, traced, fused = _attention(causal)
        assert torch.allclose(traced, fused, atol=1e-5)


def test_ablated_heads_are_replaced_alike_on_both_paths():
    recorded, traced, fused = _attention(causal=True, ablate={1: "zero", 2: "mean"})
    assert torch.allclose(traced, fused, atol=1e-5)
    assert torch.all(recorded["heads"][1] == 0)                                       # what the model used
    assert torch.allclose(recorded["heads"][2], recorded["heads"][2].mean(0).expand(6, -1), atol=1e-6)
    _, intact, _ = _attention(causal=True)
    assert not torch.allclose(traced, intact, atol=1e-4)


def test_padded_keys_get_zero_weight():
    keep = torch.tensor([[True] * 4 + [False] * 2, [True] * 6])
    recorded, traced, fused = _attention(causal=False, key_keep=keep)
    assert torch.all(recorded["pattern"][:, :, 4:] == 0)
    assert torch.allclose(traced, fused, atol=1e-5)


def test_rope_rotation_preserves_norm_and_encodes_relative_position():
    d = 8
    q, k = torch.randn(d), torch.randn(d)
    rope = rotation(rope_angles(torch.arange(20), d))
    rotated_q, rotated_k = apply_rope(q.expand(20, d), rope), apply_rope(k.expand(20, d), rope)
    assert torch.allclose(rotated_q.norm(dim=-1), q.norm().expand(20), atol=1e-5)
    # q at position m and k at n depend on m - n only
    assert torch.dot(rotated_q[5], rotated_k[2]).item() == pytest.approx(torch.dot(rotated_q[13], rotated_k[10]).item(), abs=1e-4)
