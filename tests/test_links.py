"""Deep links: the view written into the URL query and read back.

`toyviz.settings.links` alone (parse/build), then the app's own two ends of it — `make_link` (the
"Copy link" button, API /link) and `restore` (run on page load with the URL's query) — called
in-process on an app built from the tiny checkpoints: every control a link sets must receive a
value it accepts, or the page opens on an error.
"""
import json
import math
import os
import subprocess
import sys
import types
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import pytest

from toyviz.app.explorer import Explorer
from toyviz.settings import controls, links

ROOT = Path(__file__).resolve().parent.parent
CHANGED = dict(prompt="ROMEO: 🤖 café & co?=#frag /path%20x+y ‮rtl", layer=3, head=2, mode="scores", query=5,
               temperature=1.25, top_k=7, top_p=0.5, seed=42, max_new=12, text="The Lord is my shepherd; & = ?",
               beam=3, snapshot=1, projector=True, model="decoder", feature=1586, steer_feature=1586, steer_alpha=7.5,
               circuit_target=" S", supernodes="S copy: 0_1603_8 0_962_8; title: 2_1465_21", lang="es",
               ablate=["1.2", "0.3"])

def query_of(link: str) -> dict:
    assert link.startswith("?"), link
    return dict(parse_qsl(link[1:], keep_blank_values=True))


def round_trip(state: dict) -> dict:
    return links.parse(query_of(links.build(state)))


# ------------------------------------------------------------------------ parse / build ----
@pytest.mark.parametrize("tab", controls.TABS)
def test_every_tab_with_every_control_changed_round_trips(tab):
    state = dict(links.DEFAULTS, tab=tab, **CHANGED)
    assert round_trip(state) == state


@pytest.mark.parametrize("key", [k for k in links.DEFAULTS if k != "tab"])
def test_each_control_round_trips_on_its_own(key):
    state = dict(links.DEFAULTS, **{key: CHANGED[key]})
    link = links.build(state)
    assert set(query_of(link)) == {"tab", key}                  # only what differs from the defaults
    assert round_trip(state) == state


@pytest.mark.parametrize("tab", controls.TABS)
def test_every_tab_alone_round_trips(tab):
    state = dict(links.DEFAULTS, tab=tab)
    assert links.build(state) == f"?tab={tab}"
    assert round_trip(state) == state


def test_defaults_make_short_links_and_nothing_parses_to_the_defaults():
    assert links.build(dict(links.DEFAULTS)) == "?tab=attention"
    assert links.parse({}) == links.DEFAULTS and links.parse(None) == links.DEFAULTS


def test_types_survive_the_round_trip():
    state = round_trip(dict(links.DEFAULTS, **CHANGED))
    for key, default in links.DEFAULTS.items():
        assert type(state[key]) is type(default), key


def test_a_link_is_only_a_query_string():
    link = links.build(dict(links.DEFAULTS, tab="sample", **CHANGED))
    parts = urlsplit("http://host/app/" + link)
    assert parts.path == "/app/" and parts.fragment == "" and parts.query == link[1:]
    assert link.isascii() and " " not in link and "#" not in link      # survives copy/paste into any chat


def test_a_link_survives_a_restart():
    """Nothing server-side: a fresh interpreter reads the same view from the same link."""
    state = dict(links.DEFAULTS, tab="translate", **CHANGED)
    link = links.build(state)
    code = ("import json, sys; from urllib.parse import parse_qsl; from toyviz.settings import links; "
            "print(json.dumps(links.parse(dict(parse_qsl(sys.argv[1][1:])))))")
    out = subprocess.run([sys.executable, "-c", code, link], cwd=ROOT, capture_output=True, text=True, timeout=60,
                         check=True)
    assert json.loads(out.stdout) == state


