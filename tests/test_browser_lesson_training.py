"""Issue 46 in Chromium: the shipped lesson *Watch it learn* starts its live run as its first step is shown, keeps the
run's figures and status covered while the class predicts, refuses a Reveal while the run is on its plateau (a line
in the bar, never an error state on its components: issue 55), and
reveals the run's own answer once the induction head has formed. Screenshots: screenshots/lesson-watch-*.png
(normal, and projector mode at 1280×720)."""
import time

from test_browser import WAIT, browser, expect, pytestmark  # noqa: F401
from test_browser_lessons import COVERED, presenter_page, screen, server  # noqa: F401
from toyviz.app.views.watch import shared_runs
from toyviz.lessons import answers
from toyviz.training import live_answers


def test_a_lesson_trains_live_and_reveals_the_runs_own_answer(server, browser, monkeypatch):  # noqa: F811
    runs = shared_runs()
    runs.stop()
    page = presenter_page(browser)
    try:
        page.goto(server.url + "?lesson=watch-it-learn")
        expect()(page.locator("#tabs [role=tab][aria-selected=true]")).to_have_text("Watch it learn", timeout=WAIT)
        expect()(page.locator("body")).to_have_class("lesson-hides", timeout=WAIT)
        page.wait_for_function("() => document.querySelector('#watch-loss-plot .js-plotly-plot') !== null")
        for covered in ("watch-loss-plot", "watch-status"):
            assert page.evaluate(COVERED, covered), f"{covered} shows before the Reveal"
        run = runs.current()
        assert run is not None and run.recipe == "induction" and run.seed == 0
        screen(page, "lesson-watch-training")
        # Reveal on the plateau (issue 55): the reason is a line in the bar; nothing on the bar, its buttons or the
        # Lessons picker turns into Gradio's red "Error", and Reveal stays there to press again
        # the run held on its plateau as the server reads it (a score no head reaches): on a quiet machine the head
        # forms (step ~120) before the page has drawn its first loss, and the Reveal below would find it formed
        monkeypatch.setattr(answers, "BORN_AT", 2.0)
        page.locator("#lesson-reveal").click()
        expect()(page.locator("#lesson-bar .lesson-said")).to_contain_text("no head has formed yet", timeout=WAIT)
        page.wait_for_timeout(500)
        assert page.locator("#lesson-panel .error, #header .error, #lesson-panel .wrap.default:has(.error)").count() == 0
        expect()(page.locator("#lesson-reveal")).to_be_enabled()
        assert page.evaluate(COVERED, "watch-loss-plot"), "a refused Reveal uncovered the figures"
        page.evaluate("scrollTo(0, 0)")
        screen(page, "lesson-watch-refused")
        monkeypatch.undo()                             # the run's own answer from here on
        deadline = time.monotonic() + 300
        while live_answers.crossing_step(runs.current(), live_answers.BORN_AT) is None:
            if runs.current().records and not runs.current().running:
                break
            assert time.monotonic() < deadline, "the lesson's run formed no head in 300 s"
            time.sleep(1)
        page.locator("#lesson-reveal").click()
        answer = page.locator("#lesson-bar .lesson-answer")
        expect()(answer).to_contain_text("The model:", timeout=WAIT)
        step = live_answers.crossing_step(runs.current(), live_answers.BORN_AT)
        assert f"step {step}" in answer.inner_text()
        expect()(page.locator("body")).not_to_have_class("lesson-hides", timeout=WAIT)
        screen(page, "lesson-watch-revealed")
        page.set_viewport_size({"width": 1280, "height": 720})
        page.locator("#projector input").check()
        screen(page, "lesson-watch-revealed-projector")
    finally:
        runs.stop()
        page.close()
