"""What each control of the app accepts: defaults, choices and ranges, in one table that the
sliders, the clamps applied to every browser/API value, and the deep links all read.

`setting(name, value)` forces a value from a browser or the HTTP API into its control's range (a
typed 99 becomes the maximum, junk gives a UserError), so nothing absurd reaches a model: for a slider,
whose box then shows the clamped value. `checked(name, value)` refuses a value outside the range instead,
naming it: for a number box, which would go on showing what was typed beside a figure of something else.
"""
from __future__ import annotations

from toyviz.errors import UserError

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
}
CHOICES = {"tab": TABS, "mode": ("probs", "scores"), "model": MODELS}
# None = up to the loaded model (its layers, heads, context, snapshots): the caller passes that bound
RANGES = {"temperature": (0.0, 2.0), "top_k": (0, 200), "top_p": (0.05, 1.0), "max_new": (1, MAX_NEW_TOKENS),
          "beam": (1, MAX_BEAM), "seed": (0, 2**31 - 1), "layer": (0, None), "head": (0, None),
          "query": (-1, None), "snapshot": (-1, None), "feature": (-1, None), "steer_feature": (-1, None),
          "steer_alpha": (-40.0, 40.0), "token_id": (0, None)}


def clamp(value, low, high, kind=float, name="value"):
    """A number from the browser/API forced into [low, high]; junk gives a UserError."""
    try:
        number = kind(float(value))
    except (TypeError, ValueError, OverflowError):
        raise UserError(f"{name} must be a number, got {value!r}") from None
    if number != number:                                   # NaN
        raise UserError(f"{name} must be a number, got NaN")
    return min(max(number, kind(low)), kind(high))


def setting(name: str, value, upper: int | None = None):
    """A control's value clamped to its range in RANGES (upper: the model-dependent maximum)."""
    low, high = RANGES[name]
    return clamp(value, low, upper if high is None else high, type(DEFAULTS[name]), name.replace("_", "-"))


def checked(name: str, value, upper: int | None = None, meaning: str = ""):
    """A number box's value if it is in its range in RANGES, else a UserError naming the range (and
    `meaning`, what its lowest value means): the box keeps what was typed, so a silent clamp would put
    feature 2047 beside a box saying 999999."""
    low, high = RANGES[name]
    high, kind = upper if high is None else high, type(DEFAULTS.get(name, 0))
    number = clamp(value, float("-inf"), float("inf"), float, name.replace("_", " "))
    if not low <= number <= high or (kind is int and number != int(number)):
        raise UserError(f"{name.replace('_', ' ')} must be {'a whole number' if kind is int else 'a number'} "
                        f"from {low} to {high}{meaning}, not {value}")
    return kind(number)
