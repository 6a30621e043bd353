from toyviz.app.figures.mask import first_difference, leak_figure, prediction_shift


def test_first_difference():
    assert first_difference([1, 2, 3], [1, 2, 4]) == 2
    assert first_difference([1, 2], [1, 2, 3]) == 2


def test_leak_is_zero_with_the_mask_and_visible_without(tiny_gpt):
    base, changed = "the slings and arrows of fortune", "the slings and arrows of question"
    masked = [tiny_gpt.trace(t) for t in (base, changed)]
    opened = [tiny_gpt.trace(t, causal=False) for t in (base, changed)]
    upto = first_difference(masked[0].token_ids, masked[1].token_ids)
    assert upto > 2
    assert prediction_shift(*masked, upto).max() <= 1e-6
    assert prediction_shift(*opened, upto).max() > 1e-6
    fig = leak_figure(*masked, *opened)
    assert [t.name for t in fig.data] == ["with the causal mask", "without the mask"]
    assert len(fig.data[0].x) == upto
