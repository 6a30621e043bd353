"""The Watch it learn tab's renderer and its owners (toyviz.app.views.watch), without a browser: which page a request
is, who may stop the run, and a refused Start or Stop answered in the status line over the run there is (the page
switching to the run that trains), never as an error in place of the figures."""
import time
from types import SimpleNamespace

import pytest

from toyviz.app.views import watch
from toyviz.classroom.store import Lectures
from toyviz.training import live

LONG = dict(steps=100_000, every=10)                # runs until stopped, at the lecture's pace


def request(session: str, address: str):
    """What Gradio gives an event: its page's session id (the client's choice) and the address it came from."""
    return SimpleNamespace(session_hash=session, client=SimpleNamespace(host=address))


@pytest.fixture
def presenter(tmp_path):
    """A presenter's lectures, as app.py's ui.presenter holds them; `.secret` drives the one lecture."""
    lectures = Lectures(tmp_path / "lectures.sqlite3")
    code, secret = lectures.start("watch-it-learn", 5)
    return SimpleNamespace(lectures=lectures, code=code, secret=secret)


def wait(runs: live.LiveRuns, until, timeout: float = 120.0) -> live.Run:
    deadline = time.monotonic() + timeout
    while not until(runs.current()):
        assert time.monotonic() < deadline, f"the run never got there: {runs.current()}"
        time.sleep(0.05)
    return runs.current()


def test_a_page_is_its_session_from_its_address_and_a_presenter_holds_the_lectures_secret(presenter):
    page = watch.who(request("abc", "10.0.0.5"), {}, presenter)
    assert page == watch.who(request("abc", "10.0.0.5"), None, presenter) and page.lecture == ""
    assert watch.who(request("abc", "10.0.0.6"), {}, presenter) != page        # the same session id from elsewhere
    assert watch.who(request("abd", "10.0.0.5"), {}, presenter) != page
    assert watch.who(request("abc", "10.0.0.5"), {"secret": presenter.secret}, presenter).lecture == presenter.code
    assert watch.who(request("abc", "10.0.0.5"), {"secret": "guessed"}, presenter).lecture == ""
    assert watch.who(None, {}, presenter) == live.Who()                        # no page: it owns nothing


def test_a_refused_start_or_stop_says_why_where_the_status_is_and_the_page_watches_the_run_that_trains(presenter):
    runs = live.LiveRuns()
    owner = watch.who(request("owner", "10.0.0.5"), {}, presenter)
    student = watch.who(request("student", "10.0.0.6"), {}, presenter)
    which, upto, note, view = watch.start_view(runs, owner, "induction", 0, "", watch.LATEST, -1, False, presenter)
    assert (which, upto, note) == (watch.LATEST, -1, {}) and "Not started" not in view.status
    assert view.polls and view.stop_shown                                     # the owner's page polls, and may stop
    wait(runs, lambda r: len(r.records) >= 2)
    try:
        assert watch.may_stop(runs.current(), owner) and not watch.may_stop(runs.current(), student)
        assert "Your run: **Stop** ends it" in watch.watch_view(runs, watch.LATEST, -1, False, page=owner)[0]
        watching = watch.watch_view(runs, watch.LATEST, -1, False, page=student)[0]
        assert "A run started by another page: you are watching it" in watching

        # the student, scrubbing the last finished run, presses Start: told why, and switched to the run that trains
        which, upto, note, (status, loss, heads, attention, samples, polls, stop_shown) = watch.start_view(
            runs, student, "text", 0, "too short", watch.LAST_FINISHED, 60, True, presenter)
        assert (which, upto) == (watch.LATEST, -1) and polls and not stop_shown
        assert status.startswith("⚠ **Not started:** a run started by another page is training")
        assert "you are watching it" in status and "seed 0: training" in status
        assert "Loss at step" in loss.layout.title.text and heads is not None and attention is not None
        polled = watch.watch_view(runs, watch.LATEST, -1, True, "text", student, note)[0]
        assert polled.startswith("⚠ **Not started:**")                       # the page's next polls keep saying it

        note, (status, *_) = watch.stop_view(runs, student, watch.LATEST, -1, False)
        assert status.startswith("⚠ **Not stopped:** a run started by another page is training: only the page "
                                 "that started it can stop it")
        assert runs.current().running                                         # the student's Stop ended nothing
        _, (status, *_) = watch.stop_view(runs, owner, watch.LATEST, -1, False)
        assert "stopped" in status and "Not stopped" not in status and not runs.current().running
        after = watch.watch_view(runs, watch.LATEST, -1, False, "induction", student, note)[0]
        assert "Not stopped" not in after                     # said over a run that has ended: no longer true
    finally:
        runs.stop()


