"""The lecture's memory (toyviz.classroom.report): End lecture keeps each step's votes, answer and time on screen
with the step's content hash; the report (HTML and CSV) is made from them, survives a restart, marks a question
edited since, and names the common misconceptions a lesson file names."""
import csv
import html
import io
import os
import re
import shutil
from types import SimpleNamespace

import fastapi
import pytest
from fastapi.testclient import TestClient

from toyviz.classroom import report, routes, store
from toyviz.classroom.store import Lectures
from toyviz.lessons import library
from toyviz.lessons.format import Answer, LessonError, matches, parse
from toyviz.lessons.library import lesson_of

PHONES = 30


@pytest.fixture
def lesson_file(tmp_path):
    """A copy of the shipped Sampling lesson, which a test may edit after its lecture."""
    path = tmp_path / "lessons" / "sampling.md"
    path.parent.mkdir()
    shutil.copy(library.SHIPPED / "sampling.md", path)
    return path


def answer_of(lectures: Lectures, lesson_name: str):
    """A reveal with a stand-in model: its answer to each question is the question's second choice."""
    def reveal(secret: str):
        lecture = lectures.driven(secret)
        question = lesson_of(lesson_name).steps[lecture.step].question
        given = Answer(question.choices[1], "the stand-in model's reason", 1) if question else None
        return lectures.reveal(secret, None if lectures.closed(lecture.code, lecture.step) else given)
    return reveal


