"""What each control of the app accepts: defaults, choices and ranges, in one table that the
sliders, the renderers and the deep links all read, and the one rule for a number a person gives.

`settle(name, value)` is that rule, the same for a value typed into the page, sent to the HTTP API or read from a
link (issue 51): a number outside its control's range becomes the nearest bound, a fraction given to a
whole-number control the nearest whole number, and the note it returns says what was changed ("feature 999999 is
past the last, 511: showing 511. "); what is no number at all (text, NaN, nothing) is refused with the range
(UserError). Each renderer settles its inputs against the model on screen and shows the notes where its note goes,
so a link or a box past the range opens on a working view that says why it is not what was asked for.
`context_note` is how every tab says that a prompt was cut to the model's context.
"""
from __future__ import annotations

import math

from toyviz.errors import UserError
from toyviz.i18n import LANGUAGES, Term, catalogue, mistake, t

MAX_PROMPT_CHARS = 20_000     # longer prompts are cut before tokenising (the context holds far less)
MAX_NEW_TOKENS = 256          # one visitor cannot hold a worker for long
MAX_BEAM = 8
MODELS = ("gpt", "encoder", "decoder")      # what the model picker offers: the GPT or one translator stack
TABS = ("tokens", "positional", "attention", "inside", "layernorm", "residual", "why", "features", "sample",
        "translate", "model", "experiments", "watch", "circuits")
DEFAULT_PROMPT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer"
DEFAULT_SOURCE = "In the beginning God created the heavens and the earth."
LAST_WORD = "dream"           # the Inside-a-head tab's word put in place of the prompt's last: its box starts so
FORMULA = {"length": 128, "d_model": 64}      # where the Positions tab's sliders of the formula on its own start
KV_NEW_TOKENS = 48            # the KV-cache button generates this many tokens with the cache and without

DEFAULTS = {
    "tab": "attention", "prompt": DEFAULT_PROMPT, "layer": 0, "head": 0, "mode": "probs", "query": -1,
    "temperature": 0.8, "top_k": 50, "top_p": 0.95, "seed": 0, "max_new": 80,
    "text": DEFAULT_SOURCE, "beam": 4, "snapshot": -1, "projector": False, "model": "gpt",
    "feature": -1, "steer_feature": -1, "steer_alpha": 0.0,
    "circuit_target": "", "supernodes": "",       # the Circuits tab's target (blank: the top prediction), its groups
    "lang": "",               # the page's language (toyviz.i18n; blank: the browser's), kept by a copied link
    "ablate": [],             # the Attention tab's heads switched off, "layer.head" (a shared list: never mutated)
}
CHOICES = {"tab": TABS, "mode": ("probs", "scores"), "model": MODELS, "lang": LANGUAGES}
# None = up to the loaded model (its layers, heads, context, snapshots): the caller passes that bound
RANGES = {"temperature": (0.0, 2.0), "top_k": (0, 200), "top_p": (0.05, 1.0), "max_new": (1, MAX_NEW_TOKENS),
          "beam": (1, MAX_BEAM), "seed": (0, 2**31 - 1), "layer": (0, None), "head": (0, None),
          "query": (-1, None), "snapshot": (-1, None), "feature": (-1, None), "steer_feature": (-1, None),
          "steer_alpha": (-40.0, 40.0), "token_id": (0, None)}


# what the notes call a control when its name is not its label on the page
LABELS = {"top_k": "top-k", "top_p": "top-p", "max_new": "max new tokens", "query": "query position",
          "steer_feature": "steering feature", "steer_alpha": "steering strength", "token_id": "token id",
          "beam": "beam width", "snapshot": "training snapshot"}
# what the lowest value of a control means, said beside it ("below the first, -1 (the prompt's strongest)")
MEANINGS = {"feature": " (the prompt's strongest)", "steer_feature": " (off)", "query": " (the last token)",
            "snapshot": " (the final model)"}
PICKS = {"layer", "head", "query", "feature", "snapshot", "token_id"}    # pick what is shown: "past the last"


def clamp(value, low, high, kind=float, name="value"):
    """A number forced into [low, high] without a word; junk gives a UserError. (A control of this table goes
    through `settle`, which says what it changed.)"""
    try:
        number = kind(float(value))
    except (TypeError, ValueError, OverflowError):
        raise UserError(f"{name} must be a number, got {value!r}") from None
    if number != number:                                   # NaN
        raise UserError(f"{name} must be a number, got NaN")
    return min(max(number, kind(low)), kind(high))