def test_a_mistake_in_a_start_is_said_over_the_view_as_it_was(presenter):
    runs, page = live.LiveRuns(), watch.who(request("s", "10.0.0.5"), {}, presenter)
    which, upto, _, (status, loss, *_) = watch.start_view(runs, page, "text", 0, "x" * 150, watch.LAST_FINISHED, 60,
                                                          False, presenter)
    assert (which, upto) == (watch.LAST_FINISHED, 60)                          # nothing trains: the page stays
    assert status.startswith("⚠ **Not started:** paste a text of 200 to 200,000 characters (this one has 150).")
    assert "No run yet" in status and "no run yet" in loss.layout.title.text
    status = watch.start_view(runs, page, "induction", 1.5, "", watch.LATEST, -1, False, presenter)[3].status
    assert status.startswith("⚠ **Not started:** the seed must be a whole number") and "(not 1.5)" in status
    assert runs.current() is None                                              # no run of seed 1 or 2


def test_a_lectures_run_stays_the_latest_while_the_lecture_goes_on_and_its_presenter_stops_it(presenter):
    runs = live.LiveRuns()
    lecturer = live.Who(lecture=presenter.code)                                # as presenter.trained starts it
    laptop = watch.who(request("laptop", "10.0.0.2"), {"secret": presenter.secret}, presenter)
    student = watch.who(request("student", "10.0.0.6"), {}, presenter)
    runs.start("induction", seed=0, owner=lecturer, **LONG)
    wait(runs, lambda r: r.state == "running")
    try:
        assert "The lecturer's run: you are watching it (only the lecturer can stop it)" in \
            watch.watch_view(runs, watch.LATEST, -1, False, page=student)[0]
        assert "Not stopped" in watch.stop_view(runs, student, watch.LATEST, -1, False)[1].status
        assert runs.current().running
        assert watch.may_stop(runs.current(), laptop)                          # the presenter, from another page
        assert "Not stopped" not in watch.stop_view(runs, laptop, watch.LATEST, -1, False)[1].status
        assert not runs.current().running
    finally:
        runs.stop()

    which, _, _, (status, *_) = watch.start_view(runs, student, "induction", 3, "", watch.LAST_FINISHED, 10, False,
                                                 presenter)
    assert "Not started:** the lecturer's run stays the latest while its lecture goes on" in status
    assert which == watch.LATEST and runs.current().owner == lecturer           # the lecture's run, still the latest
    assert not watch.lecture_holds(runs.current(), laptop, presenter)          # its presenter starts what they like
    with presenter.lectures.db() as db:                                        # the lecturer has not moved for 30 min
        db.execute("UPDATE lectures SET changed = ?", (time.time() - watch.LECTURE_HOLDS_S - 1,))
    assert not watch.lecture_holds(runs.current(), student, presenter)


def test_a_view_reads_the_run_once_so_a_run_that_ends_meanwhile_never_leaves_a_page_unpolled():
    """CI of stop 60: a page showed 'training (step 590 of 600)' for good. Its status was read before the run ended,
    its poll's switch after: off, over a status that said training. Here each reading of the run is a step later,
    the first one training and every later one finished: the view polls exactly when its status says training."""
    training = live.Run("induction", 0, {"steps": 600}, state="running", owner=live.Who(page="owner"))
    readings = iter([training, *[live.replace(training, state="finished")] * 5])
    runs = SimpleNamespace(current=lambda: next(readings), last_finished=lambda: None)
    view = watch.watch_view(runs, watch.LATEST, -1, False, page=live.Who(page="owner"))
    assert "training" in view.status and view.polls and view.stop_shown


def test_what_a_person_asks_is_one_event_that_runs_after_the_last_and_the_poll_its_own(tiny_checkpoints):
    """CI: a page that picked the finished run and scrubbed to step 60 was left on step 600. Each trigger was its own
    event, so two of a page's draws ran at once and the earlier (the latest step) could land after the later one.
    One event for what a person asks, always the last: a page's draws run one after another, the last asked drawn
    last. The 1 s poll stays its own event, "once": always the last, a page on a busy server always had a draw queued
    (test_browser_live's screenshot waited in vain for a quiet page)."""
    import app
    from toyviz.app.explorer import Explorer

    demo = app.build(Explorer.load(str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu"))
    ui = demo.ui
    drawing = [f for f in demo.fns.values() if ui.watch_status in f.outputs and f.name == "draw"]
    [asked] = [f for f in drawing if (ui.watch_tick._id, "tick") not in f.targets]
    assert asked.trigger_mode == "always_last"
    assert {(ui.tab_watch._id, "select"), (ui.watch_which._id, "input"), (ui.watch_step._id, "change"),
            (ui.watch_recipe._id, "input")} <= set(asked.targets)
    # the poll alone, "once": a tick while a draw is pending is dropped (a busy server gets fewer polls)
    [poll] = [f for f in drawing if f is not asked]
    assert poll.targets == [(ui.watch_tick._id, "tick")] and poll.trigger_mode == "once"
