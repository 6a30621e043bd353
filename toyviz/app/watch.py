"""The "Watch it learn" tab: a live run (toyviz.training.live) started from the page, which every open page
watches as it trains, and a step slider over the run afterwards. Its layout (`tab`), its renderer
(`watch_view`: the run → status, figures and samples, no Gradio) and its events (`wire`): the tab is its
own, so app.py adds it with two calls.

Every page polls the run once a second while it trains (a Timer that switches itself off when the run
has ended). The figures of one record are drawn once and shared by every page asking for the same step
(`drawn`): a hall of pages costs one drawing per record, not one per page.
"""
from __future__ import annotations

import functools
import threading
from collections import OrderedDict

import gradio as gr

from toyviz.app.figures import live as figures
from toyviz.app.widgets import friendly, plot
from toyviz.training import live

EXPLAIN = """**Watch it learn.** Press *Start* and a tiny transformer trains on this server, in front of you:
every page open on this tab watches the same run. *An induction head forms*: a 2-layer attention-only model
sees random tokens that repeat. Tokens seen for the first time cannot be predicted (orange); tokens seen
before can, once a head learns to look at what followed the current token last time — the green curve's
sudden drop, as induction heads form in layer 1 and a layer-0 head turns towards the previous token.
*From noise to words*: a tiny GPT learns to write like the text below, a sample every few seconds."""

DEFAULT_TEXT = """To be, or not to be, that is the question:
Whether 'tis nobler in the mind to suffer
The slings and arrows of outrageous fortune,
Or to take arms against a sea of troubles
And by opposing end them. To die: to sleep;
No more; and by a sleep to say we end
The heart-ache and the thousand natural shocks
That flesh is heir to, 'tis a consummation
Devoutly to be wish'd. To die, to sleep;
To sleep: perchance to dream: ay, there's the rub;
For in that sleep of death what dreams may come
When we have shuffled off this mortal coil,
Must give us pause: there's the respect
That makes calamity of so long life;
For who would bear the whips and scorns of time,
The oppressor's wrong, the proud man's contumely,
The pangs of despised love, the law's delay,
The insolence of office and the spurns
That patient merit of the unworthy takes,
When he himself might his quietus make
With a bare bodkin? who would fardels bear,
To grunt and sweat under a weary life,
But that the dread of something after death,
The undiscover'd country from whose bourn
No traveller returns, puzzles the will
And makes us rather bear those ills we have
Than fly to others that we know not of?
Thus conscience does make cowards of us all;
And thus the native hue of resolution
Is sicklied o'er with the pale cast of thought,
And enterprises of great pith and moment
With this regard their currents turn awry,
And lose the name of action."""

POLL_S = 1.0
LONGEST = max(live.settings_for(recipe).steps for recipe in live.RECIPES)    # the step slider's end
LATEST, LAST_FINISHED = "the latest run", "the last finished run"


@functools.lru_cache(maxsize=1)
def shared_runs() -> live.LiveRuns:
    """The one LiveRuns of this server process: one run at a time, the same record for every page."""
    return live.LiveRuns()


def status(run: live.Run | None) -> str:
    if run is None:
        return "No run yet: pick a recipe and press **Start**."
    last = run.records[-1] if run.records else None
    where = f"step {last['step']:,} of {run.settings['steps']:,}, {last['elapsed']:.0f} s" if last else "starting…"
    state = {"starting": "starting", "running": "training", "finished": "finished", "stopped": "stopped",
             "failed": "failed"}[run.state]
    line = f"**{run.recipe}** run, seed {run.seed}: {state} ({where})."
    if run.recipe == "induction" and last:
        born = live.crossing_step(run, figures.BORN_AT)
        line += (f" The induction head was born at step **{born:,}** (score ≥ {figures.BORN_AT})." if born is not None
                 else " No induction head yet.")
    return line + (f"\n\n{run.error}" if run.state == "failed" else "")


def pick(runs: live.LiveRuns, which: str) -> live.Run | None:
    return runs.last_finished() if which == LAST_FINISHED else runs.current()


def draw_run(run: live.Run, upto: int | None, projector: bool) -> tuple:
    """(loss figure, heads figure, attention figure, samples) of a run at step `upto` (None: its latest)."""
    loss = figures.loss_curves(run, upto, projector=projector)
    if run.recipe == "text":
        return loss, None, None, figures.samples_markdown(run, upto)
    return (loss, figures.head_scores(run, upto, projector=projector),
            figures.attention_pattern(run, upto, projector=projector), "")


