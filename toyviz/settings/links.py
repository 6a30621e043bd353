"""Deep links: the view a lecturer sees, written into and read back from the URL query.

Only query parameters (no server-side state), so a link keeps working after a restart.
`parse` never raises and returns only values the app's controls accept (toyviz.settings.controls): an unknown key is
ignored, junk (text where a number belongs, NaN, infinity, an empty prompt) falls back to its
default, and a number outside its control's range is clamped into it — a link from a bigger
model, or a hand-edited one, still opens on a working view.
"""
from __future__ import annotations

import math
from urllib.parse import urlencode

from toyviz.settings.controls import CHOICES, DEFAULTS, RANGES

MAX_TEXT = 2000                                            # a link is no way to send a novel


def _convert(key: str, raw: str, upper: int | None):
    default = DEFAULTS[key]
    if isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    if isinstance(default, (int, float)):
        number = float(raw)
        if not math.isfinite(number):                      # NaN, inf, 1e999: no slider position means that
            raise ValueError(raw)
        low, high = RANGES[key]
        high = upper if high is None else high
        number = max(low, number if high is None else min(high, number))
        return type(default)(number)
    if key in CHOICES and raw not in CHOICES[key]:
        raise ValueError(raw)
    if not raw.strip():                                    # the page would open on "the prompt is empty"
        raise ValueError(raw)
    return raw[:MAX_TEXT]


def parse(query, upper: dict | None = None) -> dict:
    """Query parameters (a mapping of str → str) → a complete view state.

    `upper` gives the model-dependent maxima (layer, head, query, snapshot) when a model is loaded.
    """
    upper = upper or {}
    state = dict(DEFAULTS)
    for key, raw in dict(query or {}).items():
        if key in DEFAULTS:
            try:
                state[key] = _convert(key, str(raw), upper.get(key))
            except (TypeError, ValueError):
                pass                                       # keep the default
    return state


def build(state: dict) -> str:
    """A view state → "?tab=…&…", listing only what differs from the defaults (short links)."""
    changed = {k: (int(v) if isinstance(v, bool) else v[:MAX_TEXT] if isinstance(v, str) else v)
               for k, v in state.items() if k in DEFAULTS and v != DEFAULTS[k] or k == "tab"}
    return "?" + urlencode(changed)
