"""Tabs drawn once per view: a tab's answer to the same inputs, kept as the page receives it.

A hall opening the link sends the same first view a hundred times (the page's restore and its tab's
redraw), and a lecture's step sends the same view to every page that follows it. A renderer is a pure
function of its inputs and the loaded models, so its answer can be kept: the figures already turned into
the JSON the page gets (plotly's validation and serialisation were most of a redraw's cost once the trace
is cached), bounded in entries and bytes. An answer that raised (a user's mistake, a fault) is not kept.
"""
from __future__ import annotations

from toyviz.app.widgets import as_plot_data
from toyviz.i18n import current
from toyviz.serving.memory import LRU, MB

VIEWS_KEPT, BYTES_KEPT = 256, 48 * MB


def sent_bytes(outputs: tuple) -> int:
    """What a kept answer holds: its JSON and text."""
    return sum(len(getattr(value, "plot", value)) if isinstance(getattr(value, "plot", value), str) else 0
               for value in outputs)


class Drawn:
    def __init__(self, views: int = VIEWS_KEPT, budget: int = BYTES_KEPT):
        self.answers = LRU(views, budget, weigh=sent_bytes)

    def remember(self, name: str, render):
        """render (inputs → outputs) answering each distinct inputs once: figures as PlotData, the rest as is."""
        def draw(*inputs):
            # a checkbox group's list as a tuple; the language the answer is said in (toyviz.i18n) is part of it
            key = (name, current(), *(tuple(i) if isinstance(i, list) else i for i in inputs))
            try:
                hash(key)
            except TypeError:                       # an input Gradio gives as a dict: drawn each time
                return render(*inputs)
            return self.answers.get(key, lambda: tuple(as_plot_data(v) for v in render(*inputs)))
        draw.__name__ = getattr(render, "__name__", name)
        draw.__wrapped__ = render
        return draw
