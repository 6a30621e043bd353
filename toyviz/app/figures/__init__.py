"""Figures: pure functions (trace or tensors, options) → plotly Figure, one module per tab.

This file holds what every figure shares: the house style (`style`, with a projector mode for
a lecture hall), the download-button config (`config_for`), readable unique token labels, and
the one heatmap helper every heatmap goes through (float32 numpy arrays, which plotly 7 sends
as compact base64, and nan-aware average pooling for big matrices).
"""
from __future__ import annotations

import html
import json
import math
import re
import threading

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import torch
from plotly.subplots import make_subplots

BASE_FONT = 13                # px, laptop screen
CELL_FONT = 12                # px, text inside heatmap cells (plotly's default shrinks it to fit: unreadable)
PROJECTOR_SCALE = 1.7         # fonts and tick labels on a projector (≥ 1.6×)
PROJECTOR_HEIGHT = 1.4        # figures also grow taller there
MASK_GREY = "#c8c8c8"         # what a masked (never attended) cell looks like: NaN over this background
FONT_FAMILY = "Inter, Helvetica, Arial, sans-serif"
USED_TRACES = ("heatmap", "bar", "scatter", "histogram")
UNUSED_LAYOUT = ("polar", "ternary", "scene", "geo")


_TEMPLATES: dict[tuple[bool, bool], go.layout.Template] = {}     # (projector, maps) → a house template
_TEMPLATE_LOCK = threading.Lock()


def _template(projector: bool, maps: bool) -> go.layout.Template:
    """The house template (plotly_white with the house fonts) for laptop or projector, and for charts
    or maps; every axis and annotation of a figure inherits from it (one template instead of updating
    each subplot's axes, which is slow in plotly).

    Shared by every figure and every Gradio worker thread, so it is built once, under a lock, and
    never changed afterwards; a figure only ever copies it (plotly's validator turns the Template it
    is given into the layout's own copy, reading nothing but the top-level dict)."""
    key = (projector, maps)
    template = _TEMPLATES.get(key)
    if template is None:
        with _TEMPLATE_LOCK:
            template = _TEMPLATES.get(key)
            if template is None:
                template = _TEMPLATES[key] = _build_template(projector, maps)
    return template


def _build_template(projector: bool, maps: bool) -> go.layout.Template:
    scale = PROJECTOR_SCALE if projector else 1.0
    font = round(BASE_FONT * scale)
    # plotly_white as plain dicts (a deep copy), never its graph objects: pio.templates is global, and a
    # plotly object creates its child objects lazily on first read, so threads reading the same one for
    # the first time each make their own children and then fail to find themselves among their parent's
    # (`ValueError: Invalid value` from BaseFigure._index_is — issue 17)
    white = pio.templates["plotly_white"].to_plotly_json()
    # only the trace types and axes toyviz draws: each figure validates its template, and all of
    # plotly_white (24 trace types, 3-D, polar, geo …) made that 30 ms a figure
    layout = {k: v for k, v in white["layout"].items() if k not in UNUSED_LAYOUT}
    data = {kind: white["data"][kind] for kind in USED_TRACES}
    # text printed in heatmap cells: plotly's default shrinks it to fit, unreadably
    # a colour bar's title along its right side, not on top, where it sat on the top tick ("1" under "probs")
    # and ran into the next panel's row labels
    side = lambda bar: dict(bar or {}, title=dict((bar or {}).get("title", {}), side="right"))
    heatmap = data["heatmap"][0]
    data["heatmap"] = [dict(heatmap, textfont=dict(size=round(CELL_FONT * scale)), colorbar=side(heatmap.get("colorbar")))]
    coloraxis = layout.get("coloraxis", {})
    layout["coloraxis"] = dict(coloraxis, colorbar=side(coloraxis.get("colorbar")))
    template = go.layout.Template(layout=layout, data=data)
    axis = dict(tickfont_size=font, title_font_size=font)
    if maps:        # masked cells are NaN: the plot area shows the mask grey there, with no grid over it
        template.layout.plot_bgcolor = MASK_GREY
        axis.update(showgrid=False, zeroline=False)
    template.layout.update(
        font=dict(family=FONT_FAMILY, size=font), title_font_size=round(font * 1.25),
        hoverlabel_font_size=font, legend_font_size=font, xaxis=axis, yaxis=axis,
        annotationdefaults=dict(font_size=font))
    return template


def figure(data=None, layout: dict | None = None) -> go.Figure:
    """A new plotly Figure for a builder to fill, with plotly's property checks off and no default
    template. Plotly checks every property against its schema as it is set, and copies its large
    default template into each new figure; update_layout parses every key it is given. Together that
    was most of what the Attention tab's figures cost to build (issue 17). A builder that gives its
    whole `layout` here, as nested dicts (an unchecked "xaxis_title" would not be expanded), skips
    update_layout too. `style` sets the house template. The tests rebuild every figure with the checks
    on and compare (tests/test_threads.py)."""
    return go.Figure(data, layout={"template": {}, **(layout or {})}, _validate=False)