def test_unknown_keys_are_ignored():
    state = links.parse({"evil": "1", "__proto__": "x", "Layer": "3", "tab ": "model", "utm_source": "mail",
                         "layer": "2"})
    assert state == dict(links.DEFAULTS, layer=2)
    assert links.build(dict(links.DEFAULTS, evil="<script>", secret="x")) == "?tab=attention"


def test_a_link_cannot_carry_a_novel():
    assert len(links.parse({"prompt": "a" * 10_000})["prompt"]) == 2000
    assert len(links.parse({"text": "b" * 10_000})["text"]) == 2000


def test_a_long_prompt_gives_a_link_that_round_trips_to_what_parse_keeps():
    state = dict(links.DEFAULTS, prompt="word " * 10_000)
    link = links.build(state)
    assert len(link) < 8000, len(link)
    assert round_trip(state)["prompt"] == state["prompt"][:2000]


JUNK_OK = {   # junk that falls back to the default today
    "tab": ["nope", "", "ATTENTION", "../model"], "mode": ["<script>", "", "PROBS"],
    "layer": ["x", "", "0x10", "1,5"], "head": ["two"], "query": ["-"], "temperature": ["nan", "hot", "NaN"],
    "top_k": ["ten"], "top_p": ["abc"], "seed": ["1e", "None"], "max_new": ["[]"], "beam": ["0x10"],
    "snapshot": ["last"], "model": ["bert", "", "GPT", "translator"],
}
NOT_FINITE = {"layer": ["inf", "1e999"], "seed": ["-inf"], "max_new": ["1e400"], "temperature": ["inf", "-inf"],
              "top_p": ["-inf", "1e999"]}
OUT_OF_RANGE = {"temperature": ["5", "-1"], "top_k": ["-5", "1000000"], "top_p": ["0", "7"], "seed": ["1e30", "-1"],
                "beam": ["1000", "0"], "max_new": ["0", "1000000"], "layer": ["-1"], "head": ["-3"],
                "query": ["-7"], "snapshot": ["-9"]}


def cases(table):
    return [(k, v) for k, values in table.items() for v in values]


@pytest.mark.parametrize("key,raw", cases(JUNK_OK))
def test_junk_falls_back_to_the_default(key, raw):
    assert links.parse({key: raw}) == links.DEFAULTS


def refused(table, link_ends) -> list[str]:
    """The cases of `table` whose link opens the app with a value its control does not take (or raises):
    the oracle is the app's own sliders, radios and boxes, not a copy of their ranges."""
    _, restore_fn, outputs = link_ends
    problems = []
    for key, raw in cases(table):
        try:
            out = restore(restore_fn, {key: raw})
        except Exception as err:                                    # noqa: BLE001 — parse must never raise
            problems.append(f"{key}={raw}: raises {type(err).__name__}: {err}")
            continue
        problems += [f"{key}={raw}: {p}" for c, v in zip(outputs[1:], out[1:]) if (p := control_accepts(c, v))]
    return problems


def test_infinities_fall_back_and_never_raise(link_ends):
    assert not refused(NOT_FINITE, link_ends)


def test_out_of_range_numbers_reach_their_controls_as_written(link_ends):
    """Not clamped here, in silence: the tab's renderer settles them and its note says what it changed, as for a
    typed value (tests/test_inputs.py)."""
    assert not refused(OUT_OF_RANGE, link_ends)
    top = links.parse({"temperature": "5", "beam": "1000", "top_k": "10**9", "feature": "-5", "seed": "1.5"})
    assert (top["temperature"], top["beam"], top["top_k"], top["feature"], top["seed"]) == (5, 1000, 50, -5, 1.5)


def test_an_empty_prompt_in_a_link_falls_back():
    kept = {(key, raw): links.parse({key: raw})[key] for key, raw in
            [("prompt", ""), ("prompt", "   "), ("text", ""), ("text", "\n\t")]}
    assert all(value == links.DEFAULTS[key] for (key, _), value in kept.items()), kept


