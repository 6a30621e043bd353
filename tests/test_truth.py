"""Issue #32, every panel tells the truth, without a browser: a number outside its range is never silently
replaced by another — it is the nearest in range and the note says so (issue 51's one rule, for typed values and
deep links alike: tests/test_inputs.py) — and what a panel claims holds for the shipped models. The page itself is
checked in tests/test_browser_truth.py."""
import pytest

import toyviz
from toyviz.errors import UserError
from toyviz.app.views.attention import attention_view
from toyviz.app.views.features import features_view
from toyviz.app.views.layernorm import layernorm_view
from toyviz.app.views.residual import residual_view
from toyviz.app.views.sampling import generate_view
from toyviz.app.views.text import EXAMPLES
from toyviz.i18n import t
from toyviz.app.views.why import why_view
from toyviz.app.explorer import Explorer

PROMPT = "To be, or not to be, that is the question"


@pytest.fixture(scope="module")
def shipped() -> Explorer:
    return Explorer(toyviz.load("gpt", device="cpu"), None)


@pytest.mark.parametrize("feature", [999999, -5, 2.5])
def test_a_feature_number_outside_the_dictionary_is_said_to_be_the_nearest(shipped, feature):
    last = len(shipped.caches.features()) - 1
    note, _, about, *_ = features_view(shipped, PROMPT, feature, "")
    shown = {999999: last, -5: -1, 2.5: 3}[feature]
    assert note.startswith(f"feature {feature} is ") and note.endswith(f": showing {shown}. "), note
    assert (f"Feature #{shown}:" in about) == (shown >= 0)
    assert f"Feature #{last}:" in features_view(shipped, PROMPT, last, "")[2]     # the range's ends still work


@pytest.mark.parametrize("token", [999999, -3])
def test_a_token_id_past_the_vocabulary_is_explained_as_the_nearest_and_said_so(shipped, token):
    shown = shipped.gpt.config.vocab_size - 1 if token > 0 else 0
    note = why_view(shipped, PROMPT, token)[0]
    assert f"token id {token} is " in note and f": showing {shown}. " in note, note


@pytest.mark.parametrize("typed", ["999999", "-3"])
def test_digits_typed_in_the_token_box_are_text_not_an_id(shipped, typed):     # issue 44: said in tokens
    with pytest.raises(UserError, match=f"“{typed}” is not a token of the GPT's vocabulary: the model reads it as"):
        why_view(shipped, PROMPT, typed)


@pytest.mark.parametrize("feature, alpha", [(999999, 5.0), (-5, 5.0), (-5, 0.0), (999999, 0.0)])
def test_a_steering_feature_outside_the_dictionary_is_said_before_a_token_is_drawn(shipped, feature, alpha):
    last = len(shipped.caches.features()) - 1
    note = next(generate_view(shipped, PROMPT, 0.8, 50, 0.95, 4, 0, False, feature, alpha))[0]
    if feature < 0:                 # off, whatever the strength
        assert "steering feature -5 is below the lowest, -1 (off): using -1. " in note and "Steered" not in note
    elif alpha:
        assert f"steering feature 999999 is above the highest, {last}: using {last}. " in note
        assert f"Steered: feature #{last} " in note
    else:                           # strength 0: no steering, so no feature to settle
        assert "steering" not in note and "Steered" not in note


def induction_heads(explorer) -> set[tuple[int, int]]:
    """The heads the probe set (recorded by training) calls induction."""
    from toyviz.interpret.heads import general_pattern
    cfg, profile = explorer.gpt.config, explorer.caches.head_profile()
    return {(l, h) for l in range(cfg.n_layer) for h in range(cfg.n_head)
            if general_pattern(profile, l, h)[0] == "induction"}


def test_the_attention_tabs_induction_example_labels_the_induction_heads_induction(shipped):
    heads = induction_heads(shipped)
    assert heads, "the shipped GPT's probe profile names no induction head"
    label, prompt = EXAMPLES["attention"][0]
    assert "induction" in label
    table = attention_view(shipped, prompt)[3]
    for layer, head in heads:
        row = next(line for line in table.splitlines() if line.startswith(f"| {layer}.{head} |"))
        assert row.startswith(f"| {layer}.{head} | **induction** |") and "Unlike" not in row, row


def test_on_repeated_random_tokens_the_per_prompt_labeller_agrees_with_the_probes(shipped):
    """The probes' own kind of prompt, built afresh (other tokens, other length, shifted by a filler):
    the per-prompt labeller finds the same induction heads."""
    import numpy as np
    from toyviz.interpret.heads import label_heads
    gpt = shipped.gpt
    rng = np.random.default_rng(32)
    for period, filler in ((20, 0), (30, 5)):
        r = rng.integers(1, gpt.config.vocab_size, size=period).tolist()
        ids = [gpt.bos] + r + rng.integers(1, gpt.config.vocab_size, size=filler).tolist() + r
        found = {(l.layer, l.head) for l in label_heads(gpt.model.trace(ids)) if l.label == "induction"}
        assert induction_heads(shipped) <= found, (period, filler, found)


def test_without_a_repeat_the_table_says_the_induction_heads_have_nothing_to_find(shipped):
    table = attention_view(shipped, "Hello there")[3]
    for layer, head in induction_heads(shipped):
        row = next(line for line in table.splitlines() if line.startswith(f"| {layer}.{head} |"))
        assert "repeats no token" in row, row


def test_the_residual_tab_and_why_this_token_split_the_same_quantity_alike(shipped):
    """One attribution, one baseline: the Residual tab's bars for the top next token are the "Why this
    token?" components' attribution (logit − mean logit), and each chart names that quantity."""
    for prompt in ("To be, or not to", "I thank you, my good"):
        residual = residual_view(shipped, prompt, -1)[4]
        answer = shipped.caches.why(prompt, "")[0]
        c = answer.components
        assert list(residual.data[0].x) == c.names
        assert list(residual.data[0].y) == pytest.approx(c.attribution.tolist(), abs=1e-4)
        assert "logit − mean logit" in residual.layout.title.text
        why = why_view(shipped, prompt, "")[2]
        assert "logit − mean logit" in why.layout.annotations[0].text


def test_the_layer_norm_text_says_what_its_chart_shows(shipped):
    """The intro said the output spread does not grow beside a chart whose output std rises to ~3 at
    ln_f; now the note gives the chart's own numbers, and the intro claims nothing they contradict."""
    from toyviz.app.figures.layernorm import norm_statistics
    tr, _ = shipped.caches.trace(PROMPT)
    stats = norm_statistics(tr)
    inputs, outputs = stats["input std"].mean(-1), stats["output std"].mean(-1)
    note = layernorm_view(shipped, PROMPT)[0]
    assert f"input std is {inputs[0]:.2f} at `block0.ln1` and {inputs[-1]:.2f} at `ln_f`" in note
    assert f"{outputs[:-1].min():.2f}–{outputs[:-1].max():.2f}" in note and f"{outputs[-1]:.2f} at `ln_f`" in note
    curves = layernorm_view(shipped, PROMPT)[2]
    drawn = next(t for t in curves.data if "output std" in t.name)
    assert float(drawn.y[-1]) == pytest.approx(outputs[-1], abs=0.01)          # the number the chart draws
    assert outputs[-1] > 1.5 and "the output does not" not in t("explain.layernorm", "en")
    assert "output std is not 1" in t("explain.layernorm", "en")