def subplots(**kwargs) -> go.Figure:
    """plotly's make_subplots into a `figure()`; the subplot titles lose make_subplots' fixed 16 px
    font, so they follow the house template like every other annotation (projector included)."""
    fig = make_subplots(figure=figure(), **kwargs)
    if fig.layout.annotations:
        fig.layout.annotations = [{k: v for k, v in a.to_plotly_json().items() if k != "font"}
                                  for a in fig.layout.annotations]
    return fig


def style(fig: go.Figure, title: str, *, filename: str, projector: bool = False, height: int = 420,
          maps: bool = False) -> go.Figure:
    """Apply the house style: title, fonts, margins, height, and the suggested download filename
    in `fig.layout.meta["filename"]`; projector=True scales every text 1.7× and the height 1.4×;
    maps=True for heatmaps with masked cells (NaN): grey where they are, and no grid lines."""
    s = PROJECTOR_SCALE if projector else 1.0
    # set, not merged: these belong to style alone, and update_layout's merge costs a few ms a figure
    fig.layout.template = _template(projector, maps)
    fig.layout.title = dict(text=title, x=0.01, xanchor="left")
    fig.layout.height = round(height * (PROJECTOR_HEIGHT if projector else 1.0))
    # subplot titles sit just above the plots: leave the figure title room above them
    fig.layout.margin = dict(l=round(60 * s), r=round(30 * s), t=round((110 if fig.layout.annotations else 70) * s),
                             b=round(50 * s))
    fig.layout.meta = {"filename": filename}
    return fig


def config_for(filename: str) -> dict:
    """Plotly `config` for a figure: the camera button downloads a PNG at 2× under this filename
    (pass `fig.layout.meta["filename"]`)."""
    return {"toImageButtonOptions": {"format": "png", "scale": 2, "filename": filename},
            "displaylogo": False}


class FigureJSON(str):
    """A figure as the page receives it: its JSON, with its download settings under "config"."""


def figure_json(figure: go.Figure) -> FigureJSON:
    config = json.dumps(config_for((figure.layout.meta or {}).get("filename", "toyviz")))
    return FigureJSON(figure.to_json()[:-1] + ',"config":' + config + "}")


def as_sent(answer):
    """A renderer's answer (a figure, or a tuple of outputs) with every figure turned into its FigureJSON:
    what a worker process sends the server (toyviz.serving.workers), made once where it was drawn."""
    if hasattr(answer, "to_json"):
        return figure_json(answer)
    if isinstance(answer, (tuple, list)):
        return type(answer)(as_sent(value) for value in answer)
    return answer


def slug(text: str) -> str:
    """A filename-safe fragment: "block0.ln1" → "block0-ln1"."""
    return re.sub(r"[^A-Za-z0-9]+", "-", str(text)).strip("-")


def visible(piece: str) -> str:
    """A token piece as a label: spaces as ␣, newlines as ↵, other control characters in caret notation
    (^U for \\x15: two letters a hall can read; their Unicode pictures, ␕, are missing from common fonts
    and showed as empty boxes), anything else unprintable as �; HTML-safe (plotly renders labels as HTML,
    so "<|endoftext|>" must be escaped to show up)."""
    shown = "".join("␣" if c == " " else "↵" if c == "\n" else "⇥" if c == "\t" else c if c.isprintable()
                    else "^" + chr(ord(c) ^ 0x40) if ord(c) < 0x20 or ord(c) == 0x7F else "�" for c in piece)
    return html.escape(shown, quote=False)


# the narrowest plot area the app is laid out for: on a 1280-px-wide screen (a projector's 720p) a figure
# is ~1210 px wide, of which the margins, the row labels and a colour bar take ~300
PLOT_AREA_PX = 900


