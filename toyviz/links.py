"""Deep links: the view a lecturer sees, written into and read back from the URL query.

Only query parameters (no server-side state), so a link keeps working after a restart.
`parse` never raises: an unknown key is ignored and a bad value falls back to its default.
"""
from __future__ import annotations

from urllib.parse import urlencode

TABS = ("tokens", "positional", "attention", "inside", "layernorm", "residual", "sample", "translate", "model", "experiments")
DEFAULT_PROMPT = "To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer"
DEFAULT_SOURCE = "In the beginning God created the heavens and the earth."

DEFAULTS = {
    "tab": "attention", "prompt": DEFAULT_PROMPT, "layer": 0, "head": 0, "mode": "probs", "query": -1,
    "temperature": 0.8, "top_k": 50, "top_p": 0.95, "seed": 0, "max_new": 80,
    "text": DEFAULT_SOURCE, "beam": 4, "snapshot": -1, "projector": False,
}
CHOICES = {"tab": TABS, "mode": ("probs", "scores")}


def _convert(key: str, raw: str):
    default = DEFAULTS[key]
    if isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    if isinstance(default, (int, float)):
        value = type(default)(float(raw))
        if value != value:                                 # NaN
            raise ValueError(raw)
        return value
    if key in CHOICES and raw not in CHOICES[key]:
        raise ValueError(raw)
    return raw[:2000]                                      # a link is no way to send a novel


def parse(query) -> dict:
    """Query parameters (a mapping of str → str) → a complete view state."""
    state = dict(DEFAULTS)
    for key, raw in dict(query or {}).items():
        if key in DEFAULTS:
            try:
                state[key] = _convert(key, str(raw))
            except (TypeError, ValueError):
                pass                                       # keep the default
    return state


def build(state: dict) -> str:
    """A view state → "?tab=…&…", listing only what differs from the defaults (short links)."""
    changed = {k: (int(v) if isinstance(v, bool) else v) for k, v in state.items()
               if k in DEFAULTS and v != DEFAULTS[k] or k == "tab"}
    return "?" + urlencode(changed)