def test_parse_takes_any_mapping_of_any_values():
    assert links.parse({"layer": 3, "projector": True, "temperature": 1.5}) == dict(links.DEFAULTS, layer=3,
                                                                                    projector=True, temperature=1.5)
    assert links.parse([("tab", "model")])["tab"] == "model"
    for value in ("1", "true", "yes", "on", "TRUE"):
        assert links.parse({"projector": value})["projector"] is True
    for value in ("0", "false", "no", "off", ""):
        assert links.parse({"projector": value})["projector"] is False


# --------------------------------------------------------------- the app's two ends of a link ----
@pytest.fixture(scope="module")
def link_ends(tiny_checkpoints):
    """(make_link, restore, restore's output components) from an app built on the tiny models."""
    import app
    demo = app.build(Explorer.load(str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu"))
    ui = BUILT["ui"] = demo.ui
    yield ui.make_link, ui.restore, [ui.tabs] + ui.link_controls
    demo.close()


BUILT = {}          # the app link_ends built: its ui


def restore(fn, query: dict):
    return fn(types.SimpleNamespace(query_params=query))


def control_accepts(component, value) -> str:
    """'' when the component takes the value as the page would send it back, else why not. A control's slider
    (widgets.SettledSlider) takes a number past its range: its renderer settles it, and says so."""
    import gradio as gr
    from toyviz.app.widgets import SettledSlider
    kind = type(component).__name__
    if isinstance(component, gr.Slider):
        if not (isinstance(value, (int, float)) and math.isfinite(value)):
            return f"{kind} {component.label!r}: {value!r} is not a finite number"
        try:
            component.preprocess(component.postprocess(value))
        except gr.Error as err:
            return f"{kind} {component.label!r}: {value!r} refused: {err}"
        if not isinstance(component, SettledSlider) and not component.minimum <= value <= component.maximum:
            return f"{kind} {component.label!r}: {value!r} outside [{component.minimum}, {component.maximum}]"
    elif isinstance(component, gr.Number):
        if not (isinstance(value, (int, float)) and math.isfinite(value)):
            return f"{kind} {component.label!r}: {value!r} cannot travel as JSON"
    elif isinstance(component, gr.Radio):
        if value not in [c[1] if isinstance(c, tuple) else c for c in component.choices]:
            return f"{kind} {component.label!r}: {value!r} not a choice"
    elif isinstance(component, gr.Textbox):          # blank only where the box starts blank (the Circuits tab's)
        if not (isinstance(value, str) and (value.strip() or not component.value)):
            return f"{kind} {component.label!r}: {value!r} is empty"
    elif isinstance(component, gr.Checkbox):
        if not isinstance(value, bool):
            return f"{kind} {component.label!r}: {value!r} is not a bool"
    return ""


@pytest.mark.parametrize("tab", controls.TABS)
def test_the_app_restores_what_its_copy_link_button_wrote(link_ends, tab):
    make_link, restore_fn, _ = link_ends
    values = [tab, CHANGED["prompt"], 1, 3, "scores", 5, 1.25, 7, 0.5, 42, 12, CHANGED["text"], 3, 0, True, "encoder",
              1586, 1586, 7.5, CHANGED["circuit_target"], CHANGED["supernodes"], CHANGED["lang"], CHANGED["ablate"]]
    link = make_link(*values)
    out = restore(restore_fn, query_of(link))
    assert out[0].selected == tab                                     # the gr.Tabs update
    assert list(out[1:]) == values


# a tab's inputs that a link does not carry, and why: the link keeps what a lecturer sets to show a view; these are
# secondary pickers of a tab (its second figure's, a search box) or set by the page itself
NOT_LINKED = {"metric", "last_word", "norm_name", "ln_position", "res_position", "why_token", "feature_search",
              "exp_variants", "exp_x", "x_axis", "attention_kind", "tr_layer", "tr_head", "register"}


def test_every_control_of_every_tab_is_in_the_link_or_named_apart(link_ends):
    """Issue 55: Copy link carries the controls a tab's view depends on (the heads switched off too: a link to a view
    with heads off opened with every head on); a tab input the link leaves out is named in NOT_LINKED, so a new
    control is a decision, not an omission. With test_the_app_restores_what_its_copy_link_button_wrote (every linked
    control changed, on every tab, written and restored), every control survives Copy link."""
    from toyviz.app.tabs import TABS
    ui = BUILT["ui"]
    linked = {id(c) for c in ui.link_controls}
    missing = {name for tab in TABS.values() for name in tab.inputs
               if name != "projector" and id(getattr(ui, name)) not in linked} - NOT_LINKED
    assert not missing, f"tab inputs Copy link leaves out: {missing}"
    assert id(ui.ablate) in linked and id(ui.projector) in linked


def test_a_link_restores_switched_off_heads_the_model_has(link_ends):
    make_link, restore_fn, _ = link_ends
    link = make_link("attention", *[links.DEFAULTS[k] for k in list(links.DEFAULTS)[1:-1]], ["1.2", "0.3"])
    assert "ablate=1.2%2C0.3" in link
    assert restore(restore_fn, query_of(link))[-1] == ["1.2", "0.3"]
    # heads another model has (the tiny GPT: 2 layers of 4) are left out: the switches would refuse every event
    assert restore(restore_fn, {"ablate": "1.2,3.0,9.9,junk"})[-1] == ["1.2"]


def test_restore_ignores_unknown_keys_and_fills_defaults(link_ends):
    _, restore_fn, _ = link_ends
    out = restore(restore_fn, {"evil": "<script>", "tab": "model"})
    assert out[0].selected == "model" and out[2] == links.DEFAULTS["prompt"] and out[3] == 0


def test_every_numeric_control_hands_its_renderer_the_number_as_written(link_ends):
    """Typed into its box, sent to the API or read from a link, a number past the range or a fraction reaches the
    renderer as it was (neither Gradio's refusal nor its rounding, both unsaid): the renderer's rule settles it and
    says so (issue 51, tests/test_inputs.py)."""
    _, _, outputs = link_ends
    numeric = [key for key, value in links.DEFAULTS.items() if isinstance(value, (int, float))
               and not isinstance(value, bool)]
    controls_of = dict(zip(links.DEFAULTS, outputs[1:]))
    for key in numeric:
        for value in (2.5, 10**6, -10**6):
            component = controls_of[key]
            assert component.preprocess(component.postprocess(value)) == value, (key, value)


def test_every_control_accepts_what_a_plain_link_gives_it(link_ends):
    _, restore_fn, outputs = link_ends
    out = restore(restore_fn, {"tab": "inside", "layer": "1", "head": "3", "query": "5", "temperature": "0.3"})
    problems = [p for c, v in zip(outputs[1:], out[1:]) if (p := control_accepts(c, v))]
    assert not problems, problems


def test_every_control_accepts_what_a_junk_link_gives_it(link_ends):
    _, restore_fn, outputs = link_ends
    junk = {"layer": "99", "head": "-5", "query": "99999", "temperature": "inf", "top_k": "-5", "top_p": "0",
            "seed": "1e30", "max_new": "0", "beam": "1000", "snapshot": "99", "prompt": " ", "text": ""}
    problems = []
    for key, raw in [*junk.items(), ("all", None)]:
        try:
            out = restore(restore_fn, junk if raw is None else {key: raw})
        except Exception as err:                                    # noqa: BLE001 — reported below
            problems.append(f"{key}={raw}: {type(err).__name__}: {err}")
            continue
        problems += [f"{key}={raw}: {p}" for c, v in zip(outputs[1:], out[1:]) if (p := control_accepts(c, v))]
    try:
        restore(restore_fn, {"layer": "1e999"})
    except Exception as err:                                        # noqa: BLE001
        problems.append(f"layer=1e999: {type(err).__name__}: {err}")
    assert not problems, problems
