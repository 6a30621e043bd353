"""The app's own Gradio building blocks: a plot that keeps each figure's download settings, a slider
that takes its range from toyviz.settings.controls (and leaves a value past it to the renderer's rule), and
how an error reaches the page (`friendly`): a user's mistake (toyviz.errors.UserError) as their message,
anything else as a fault of ours with an id.
The package's Gradio code is here and in toyviz.app.layout, which places these pieces on the page; the
renderers (toyviz.app.views) and figures stay free of it.
"""
from __future__ import annotations

import functools
import html
import inspect
import json
import logging
import textwrap
import threading
from contextlib import contextmanager

import gradio as gr
from gradio.components.plot import PlotData

from toyviz.errors import LoggedFault, UserError, fault
from toyviz.i18n import LANGUAGES, current, mistake, said, t
from toyviz.app.figures import FigureJSON, figure_json, message
from toyviz.settings.controls import DEFAULTS, RANGES

# the page script the app wires in
TOGGLE_PROJECTOR = "(on) => { document.body.classList.toggle('projector', on); }"
# a paragraph's number scrolls to its panel in place: a plain "#id" link resolves against the page's
# <base href> and would reload the app without its query (tab, prompt)
SCROLL_TO_PANEL = ("element.addEventListener('click', (event) => { const a = event.target.closest('a[href^=\"#\"]');"
                   " if (!a) return; event.preventDefault(); const panel = document.getElementById(a.hash.slice(1));"
                   " if (panel) panel.scrollIntoView({behavior: 'smooth', block: 'start'}); });")
log = logging.getLogger("toyviz")


class Fault(gr.Error):
    """A fault of ours as Gradio shows it: `in_place` draws it apart from a user's mistake."""


@contextmanager
def whose_error(fn):
    """A user's mistake (UserError) becomes one log line (which renderer, what) and their message; anything
    else is a fault: logged with its traceback under an id (toyviz.errors.fault), and the message says only
    that it is ours, with the id. Either stays on the page until closed: not a toast that fades before a hall
    has read it. A gr.Error raised inside (a nested friendly, a refusal) has already been said."""
    where = getattr(getattr(fn, "func", fn), "__name__", "?")
    try:
        yield
    except gr.Error:
        raise
    except LoggedFault as err:                  # logged where it happened (a worker), with its id
        raise spoken(Fault(str(err), duration=None, print_exception=False)) from None
    except UserError as err:
        log.warning("rejected input to %s: %s", where, err)
        raise spoken(gr.Error(said(err), duration=None, print_exception=False)) from None
    except Exception as err:
        raise spoken(Fault(fault(where, err), duration=None, print_exception=False)) from None


def spoken(error: gr.Error) -> gr.Error:
    """The error marked with the language it was said in: `in_place` titles its figures in it, outside the event's
    language (toyviz.i18n.in_visitors_language ends where the error leaves the event's function)."""
    error.lang = current()
    return error


def friendly(fn):
    """fn with its errors said in the page, whose they are (`whose_error`). A generator's updates stream
    through, None meaning "leave this output as it is"."""
    if inspect.isgeneratorfunction(getattr(fn, "func", fn)):
        @functools.wraps(fn)
        def stream(*args, **kwargs):
            with whose_error(fn):
                for update in fn(*args, **kwargs):
                    yield tuple(gr.skip() if value is None else value for value in update)
        return stream

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with whose_error(fn):
            return fn(*args, **kwargs)
    return wrapper


def one_per_visitor(stream_fn):
    """stream_fn (a generator function) run at most once at a time per visitor (a page's session; each
    API client has its own): with a class on one machine, nobody holds two of the workers a stream
    needs. A second start while the first streams is refused with a message. Gradio fills `request`."""
    streaming, lock = set(), threading.Lock()

    def stream(request: gr.Request, *args):
        visitor = getattr(request, "session_hash", None) or object()     # no session: a visitor of its own
        with lock:
            if visitor in streaming:
                raise mistake("errors.streaming")
            streaming.add(visitor)
        try:
            yield from stream_fn(*args)
        finally:
            with lock:
                streaming.discard(visitor)
    stream.__name__ = getattr(getattr(stream_fn, "func", stream_fn), "__name__", "stream")
    return stream


MESSAGE_LINE = 60            # characters a line of an in-place message holds (it must fit a figure on a projector)


def in_place(fn, outputs: list):
    """fn (already `friendly`) for the page's own events, a stream's too: a user's mistake or a fault of ours
    replaces every figure the event would draw with the message, the first text output says it too and text
    boxes are emptied, until the next action — where the eye is, not in a toast that fades or sits in a corner, and
    no output outlives the event that made it (a Spanish line beside the message would pass for the
    translation of what the box says now). The named HTTP endpoints keep raising (their callers want an
    error, not a picture of one)."""
    if inspect.isgeneratorfunction(fn):
        @functools.wraps(fn)
        def stream(*args):
            try:
                yield from fn(*args)
            except gr.Error as err:
                yield placeholders(err.message, outputs, isinstance(err, Fault), getattr(err, "lang", None))
        return stream

    @functools.wraps(fn)
    def wrapper(*args):
        try:
            return fn(*args)
        except gr.Error as err:
            return placeholders(err.message, outputs, isinstance(err, Fault), getattr(err, "lang", None))
    return wrapper