class RecordDrawings:
    """The last few runs' drawings, by what changes them (which run, how many records, its state, the step
    shown, projector mode): a hall of pages polling the same run costs one drawing per record."""

    def __init__(self, size: int = 64):
        self.size, self.kept, self.lock = size, OrderedDict(), threading.Lock()

    def __call__(self, run: live.Run, upto: int | None, projector: bool) -> tuple:
        key = (run.recipe, run.seed, run.started, len(run.records), run.state, upto, projector)
        with self.lock:
            if key in self.kept:
                self.kept.move_to_end(key)
                return self.kept[key]
        drawing = draw_run(run, upto, projector)
        with self.lock:
            self.kept[key] = drawing
            while len(self.kept) > self.size:
                self.kept.popitem(last=False)
        return drawing


drawn = RecordDrawings()


def watch_view(runs: live.LiveRuns, which: str, upto: float, projector: bool, recipe: str = "induction") -> tuple:
    """(status, loss figure, heads figure, attention figure, samples): the run picked, at step `upto`
    (-1: its latest); before any run, the loss axes of the recipe picked (None: a figure the run has not)."""
    run = pick(runs, which)
    if run is None:
        return status(run), figures.loss_before_a_run(recipe, projector=bool(projector)), None, None, ""
    return status(run), *drawn(run, None if upto is None or upto < 0 else int(upto), bool(projector))


def tab(ui):
    """The tab's components, kept on `ui` as watch_*."""
    with gr.Tab("Watch it learn", id="watch") as ui.tab_watch:
        gr.Markdown(EXPLAIN)
        with gr.Row():
            ui.watch_recipe = gr.Radio([("An induction head forms", "induction"), ("From noise to words", "text")],
                                       value="induction", label="recipe", elem_id="watch-recipe", scale=2)
            ui.watch_seed = gr.Number(value=0, precision=0, label="seed", elem_id="watch-seed", min_width=90)
            ui.watch_start = gr.Button("Start", variant="primary", elem_id="watch-start", min_width=90)
            ui.watch_stop = gr.Button("Stop", elem_id="watch-stop", min_width=90)
        ui.watch_text = gr.Textbox(value=DEFAULT_TEXT, lines=4, max_lines=8, elem_id="watch-text",
                                   label=f"text to learn from (From noise to words; {live.MIN_TEXT_CHARS:,} to "
                                         f"{live.MAX_TEXT_CHARS:,} characters)")
        with gr.Row():
            ui.watch_which = gr.Radio([LATEST, LAST_FINISHED], value=LATEST, label="show", elem_id="watch-which")
            ui.watch_step = gr.Slider(-1, LONGEST, value=-1, step=1, label="step shown (-1 = the latest)",
                                      elem_id="watch-step", scale=2)
        ui.watch_status = gr.Markdown(status(None), elem_id="watch-status")
        ui.watch_out = [plot("watch-loss-plot"), plot("watch-heads-plot"), plot("watch-attention-plot"),
                        gr.Markdown(elem_id="watch-samples")]
        ui.watch_tick = gr.Timer(POLL_S, active=False)


def wire(ui, runs: live.LiveRuns | None = None):
    """Start, Stop, the slider and the poll; the tab draws the run as it stands when selected."""
    runs = runs or shared_runs()
    view_inputs = [ui.watch_which, ui.watch_step, ui.projector, ui.watch_recipe]
    outputs = [ui.watch_status, *ui.watch_out, ui.watch_tick]

    def draw(which, upto, projector, recipe):
        run = pick(runs, which)
        status_line, *figs, samples = watch_view(runs, which, upto, projector, recipe)
        # a figure this run does not have (the text recipe's heads and attention) is hidden, not an empty frame
        shown = [gr.update(value=fig, visible=fig is not None) for fig in figs]
        return [status_line, *shown, samples, gr.Timer(active=bool(run and run.running))]

    @friendly
    def start(seed, text, which, upto, projector, recipe):
        runs.start(recipe, seed=int(seed or 0), text=text or "")
        return draw(LATEST, -1, projector, recipe)[:-1] + [gr.Timer(active=True)]

    def stop(*view):
        runs.stop()
        return draw(*view)

    ui.watch_start.click(start, [ui.watch_seed, ui.watch_text, *view_inputs], outputs,
                         api_visibility="private")
    ui.watch_stop.click(stop, view_inputs, outputs, api_visibility="private")
    for event in (ui.tab_watch.select, ui.watch_which.input, ui.watch_step.change, ui.projector.change,
                  ui.watch_recipe.input):
        event(draw, view_inputs, outputs, api_visibility="private")
    ui.watch_tick.tick(draw, view_inputs, outputs, api_visibility="private")
