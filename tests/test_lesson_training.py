"""A lesson step that trains (issue 46): `train: induction` starts the live run when the step is shown, and its
question's answer (`answer: induction step`) is read off that run at the reveal."""
import time

import pytest

from toyviz.app import presenter
from toyviz.errors import UserError
from toyviz.lessons import answers, library
from toyviz.lessons.format import LessonError, matches, parse
from toyviz.training import live, live_answers

LESSON = """---
title: t
---

## It learns
tab: watch
train: induction
ask: When?
choices: 0-100 | 101-200 | 201+ | never
answer: induction step
"""


class FakeRuns:
    """The shared runs, without a process: start records what was asked; `run` is what current() returns."""

    def __init__(self, run=None):
        self.run, self.started = run, []

    def start(self, recipe, seed=0, owner=live.Who(), **_):
        self.started.append((recipe, seed))
        self.run = live.Run(recipe, seed, {"steps": 600}, state="running", owner=owner)
        return self.run

    def current(self):
        return self.run


def record(step, score):
    return {"step": step, "induction": [[0.1, 0.1], [score, 0.2]]}


@pytest.fixture
def runs(monkeypatch):
    fake = FakeRuns()
    monkeypatch.setattr(presenter, "shared_runs", lambda: fake)
    return fake


def test_a_train_setting_is_read_and_a_wrong_recipe_named_with_its_line():
    step = parse(LESSON).steps[0]
    assert step.train == "induction" and step.view["tab"] == "watch"
    with pytest.raises(LessonError, match=r"line 7: train: starts a live run of induction"):
        parse(LESSON.replace("train: induction", "train: text"))


def test_the_answer_is_the_step_the_run_formed_its_head_at(runs):
    step = parse(LESSON).steps[0]
    with pytest.raises(UserError, match="no induction run"):
        answers.answer(step, None, runs)
    runs.start("induction")
    runs.run.records = [record(0, 0.05), record(100, 0.2)]
    with pytest.raises(UserError, match="still training .step 100 of 600"):
        answers.answer(step, None, runs)                         # no answer while on the plateau: nothing stored
    runs.run.records += [record(110, 0.49), record(120, 0.7), record(130, 0.95)]
    answer = answers.answer(step, None, runs)
    assert (answer.value, answer.choice) == ("120", 1) and "step 120" in answer.detail
    runs.run.state, runs.run.records = "finished", [record(0, 0.05), record(600, 0.3)]
    assert answers.answer(step, None, runs).value == "never" and answers.answer(step, None, runs).choice == 3


def test_showing_the_step_starts_one_run_and_not_a_second_while_it_runs(runs):
    lecture = type("L", (), {"revealed": False, "code": "K7P2QX"})()
    shown = type("S", (), {"step": parse(LESSON).steps[0], "lecture": lecture})()
    presenter.trained(shown)
    presenter.trained(shown)                               # Next and Prev back while it runs
    assert runs.started == [("induction", 0)]
    assert runs.run.owner == live.Who(lecture="K7P2QX")    # the lecture's: its presenter stops it, from any page
    runs.run.state = "finished"
    lecture.revealed = True
    presenter.trained(shown)                               # a revealed step does not train again
    assert runs.started == [("induction", 0)]


def test_the_shipped_lesson_is_answered_by_a_real_run():
    """The shipped Watch it learn lesson, its run for real (seed 0, ~30-60 s on 2 cores): the answer is a step
    in one of its choices."""
    lesson = parse((library.SHIPPED / "watch-it-learn.md").read_text(), "watch-it-learn")
    step = lesson.steps[0]
    runs = live.LiveRuns()
    runs.start(step.train, seed=0)
    try:
        deadline = time.monotonic() + 300
        while runs.current().running and live_answers.crossing_step(runs.current(), live_answers.BORN_AT) is None:
            assert time.monotonic() < deadline, "the run formed no head in 300 s"
            time.sleep(1)
        answer = answers.answer(step, None, runs)
    finally:
        runs.stop()
    assert answer.value.isdigit() and answer.choice is not None
    assert matches(step.question.choices[answer.choice], answer.value)
