"""Issue 44 in Chromium: a lesson and a phone that say what happened.

The presenter's page opened by `?lesson=sampling` names the lesson in the Lessons picker; Reveal is there on a
question's step only; a broken lesson of the lecturer's own shows every mistake with its line in the bar. A phone's
typed answer stops at 40 characters and says so as it is typed, and a vote the server refuses shows the server's
reason. Reuses tests/test_browser_lessons.py's server (the app with its phones' routes, over a lectures file of its
own); screenshots land in screenshots/lesson-messages-*.png.
"""
import pytest

from test_browser import SHOTS, error_toasts, expect, open_app, pytestmark, settle  # noqa: F401
from test_browser import browser  # noqa: F401  (the module's Chromium)
from test_browser_lessons import Server, counter, presenter_page, screen
from toyviz.classroom.store import LONGEST_CHOICE

# the checker names four mistakes, in this order, at these lines
BROKEN = ("---\ntitle: Broken on purpose\n---\n\n## One\ntab: sample\nlayr: 2\n\nText.\n\n"
          "##\ntemperature: 0.5\n\n## Three\ntop_p: 3\n")
BROKEN_LINES = (7, 11, 15)
TYPED = "---\ntitle: Typed\n---\n\n## Type it\ntab: sample\nask: Type the token you expect next\nanswer: top token\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    own = tmp_path_factory.mktemp("own-lessons")
    (own / "broken.md").write_text(BROKEN, encoding="utf-8")
    (own / "typed.md").write_text(TYPED, encoding="utf-8")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("TOYVIZ_LESSONS", str(own))
        served = Server(tmp_path_factory.mktemp("lectures") / "lectures.sqlite3").start()
        served.typed = str(own / "typed.md")
        yield served
        served.demo.close()


def test_the_picker_names_the_open_lesson_and_reveal_comes_with_a_question(server, browser):
    page = presenter_page(browser)
    open_app(page, server.url, "?lesson=sampling")
    expect()(counter(page)).to_have_text("1 / 8", timeout=30_000)
    expect()(page.locator("#lesson-pick input")).to_have_value("Sampling")
    reveal = page.locator("#lesson-reveal")
    expect()(reveal).to_be_enabled()
    reveal.click()
    expect()(page.locator("#lesson-bar .lesson-answer")).to_contain_text("The model:")
    expect()(reveal).to_be_disabled()                                  # the answer is out: nothing more to reveal
    screen(page, "lesson-messages-revealed")
    for n in range(2, 6):                                              # step 5, Top-k, asks nothing
        page.locator("#lesson-next").click()
        expect()(counter(page)).to_have_text(f"{n} / 8")
    expect()(reveal).to_be_hidden()
    settle(page)
    screen(page, "lesson-messages-no-question")
    assert not error_toasts(page) and not page.errors, (error_toasts(page), page.errors)
    page.close()


def test_a_broken_lesson_shows_every_mistake_with_its_line(server, browser):
    page = presenter_page(browser)
    open_app(page, server.url, "?lesson=broken")
    problem = page.locator("#lesson-bar .lesson-problem")
    for line in BROKEN_LINES:
        expect()(problem).to_contain_text(f"broken.md, line {line}:", timeout=30_000)
    assert problem.inner_text().count("broken.md, line") == len(BROKEN_LINES)
    expect()(page.locator("#lesson-reveal")).to_be_hidden()
    screen(page, "lesson-messages-broken")
    page.close()


def test_a_phone_limits_the_typed_answer_and_shows_why_a_vote_was_refused(server, browser):
    code, _ = server.lectures.start(server.typed, 1)
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True,
                                  permissions=["clipboard-read", "clipboard-write"])
    phone = context.new_page()
    phone.set_default_timeout(10_000)
    errors = []
    phone.on("pageerror", lambda err: errors.append(str(err)))
    phone.goto(f"{server.url}class/{code}")
    box, note = phone.locator("#typed-answer"), phone.locator("#typed-note")
    expect()(note).to_have_text(f"0 of {LONGEST_CHOICE} characters")
    box.press_sequentially("x" * (LONGEST_CHOICE + 15))
    expect()(box).to_have_value("x" * LONGEST_CHOICE)                 # the box stops at what a vote holds…
    expect()(note).to_have_text(f"{LONGEST_CHOICE} of {LONGEST_CHOICE} characters: "
                                "the most an answer holds (a token or a number).")   # …and says so
    phone.screenshot(path=str(SHOTS / "lesson-messages-phone-full.png"))
    box.fill("be")
    phone.evaluate("(text) => navigator.clipboard.writeText(text)", "y" * 50)
    box.press("End")
    box.press("Control+V")                                            # a paste past the room left: cut, and said
    expect()(box).to_have_value("be" + "y" * (LONGEST_CHOICE - 2))
    expect()(note).to_have_text(f"What you pasted did not fit: 12 characters were left out. "
                                f"An answer holds at most {LONGEST_CHOICE} (a token or a number).")

    phone.evaluate("() => vote('x'.repeat(3000))")                    # past the box, as a script could send it
    expect()(phone.locator("#status")).to_have_text(
        f"Not counted: the answer is 3,000 characters; one holds at most {LONGEST_CHOICE} (a token or a number): "
        "shorten it and vote again.")
    device = phone.evaluate("() => localStorage.getItem('toyviz-device')")
    assert server.lectures.vote(code, device, " be")                  # this browser voted from another tab
    box.fill(" the")
    phone.locator("#typed button").click()
    expect()(phone.locator("#status")).to_have_text("Not counted: this phone has already voted on this step.")
    phone.screenshot(path=str(SHOTS / "lesson-messages-phone-refused.png"))
    assert server.lectures.tally(code, 0) == {" be": 1} and not errors, errors
    context.close()
