"""Each visitor's share of the expensive actions, so one client in a loop cannot spend the class's machine.

Gradio's queue bounds how many requests run at once (app.py's concurrency limits and pools), not who
sends them: a script calling /export or /translate (beam 8) back to back gets a worker every time one
frees up. Here each person may start at most so much of an action in any minute; past it, the request is
refused at once with a message saying how long to wait, and the next visitor's request is served. Every
action that computes has an allowance (`limited` refuses a name without one), the page's own events as
well as the HTTP endpoints: a script can send the page's events too.

A person is an address and a session together. The session alone will not do: an API caller chooses its
own `session_hash`, a fresh one per call if it likes. So an address (the client's, as the trusted proxies
report it: toyviz.serving.proxy) also has an allowance of its own, PEOPLE_PER_ADDRESS people's worth: a
client inventing sessions gets that much and no more, while a family or a small class behind one router
still each get their own. A school whose whole class reaches a public Space through one address raises
it (`TOYVIZ_PEOPLE_PER_ADDRESS`). The allowances sit well above what a student does (the load
benchmark's students act every 1-4 s: 15 % translations, 25 % 64-token generations), so a class never
meets them; tests/test_serving.py checks both, tests/test_hostile.py a client changing its session.
"""
from __future__ import annotations

import inspect
import math
import os
import threading
import time
from collections import deque

import gradio as gr

from toyviz.i18n import in_visitors_language
from toyviz.serving.proxy import client_address, trusted_hops
from toyviz.settings.controls import MAX_BEAM, MAX_NEW_TOKENS

WINDOW_S = 60.0
PEOPLE_PER_ADDRESS = int(os.environ.get("TOYVIZ_PEOPLE_PER_ADDRESS", 8))


class Allowance:
    """At most `per_minute` of an action (counted in `unit`, one per request unless `cost` weighs it)
    per person in any WINDOW_S seconds, and PEOPLE_PER_ADDRESS times that per address. A single request
    costing more than the whole allowance is let through when the person has used none of it (else it
    could never run)."""

    def __init__(self, what: str, per_minute: float, unit: str, cost=lambda args: 1.0):
        self.what, self.per_minute, self.unit, self.cost = what, per_minute, unit, cost
        self.used: dict[object, deque] = {}          # person or ("address", a) → (time, cost) of starts in the window
        self.lock = threading.Lock()

    def take(self, person, cost: float = 1.0, now: float | None = None, address: str | None = None) -> None:
        """Count a start of `cost` for person (and their address, if given), or raise gr.Error saying how
        long to wait."""
        now = time.monotonic() if now is None else now
        with self.lock:
            for who in list(self.used):              # forget the window's past: memory follows the visitors of a minute
                starts = self.used[who]
                while starts and starts[0][0] <= now - WINDOW_S:
                    starts.popleft()
                if not starts:
                    del self.used[who]
            accounts = [(person, self.per_minute, "You have")]
            if address is not None:
                accounts.append((("address", address), self.per_minute * PEOPLE_PER_ADDRESS,
                                 f"Visitors from your address ({address}) have"))
            for who, limit, whose in accounts:
                starts = self.used.get(who, ())
                spent = sum(c for _, c in starts)
                if starts and spent + cost > limit:
                    wait = starts[0][0] + WINDOW_S - now
                    raise gr.Error(f"{whose} {self.what} {spent:g} {self.unit} in the last minute; "
                                   f"{'each visitor' if who is person else 'an address'} may use {limit:g} a "
                                   f"minute, so that the class shares the machine. Try again in "
                                   f"{max(1, round(wait))} s.", duration=None, print_exception=False)
            for who, _, _ in accounts:
                self.used.setdefault(who, deque()).append((now, cost))


def number(value, default: float, low: float, high: float) -> float:
    """A cost read from a request's input, as its renderer will settle it (toyviz.settings.controls): the nearest
    bound past the range, the default for no number at all (NaN included). Never a negative cost: it would
    refill the allowance it is taken from."""
    try:
        value = float(value)
    except (TypeError, ValueError, OverflowError):
        return default
    return default if math.isnan(value) else min(max(value, low), high)


