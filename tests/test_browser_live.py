"""The "Watch it learn" tab in a real browser (Debian's Chromium driven by Playwright, the shipped models):
a seed of 1.5 is refused in the status line, Start trains the induction recipe, a page opened mid-run sees the
same run and whose it is (no Stop for it), its Start is refused in the status line (no error badges, no toast)
and switches it to the run that trains, the run ends with its induction head named, and the step slider scrubs
the finished run.
Screenshots of the run mid-way and at the end, in normal and projector mode, land in screenshots/
(git-ignored). Takes one run of the recipe, paced to last 90 s or more (a_longer_run).
"""
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import re

import pytest
from test_browser import browser, error_toasts, expect, pytestmark, shot, url  # noqa: F401

from toyviz.app.views import watch
from toyviz.training.live_model import RECIPES, Induction

RUN_WAIT = 240_000                  # ms: the whole run on a machine shared with others' test suites
PACE_S = 0.15                       # a step at least: the run lasts 90 s or more


@pytest.fixture(scope="module", autouse=True)
def runs_of_its_own():
    """This module's app watches runs of its own, made before its app (`url`): the runs are one per process
    (watch.shared_runs), and a run an earlier module's lesson had finished was the student's "last finished run"."""
    watch.shared_runs.cache_clear()
    yield
    watch.shared_runs().stop()
    watch.shared_runs.cache_clear()


@pytest.fixture(autouse=True)
def a_longer_run(monkeypatch):
    """The induction run at a slower pace (its numbers are the same at any pace: live_model.paced). At the recipe's
    own, 30 s, a CI machine busy with the rest of the suite opened the second page only after the run had ended."""
    monkeypatch.setitem(RECIPES, "induction", lambda: Induction(min_step_s=PACE_S))


def open_watch_tab(page, url):
    page.goto(url, wait_until="domcontentloaded", timeout=60_000)
    expect()(page.locator("#attn-plot .gtitle").first).to_contain_text("layer 0", timeout=60_000)   # the page is up
    page.get_by_role("tab", name="Watch it learn", exact=True).click()
    expect()(page.locator("#watch-start")).to_be_visible(timeout=30_000)


def status(page) -> str:
    return page.locator("#watch-status").inner_text()


def step_shown(page) -> int:
    """The step the status line says the run is at."""
    return int(re.search(r"step ([\d,]+) of", status(page))[1].replace(",", ""))


def new_page(browser, height: int):
    page = browser.new_page(viewport={"width": 1280, "height": height})
    page.set_default_timeout(30_000)
    page.errors = []
    page.on("pageerror", lambda err: page.errors.append(str(err)))
    return page


def no_error_badges(page):
    """Nothing said as an error in place of an output, nor in a toast: a refusal is the status line's."""
    assert page.locator(".wrap .error").count() == 0 and not error_toasts(page), error_toasts(page)


def test_a_run_started_from_the_page_is_watched_by_every_page_to_its_end(url, browser):
    lecturer = new_page(browser, 900)
    open_watch_tab(lecturer, url)
    lecturer.locator("#watch-seed input").fill("1.5")          # Gradio rounded it: seed 2 ran, silently
    lecturer.locator("#watch-start").click()
    expect()(lecturer.locator("#watch-status")).to_contain_text("Not started: the seed must be a whole number",
                                                                timeout=30_000)
    no_error_badges(lecturer)
    lecturer.locator("#watch-seed input").fill("2")
    lecturer.locator("#watch-start").click()
    expect()(lecturer.locator("#watch-status")).to_contain_text("training", timeout=60_000)
    expect()(lecturer.locator("#watch-status")).to_contain_text("Your run: Stop ends it")
    expect()(lecturer.locator("#watch-stop")).to_be_visible()
    lecturer.wait_for_function("() => /step (1[2-9]\\d|[2-9]\\d\\d) of/.test("
                               "document.querySelector('#watch-status').innerText)", timeout=RUN_WAIT)
    expect()(lecturer.locator("#watch-loss-plot .gtitle")).to_contain_text("Loss at step", timeout=30_000)
    shot(lecturer, "watch-mid")

    # a student opens the page mid-run, in projector mode: the same run, the record so far
    student = new_page(browser, 720)                 # a 720p projector
    open_watch_tab(student, url)
    expect()(student.locator("#watch-status")).to_contain_text("seed 2: training", timeout=30_000)
    expect()(student.locator("#watch-status")).to_contain_text("A run started by another page: you are watching it")
    assert step_shown(student) >= 100
    assert not student.locator("#watch-stop").is_visible()        # not the student's run to stop

    # the student, on the last finished run (none yet), presses Start: refused in the status line, and watching
    student.get_by_label("the last finished run").check()
    expect()(student.locator("#watch-status")).to_contain_text("No run yet", timeout=30_000)
    student.locator("#watch-start").click()
    expect()(student.locator("#watch-status")).to_contain_text(
        "Not started: a run started by another page is training", timeout=30_000)
    expect()(student.get_by_label("the latest run")).to_be_checked()
    expect()(student.locator("#watch-loss-plot .gtitle")).to_contain_text("Loss at step", timeout=30_000)
    no_error_badges(student)
    student.locator("#projector input[type=checkbox]").check()
    expect()(student.locator("body")).to_have_class(re.compile(r"\bprojector\b"), timeout=30_000)
    shot(student, "watch-mid-projector")

    for page in (lecturer, student):
        expect()(page.locator("#watch-status")).to_contain_text("finished", timeout=RUN_WAIT)
        expect()(page.locator("#watch-status")).to_contain_text("induction head was born at step", timeout=30_000)
        expect()(page.locator("#watch-attention-plot .gtitle")).to_contain_text("step 600", timeout=30_000)
    shot(lecturer, "watch-end")
    shot(student, "watch-end-projector")

    # scrub the finished run back to the plateau
    lecturer.get_by_label("the last finished run").check()
    slider = lecturer.locator("#watch-step input[type=number]")
    slider.fill("60")
    slider.press("Enter")
    expect()(lecturer.locator("#watch-attention-plot .gtitle")).to_contain_text("step 60:", timeout=30_000)
    expect()(lecturer.locator("#watch-loss-plot .gtitle")).to_contain_text("Loss at step 60 of", timeout=30_000)
    shot(lecturer, "watch-scrubbed")
    assert not lecturer.errors and not student.errors, lecturer.errors + student.errors
    lecturer.close()
    student.close()
