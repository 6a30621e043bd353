"""Which renderer draws each tab, from which controls, into which outputs: the table app.py wires.

Controls and outputs are named by the attribute the app keeps its component (or its list of components)
under: `prompt` is `ui.prompt`, `tokens_out` the Tokens tab's figures. A tab's inputs go to its renderer
(toyviz.app.views, one module per tab) in the order listed, after the explorer. Plain Python: no Gradio here.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from toyviz.app.views import (attention, circuits, experiments, features, inside, layernorm, model, positional, residual,
                              sampling, tokens, translation, why)
from toyviz.errors import UserError, fault
from toyviz.app.explorer import Explorer


@dataclass(frozen=True)
class Tab:
    render: Callable                    # views.<tab>.<name>_view(explorer, *inputs) → note and figures
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    controls: tuple[str, ...] = ()      # its own inputs whose change redraws it
    api: str = ""                       # its HTTP endpoint's name (default: the tab's)
    kept: bool = True                   # its answer depends on its inputs alone, so is kept (toyviz.app.drawn)
    allowance: str = "view"             # what each of its redraws counts against (toyviz.serving.limits.ALLOWANCES)
    queue: str = ""                     # the queue its events share with the actions of that name (app.py), if any


TABS = {
    "tokens": Tab(tokens.tokens_view, ("prompt", "projector", "model"), ("note", "tokens_out")),
    "positional": Tab(positional.positions_view, ("prompt", "metric", "projector", "model"), ("note", "positional_out"),
                      ("metric",)),
    "attention": Tab(attention.attention_view, ("prompt", "layer", "head", "mode", "ablate", "projector", "model"),
                     ("note", "attention_out"), ("layer", "head", "mode", "ablate")),
    "inside": Tab(inside.inside_view, ("prompt", "layer", "head", "query", "last_word", "projector"),
                  ("note", "inside_out"), ("query", "last_word")),
    "layernorm": Tab(layernorm.layernorm_view, ("prompt", "norm_name", "ln_position", "projector", "model"),
                     ("note", "layernorm_out"), ("norm_name", "ln_position")),
    "residual": Tab(residual.residual_view, ("prompt", "res_position", "projector", "model"), ("note", "residual_out"),
                    ("res_position",)),
    # these two may answer "still loading" while the n-gram index or the features load: never kept
    "why": Tab(why.why_view, ("prompt", "why_token", "projector"), ("note", "why_out"), ("why_token",), kept=False,
               allowance="why"),
    "features": Tab(features.features_view, ("prompt", "feature", "feature_search", "projector"),
                    ("note", "features_out"), ("feature", "feature_search"), kept=False),
    "sample": Tab(sampling.next_token_view, ("prompt", "temperature", "top_k", "top_p", "projector"), ("note", "bars"),
                  ("temperature", "top_k", "top_p"), "next_token"),
    "translate": Tab(translation.translate_view,
                     ("source", "beam", "attention_kind", "tr_layer", "tr_head", "projector", "register"),
                     ("note", "spanish", "translate_out"), ("attention_kind", "tr_layer", "tr_head", "register"),
                     allowance="translate"),
    "experiments": Tab(experiments.experiments_view, ("prompt", "exp_variants", "exp_x", "projector"),
                       ("experiments_out",), ("exp_variants", "exp_x")),
    "model": Tab(model.model_view, ("prompt", "snapshot", "x_axis", "projector"), ("model_out",),
                 ("snapshot", "x_axis")),
    # last: the page's every-input endpoints (/export) take its two boxes after the older tabs' inputs. Its target
    # and supernodes redraw on Enter (app.py), not on each keystroke: a new target is a new graph (seconds), computed
    # in the circuits' own queue (a few at once, whichever event asks: their memory is bounded by how many)
    "circuits": Tab(circuits.circuits_view, ("prompt", "circuit_target", "supernodes", "projector"),
                    ("note", "circuits_out"), allowance="circuit", queue="circuit"),
}


# attribution graphs computed at once, whichever event asks (the tab, its endpoint, an intervention): each takes up to
# ~0.5 GB at the circuits' caps (docs/deploying.md), so this bounds their memory; a worker computes one at a time
QUEUES = {"circuit": 2}


def queue(name: str, at_once: int) -> dict:
    """The Gradio queue settings of tab `name`'s events: its own, `at_once` computed at once, or the queue it shares
    with the actions of its Tab.queue (QUEUES: how many at once)."""
    shared = TABS[name].queue
    return dict(concurrency_limit=QUEUES[shared], concurrency_id=shared) if shared else dict(concurrency_limit=at_once)


def draw_every_tab(explorer: Explorer, values: dict[str, object]) -> float:
    """Every tab drawn once for these input values (by name), before a server answers: a class opens the
    link on the first values and finds their traces cached, and what the tabs build on first use (the
    n-gram index, the features) is part of the start. A tab that cannot draw (no GPT loaded) is left to
    say why to its visitors; a fault is logged with its traceback, and the server starts all the same (the
    other tabs work). → seconds taken."""
    start = time.perf_counter()
    for name, tab in TABS.items():
        try:
            tab.render(explorer, *[values[key] for key in tab.inputs])
        except UserError:
            pass
        except Exception as err:
            fault(f"drawing the {name} tab before serving", err)
    return time.perf_counter() - start
