"""A lecture on the page (toyviz.app.presenter): the address opens a deep link or a lecture, the Lessons picker a
lecture; Prev / Next set each step's view as its deep link would and redraw its tab; Reveal uncovers the answer
and the votes. Wired by app.py's `build`, as page.wire_watch wires Watch it learn.
"""
from __future__ import annotations

import gradio as gr

from toyviz import i18n
from toyviz.app import presenter
from toyviz.app.presenter import Presenter
from toyviz.app.widgets import TOGGLE_PROJECTOR, friendly
from toyviz.errors import UserError
from toyviz.serving import limits
from toyviz.settings import links
from toyviz.settings.controls import DEFAULTS


def lecture_answers(ui, lessons: Presenter):
    """(show, failed): what a lecture's events answer with; `ui.lesson_outputs`, the lesson bar's part of it."""
    ui.lesson_outputs = [ui.lesson_panel, ui.lesson_bar, ui.lesson_buttons, ui.lecture_info, ui.lecture, ui.lesson_tick,
                         ui.lesson_reveal, ui.lesson_pick]

    def show(shown, root: str, projector: bool | None = None, values: tuple | None = None, said: str = "") -> list:
        """The lecture's step: its view's controls and the bar; given the tabs' inputs (`values`), its tab drawn
        too, in the same answer. `said`: why the presenter's last action was refused, kept in the bar (and in the
        lecture's state, so that the votes' refresh keeps it) until the next step or reveal."""
        view = presenter.view(shown)
        if projector is not None and "projector" not in shown.step.origin:
            view["projector"] = projector            # a step that does not name it keeps the page's
        controls = [gr.skip() if key == "lang" else view[key] for key in DEFAULTS]    # the page keeps its language
        shown_view = [gr.Tabs(selected=view["tab"])] + controls + [gr.Column(visible=True),
                      presenter.bar(shown, lessons.lectures, root, said), gr.Row(visible=True), presenter.client(shown),
                      {"secret": shown.secret, "root": root, "said": said}, gr.Timer(active=True),
                      # Reveal on a question's step only, spent once pressed; the picker names the lesson open
                      gr.Button(visible=shown.step.question is not None, interactive=shown.hides), shown.name]
        if values is None:
            return shown_view
        by_input = dict(zip(ui.all_inputs, values)) | {c: view[key] for c, key in zip(ui.link_controls, DEFAULTS)
                                                       if c in ui.all_inputs}
        return shown_view + ui.refresh(view["tab"], *[by_input[i] for i in ui.all_inputs])

    def failed(why: str, lecture: dict) -> list:         # the reason in the bar, no buttons to press
        return [gr.Column(visible=True), presenter.problem(why), gr.Row(visible=False), {}, lecture,
                gr.Timer(active=False), gr.skip(), gr.skip()]
    return show, failed


def starts(request: gr.Request | None) -> str:
    """The address a new lecture starts from, once its visitor may start one more (the "lecture" allowance of
    toyviz.serving.limits: a ?lesson= link reloaded in a loop starts no more lectures than the picker would)."""
    return limits.charge("lecture", request)


def said(err: Exception) -> str:
    """An error's message for the lesson bar: a refusal's (gr.Error, already in the visitor's language) or a user's
    mistake's, said in the page's language (toyviz.i18n.said: its catalogue key where it has one)."""
    return err.message if isinstance(err, gr.Error) else i18n.said(err)