def written(value) -> str:
    """A number as a note writes it: 999999 not 999999.0, 1e+30 not thirty-one digits; text as it came."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, float) and not value.is_integer() or abs(value) >= 1e16:
        return f"{value:g}"
    return str(int(value))


def settle(name: str, value, high=None, low=None, label: str | None = None,
           meaning: str | None = None) -> tuple[int | float, str]:
    """(the value the control takes, a note saying what was changed, or "") for a number a person gave, by the
    one rule (module docstring). `high`, `low`: the bounds on screen where they differ from RANGES (the model's
    layers, the prompt's tokens, the dictionary's features); `label`, `meaning`: what the note calls the control
    and says its lowest value means."""
    lowest, highest = RANGES[name]
    low, high = lowest if low is None else low, highest if high is None else high
    whole = isinstance(DEFAULTS.get(name, 0), int)
    words = dict(label=label, meaning=meaning)
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError):
        number = math.nan
    if math.isnan(number) or isinstance(value, bool):
        given = "nothing" if value is None else "NaN" if isinstance(value, float) else repr(value)
        raise refused(name, given, written(low), written(high), **words)
    if number > high:
        settled, change = high, "above"
    elif number < low:
        settled, change = low, "below"
    elif whole and not number.is_integer():
        settled, change = math.floor(number + 0.5), "fraction"          # as the page's Math.round
    else:
        return (int(number) if whole else number), ""
    settled = int(settled) if whole else float(settled)
    return settled, note(name, written(value), change, written(settled), **words)


def _term(text: str | None, name: str, kind: str, english: str) -> str:
    """A control's label or its lowest value's meaning, as a message's field (toyviz.i18n.t says a Term in the
    message's language): `text` as given (a catalogue key: its Term), else the catalogues' [controls.label] /
    [controls.meaning] entry for the control, else `english`."""
    if text is not None:
        return Term(text) if text in catalogue(LANGUAGES[0]) else text
    key = f"controls.{kind}.{name}"
    return Term(key) if key in catalogue(LANGUAGES[0]) else english


def note(name: str, value: str, change: str, settled: str, label: str | None = None,
         meaning: str | None = None) -> str:
    """The note of a value of `name` the rule changed (`change`: "above" its range, "below" it, a "fraction" for a
    whole number), the numbers written as the note shows them, in the event's language (`label`, `meaning`: text,
    or a key of the catalogues)."""
    picks = name in PICKS
    label = _term(label, name, "label", LABELS.get(name, name.replace("_", " ")))
    meaning = _term(meaning, name, "meaning", MEANINGS.get(name, ""))
    return t(f"controls.{change}" + "_pick" * picks, label=label, value=value, settled=settled, meaning=meaning)


def refused(name: str, given: str, low: str, high: str, label: str | None = None,
            meaning: str | None = None) -> UserError:
    """The refusal of what is no number at all, naming the control's range: its English, and its key and fields to
    say it in the page's language (toyviz.i18n.said)."""
    fields = dict(label=_term(label, name, "label", LABELS.get(name, name.replace("_", " "))), given=given, low=low,
                  high=high, meaning=_term(meaning, name, "meaning", MEANINGS.get(name, "")))
    key = "controls.refused_whole" if isinstance(DEFAULTS.get(name, 0), int) else "controls.refused"
    return mistake(key, **fields)


def refusal(name: str, given: str, low: str, high: str, label: str | None = None, meaning: str | None = None) -> str:
    """The refusal of what is no number at all, naming the control's range, in the event's language."""
    err = refused(name, given, low, high, label, meaning)
    return t(err.key, **err.fields)


def words(name: str) -> dict[str, str]:
    """A control's notes and refusal (its range in RANGES), with {value}, {settled} and {given} for the page's
    sampler to fill in (web/src/sampler.js): the page says what the server says."""
    low, high = (written(bound) for bound in RANGES[name])
    return {**{change: note(name, "{value}", change, "{settled}") for change in ("above", "below", "fraction")},
            "refused": refusal(name, "{given}", low, high)}


def position(value, length: int, label: str = "controls.label.token_position") -> tuple[int, str]:
    """(a token position of a prompt `length` tokens long, from 0, and the note): negative counts from the end
    (-1 the last token), and a position past either end is the nearest end, said in the note."""
    settled, note = settle("query", value, high=length - 1, low=-length, label=label, meaning="controls.first_token")
    return settled % length, note


def setting(name: str, value, upper: int | None = None):
    """A control's value settled by the rule, without its note: for code below the renderers, which have
    already settled it and said so (a Python caller gets the value the page would show)."""
    return settle(name, value, high=upper)[0]


def context_note(kept, dropped, which: str = "first") -> str:
    """What every tab says when a prompt was longer than the model's context, `which` tokens it read (a
    generation reads the last); the page's sampler says it from this sentence with {kept} and {dropped} in it
    (toyviz.app.browser_model.sampler_settings)."""
    return t(f"controls.context_{which}", kept=kept, dropped=dropped)
