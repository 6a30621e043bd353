"""After the lecture (toyviz.classroom.report): End lecture on the presenter's screen, the report to download, and
this browser's past lectures.

End lecture asks once more ("Yes: end it…") before it ends the lecture for the phones too. Past lectures are the
ones whose presenter's key this browser keeps (localStorage, toyviz.app.presenter.STORED): the server lists a report
to none but its presenter. Each report is written again when picked, against the lesson file as it is now.
"""
from __future__ import annotations

import html

import gradio as gr

from toyviz.app import presenter
from toyviz.app.widgets import friendly
from toyviz.classroom import report

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
    """Under the lesson bar, shown after End lecture or when this browser has past lectures: the report's files,
    the past lectures, and how long they are kept here."""
    with gr.Row(visible=False, elem_id="lecture-reports", equal_height=False) as ui.report_row:
        ui.report_files = gr.File(label="The lecture's report: an HTML page (opens offline) and a CSV",
                                  file_count="multiple", interactive=False, scale=2, elem_id="report-files")
        with gr.Column(scale=1, min_width=240):
            ui.past_pick = gr.Dropdown([], value=None, label="Past lectures (this browser's)", elem_id="past-pick")
            gr.Markdown(report.kept_note(), elem_id="report-kept")
    ui.report_keys = gr.Textbox(visible=False)


def past(lessons, keys: list[str], value: int | None = None) -> gr.Dropdown:
    """The past lectures these presenter's keys drove, newest first."""
    return gr.Dropdown(choices=[(report.label(r), r.id) for r in lessons.lectures.reports(keys)], value=value)


def ended_bar(lessons, report_id: int, secret: str) -> str:
    kept = lessons.lectures.report(report_id, [secret])
    questions = sum("ask" in step.content for step in kept.steps)
    return (f"<div class='lesson'><div class='lesson-main'><div class='lesson-head'><b>Lecture {html.escape(kept.code)} "
            f"has ended</b></div><div class='lesson-text'>{kept.phones} phones voted on {questions} questions. Its "
            "report is below (the HTML page has a figure per question: the class's votes beside the model's answer), "
            "and under Past lectures. The code no longer works; pick a lesson to start another lecture.</div></div></div>")


def wire(ui, demo: gr.Blocks, lessons):
    """The page's load lists this browser's past lectures; End lecture (confirmed) ends the lecture and hands its
    report over; a past lecture picked is written again, against its lesson as it is now."""
    def listed(keys: str):
        keys = (keys or "").split()
        if not keys:                                 # no presenter here: no store opened, nothing shown
            return gr.skip(), gr.skip()
        return gr.Row(visible=bool(lessons.lectures.reports(keys))), past(lessons, keys)

    def ended(lecture: dict, keys: str):
        secret = lecture.get("secret")
        if not secret:
            return [gr.skip()] * 10
        report_id = report.end(lessons.lectures, secret)
        keys = sorted(set((keys or "").split()) | {secret})
        return [ended_bar(lessons, report_id, secret), gr.Row(visible=False), gr.Timer(active=False), {},
                {"root": lecture.get("root", "/")}, gr.Row(visible=True),
                report.files(lessons.lectures, report_id, keys), past(lessons, keys, report_id), " ".join(keys),
                gr.Button(visible=False)]

    def picked(report_id, keys: str, lecture: dict):
        if report_id is None:
            return gr.skip()
        return report.files(lessons.lectures, int(report_id), (keys or "").split() + [lecture.get("secret", "")])

    demo.load(listed, ui.report_keys, [ui.report_row, ui.past_pick], js=READ_KEYS, queue=False,
              api_visibility="private")
    ui.lesson_end.click(lambda: gr.Button(visible=True), None, ui.lesson_end_yes, queue=False, api_visibility="private")
    ui.lesson_end_yes.click(
        friendly(ended), [ui.lecture, ui.report_keys],
        [ui.lesson_bar, ui.lesson_buttons, ui.lesson_tick, ui.lecture_info, ui.lecture, ui.report_row, ui.report_files,
         ui.past_pick, ui.report_keys, ui.lesson_end_yes], api_visibility="private").then(
        None, ui.lecture_info, None, js=presenter.KEEP_SECRET).then(None, js=FORGET_LECTURE)
    ui.past_pick.input(friendly(picked), [ui.past_pick, ui.report_keys, ui.lecture], ui.report_files,
                       api_visibility="private")
