"""Where the renderers compute: beside the page, or in worker processes (toyviz.serving.workers).

A renderer is `view(explorer, *inputs)`. In one process (tests, a notebook) it runs on the page's own
explorer; in a server with workers it runs in a worker, on the worker's explorer, and its figures come
back as the JSON the page gets. Either way the app wires the same function of the inputs alone.
"""
from __future__ import annotations

import functools
import inspect
import os

from toyviz.app.explorer import Explorer
from toyviz.app.figures import as_sent
from toyviz.app.tabs import TABS
from toyviz.app.views.export import export_page
from toyviz.errors import UserError
from toyviz.i18n import current, speaking
from toyviz.machine import CGROUP, container
from toyviz.serving.memory import MB
from toyviz.serving.workers import Workers, named, resolve

HOLD = f"{Explorer.__module__}:Explorer.load"      # what a worker holds: Explorer.load(gpt, translator, device)
SEND = f"{as_sent.__module__}:{as_sent.__name__}"  # what leaves a worker: figures as their JSON
# a worker's resident set: 599 MB once it holds the models and has drawn every tab (measured), with room for
# its caches filled to their byte budgets (toyviz/app/caches.py: 208 MB)
WORKER_BYTES = 800 * MB
# the server's own: 398 MB once the page is built (measured), 558 MB after a saturating run (docs/serving-a-class.md)
SERVER_BYTES = 800 * MB


def start_workers(count: int, gpt: str, translator: str, device: str | None, threads: int = 0,
                  start: bool = True) -> Workers:
    """`count` workers, each holding the explorer of these models, computing with `threads` torch threads each
    (0: the cores shared out among them); started now, or by `.start()` (start=False)."""
    return Workers(count, HOLD, (gpt, translator, device), send=SEND, threads=threads, start=start)


def default_workers(device: str | None, cgroup=CGROUP) -> int:
    """One worker per CPU the container allows, as many as its memory holds beside the server (0 where not one
    fits: the server computes itself, holding the models once); on a GPU, one: the device is the one that
    computes, and each process would hold a CUDA context of its own."""
    import torch
    device = device or os.environ.get("TOYVIZ_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    return 1 if device.startswith("cuda") else container(cgroup).fitting(WORKER_BYTES, SERVER_BYTES)


def in_language(explorer: Explorer, lang: str, view: str, *inputs):
    """A worker's call of `view` ("module:name") said in the language of the event that asked (a worker answers no
    event of its own: toyviz.i18n)."""
    with speaking(lang):
        return resolve(view)(explorer, *inputs)


def streamed_in_language(explorer: Explorer, lang: str, view: str, *inputs):
    """`in_language` for a generator view: every step said in `lang` (a worker runs a stream in one thread)."""
    with speaking(lang):
        yield from resolve(view)(explorer, *inputs)


def binder(explorer: Explorer, workers: Workers | None = None):
    """view → a function of the view's inputs alone, computed on `explorer` here or, given `workers`, in one of
    them, in the current event's language; named as the view. Until a worker has first held its models
    (a server answers before its workers are up: toyviz.app.serve), the view is computed here, on `explorer`."""
    def bind(view):
        if workers is None:
            return functools.partial(view, explorer)
        if inspect.isgeneratorfunction(view):
            def bound(*inputs):
                yield from (workers.stream(streamed_in_language, current(), named(view), *inputs) if workers.ever_up
                            else view(explorer, *inputs))
        else:
            def bound(*inputs):
                return (workers.call(in_language, current(), named(view), *inputs) if workers.ever_up
                        else view(explorer, *inputs))
        bound.__name__ = bound.__qualname__ = view.__name__    # not __wrapped__: the inputs are bound's own
        bound.__doc__ = view.__doc__
        return bound
    return bind


def export_tab(explorer: Explorer, tab: str, *inputs) -> str:
    """The tab's figures for these inputs as one standalone HTML page → its file (written where the app's
    exports are kept)."""
    if tab not in TABS:
        raise UserError(f"there is no tab {tab!r} to export: one of {', '.join(TABS)}")
    return export_page(tab, TABS[tab].render(explorer, *inputs))
