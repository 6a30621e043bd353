"""Issue #32, every panel tells the truth, without a browser: a number outside its range is refused with
a message naming the range (never silently replaced by another), and what a panel claims holds for
the shipped models. The page itself is checked in tests/test_browser_truth.py."""
import pytest

import toyviz
from toyviz.api import PromptError
from toyviz.app import views
from toyviz.app.explorer import Explorer

PROMPT = "To be, or not to be, that is the question"


@pytest.fixture(scope="module")
def shipped() -> Explorer:
    return Explorer(toyviz.load("gpt", device="cpu"), None)


@pytest.mark.parametrize("feature", [999999, -5, 2.5])
def test_a_feature_number_outside_the_dictionary_is_refused_with_its_range(shipped, feature):
    last = len(shipped.features()) - 1
    with pytest.raises(PromptError, match=rf"from -1 to {last} \(-1 = the prompt's strongest\), not {feature}"):
        views.features_view(shipped, PROMPT, feature, "")
    assert f"Feature #{last}:" in views.features_view(shipped, PROMPT, last, "")[2]     # the range's ends still work


@pytest.mark.parametrize("token", [999999, "999999", -3, "-3"])
def test_a_token_id_past_the_vocabulary_is_refused_not_explained_as_another(shipped, token):
    with pytest.raises(PromptError, match=f"token id must be a whole number from 0 to {shipped.gpt.config.vocab_size - 1}"):
        views.why_view(shipped, PROMPT, token)


@pytest.mark.parametrize("feature, alpha", [(999999, 5.0), (-5, 5.0), (-5, 0.0), (999999, 0.0)])
def test_a_steering_feature_outside_the_dictionary_is_refused_before_a_token_is_drawn(shipped, feature, alpha):
    with pytest.raises(PromptError, match=rf"steer feature must be a whole number from -1 to "
                                          rf"{len(shipped.features()) - 1} \(-1 = off\)"):
        next(views.generate_view(shipped, PROMPT, 0.8, 50, 0.95, 4, 0, False, feature, alpha))
