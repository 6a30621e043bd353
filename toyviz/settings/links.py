"""Deep links: the view a lecturer sees, written into and read back from the URL query.

Only query parameters (no server-side state), so a link keeps working after a restart.
`parse` never raises and returns only values the app's controls can hold: an unknown key is ignored, and what a
control cannot hold (text where a number belongs, NaN, infinity, an empty prompt, a mode that is none of its
choices) falls back to its default. A number reaches its control as the link wrote it, even past its range:
the tab's renderer settles it by the same rule as a typed one (toyviz.settings.controls.settle) and its note says
what it changed ("feature 999999 is past the last, 511: showing 511"), so a link from a bigger model, or a
hand-edited one, opens on a working view that says why it is not quite what the link asked for.
"""
from __future__ import annotations

import math
import re
from urllib.parse import urlencode

from toyviz.settings.controls import CHOICES, DEFAULTS

MAX_TEXT = 2000                                            # a link is no way to send a novel
HEAD = re.compile(r"\d{1,3}\.\d{1,3}")                      # a head as the switches name it: layer.head


def _convert(key: str, raw: str):
    default = DEFAULTS[key]
    if isinstance(default, list):                          # heads switched off: "1.2,3.0", each once, in order
        return list(dict.fromkeys(part for part in (p.strip() for p in raw.split(",")) if HEAD.fullmatch(part)))
    if isinstance(default, bool):
        return raw.lower() in ("1", "true", "yes", "on")
    if isinstance(default, (int, float)):
        number = float(raw)
        if not math.isfinite(number):                      # NaN, inf, 1e999: JSON cannot carry it to the control
            raise ValueError(raw)
        return int(number) if number.is_integer() and abs(number) < 2**63 else number   # 1.5 stays, for the note
    if key in CHOICES and raw not in CHOICES[key]:
        raise ValueError(raw)
    if not raw.strip():                                    # the page would open on "the prompt is empty"
        raise ValueError(raw)
    return raw[:MAX_TEXT]


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
    written = lambda v: (int(v) if isinstance(v, bool) else v[:MAX_TEXT] if isinstance(v, str)
                         else ",".join(map(str, v)) if isinstance(v, (list, tuple)) else v)
    changed = {k: written(v) for k, v in state.items()
               if k in DEFAULTS and (list(v) if isinstance(v, tuple) else v) != DEFAULTS[k] or k == "tab"}
    return "?" + urlencode(changed)