# by action: app.py's export button, patching button, generation, the tabs' redraws (by toyviz.app.tabs' Tab.allowance:
# every tab's page events and endpoint), the graphs of the Circuits tab and their interventions
ALLOWANCES = {
    "export": Allowance("exported", 6, "views"),
    "patching": Allowance("patched", 12, "pairs"),
    "why": Allowance("asked", 20, "\"why this token?\" questions"),
    # work grows with the beam: a beam of 8 counts as two sentences at the class's beam 4
    "translate": Allowance("translated", 12, "sentences (at beam 4; a beam of 8 counts twice)",
                           cost=lambda args: number(args[1] if len(args) > 1 else 4, 4, 1, MAX_BEAM) / 4),
    # the inputs' fifth is max_new; a class's students generate up to ~5 × 64 tokens a minute
    "generate": Allowance("generated", 1024, "tokens",
                          cost=lambda args: number(args[4] if len(args) > 4 else 80, 80, 1, MAX_NEW_TOKENS)),
    # a tab drawn: tens of ms, ~0.5 s for 256 tokens (docs/deploying.md); a student dragging sliders draws a few a second
    "view": Allowance("drawn", 240, "views"),
    # an attribution graph: up to ~6 s of a core and ~0.5 GB at its caps (toyviz.interpret.circuits); redrawing
    # one already computed (a new supernode grouping, the projector) counts as well
    "circuit": Allowance("traced", 12, "attribution graphs"),
    "circuit_intervene": Allowance("ran", 30, "interventions"),
    "kv_cache": Allowance("compared", 20, "KV-cache timings"),
    # a lecture started (the Lessons picker, a ?lesson= link): a row in the store and a join code; a lecturer
    # starts one a lesson (and may flip through a few in the picker), a script in a loop thousands (the store also
    # keeps few live per address: toyviz.classroom.store)
    "lecture": Allowance("started", 10, "lectures"),
}


def visitor(request: gr.Request | None) -> tuple[tuple[str, str], str]:
    """(the person: address and session, the address): the address as the trusted proxies report it, the
    session the page's (an API client's own, or none)."""
    headers = getattr(request, "headers", None) or {}
    peer = getattr(getattr(request, "client", None), "host", None)
    address = client_address(headers.get("x-forwarded-for"), peer, trusted_hops())
    return (address, getattr(request, "session_hash", None) or ""), address


def charge(action: str, request: gr.Request | None, args: tuple = (), allowances: dict = ALLOWANCES) -> str:
    """Count one start of `action` (its cost read from the request's inputs `args`) against the request's person
    and address → the address; gr.Error, saying how long to wait, once either has used up the allowance."""
    allowance = allowances[action]
    person, address = visitor(request)
    allowance.take(person, allowance.cost(args), address=address)
    return address


def limited(fn, action: str, allowances: dict = ALLOWANCES):
    """fn, refused (gr.Error) once its person or address has used up the action's allowance, run in the
    visitor's language (toyviz.i18n: every page event passes here). Gradio fills `request`; fn gets it too where it
    asks for one (toyviz.app.widgets.one_per_visitor). A generator stays
    one. Every action has an allowance: a name without one is a mistake in the wiring (KeyError)."""
    if action not in allowances:                    # a name without an allowance fails at wiring, not at a visit
        raise KeyError(f"no allowance named {action!r}: add it to toyviz.serving.limits.ALLOWANCES")
    passes_request = "request" in inspect.signature(fn).parameters
    call_fn = (lambda request, args: fn(request, *args)) if passes_request else (lambda request, args: fn(*args))

    def take(request, args):
        charge(action, request, args, allowances)

    if inspect.isgeneratorfunction(fn):
        def stream(request: gr.Request, *args):
            take(request, args)
            yield from call_fn(request, args)
        wrapper = stream
    else:
        def wrapper(request: gr.Request, *args):
            take(request, args)
            return call_fn(request, args)
    wrapper.__name__ = getattr(getattr(fn, "func", fn), "__name__", action)
    return in_visitors_language(wrapper)        # what it says (a message, a figure's words) in the visitor's
