"""Each visitor's share of the expensive actions, so one client in a loop cannot spend the class's machine.

Gradio's queue bounds how many requests run at once (app.py's concurrency limits and pools), not who
sends them: a script calling /export or /translate (beam 8) back to back gets a worker every time one
frees up. Here each visitor (a page's session; each API client has its own) may start at most so much
of an action in any minute; past it, the request is refused at once with a message saying how long to
wait, and the next visitor's request is served. The allowances sit well above what a student does (the
load benchmark's students act every 1-4 s: 15 % translations, 25 % 64-token generations), so a class
never meets them; tests/test_serving.py checks both.
"""
from __future__ import annotations

import inspect
import threading
import time
from collections import deque

import gradio as gr

WINDOW_S = 60.0


class Allowance:
    """At most `per_minute` of an action (counted in `unit`, one per request unless `cost` weighs it)
    per visitor in any WINDOW_S seconds. A single request costing more than the whole allowance is
    let through when the visitor has used none of it (else it could never run)."""

    def __init__(self, what: str, per_minute: float, unit: str, cost=lambda args: 1.0):
        self.what, self.per_minute, self.unit, self.cost = what, per_minute, unit, cost
        self.used: dict[object, deque] = {}          # visitor → (time, cost) of their starts in the window
        self.lock = threading.Lock()

    def take(self, visitor, cost: float = 1.0, now: float | None = None) -> None:
        """Count a start of `cost` for visitor, or raise gr.Error saying how long to wait."""
        now = time.monotonic() if now is None else now
        with self.lock:
            for who in list(self.used):              # forget the window's past: memory follows the visitors of a minute
                starts = self.used[who]
                while starts and starts[0][0] <= now - WINDOW_S:
                    starts.popleft()
                if not starts:
                    del self.used[who]
            starts = self.used.setdefault(visitor, deque())
            spent = sum(c for _, c in starts)
            if starts and spent + cost > self.per_minute:
                wait = starts[0][0] + WINDOW_S - now
                raise gr.Error(f"You have {self.what} {spent:g} {self.unit} in the last minute; each visitor may "
                               f"use {self.per_minute:g} a minute, so that the class shares the machine. "
                               f"Try again in {max(1, round(wait))} s.", duration=None, print_exception=False)
            starts.append((now, cost))


def number(value, default: float) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


# by action: app.py's export button, patching button, generation, and the /why and /translate endpoints
ALLOWANCES = {
    "export": Allowance("exported", 6, "views"),
    "patching": Allowance("patched", 12, "pairs"),
    "why": Allowance("asked", 20, "\"why this token?\" questions"),
    # work grows with the beam: a beam of 8 counts as two sentences at the class's beam 4
    "translate": Allowance("translated", 12, "sentences (at beam 4; a beam of 8 counts twice)",
                           cost=lambda args: number(args[1] if len(args) > 1 else 4, 4) / 4),
    # the inputs' fifth is max_new; a class's students generate up to ~5 × 64 tokens a minute
    "generate": Allowance("generated", 1024, "tokens", cost=lambda args: number(args[4] if len(args) > 4 else 0, 80)),
}


def visitor(request: gr.Request | None):
    """A page's session, an API client's own; without one, its address (all such callers of one address share)."""
    return getattr(request, "session_hash", None) or getattr(getattr(request, "client", None), "host", None) or "?"


def limited(fn, action: str, allowances: dict = ALLOWANCES):
    """fn, refused (gr.Error) once its visitor has used up the action's allowance. Gradio fills `request`;
    fn gets it too where it asks for one (toyviz.app.widgets.one_per_visitor). A generator stays one; an
    action without an allowance is fn as it is."""
    allowance = allowances.get(action)
    if allowance is None:
        return fn
    passes_request = "request" in inspect.signature(fn).parameters
    call_fn = (lambda request, args: fn(request, *args)) if passes_request else (lambda request, args: fn(*args))

    if inspect.isgeneratorfunction(fn):
        def stream(request: gr.Request, *args):
            allowance.take(visitor(request), allowance.cost(args))
            yield from call_fn(request, args)
        wrapper = stream
    else:
        def wrapper(request: gr.Request, *args):
            allowance.take(visitor(request), allowance.cost(args))
            return call_fn(request, args)
    wrapper.__name__ = getattr(getattr(fn, "func", fn), "__name__", action)
    return wrapper
