"""The app's own Gradio building blocks: a plot that keeps each figure's download settings and a
slider that takes its range from toyviz.controls. The only Gradio code in the package besides
app.py's wiring; the renderers (toyviz.views) and figures stay free of it.
"""
from __future__ import annotations

import json

import gradio as gr
from gradio.components.plot import PlotData

from .controls import DEFAULTS, RANGES
from .figures import config_for


class FigurePlot(gr.Plot):
    """gr.Plot that keeps each figure's download settings: the camera button saves a PNG at 2x under
    the file name the figure builder chose (Gradio's front end reads a "config" key next to data/layout)."""

    def get_block_name(self) -> str:
        return "plot"

    def postprocess(self, value):
        if hasattr(value, "to_json"):
            config = json.dumps(config_for((value.layout.meta or {}).get("filename", "toyviz")))
            return PlotData(type="plotly", plot=value.to_json()[:-1] + ',"config":' + config + "}")
        return super().postprocess(value)


def plot(elem_id: str, label: str = "", visible: bool = True) -> gr.Plot:
    return FigurePlot(label=label or None, elem_id=elem_id, show_label=bool(label), visible=visible)


def slider(name: str, label: str, step: float = 1, upper: int | None = None, **kwargs) -> gr.Slider:
    """A slider whose range is its control's in toyviz.controls (upper: the model-dependent maximum)."""
    low, high = RANGES[name]
    return gr.Slider(low, high if high is not None else max(low + 1, upper), value=DEFAULTS[name], step=step,
                     label=label, **kwargs)
