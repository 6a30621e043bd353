"""Head labels on constructed attention patterns whose answer is known."""
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from toyviz.heads import HeadLabel, induction_mask, label_heads, pattern_scores

CAUSAL = torch.ones(32, 32).tril().bool()


def one_hot_rows(targets: list[int], T: int) -> torch.Tensor:
    """[T, T] attention that puts all weight of row i on key targets[i]."""
    a = torch.zeros(T, T)
    a[torch.arange(T), torch.tensor(targets)] = 1.0
    return a


def uniform(T: int) -> torch.Tensor:
    return CAUSAL[:T, :T].float() / CAUSAL[:T, :T].sum(-1, keepdim=True)


def test_known_patterns_get_their_labels(tiny_gpt):
    tr = tiny_gpt.trace("To be, or not to be, that is the question")
    T = len(tr.tokens)
    patterns = {
        "previous-token": one_hot_rows([0] + list(range(T - 1)), T),
        "first-token": one_hot_rows([0] * T, T),
        "self": one_hot_rows(list(range(T)), T),
        "broad/mixed": uniform(T),
    }
    attention = tr.attention.clone()
    for head, a in enumerate(patterns.values()):
        attention[1, head] = a
    labels = label_heads(replace(tr, attention=attention))
    assert len(labels) == tr.n_layer * tr.n_head and all(isinstance(h, HeadLabel) for h in labels)
    found = {h.head: h for h in labels if h.layer == 1}
    for head, name in enumerate(patterns):
        assert found[head].label == name, found[head]
        assert found[head].description
    assert found[0].score == pytest.approx(1.0) and found[1].score == pytest.approx(1.0)
    assert found[3].score == pytest.approx(1.0)                 # uniform rows: normalised entropy 1


def test_induction_head_on_a_repeated_sequence():
    seq = [11, 12, 13, 14, 15]
    ids = [0] + seq + seq                                      # BOS, then the sequence twice
    T = len(ids)
    targets = [0] * 6 + [j + 1 for j in range(1, 6)]           # second half: the token after the first occurrence
    fake = SimpleNamespace(attention=one_hot_rows(targets, T)[None, None], token_ids=ids, causal=True)
    (label,) = label_heads(fake)
    assert label.label == "induction" and label.score == pytest.approx(1.0)
    assert label.scores["first-token"] < label.score


def test_induction_is_only_measured_when_tokens_repeat():
    assert not induction_mask([0, 1, 2, 3]).any()
    mask = induction_mask([0, 5, 6, 5, 5])
    assert np.argwhere(mask).tolist() == [[3, 2], [4, 2], [4, 4]]          # the token after each earlier 5
    scores = pattern_scores(uniform(4), [0, 1, 2, 3])
    assert "induction" not in scores and set(scores) == {"previous-token", "first-token", "self", "entropy"}


def test_threshold_and_unmasked_entropy():
    T = 6
    weak = 0.1 * one_hot_rows([0] + list(range(T - 1)), T) + 0.9 * uniform(T)   # previous-token ≈ 0.36
    fake = SimpleNamespace(attention=weak[None, None], token_ids=list(range(T)), causal=True)
    assert label_heads(fake, threshold=0.4)[0].label == "broad/mixed"
    assert label_heads(fake, threshold=0.3)[0].label == "previous-token"
    full = torch.full((T, T), 1 / T)
    assert pattern_scores(full, list(range(T)), causal=False)["entropy"] == pytest.approx(1.0)
