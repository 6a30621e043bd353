"""Every bad input answered in place, in words, by one rule (issue 51): `toyviz.settings.controls.settle`.

A number past a control's range is the nearest bound and the tab's note says so; a fraction given to a
whole-number control is the nearest whole number, said too; what is no number at all is refused with the range.
The same answer whether the value was typed (the page and the HTTP API send it to the renderer as it is) or came
in a deep link (toyviz.settings.links passes it on as it is), and a prompt longer than the context is said to be
cut on every tab that reads one. The shipped models, as tests/test_views.py uses them.
"""
import math
import re

import pytest

import toyviz
from toyviz.app import tabs
from toyviz.app.explorer import Explorer
from toyviz.app.views.attention import attention_view
from toyviz.app.views.features import features_view
from toyviz.app.views.inside import inside_view
from toyviz.app.views.layernorm import layernorm_view
from toyviz.app.views.model import model_view
from toyviz.app.views.residual import residual_view
from toyviz.app.views.sampling import generate_view, next_token_view
from toyviz.app.views.why import why_view
from toyviz.errors import UserError
from toyviz.serving import pacing
from toyviz.settings import controls, links
from toyviz.settings.controls import RANGES, context_note, settle

PROMPT = "To be, or not to be, that is the question"
LONG = ("Now is the winter of our discontent made glorious summer by this sun of York. " * 300)[:controls.MAX_PROMPT_CHARS]


@pytest.fixture(scope="module")
def shipped() -> Explorer:
    return Explorer(toyviz.load("gpt", device="cpu"), toyviz.load("translator", device="cpu"))


@pytest.fixture(autouse=True)
def unpaced(monkeypatch):
    monkeypatch.setattr(pacing, "TOKENS_PER_S", 10**6)           # generations stream at no reading pace here


def last(stream):
    return list(stream)[-1]


# ------------------------------------------------------------------------------ the rule ----
@pytest.mark.parametrize("name,value,settled,note", [
    ("feature", 999999, 511, "feature 999999 is past the last, 511: showing 511. "),
    ("feature", -5, -1, "feature -5 is below the first, -1 (the prompt's strongest): showing -1. "),
    ("temperature", 5, 2.0, "temperature 5 is above the highest, 2: using 2. "),
    ("temperature", math.inf, 2.0, "temperature inf is above the highest, 2: using 2. "),
    ("top_p", "0", 0.05, "top-p 0 is below the lowest, 0.05: using 0.05. "),
    ("seed", 1.5, 2, "seed 1.5 is not a whole number: using 2. "),
    ("seed", 1e30, 2**31 - 1, "seed 1e+30 is above the highest, 2147483647: using 2147483647. "),
    ("max_new", "12", 12, ""),
    ("top_k", 7.0, 7, ""),
])
def test_a_number_past_its_range_is_the_nearest_bound_and_the_note_says_so(name, value, settled, note):
    upper = 511 if RANGES[name][1] is None else None
    assert settle(name, value, high=upper) == (settled, note)
    assert type(settle(name, value, high=upper)[0]) is type(controls.DEFAULTS[name])


@pytest.mark.parametrize("name", list(RANGES))
@pytest.mark.parametrize("junk", ["abc", "", None, math.nan, "nan", [3], True])
def test_no_number_at_all_is_refused_with_the_range(name, junk):
    low, high = RANGES[name][0], RANGES[name][1] or 9
    with pytest.raises(UserError, match=rf"must be a (whole )?number from {controls.written(low)}.* to "
                                        rf"{controls.written(high)}, not "):
        settle(name, junk, high=high)


def test_a_position_counts_from_the_end_and_stops_at_the_prompts_ends():
    assert controls.position(-1, 20) == (19, "") and controls.position(-3, 20) == (17, "")
    assert controls.position(200, 20, "query position") == (19, "query position 200 is past the last, 19: showing 19. ")
    assert controls.position(-30, 20)[0] == 0 and "token position -30 is below the first" in controls.position(-30, 20)[1]


