"""Head labels on constructed attention patterns whose answer is known."""
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from toyviz.interpret.heads import HeadLabel, induction_mask, label_heads, pattern_scores

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


# ---------------------------------------------------------------- probes over a distribution ----

from toyviz.interpret.heads import PROBE_PATTERNS, general_label, make_probe_set, probe_scores, repeat_induction_score


def test_a_perfect_induction_head_scores_1_on_a_repeated_sequence():
    period = 10
    T = 1 + 2 * period
    # query q in the second copy looks at q - period + 1: the token after the earlier occurrence
    targets = [0] * (1 + period) + [q - period + 1 for q in range(1 + period, T)]
    assert repeat_induction_score(one_hot_rows(targets, T), period) == pytest.approx(1.0)
    assert repeat_induction_score(one_hot_rows([max(0, q - 1) for q in range(T)], T), period) == 0.0


def test_a_uniform_head_scores_about_one_over_the_visible_length():
    period = 20
    T = 1 + 2 * period
    score = repeat_induction_score(torch.ones(T, T).tril() / torch.arange(1, T + 1)[:, None], period)
    expected = np.mean([1 / (q + 1) for q in range(1 + period, 1 + 2 * period)])
    assert score == pytest.approx(expected) and score < 0.05


def test_probe_set_is_fixed_and_shaped_as_described():
    held_out = list(range(5, 600))
    a, b = (make_probe_set(383, 384, held_out, n=3, period=12, text_len=40) for _ in range(2))
    assert a == b
    assert all(len(r) == 25 and r[0] == 383 and r[1:13] == r[13:] and 383 not in r[1:] for r in a.repeats)
    assert all(len(t) == 40 and t[0] == 383 and t[1:] == held_out[t[1] - 5: t[1] - 5 + 39] for t in a.texts)


def test_probe_scores_give_every_pattern_for_every_head(tiny_gpt):
    held_out = tiny_gpt.tokenizer.encode("To be, or not to be, that is the question. " * 10)
    probes = make_probe_set(tiny_gpt.bos, tiny_gpt.config.vocab_size, held_out, n=2, period=8, text_len=32)
    scores = probe_scores(tiny_gpt.model, probes)
    L, H = tiny_gpt.config.n_layer, tiny_gpt.config.n_head
    assert set(scores) == set(PROBE_PATTERNS) | {f"{p}_share" for p in PROBE_PATTERNS}
    for values in scores.values():
        assert np.asarray(values).shape == (L, H) and 0 <= np.min(values) and np.max(values) <= 1


def test_a_general_label_names_the_strongest_pattern_over_the_probes():
    profile = {"induction": [[0.1, 0.75]], "previous-token": [[0.62, 0.1]], "first-token": [[0.3, 0.1]],
               "self": [[0.0, 0.0]], "induction_share": [[0.0, 0.875]]}
    assert general_label(profile, 0, 1) == "**induction** 0.75, on 88% of probes"
    assert general_label(profile, 0, 0) == "**previous-token** 0.62"            # no share recorded for it
    profile["previous-token"][0][0] = 0.2
    assert general_label(profile, 0, 0) == "broad/mixed (strongest: first-token 0.30)"


def test_a_repeat_shifted_by_a_filler_still_finds_the_tokens_after_the_earlier_copy():
    """BOS + r + three other tokens + r: a perfect induction head (each token of the second copy looks at
    the token after its first occurrence) is labelled induction wherever the second copy starts, and a
    previous-token head on the same tokens is labelled previous-token, not induction."""
    r = [21, 22, 23, 24, 25, 26]
    for filler in ([], [7], [7, 8, 9]):
        ids = [0] + r + filler + r
        start = 1 + len(r) + len(filler)                                  # the second copy's first position
        targets = [max(q - 1, 0) for q in range(start)] + [q - start + 2 for q in range(start, len(ids))]
        head = SimpleNamespace(attention=one_hot_rows(targets, len(ids))[None, None], token_ids=ids, causal=True)
        (label,) = label_heads(head)
        assert label.label == "induction", (filler, label)
        previous = SimpleNamespace(attention=one_hot_rows([max(q - 1, 0) for q in range(len(ids))], len(ids))[None, None],
                                   token_ids=ids, causal=True)
        assert label_heads(previous)[0].label == "previous-token"


def test_the_table_says_why_a_label_here_differs_from_the_one_over_the_probes():
    from toyviz.interpret.heads import HeadLabel, why_labels_differ
    profile = {"induction": [[0.99, 0.1]], "previous-token": [[0.1, 0.2]], "first-token": [[0.2, 0.3]],
               "self": [[0.0, 0.0]]}
    no_repeat = HeadLabel(0, 0, "first-token", 0.9, "", {"first-token": 0.9, "previous-token": 0.05})
    assert "repeats no token" in why_labels_differ(no_repeat, profile)
    weak = HeadLabel(0, 0, "first-token", 0.5, "", {"first-token": 0.5, "induction": 0.28})
    assert "induction pattern takes 28% of its attention here, 99% over the probe set" in why_labels_differ(weak, profile)
    assert why_labels_differ(HeadLabel(0, 0, "induction", 0.8, "", {"induction": 0.8}), profile) == ""
    assert why_labels_differ(HeadLabel(0, 1, "previous-token", 0.6, "", {}), profile) == ""   # none over the probes
