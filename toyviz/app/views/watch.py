"""The "Watch it learn" tab: a live run (toyviz.training.live) started from the page, which every open page
watches as it trains, and a step slider over the run afterwards: the run → status, figures and samples (no Gradio;
its layout is toyviz.app.layout.watch_tab, its events toyviz.app.page.wire_watch).

Every page polls the run once a second while it trains (a Timer that switches itself off when the run
has ended). The figures of one record are drawn once and shared by every page asking for the same step
(`drawn_run`, kept in the serving LRU): a hall of pages costs one drawing per record, not one per page.

The run has an owner (toyviz.training.live.Who): the page that started it, or the lecture it was started for. Its
Stop is shown to its owner only, and refused to anyone else; the other pages are told whose run they watch. A
refused Start or Stop says why in the status line, over the run there is, and a page refused because another
run trains switches to watching it. While a lecture goes on, its run stays the latest (its question is answered
from it): only its presenter starts another.
"""
from __future__ import annotations

import functools
import time
from typing import NamedTuple

from toyviz import i18n
from toyviz.app.figures import live as figures
from toyviz.i18n import t
from toyviz.serving.limits import visitor
from toyviz.serving.memory import LRU
from toyviz.training import live
from toyviz.training.live_answers import crossing_step

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
LECTURE_HOLDS_S = 30 * 60   # a lecture's run stays the latest while its presenter has moved or revealed this recently
LONGEST = max(live.settings_for(recipe).steps for recipe in live.RECIPES)    # the step slider's end
LATEST, LAST_FINISHED = "the latest run", "the last finished run"


@functools.lru_cache(maxsize=1)
def shared_runs() -> live.LiveRuns:
    """The one LiveRuns of this server process: one run at a time, the same record for every page."""
    return live.LiveRuns()


def who(request, lecture: dict | None, presenter=None) -> live.Who:
    """The page asking (`request`: its event's gr.Request): its Gradio session together with the address it comes
    from, as the trusted proxies report it (toyviz.serving.limits.visitor: a session id is the client's own choice,
    so the same id from another address is another page), and the lecture it presents when its state (ui.lecture,
    server-side: toyviz.app.lecture fills it) holds a secret `presenter`'s lectures know."""
    (address, session), _ = visitor(request)
    secret = (lecture or {}).get("secret")
    presented = presenter.lectures.presenting(secret) if secret and presenter is not None else None
    return live.Who(page=f"{session}@{address}" if session else "", lecture=presented.code if presented else "")


def lecture_holds(run: live.Run | None, page: live.Who, presenter=None) -> bool:
    """Whether a lecture keeps its run the latest against `page`'s Start: the run was started for a lecture that goes
    on (its presenter moved or revealed in the last LECTURE_HOLDS_S) and `page` is not its presenter. The lecture's
    question is answered from the latest run (toyviz.lessons.answers), and the projector shows it."""
    code = run.owner.lecture if run is not None else ""
    if not code or code == page.lecture or presenter is None:
        return False
    lecture = presenter.lectures.now(code)
    return lecture is not None and time.time() - lecture.changed < LECTURE_HOLDS_S


def status(run: live.Run | None, page: live.Who = live.Who()) -> str:
    """The status line: the run, its state and step, whose it is as `page` is told, and (induction) its head's birth."""
    if run is None:
        return t("notes.watch.no_run")
    last = run.records[-1] if run.records else None
    where = t("notes.watch.where", step=f"{last['step']:,}", steps=f"{run.settings['steps']:,}",
              seconds=f"{last['elapsed']:.0f}") if last else t("notes.watch.where_starting")
    line = t("notes.watch.line", recipe=run.recipe, seed=run.seed, state=t(f"notes.watch.state_{run.state}"),
             where=where)
    if run.running:
        whose = t(run.whose(page))
        line += (t("notes.watch.yours") if page.owns(run) else
                 t("notes.watch.watching", whose=f"{whose[0].upper()}{whose[1:]}", stopper=run.stopper))
    if run.recipe == "induction" and last:
        born = crossing_step(run, figures.BORN_AT)
        line += (t("notes.watch.born", step=f"{born:,}", at=figures.BORN_AT) if born is not None
                 else t("notes.watch.not_born"))
    return line + ("\n\n" + t(run.error) if run.state == "failed" else "")


def draw_run(run: live.Run, upto: int | None, projector: bool) -> tuple:
    """(loss figure, heads figure, attention figure, samples) of a run at step `upto` (None: its latest)."""
    loss = figures.loss_curves(run, upto, projector=projector)
    if run.recipe == "text":
        return loss, None, None, figures.samples_markdown(run, upto)
    return (loss, figures.head_scores(run, upto, projector=projector),
            figures.attention_pattern(run, upto, projector=projector), "")