def lecture_of_thirty(lectures: Lectures, lesson_name: str):
    """A presenter and 30 phones through the phones' routes: every step shown, each question voted on (phone i
    chooses by a rule; every seventh phone skips a step) and revealed. → (code, secret, the votes counted per step)."""
    app = fastapi.FastAPI()
    routes.attach(app, lectures, answer_of(lectures, lesson_name))
    client = TestClient(app)
    lesson = lesson_of(lesson_name)
    code, secret = lectures.start(lesson_name, len(lesson.steps))
    counted = {}
    for n, step in enumerate(lesson.steps):
        assert client.post(f"/class/{code}/step", json={"secret": secret, "step": n}).json()["step"] == n
        if step.question is None:
            continue
        choices, tally = step.question.choices, {}
        for phone in range(PHONES):
            if (phone + n) % 7 == 0:
                continue
            choice = choices[(phone + phone // 4 + n) % len(choices)]
            vote = client.post(f"/class/{code}/vote", json={"device": f"phone-{phone:04d}", "step": n, "choice": choice})
            assert vote.json()["counted"]
            tally[choice] = tally.get(choice, 0) + 1
        assert client.post(f"/class/{code}/reveal", json={"secret": secret}).json()["revealed"]
        counted[n] = tally
    return code, secret, counted


def test_a_lecture_of_thirty_phones_ends_in_a_report_that_lists_every_question(tmp_path, lesson_file, monkeypatch):
    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    name = str(lesson_file)
    code, secret, counted = lecture_of_thirty(lectures, name)
    lesson = lesson_of(name)
    kept = report.end(lectures, secret)
    assert lectures.now(code) is None and lectures.presenting(secret) is None          # the code stops working
    app = fastapi.FastAPI()
    routes.attach(app, lectures)
    gone = TestClient(app).get(f"/class/{code}/now")                                   # a phone still following
    assert gone.status_code == 404 and "The presenter has ended lecture" in gone.json()["error"]

    found = lectures.report(kept, [secret])
    assert (found.code, found.lesson, found.phones, len(found.steps)) == (code, name, PHONES, len(lesson.steps))
    made = report.rows(found, lesson)
    questions = [n for n, step in enumerate(lesson.steps) if step.question]
    assert [row.step - 1 for row in made] == questions and len(questions) == 7
    for row in made:
        question = lesson.steps[row.step - 1].question
        assert row.tally == counted[row.step - 1] and row.answer == question.choices[1] and row.revealed
        assert row.right == counted[row.step - 1].get(question.choices[1], 0) and row.changed is False
        assert row.share_right == row.right / sum(counted[row.step - 1].values()) and row.seconds >= 0

    text = report.csv_text(found, made, lesson.title)
    lines = list(csv.DictReader(io.StringIO(text)))
    assert len(lines) == sum(len(lesson.steps[n].question.choices) for n in questions)
    for line in lines:
        n = int(line["step"]) - 1
        question = lesson.steps[n].question
        assert int(line["votes"]) == counted[n].get(line["choice"], 0) and line["model's answer"] == question.choices[1]
        assert line["choice is the model's"] == ("yes" if matches(line["choice"], question.choices[1]) else "")
        right = counted[n].get(question.choices[1], 0) / sum(counted[n].values())
        assert line["share right"] == f"{100 * right:.0f} %" and line["phones"] == str(PHONES)
        assert line["lesson"] == "Sampling" and line["code"] == code and line["changed since"] == "no"

    page = report.html_page(found, made, lesson.title)
    for n in questions:
        question = lesson.steps[n].question
        assert html.escape(f"Step {n + 1}: {lesson.steps[n].title}") in page and html.escape(question.ask) in page
        said = report.shown(question.choices[1])
        assert f"{sum(counted[n].values())} votes · the model: {said}" in page      # the figure's title
        for choice in question.choices:                                             # the table's lines
            shown = re.escape(html.escape(report.shown(choice)))
            assert re.search(f"<td>{shown}</td><td>{counted[n].get(choice, 0)}</td>", page)
    assert page.count("Plotly.newPlot") == len(questions)
    assert page.count("plotly.js v") in (1, 2) and "<script src=" not in page   # plotly.js inside once: offline
    assert f"{PHONES} phones voted" in page

    html_file, csv_file = report.files(lectures, kept, [secret])
    assert html_file.endswith(".html") and csv_file.endswith(".csv") and open(csv_file).read() == text
    assert report.files(lectures, kept, ["someone else's key"]) == []


def test_the_report_survives_a_restart_and_only_its_presenter_lists_it(tmp_path):
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    code, secret, counted = lecture_of_thirty(lectures, "sampling")
    kept = report.end(lectures, secret)
    again = Lectures(lectures.path)                                    # the server restarted
    assert again.report(kept, [secret]) == lectures.report(kept, [secret])
    assert [r.id for r in again.reports(["other", secret])] == [kept]
    assert again.reports(["other"]) == [] and again.report(kept, ["other"]) is None
    rows = report.rows(again.report(kept, [secret]), lesson_of("sampling"))
    assert {row.step - 1: row.tally for row in rows} == counted


def test_an_edited_lesson_marks_the_changed_question_and_counts_misconceptions_named_since(tmp_path, lesson_file):
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    name = str(lesson_file)
    _, secret, counted = lecture_of_thirty(lectures, name)
    kept = report.end(lectures, secret)
    text = lesson_file.read_text(encoding="utf-8")
    text = text.replace("ask: And at temperature 0.7?", "ask: And at temperature 0.5?")        # step 4 changes
    text = re.sub(r'(choices: " be" \| " do" \| " the" \| " die"\n)(misconceptions: .*\n)?',     # step 1 is annotated anew
                  r'\1misconceptions: " the": the commonest word wins\n', text)
    lesson_file.write_text(text, encoding="utf-8")
    os.utime(lesson_file, (lesson_file.stat().st_atime, lesson_file.stat().st_mtime + 10))
    edited = lesson_of(name)
    made = {row.step: row for row in report.rows(lectures.report(kept, [secret]), edited)}
    assert made[4].changed and made[4].ask == "And at temperature 0.7?"          # what the class was asked
    assert not any(row.changed for step, row in made.items() if step != 4)
    assert made[1].misconceptions == ((" the", "the commonest word wins", counted[0].get(" the", 0)),)
    page = report.html_page(lectures.report(kept, [secret]), list(made.values()), edited.title)
    assert page.count("has changed in the lesson since the lecture") == 1
    share = counted[0].get(" the", 0) / sum(counted[0].values())
    assert share >= report.COMMON and (1, " the") in [(row.step, c) for row, c, _, _ in report.common(list(made.values()))]
    assert f"<li><b>the commonest word wins</b>: {counted[0][' the']} of {sum(counted[0].values())} votes" in page
    lines = list(csv.DictReader(io.StringIO(report.csv_text(lectures.report(kept, [secret]), list(made.values())))))
    assert {line["step"] for line in lines if line["changed since"] == "yes"} == {"4"}
    assert [line["misconception"] for line in lines if line["step"] == "1" and line["choice"] == " the"] == \
        ["the commonest word wins"]
    lesson_file.unlink()                                     # the file gone: the report still reads, "unknown"
    gone = report.rows(lectures.report(kept, [secret]), report.lesson_now(lectures.report(kept, [secret])))
    assert all(row.changed is None for row in gone) and len(gone) == 7


def test_each_steps_time_on_screen_adds_up_its_visits(tmp_path, monkeypatch):
    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(store, "time", SimpleNamespace(time=lambda: clock.now))
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    code, secret = lectures.start("sampling", 8)
    for step, at in [(1, 1090.0), (0, 1150.0), (1, 1170.0), (2, 1200.0)]:
        clock.now = at
        lectures.move(secret, step)
    clock.now = 1300.0
    lectures.reveal(secret)                                  # a reveal is not a move: the step stays on screen
    clock.now = 1330.0
    kept = lectures.report(report.end(lectures, secret), [secret])
    assert [s.seconds for s in kept.steps[:4]] == [110.0, 90.0, 130.0, 0.0]
    assert (kept.started, kept.ended, kept.phones) == (1000.0, 1330.0, 0)
    assert kept.steps[2].revealed and kept.steps[2].answer is None                  # revealed with no model


def test_the_store_keeps_the_newest_reports_and_a_space_keeps_them_for_a_while(tmp_path, monkeypatch):
    clock = SimpleNamespace(now=1_000_000.0)
    monkeypatch.setattr(store, "time", SimpleNamespace(time=lambda: clock.now))
    monkeypatch.setattr(store, "REPORTS_KEPT", 2)
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    keys = []
    for _ in range(3):
        _, secret = lectures.start("sampling", 8)
        keys.append(secret)
        clock.now += 60
        report.end(lectures, secret)
    assert len(lectures.reports(keys)) == 2 and lectures.reports(keys[:1]) == []         # the oldest went
    assert "newest 2" in report.kept_note()
    monkeypatch.setenv("SPACE_ID", "someone/toyviz")
    assert f"{store.SPACE_REPORT_DAYS} days" in report.kept_note()
    clock.now += store.SPACE_REPORT_DAYS * 86400 - 30
    assert len(lectures.reports(keys)) == 1                  # the older of the two is past its days on a Space
    monkeypatch.delenv("SPACE_ID")
    assert len(lectures.reports(keys)) == 2                  # elsewhere only the count bounds them


def test_a_lesson_names_the_misconception_of_each_wrong_choice():
    text = ("---\ntitle: T\n---\n\n## A\ntab: sample\nask: Which?\nchoices: \" be\" | \" do\" | the\n"
            "misconceptions: \" do\": it picks the commoner verb | the: commonest word\nanswer: top token\n\ntext\n")
    assert parse(text).steps[0].question.misconceptions == ((" do", "it picks the commoner verb"),
                                                            ("the", "commonest word"))
    assert parse(text.replace("misconceptions", "point")).steps[0].question.misconceptions == ()     # optional
    for wrong, why in [('misconceptions: " xx": no', "not one of the choices"), ("misconceptions: the", "CHOICE:"),
                       ("misconceptions: the: a | the: b", "twice")]:
        with pytest.raises(LessonError, match=re.escape(why)):
            parse(text.replace(text.splitlines()[8], wrong))


def test_the_shipped_lessons_name_misconceptions_of_real_choices():
    named = 0
    for path in library.shipped():
        for step in library.load(path).steps:
            if step.question:
                named += len(step.question.misconceptions)
                assert {c for c, _ in step.question.misconceptions} <= set(step.question.choices)
    assert named >= 10


def test_the_presenters_screen_ends_the_lecture_and_hands_over_its_report(tmp_path, tiny_gpt, monkeypatch):
    """The page's End lecture (toyviz.app.reports), its handlers called as Gradio calls them: the lecture ends,
    the report's two files come back, the past lectures list it for this browser's keys and for no others."""
    import gradio as gr

    from toyviz.app.explorer import Explorer
    from toyviz.app.page import build

    monkeypatch.setenv("GRADIO_TEMP_DIR", str(tmp_path / "gradio"))
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    demo = build(Explorer(tiny_gpt, None), lectures)
    handlers = {dep.name: dep for dep in demo.fns.values() if dep.name in ("ended", "handed", "picked", "listed")}
    assert set(handlers) == {"ended", "handed", "picked", "listed"}
    code, secret = lectures.start("sampling", 8)
    lectures.vote(code, "phone-0001", " be")
    answer = handlers["ended"].fn({"secret": secret, "root": "http://hall/"}, "")
    assert len(answer) == len(handlers["ended"].outputs)
    bar, keys, kept = answer[0], answer[5], answer[7]
    assert f"Lecture {code} has ended" in bar and "1 phones voted on 7 questions" in bar and keys == secret
    assert lectures.now(code) is None
    handed = handlers["handed"].fn(None, kept, keys)     # None: no request (limited)
    assert len(handed) == len(handlers["handed"].outputs)
    files, pick = handed[2], handed[3]
    paths = lambda update: [str(f.get("path") if isinstance(f, dict) else f) for f in update.value or []]
    assert [f.rsplit(".", 1)[1] for f in paths(files)] == ["html", "csv"] and files.visible
    kept_report = lectures.report(kept, [secret])           # named by its lesson's title, as the list shows it
    assert pick.choices == [(report.label(kept_report, report.lesson_now(kept_report).title), kept)] and \
        pick.value == kept
    assert paths(handlers["picked"].fn(None, kept, "", {"secret": secret}))[1].endswith(".csv")
    assert paths(handlers["picked"].fn(None, kept, "someone-else", {})) == []
    row, listed, keys = handlers["listed"].fn(secret)
    assert row.visible and len(listed.choices) == 1 and keys == secret
    assert handlers["listed"].fn("") == (gr.skip(),) * 3


def test_one_address_ending_lectures_in_a_loop_keeps_only_its_own_newest(tmp_path, monkeypatch):
    """A script starting and ending lectures from one address pushes out its own reports, never a class's from
    another address (issue 51's hostile visitor meets the reports kept)."""
    monkeypatch.setattr(store, "REPORTS_PER_ADDRESS", 2)
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    _, lecturer = lectures.start("sampling", 8)
    lectures.vote(lectures.driven(lecturer).code, "phone-0001", " be")
    report.end(lectures, lecturer, "10.0.0.7")
    loop = []
    for _ in range(5):
        _, secret = lectures.start("sampling", 8)
        loop.append(secret)
        report.end(lectures, secret, "203.0.113.9")
    assert [r.phones for r in lectures.reports([lecturer])] == [1]           # the class's report stays
    assert len(lectures.reports(loop)) == 2 and lectures.reports(loop[:3]) == []    # the loop's newest two alone