def cell_chars(columns: int, projector: bool = False) -> int:
    """How many characters of cell text fit in each of `columns` heatmap cells side by side (0: none):
    text longer than its cell spills over its neighbours' ("␣make␣the␣and")."""
    char_px = 0.62 * CELL_FONT * (PROJECTOR_SCALE if projector else 1.0)       # an average glyph of the font
    return max(0, int((PLOT_AREA_PX / max(1, columns) - 6) // char_px))


def cell_text(label: str, chars: int) -> str:
    """A `visible` label cut to `chars` characters with an ellipsis (its HTML entities kept whole)."""
    text = html.unescape(label)
    return label if len(text) <= chars else html.escape(text[: chars - 1] + "…", quote=False) if chars > 1 else ""


def token_labels(tokens: list[str]) -> list[str]:
    """Axis labels "3: ␣the": the position prefix keeps repeated tokens apart (plotly would merge
    equal category labels into one row)."""
    return [f"{i}: {visible(t)}" for i, t in enumerate(tokens)]


def candidate_label(piece: str, token_id: int) -> str:
    """A vocabulary entry as a unique label: "␣the (#276)"."""
    return f"{visible(piece)} (#{int(token_id)})"


def numpy(x) -> np.ndarray:
    """Tensor or array → float32 numpy on the CPU (what heatmaps and bars are given)."""
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu", torch.float32).numpy()
    return np.asarray(x, dtype=np.float32)


def pool(z: np.ndarray, max_rows: int, max_cols: int) -> tuple[np.ndarray, int, int]:
    """Average-pool a 2-D array in blocks so it has at most max_rows × max_cols cells, ignoring NaN
    (a block that is all NaN stays NaN) → (pooled, rows per block, columns per block)."""
    z = numpy(z)
    rows, cols = z.shape
    br, bc = math.ceil(rows / max_rows), math.ceil(cols / max_cols)
    if br == 1 and bc == 1:
        return z, 1, 1
    nr, nc = math.ceil(rows / br), math.ceil(cols / bc)
    padded = np.full((nr * br, nc * bc), np.nan, dtype=np.float32)
    padded[:rows, :cols] = z
    blocks = padded.reshape(nr, br, nc, bc)
    present = ~np.isnan(blocks)
    count = present.sum(axis=(1, 3))
    total = np.where(present, blocks, 0).sum(axis=(1, 3))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / count).astype(np.float32), br, bc


def heatmap(z, *, x=None, y=None, colorscale="Blues", zmin=None, zmax=None, zmid=None,
            hover: str = "%{y} → %{x}: %{z:.3f}", coloraxis: str | None = None, showscale: bool = True,
            text=None, texttemplate: str | None = None, colorbar_title: str | None = None) -> go.Heatmap:
    """The one heatmap every figure uses: float32 values, NaN cells left empty (the background
    shows through — grey where a figure marks masked cells), no hover on empty cells."""
    kwargs = dict(coloraxis=coloraxis) if coloraxis else dict(
        colorscale=colorscale, zmin=zmin, zmax=zmax, zmid=zmid, showscale=showscale,
        colorbar=dict(title=dict(text=colorbar_title)) if colorbar_title else None)
    return go.Heatmap(z=numpy(z), x=x, y=y, hoverongaps=False, hovertemplate=hover + "<extra></extra>",
                      text=text, texttemplate=texttemplate, **kwargs)


TOKENS_PER_ROW = 12


def tokens_per_row(projector: bool = False) -> int:
    """Cells a line of a `token_grid` holds: fewer on a projector, whose larger font needs wider cells
    (at 12 a line, "<|endoftext|>" spilled out of its cell at 720p)."""
    return round(TOKENS_PER_ROW / PROJECTOR_SCALE) if projector else TOKENS_PER_ROW


def token_grid(texts: list[str], values, *, hover_values: list[str], colorscale, zmin=None, zmax=None,
               per_row: int = TOKENS_PER_ROW, colorbar_title: str | None = None) -> go.Heatmap:
    """Tokens laid out like text, `per_row` to a line, each cell coloured by its value and showing
    its (already `visible`) text (used for prompts and for generated text)."""
    n = len(texts)
    rows = max(1, math.ceil(n / per_row))
    z = np.full((rows, per_row), np.nan, dtype=np.float32)
    text = np.full((rows, per_row), "", dtype=object)
    hover = np.full((rows, per_row), "", dtype=object)
    z.flat[:n] = numpy(values)
    text.flat[:n] = texts
    hover.flat[:n] = hover_values
    return go.Heatmap(z=z, text=text.tolist(), customdata=hover.tolist(), texttemplate="%{text}",
                      hovertemplate="%{customdata}<extra></extra>", hoverongaps=False, xgap=3, ygap=3,
                      colorscale=colorscale, zmin=zmin, zmax=zmax,
                      showscale=colorbar_title is not None,
                      colorbar=dict(title=dict(text=colorbar_title)) if colorbar_title else None)


def grid_axes(fig: go.Figure) -> go.Figure:
    """Axes for a `token_grid`: no ticks, first line on top."""
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False, autorange="reversed")
    return fig


def message(text: str, title: str, *, filename: str, projector: bool = False) -> go.Figure:
    """An empty figure that says why there is nothing to draw (e.g. a model without positions)."""
    fig = figure()
    fig.add_annotation(text=text, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False)
    fig.update_xaxes(visible=False)
    fig.update_yaxes(visible=False)
    return style(fig, title, filename=filename, projector=projector, height=240)


def standalone_html(figures: list[go.Figure], title: str) -> str:
    """One offline HTML page with the given figures (plotly.js embedded once), each keeping its
    PNG-at-2× download button and file name — what "export view" hands a lecturer."""
    import plotly.io as pio_html

    parts = [pio_html.to_html(fig, full_html=False, include_plotlyjs=(i == 0),
                              config=config_for((fig.layout.meta or {}).get("filename", "toyviz")))
             for i, fig in enumerate(figures)]
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
            f"<body style='font-family: sans-serif'><h1>{html.escape(title)}</h1>{''.join(parts)}</body></html>")