DRAWINGS_KEPT = 64           # the last few runs' drawings, by record, step shown and projector mode
drawings = LRU(DRAWINGS_KEPT)


def drawn_run(run: live.Run, upto: int | None, projector: bool) -> tuple:
    """draw_run's drawing, kept in `drawings` by what changes it (which run, how many records, its state, the step
    shown, projector mode, the page's language): a hall of pages polling the same run costs one drawing per record."""
    key = (run.recipe, run.seed, run.started, len(run.records), run.state, upto, projector, i18n.current())
    return drawings.get(key, lambda: draw_run(run, upto, projector))


class Watched(NamedTuple):
    """What a page shows of the run it picked, all read from one reading of the run: the status line, the figures
    (None: one the run has not), and whether the page keeps polling and shows Stop. Read separately, a run ending
    between the readings left a page showing it training with its poll switched off: stuck there for good."""
    status: str
    loss: object
    heads: object
    attention: object
    samples: str
    polls: bool             # the picked run trains: the page's Timer stays on
    stop_shown: bool        # the latest run trains and is the page's own (may_stop)


def watch_view(runs: live.LiveRuns, which: str, upto: float, projector: bool, recipe: str = "induction",
               page: live.Who = live.Who(), note: dict | None = None) -> Watched:
    """The run picked, at step `upto` (-1: its latest), as `page` sees it, under the page's `note` while it stands;
    before any run, the loss axes of the recipe picked."""
    latest = runs.current()
    run = runs.last_finished() if which == LAST_FINISHED else latest
    said = f"{note['text']}\n\n" if stands(note, latest) else ""
    polls, stop_shown = bool(run and run.running), may_stop(latest, page)
    if run is None:
        return Watched(said + status(run), figures.loss_before_a_run(recipe, projector=bool(projector)), None, None,
                       "", polls, stop_shown)
    return Watched(said + status(run, page), *drawn_run(run, None if upto is None or upto < 0 else int(upto),
                                                        bool(projector)), polls, stop_shown)


def refusal(why: live.RunRefused, doing: str, runs: live.LiveRuns) -> dict:
    """A refused Start or Stop as the page keeps it (ui.watch_note): said above the status line, where the page
    looks, for as long as what it was said over lasts: the run training then (none: until one trains)."""
    latest = runs.current()
    return {"text": t(f"notes.watch.not_{doing}", why=i18n.said(why)),
            "during": latest.started if latest and latest.running else None}


def stands(note: dict | None, latest: live.Run | None) -> bool:
    """Whether a kept refusal still says something true: the run it was said over still trains (or still none)."""
    return bool(note) and note["during"] == (latest.started if latest and latest.running else None)


def start_view(runs: live.LiveRuns, page: live.Who, recipe: str, seed, text: str, which: str, upto: float,
               projector: bool, presenter=None) -> tuple[str, float, dict, Watched]:
    """Start's answer, (which, upto, note, view): the new run, from its start; refused, the reason (the
    note) above the status line, over the latest run when it is why (another's run trains, or a lecture's stays: the
    page switches to watching it), else over the view as it was."""
    latest = runs.current()
    try:
        if lecture_holds(latest, page, presenter):
            raise i18n.mistake("notes.watch.lecture_holds", live.RunRefused, whose=latest.whose(page))
        runs.start(recipe, seed=seed, text=text, owner=page)
    except live.RunRefused as why:
        latest, note = runs.current(), refusal(why, "started", runs)
        if latest is not None and (latest.running or lecture_holds(latest, page, presenter)):
            which, upto = LATEST, -1
        return which, upto, note, watch_view(runs, which, upto, projector, recipe, page, note)
    return LATEST, -1, {}, watch_view(runs, LATEST, -1, projector, recipe, page)


def stop_view(runs: live.LiveRuns, page: live.Who, which: str, upto: float, projector: bool,
              recipe: str = "induction") -> tuple[dict, Watched]:
    """Stop's answer, (note, view): the run as it ended; refused (another's run), the reason (the note)
    above the status line."""
    try:
        runs.stop(by=page)
    except live.RunRefused as why:
        note = refusal(why, "stopped", runs)
        return note, watch_view(runs, which, upto, projector, recipe, page, note)
    return {}, watch_view(runs, which, upto, projector, recipe, page)


def may_stop(run: live.Run | None, page: live.Who) -> bool:
    """Whether `page` is shown a Stop: the run trains and is its own."""
    return run is not None and run.running and page.owns(run)