# ------------------------------------------------------------- typed and linked: one answer ----
# each numeric control of a link → the note of the renderer that reads it, given that control's value
RENDERS = {
    "layer": lambda ex, v: attention_view(ex, PROMPT, v, 0)[0],
    "head": lambda ex, v: attention_view(ex, PROMPT, 0, v)[0],
    "query": lambda ex, v: inside_view(ex, PROMPT, 0, 0, v)[0],
    "temperature": lambda ex, v: next_token_view(ex, PROMPT, v, 50, 0.95)[0],
    "top_k": lambda ex, v: next_token_view(ex, PROMPT, 0.8, v, 0.95)[0],
    "top_p": lambda ex, v: next_token_view(ex, PROMPT, 0.8, 50, v)[0],
    "seed": lambda ex, v: last(generate_view(ex, PROMPT, 0.8, 50, 0.95, 2, v))[0],
    "max_new": lambda ex, v: last(generate_view(ex, PROMPT, 0.0, 50, 0.95, v, 0))[0],
    "snapshot": lambda ex, v: model_view(ex, PROMPT, v)[3],
    "feature": lambda ex, v: features_view(ex, PROMPT, v, "")[0],
    "steer_feature": lambda ex, v: last(generate_view(ex, PROMPT, 0.8, 50, 0.95, 2, 0, False, v, 2.0))[0],
    "steer_alpha": lambda ex, v: last(generate_view(ex, PROMPT, 0.8, 50, 0.95, 2, 0, False, 3, v))[0],
}
NOT_HERE = {"beam": "the Translate tab's renderer (toyviz/app/views/translation.py) settles it"}
# past the top, below the bottom, a fraction for a whole-number control
ASKED = {"layer": [99, -5, 1.5], "head": [40, -1], "query": [9999, -999, 2.5], "temperature": [5, -1],
         "top_k": [10**6, -5, 7.5], "top_p": [7, 0], "seed": [10**12, -1, 1.5], "max_new": [300, 0],
         "snapshot": [99, -9], "feature": [999999, -5, 2.5], "steer_feature": [10**7, -5],
         "steer_alpha": [400, -400]}


def test_every_numeric_control_of_a_link_is_covered():
    numeric = {k for k, v in links.DEFAULTS.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert numeric == set(RENDERS) | set(NOT_HERE) and set(ASKED) == set(RENDERS)


@pytest.mark.parametrize("name,value", [(n, v) for n, values in ASKED.items() for v in values])
def test_a_typed_value_and_the_same_value_in_a_link_get_the_same_note(shipped, name, value):
    typed = RENDERS[name](shipped, value)                            # as the page's box and the API send it
    linked = RENDERS[name](shipped, links.parse({name: str(value)})[name])
    written = controls.written(value)
    assert typed == linked and f" {written} is " in typed, (typed, linked)


def test_a_value_in_range_gets_no_note(shipped):
    said = re.compile(r" is (past the last|below the first|above the highest|below the lowest|not a whole number)")
    for name, render in RENDERS.items():
        note = render(shipped, controls.DEFAULTS[name] if name != "steer_feature" else 3)
        assert not said.search(note), (name, note)


def test_the_positions_and_the_why_tabs_token_id_say_it_too(shipped):
    assert "token position 999 is past the last" in layernorm_view(shipped, PROMPT, "block0.ln1", 999)[0]
    assert "token position -99 is below the first" in residual_view(shipped, PROMPT, -99)[0]
    last_id = shipped.gpt.config.vocab_size - 1
    assert f"token id {10**9} is past the last, {last_id}: showing {last_id}" in why_view(shipped, PROMPT, 10**9)[0]


def test_the_translator_stack_on_screen_bounds_the_layer(shipped):
    depth = shipped.translator.config.n_encoder_layer
    note = attention_view(shipped, PROMPT, depth, 0, "probs", (), False, "encoder")[0]
    assert f"layer {depth} is past the last, {depth - 1}: showing {depth - 1}" in note


# ------------------------------------------------------------- a prompt cut to the context ----
# the tabs that read the prompt and are not drawn here, and why
NOT_DRAWN = {"circuits": "bounds its prompts itself (issue 51: tokens and memory capped)",
             "experiments": "draws the no-mask model's own context, not the GPT's"}
VALUES = {"prompt": LONG, "projector": False, "model": "gpt", "metric": "cosine", "layer": 0, "head": 0,
          "mode": "probs", "ablate": [], "query": -1, "last_word": "dream", "norm_name": "block0.ln1", "ln_position": -1,
          "res_position": -1, "why_token": "", "feature": -1, "feature_search": "", "temperature": 0.8, "top_k": 50,
          "top_p": 0.95, "snapshot": -1, "x_axis": "step"}


def note_of(name: str, out) -> str:
    """A tab's note: its first output, or the Model tab's snapshot line (it has no note of its own)."""
    return out[3] if name == "model" else out[0]


@pytest.mark.parametrize("name", [n for n, tab in tabs.TABS.items() if "prompt" in tab.inputs and n not in NOT_DRAWN])
def test_every_tab_that_reads_the_prompt_says_it_was_cut_to_the_context(shipped, name):
    tab = tabs.TABS[name]
    kept = shipped.gpt.config.context
    dropped = shipped.gpt.encode(LONG)[1]
    assert dropped > 0
    note = note_of(name, tab.render(shipped, *[VALUES[key] for key in tab.inputs]))
    assert context_note(kept, dropped) in note, note


def test_a_generation_says_it_reads_the_prompts_last_tokens(shipped):
    dropped = shipped.gpt.encode(LONG)[1]
    note = last(generate_view(shipped, LONG, 0.0, 50, 0.95, 2, 0))[0]
    assert context_note(shipped.gpt.config.context, dropped, "last") in note