def placeholders(text: str, outputs: list, ours: bool = False, lang: str | None = None) -> list:
    """The message in place of each output: a figure saying it (titled as the user's mistake or, `ours`, a
    fault of ours), the first Markdown/HTML saying it, later ones and text boxes emptied (a table of the
    previous prompt's heads would pass for this one's), the rest unchanged."""
    lines = "<br>".join(html.escape(line) for line in textwrap.wrap(text, MESSAGE_LINE))
    title = t("errors.title_ours" if ours else "errors.title_input", lang)
    values, said = [], False
    for output in outputs:
        if isinstance(output, FigurePlot):
            values.append(message(lines, title, filename="toyviz-message"))
        elif isinstance(output, (gr.Markdown, gr.HTML)):
            values.append("" if said else f"⚠ **{text}**" if isinstance(output, gr.Markdown) else
                          f"<p class='error-note'>⚠ <b>{html.escape(text)}</b></p>")
            said = True
        elif isinstance(output, gr.Textbox):
            values.append("")
        else:
            values.append(gr.skip())
    return values


def clamp_in_page(inputs: list) -> str | None:
    """JavaScript an event runs in the page before it sends `inputs`: a number typed into a plain slider's box
    past its range goes as the nearest bound, as dragging would (the server would refuse it, and the
    figures would stay as they were). A control's slider (`slider`) sends what was typed: its renderer settles
    it and says so. None when no input is a plain slider."""
    clamps = [f"a[{i}] = Math.min(Math.max(Number(a[{i}]), {c.minimum}), {c.maximum});"
              for i, c in enumerate(inputs) if isinstance(c, gr.Slider) and not isinstance(c, SettledSlider)]
    return "(...a) => { " + " ".join(clamps) + " return a; }" if clamps else None


class SettledSlider(gr.Slider):
    """A control's slider: a value past its range (typed into its box, from a link, from the API) reaches the
    renderer, which settles it by the one rule and says what it changed in the tab's note
    (toyviz.settings.controls.settle), where Gradio would refuse it with its own words in a toast. The box
    itself shows the nearest bound once left (Gradio's own doing)."""

    def get_block_name(self) -> str:
        return "slider"

    def preprocess(self, payload):
        return payload


class FigurePlot(gr.Plot):
    """gr.Plot that keeps each figure's download settings: the camera button saves a PNG at 2x under
    the file name the figure builder chose (Gradio's front end reads a "config" key next to data/layout)."""

    api_info_once = None

    def get_block_name(self) -> str:
        return "plot"

    def api_info(self):
        """gr.Plot's, computed once for all: Gradio builds the component anew for every update that leaves
        it unchanged (gr.skip(), a streaming generation's figures), and each new one generated the same
        JSON schema again on the event loop (15 % of its time under a class, profiled)."""
        if FigurePlot.api_info_once is None:
            FigurePlot.api_info_once = super().api_info()
        return FigurePlot.api_info_once

    def postprocess(self, value):
        return super().postprocess(as_plot_data(value))


def plot_data(figure) -> PlotData:
    """A plotly figure (or its FigureJSON, made in a worker) as the page receives it: its JSON with its
    download settings (a "config" key)."""
    return PlotData(type="plotly", plot=str(figure if isinstance(figure, FigureJSON) else figure_json(figure)))


def as_plot_data(value):
    """value as a plot's output: a figure (or its JSON) as PlotData, anything else (text, a skip) as it is."""
    return plot_data(value) if hasattr(value, "to_json") or isinstance(value, FigureJSON) else value


def plot(elem_id: str, label: str = "", visible: bool = True) -> gr.Plot:
    return FigurePlot(label=label or None, elem_id=elem_id, show_label=bool(label), visible=visible)


def slider(name: str, label: str, step: float = 1, upper: int | None = None, **kwargs) -> gr.Slider:
    """A slider whose range is its control's in toyviz.settings.controls (upper: the model-dependent maximum)."""
    low, high = RANGES[name]
    return SettledSlider(low, high if high is not None else max(low + 1, upper), value=DEFAULTS[name], step=step,
                     label=label, **kwargs)


def press_redraw(tab: str) -> str:
    """JavaScript that presses tab `tab`'s hidden redraw button: its one drawing event (page.wire_tabs), so whatever
    asks for the tab's drawing this way queues behind the page's last draw of it instead of racing it."""
    return f"() => document.getElementById('redraw-{tab}').click()"


def redraw_current(ui, tabs: dict) -> str:
    """JavaScript that presses the hidden redraw button of the tab on screen, once the page has applied what the
    event before it changed (a deep link's or a lesson's tab). An event whose outputs were every tab's made
    Gradio build a new component for each output it left unchanged: ~25 ms of server CPU a redraw for 58
    outputs, against a few for one tab's. (The tab on screen is read off the page, by its label in the page's
    language: `ui.current` is server-side.)"""
    drawn = [*tabs, *(["watch"] if hasattr(ui, "tab_watch") else [])]        # Watch it learn: page.wire_watch
    # its label in every language (toyviz.i18n: a tab is labelled "tabs.<name>"), the built one too
    names = {label: name for name in drawn
             for label in [getattr(ui, f"tab_{name}").label] + [t(f"tabs.{name}", lang) for lang in LANGUAGES]}
    return ("async () => { await new Promise((done) => requestAnimationFrame(() => setTimeout(done)));"
            f" const names = {json.dumps(names)};"
            " const tab = document.querySelector('#tabs [role=tab][aria-selected=true]');"
            " const name = tab && names[tab.textContent.trim()];"
            " document.getElementById('redraw-' + name)?.click(); }")