def wire(ui, demo: gr.Blocks, lessons: Presenter):
    """The page's load and a lecture (toyviz.app.presenter): the address opens a deep link or a lecture, the
    Lessons picker a lecture; Prev / Next (← → space) set each step's view as its deep link would, keeping the
    page's projector mode, and redraw the tab; Reveal uncovers the answer and the votes."""
    show, failed = lecture_answers(ui, lessons)
    bar = ui.lesson_outputs
    shows = [ui.tabs] + ui.link_controls + bar

    def opened(stored: str, root: str, request: gr.Request):
        query = dict(request.query_params) if request else {}
        try:
            address = starts(request) if query.get("lesson") else limits.visitor(request)[1]
            shown = lessons.open(query, stored, address)
        except (UserError, gr.Error) as err:        # a lesson with a mistake, a stale presenter link, a start too many
            return ui.restore(request) + failed(said(err), {"root": root})
        if shown is None:
            return ui.restore(request) + [gr.skip()] * 3 + [{}, {"root": root}] + [gr.skip()] * 3
        return show(shown, root, links.parse(query)["projector"] if "projector" in query else None)

    def picked(name: str, lecture: dict, projector: bool, request: gr.Request = None):    # Gradio fills request
        try:
            return show(lessons.start(name, starts(request)), lecture.get("root", "/"), projector)
        except (UserError, gr.Error) as err:
            return [gr.skip()] * (len(shows) - len(bar)) + failed(said(err), lecture)

    def refused(why: str, lecture: dict) -> list:
        """A presenter's action refused (a Reveal before the run's head formed): the reason a line in the bar, the
        step as it was; never an error on the bar's components (Gradio's red "Error" over the bar and its buttons)."""
        try:
            return show(lessons.shown(lecture["secret"]), lecture["root"], said=why)[-len(bar):]
        except UserError as err:                     # the lecture itself is gone
            return failed(said(err), lecture)

    def step(by: int):
        """Prev / Next in one event, in two answers: the bar and the step's controls at once (the presenter's counter
        as fast as the phones': it waited for the step's figures, 7.7 s once), then the step's tab drawn."""
        def moved(lecture: dict, *values):
            projector, rest = dict(zip(ui.all_inputs, values))[ui.projector], [gr.skip()] * len(ui.all_outputs)
            try:
                shown = lessons.move(lecture["secret"], by)
            except UserError as err:
                yield [gr.skip()] * (len(shows) - len(bar)) + refused(said(err), lecture) + rest
                return
            yield show(shown, lecture["root"], projector) + rest
            yield [gr.skip()] * len(shows) + show(shown, lecture["root"], projector, values)[len(shows):]
        return friendly(moved)

    def reveal(lecture: dict) -> list:
        try:
            return show(lessons.reveal(lecture["secret"]), lecture["root"])[-len(bar):]
        except UserError as err:
            return refused(said(err), lecture)

    def votes(lecture: dict) -> str:             # every 3 s: the votes so far; a lecture that ended says so
        try:
            return presenter.bar(lessons.shown(lecture["secret"]), lessons.lectures, lecture["root"],
                                 lecture.get("said", ""))
        except UserError as err:
            return presenter.problem(said(err))

    redraw = dict(fn=None, js=ui.redraw_current)
    keep = dict(fn=None, inputs=ui.lecture_info, js=presenter.KEEP_SECRET)
    for event, fn, inputs, js in [(demo.load, opened, [ui.lecture_key, ui.page_root], presenter.READ_SECRET),
                                  (ui.lesson_pick.input, picked, [ui.lesson_pick, ui.lecture, ui.projector], None)]:
        event(friendly(fn), inputs, shows, js=js, api_visibility="private").then(**keep).then(**redraw).then(
            None, ui.projector, None, js=TOGGLE_PROJECTOR)
    for button, by, way in [(ui.lesson_next, +1, "next"), (ui.lesson_prev, -1, "prev")]:
        # → → pressed quickly is two steps: each press queued (not dropped while the first runs), one at a time
        button.click(step(by), [ui.lecture] + ui.all_inputs, shows + ui.all_outputs, js=presenter.moving(way),
                     api_visibility="private", trigger_mode="multiple", concurrency_limit=1,
                     concurrency_id="lesson-step").then(**keep).then(
            None, ui.projector, None, js=TOGGLE_PROJECTOR)
    ui.lesson_reveal.click(friendly(reveal), ui.lecture, bar, api_visibility="private").then(**keep)
    ui.lesson_tick.tick(votes, ui.lecture, ui.lesson_bar, api_visibility="private", queue=False)
    ui.lesson_copy.click(None, js=presenter.COPY_PRESENTER_LINK)
