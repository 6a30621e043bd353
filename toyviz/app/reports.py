"""After the lecture (toyviz.classroom.report): End lecture on the presenter's screen, the report to download, and
this browser's past lectures.

End lecture asks once more ("Yes: end it…") before it ends the lecture for the phones too. Past lectures are the
ones whose presenter's key this browser keeps (localStorage, toyviz.app.presenter.STORED): the server lists a report
to none but its presenter. Each report is written again when picked, against the lesson file as it is now.
"""
from __future__ import annotations

import html

import gradio as gr

from toyviz import i18n
from toyviz.app import presenter
from toyviz.app.widgets import friendly
from toyviz.classroom import report
from toyviz.serving.limits import limited, visitor

# every presenter's key this browser keeps, one string: the past lectures it may list
READ_KEYS = (f"(keys) => Object.keys(localStorage).filter((k) => k.startsWith('{presenter.STORED}'))"
             ".map((k) => localStorage.getItem(k)).join(' ')")
# the lecture ended: its ?lecture=CODE leaves the address (a reload would look for a lecture that is gone)
FORGET_LECTURE = "() => { if (new URLSearchParams(location.search).has('lecture')) history.replaceState(null, '', location.pathname); }"


def buttons(ui):
    """In the lesson bar's row of buttons: End lecture, and its confirmation."""
    ui.lesson_end = gr.Button("End lecture", size="sm", elem_id="lesson-end", scale=0, min_width=110)
    ui.lesson_end_yes = gr.Button("Yes: end it for the phones too, and write its report", size="sm", variant="stop",
                                  elem_id="lesson-end-yes", scale=0, min_width=200, visible=False)


def layout(ui):
    """Under the lesson bar, shown after End lecture or when this browser has past lectures: the past lectures (how
    long they are kept here said under the list), and once one is picked or ended, its report's two files."""
    with gr.Row(visible=False, elem_id="lecture-reports", equal_height=False) as ui.report_row:
        ui.past_pick = gr.Dropdown([], value=None, label="Past lectures (this browser's)", info=report.kept_note(),
                                   scale=1, min_width=260, elem_id="past-pick")
        ui.report_files = gr.File(label="The lecture's report: an HTML page (opens offline) and a CSV",
                                  file_count="multiple", interactive=False, scale=2, height=140, visible=False,
                                  elem_id="report-files")
    ui.report_keys = gr.Textbox(visible=False)
    ui.report_id = gr.State(None)


def past(lessons, keys: list[str], value: int | None = None, lang: str | None = None) -> gr.Dropdown:
    """The past lectures these presenter's keys drove, newest first, and how long they are kept, in the visitor's
    language (default: the event's)."""
    lang = lang or i18n.current()
    title = lambda r: lesson.title if (lesson := report.lesson_now(r)) else ""     # its lesson's, as it reads now
    return gr.Dropdown(choices=[(report.label(r, title(r), lang), r.id) for r in lessons.lectures.reports(keys)],
                       value=value, info=report.kept_note(lang))


def ended_bar(lessons, report_id: int, keys: list[str]) -> str:
    """The lesson bar once its lecture has ended, in the lecture's language as the bar was."""
    kept = lessons.lectures.report(report_id, keys)
    lesson = report.lesson_now(kept)
    lang = lesson.language if lesson else i18n.current()
    questions = sum("ask" in step.content for step in kept.steps)
    return (f"<div class='lesson'><div class='lesson-main'><div class='lesson-head'><b>"
            f"{html.escape(i18n.t('report.ended_head', lang, code=kept.code))}</b></div><div class='lesson-text'>"
            f"{html.escape(i18n.t('report.ended_text', lang, phones=kept.phones, questions=questions))}</div></div></div>")


def wire(ui, demo: gr.Blocks, lessons):
    """The page's load lists this browser's past lectures; End lecture (confirmed) ends the lecture at once (its
    votes' refresh stopped), then hands its report over; a past lecture picked is written again, against its
    lesson as it is now."""
    def listed(keys: str, request: gr.Request = None):
        """The keys as the page script read them (kept in the hidden box: a script's values reach the server, not
        the box), and the past lectures they list."""
        split = (keys or "").split()
        if not split:                                # no presenter here: no store opened, nothing shown
            return gr.skip(), gr.skip(), gr.skip()
        return (gr.Row(visible=bool(lessons.lectures.reports(split))), past(lessons, split, lang=i18n.language(request)),
                keys)

    def ended(lecture: dict, keys: str, request: gr.Request = None):
        secret = lecture.get("secret")
        if not secret:
            return [gr.skip()] * 8
        report_id = report.end(lessons.lectures, secret, visitor(request)[1])   # its address: reports kept per address
        keys = sorted(set((keys or "").split()) | {secret})
        return [ended_bar(lessons, report_id, keys), gr.Row(visible=False), gr.Timer(active=False), {},
                {"root": lecture.get("root", "/")}, " ".join(keys), gr.Button(visible=False), report_id]

    def handed(report_id, keys: str):
        """The report's files, and the bar said again: a refresh of the votes sent before the end may have
        landed over it meanwhile."""
        if report_id is None:
            return [gr.skip()] * 4
        keys = keys.split()
        return [ended_bar(lessons, report_id, keys), gr.Row(visible=True),
                gr.File(report.files(lessons.lectures, report_id, keys), visible=True), past(lessons, keys, report_id)]

    def picked(report_id, keys: str, lecture: dict):
        if report_id is None:
            return gr.skip()
        found = report.files(lessons.lectures, int(report_id), (keys or "").split() + [lecture.get("secret", "")])
        return gr.File(found, visible=bool(found))

    demo.load(listed, ui.report_keys, [ui.report_row, ui.past_pick, ui.report_keys], js=READ_KEYS, queue=False,
              api_visibility="private")
    ui.lesson_end.click(lambda: gr.Button(visible=True), None, ui.lesson_end_yes, queue=False, api_visibility="private")
    ui.lesson_end_yes.click(
        friendly(ended), [ui.lecture, ui.report_keys],
        [ui.lesson_bar, ui.lesson_buttons, ui.lesson_tick, ui.lecture_info, ui.lecture, ui.report_keys, ui.lesson_end_yes,
         ui.report_id], api_visibility="private").then(
        None, ui.lecture_info, None, js=presenter.KEEP_SECRET).then(None, js=FORGET_LECTURE).then(
        friendly(limited(handed, "export")), [ui.report_id, ui.report_keys], [ui.lesson_bar, ui.report_row, ui.report_files, ui.past_pick],
        api_visibility="private")
    ui.past_pick.input(friendly(limited(picked, "export")), [ui.past_pick, ui.report_keys, ui.lecture], ui.report_files,
                       api_visibility="private")
