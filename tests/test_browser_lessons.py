"""Issue #33 in Chromium: a lecture from the presenter's laptop and a student's phone.

The presenter steps through a shipped lesson with the keyboard, each step's controls those its deep link sets,
its figures covered while its question is open; a phone-sized page (390×844) joins with the code, follows a step
change, votes, and the presenter's Reveal shows the vote; a student's request to advance is refused; a restart of
the server (a new build over the same lectures file, on the same port) keeps the step and the votes.

Reuses tests/test_browser.py's browser and helpers (skipped as it is) with a server of its own: its lectures
live in a temporary file and the phones' routes are attached as app.py's `launch_options` attaches them. Screenshots land
in screenshots/lesson-*.png.
"""
import json
import socket
import statistics
import time
import urllib.error
import urllib.request

import pytest

from test_browser import SHOTS, WAIT, browser, error_toasts, expect, open_app, pytestmark, settle, shot  # noqa: F401
from toyviz.app.explorer import Explorer
from toyviz.classroom.store import Lectures
from toyviz.lessons import library

SAMPLING = library.load(library.SHIPPED / "sampling.md")
POLL_S = 1.0                     # issue #33: a phone follows the presenter within a second (phone.html's POLL_MS)
FOLLOW_S = POLL_S + 0.5          # from the store's change: at most one poll's wait, then its answer drawn
# on the phone's clock (ms since the epoch, as time.time() here): when #title first reads the given text, and when
# each of its polls of /now was sent
TITLE_AT = """(text) => {
    const title = document.getElementById('title');
    window.titleAt = null;
    new MutationObserver(() => { if (window.titleAt === null && title.textContent === text) window.titleAt = Date.now(); })
        .observe(title, {childList: true, characterData: true, subtree: true});
}"""
POLLS_AT = """() => performance.getEntriesByType('resource').filter((e) => new URL(e.name).pathname.endsWith('/now'))
                                                    .map((e) => performance.timeOrigin + e.startTime)"""
# the controls a step's view sets, as the page shows them (null where the tab holding one was never opened)
CONTROLS = """() => {
    const value = (selector) => { const e = document.querySelector(selector); return e ? e.value : null; };
    const number = (id) => value(`#${id} input[type=number]`);
    return {tab: document.querySelector('#tabs [role=tab][aria-selected=true]').textContent.trim(),
            prompt: value('#prompt textarea'), model: value('#model input:checked'),
            projector: document.querySelector('#projector input').checked,
            temperature: number('temperature'), top_k: number('top-k'), top_p: number('top-p'),
            max_new: number('max-new'), layer: number('layer'), head: number('head'), query: number('query')};
}"""
# the last change the tabs' area went through (a figure redrawn, a control set, a busy mark), the in-browser
# model's own panel aside: a step's view has loaded when this stops moving
WATCH = """() => {
    window.lastChange = performance.now();
    new MutationObserver((changes) => {
        const ours = changes.some((c) => !(c.target.nodeType === 1 ? c.target : c.target.parentElement)
                                                 .closest('#browser-model'));
        if (ours) window.lastChange = performance.now();
    }).observe(document.querySelector('#tabs'), {subtree: true, childList: true, attributes: true,
                                                  characterData: true});
}"""
# whether the middle of an element shows it or the cover laid over it until Reveal
COVERED = """(id) => {
    document.getElementById(id).scrollIntoView({block: 'center'});
    const box = document.getElementById(id).getBoundingClientRect();
    const hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    return document.body.classList.contains('lesson-hides') && hit && hit.id === id;
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The app on a fixed port with its lectures in `path`; `restart` serves a new build over a new Lectures on
    the same file, as a Space coming back would."""

    def __init__(self, path):
        self.path, self.port, self.demo = path, free_port(), None
        self.explorer = Explorer.load("gpt", "translator", "cpu")

    def start(self):
        import app
        self.lectures = Lectures(self.path)
        self.demo = app.build(self.explorer, self.lectures)
        self.demo.queue(default_concurrency_limit=4, max_size=64)
        _, self.url, _ = self.demo.launch(**app.launch_options(self.demo.ui.presenter), server_name="127.0.0.1",
                                          server_port=self.port, prevent_thread_lock=True, quiet=True)
        return self

    def restart(self):
        self.demo.close()
        return self.start()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    served = Server(tmp_path_factory.mktemp("lectures") / "lectures.sqlite3").start()
    yield served
    served.demo.close()


def screen(page, name):
    """What the screen shows (not the whole page): the pictures docs/teach-with-it.md is made from."""
    settle(page)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def presenter_page(browser, size=(1280, 900)):
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.set_default_timeout(WAIT)
    page.errors = []
    page.on("pageerror", lambda err: page.errors.append(str(err)))
    return page


def counter(page):
    return page.locator("#lesson-bar .lesson-counter")


def lecture_code(page) -> str:
    page.wait_for_function("() => new URLSearchParams(location.search).has('lecture')")
    return page.evaluate("() => new URLSearchParams(location.search).get('lecture')")


def secret_of(page, code: str) -> str:
    return page.evaluate(f"() => localStorage.getItem('toyviz-presenter-{code}')")


def step_with_key(page, key: str, shown: str) -> float:
    """Press `key`, wait for the counter to read `shown` and the tabs to settle → seconds until the view stopped
    changing (the last change in the tabs' area after the key)."""
    pressed = page.evaluate("() => performance.now()")
    page.keyboard.press(key)
    expect()(counter(page)).to_have_text(shown, timeout=WAIT)
    page.wait_for_function("() => performance.now() - window.lastChange > 800", timeout=WAIT, polling=100)
    settle(page)
    return (page.evaluate("() => window.lastChange") - pressed) / 1000


def controls_of_link(browser, url: str, step) -> dict:
    """The controls as a page opened on the step's deep link shows them (once its prompt is the link's)."""
    page = presenter_page(browser)
    try:
        open_app(page, url, step.link)
        expect()(page.locator("#prompt textarea")).to_have_value(step.view["prompt"], timeout=WAIT)
        settle(page)
        return page.evaluate(CONTROLS)
    finally:
        page.close()


def same_controls(lesson: dict, linked: dict) -> dict:
    """The controls that differ, where both pages have them (a tab never opened has not built its sliders)."""
    return {k: (lesson[k], linked[k]) for k in lesson if None not in (lesson[k], linked[k]) and lesson[k] != linked[k]}


def test_the_presenter_steps_through_a_lesson_with_the_keyboard(server, browser):
    page = presenter_page(browser)
    open_app(page, server.url, "?lesson=sampling")
    expect()(counter(page)).to_have_text(f"1 / {len(SAMPLING.steps)}", timeout=WAIT)
    code = lecture_code(page)
    secret = secret_of(page, code)
    assert secret and secret not in page.url and secret not in page.content()     # never on the projected page
    settle(page)
    page.evaluate(WATCH)
    seconds = []
    for n, step in enumerate(SAMPLING.steps):
        if n:
            seconds.append(step_with_key(page, "ArrowRight" if n % 2 else " ", f"{n + 1} / {len(SAMPLING.steps)}"))
        expect()(page.locator("#lesson-bar")).to_contain_text(step.title)
        shown = page.evaluate(CONTROLS)
        assert shown["tab"] == "Sample" and shown["temperature"] is not None, shown
        differ = same_controls(shown, controls_of_link(browser, server.url, step))
        assert not differ, f"step {n + 1} ({step.title}): {differ}"
        if step.question:
            assert page.evaluate(COVERED, "bars-plot"), f"step {n + 1}: the bars show before Reveal"
            if n == 1:
                shot(page, "lesson-presenter-question")
            page.locator("#lesson-reveal").click()
            expect()(page.locator("#lesson-bar .lesson-answer")).to_contain_text("The model:", timeout=WAIT)
            # the answer lands with Reveal's event, the bars are uncovered by the step chained after it (KEEP_SECRET)
            page.wait_for_function(f"(id) => !({COVERED})(id)", arg="bars-plot", timeout=WAIT)
            if n == 1:
                shot(page, "lesson-presenter-revealed")
        else:
            assert not page.evaluate("() => document.body.classList.contains('lesson-hides')")
    step_with_key(page, "ArrowLeft", f"{len(SAMPLING.steps) - 1} / {len(SAMPLING.steps)}")
    print(f"\nstep views loaded in {', '.join(f'{s:.2f}' for s in seconds)} s (max {max(seconds):.2f} s)")
    # a goal of 1 s on the reference machine; bounded here for a laptop twice as slow, busy with other work
    assert max(seconds) < 4, seconds
    assert not error_toasts(page) and not page.errors, (error_toasts(page), page.errors)
    page.close()


def test_the_lessons_picker_opens_a_lecture_whose_qr_code_grows_for_the_hall(server, browser):
    page = presenter_page(browser)
    open_app(page, server.url, "?tab=tokens")
    expect()(page.locator("#lesson-panel")).to_be_hidden(timeout=WAIT)       # a plain page shows no bar
    page.locator("#lesson-pick input").click()
    page.get_by_role("option", name="Attention from the ground up").click()
    expect()(counter(page)).to_have_text("1 / 6", timeout=WAIT)
    code = lecture_code(page)
    expect()(page.locator("#lesson-bar .lesson-code")).to_have_text(code)
    page.locator("#lesson-bar .lesson-qr").click()
    large = page.locator(".lesson-qr-large svg")
    expect()(large).to_be_visible()
    assert large.bounding_box()["height"] > 600                  # 80 % of the window's height, not 92 px
    page.keyboard.press("Escape")
    expect()(large).to_have_count(0)
    assert not page.errors, page.errors
    page.close()


def test_projector_mode_stays_on_from_step_to_step(server, browser):
    page = presenter_page(browser, (1280, 720))
    open_app(page, server.url, "?lesson=attention-from-the-ground-up")
    expect()(counter(page)).to_have_text("1 / 6", timeout=WAIT)
    page.locator("#projector input").check()
    page.wait_for_function("() => document.body.classList.contains('projector')")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")                 # pressed before the first step is shown: two steps, not one
    expect()(counter(page)).to_have_text("3 / 6", timeout=WAIT)
    settle(page)
    assert page.evaluate("() => document.body.classList.contains('projector')")
    expect()(page.locator("#projector input")).to_be_checked()
    page.locator("#lesson-reveal").click()
    expect()(page.locator("#lesson-bar .lesson-answer")).to_contain_text("The model:", timeout=WAIT)
    shot(page, "lesson-presenter-projector")
    screen(page, "lesson-presenter-projector-screen")
    page.locator("#head-steps-plot").scroll_into_view_if_needed()        # the figure on screen, the bar above it
    code = lecture_code(page)
    badge = page.locator(".lesson-badge")
    expect()(badge).to_have_text(f"3 / 6 · join {code}")
    expect()(badge).to_be_in_viewport()
    assert not page.locator("#lesson-bar .lesson-counter").is_visible() or \
        page.locator("#lesson-bar .lesson-counter").bounding_box()["y"] < 0   # the bar itself scrolled away
    screen(page, "lesson-presenter-projector-figure")
    assert not page.errors, page.errors
    page.close()


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as err:
        return err.code, json.load(err)


def when_the_step_is(lectures, code: str, step: int) -> float:
    """time.time() once the lecture's step in the store is `step` (looked at every 5 ms)."""
    deadline = time.monotonic() + WAIT / 1000
    while lectures.now(code).step != step:
        assert time.monotonic() < deadline, f"the lecture never reached step {step}"
        time.sleep(0.005)
    return time.time()


def test_a_phone_follows_votes_and_the_presenter_reveals_its_vote_even_after_a_restart(server, browser):
    presenter = presenter_page(browser)
    open_app(presenter, server.url, "?lesson=sampling")
    expect()(counter(presenter)).to_have_text("1 / 8", timeout=WAIT)
    code = lecture_code(presenter)
    phone = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    phone.set_default_timeout(WAIT)
    phone.goto(f"{server.url}class")                                     # the join form: type the code
    phone.locator("#code").fill(code.lower())
    phone.locator("#join button").click()
    expect()(phone.locator("#title")).to_have_text(SAMPLING.steps[0].title, timeout=WAIT)
    settle(presenter)

    phone.wait_for_function(f"() => ({POLLS_AT})().length >= 4", timeout=WAIT)       # following for a while
    phone.evaluate(TITLE_AT, SAMPLING.steps[1].title)
    presenter.keyboard.press("ArrowRight")
    changed = when_the_step_is(server.lectures, code, 1)
    expect()(phone.locator("#title")).to_have_text(SAMPLING.steps[1].title, timeout=WAIT)
    followed = phone.evaluate("() => window.titleAt") / 1000 - changed
    polls = phone.evaluate(POLLS_AT)
    every = statistics.median(b - a for a, b in zip(polls, polls[1:])) / 1000
    print(f"\nthe phone polled every {every:.2f} s and showed the step {followed:.2f} s after the store moved")
    assert every <= POLL_S + 0.3, every                 # a slower poll would let most changes wait longer
    assert followed <= FOLLOW_S, followed

    phone.get_by_role("button", name="higher").click()
    expect()(presenter.locator("#lesson-bar .lesson-waiting")).to_contain_text("1 vote so far", timeout=WAIT)
    for n, choice in enumerate(["higher"] * 12 + ["lower"] * 6 + ["the same"] * 2):    # the rest of a small class
        status, said = post(f"{server.url}class/{code}/vote", {"device": f"simulated-{n:04d}", "step": 1,
                                                                "choice": choice})
        assert status == 200 and said["counted"], said
    expect()(presenter.locator("#lesson-bar .lesson-waiting")).to_contain_text("21 votes so far", timeout=WAIT)
    shot(phone, "lesson-phone")
    status, said = post(f"{server.url}class/{code}/step", {"secret": "a student's guess", "step": 5})
    assert status == 403 and "presenter" in said["error"]
    status, _ = post(f"{server.url}class/{code}/reveal", {"secret": ""})
    assert status == 403
    assert server.lectures.now(code).step == 1 and not server.lectures.now(code).revealed

    server.restart()                                     # the Space restarts: a new app over the same file
    presenter.reload()                                   # the address is ?lecture=CODE, the secret in localStorage
    expect()(counter(presenter)).to_have_text("2 / 8", timeout=WAIT)
    presenter.locator("#lesson-reveal").click()
    votes = presenter.locator("#lesson-bar .lesson-votes")
    expect()(votes).to_contain_text("the class: 21 votes", timeout=WAIT)
    expect()(votes.locator("tr.lesson-right")).to_have_text("✓ higher13")         # the model's answer, marked
    expect()(votes.locator("tr", has_text="lower")).to_have_text("lower6")
    expect()(phone.locator("#answer")).to_be_visible(timeout=WAIT)              # the phone, still on, sees it
    shot(phone, "lesson-phone-revealed")
    shot(presenter, "lesson-presenter-votes")
    screen(presenter, "lesson-presenter-screen")
    assert not presenter.errors, presenter.errors
    phone.close()
    presenter.close()


def test_another_laptop_takes_over_with_the_presenter_link(server, browser):
    first = presenter_page(browser)
    first.context.grant_permissions(["clipboard-read", "clipboard-write"])
    open_app(first, server.url, "?lesson=sampling")
    expect()(counter(first)).to_have_text("1 / 8", timeout=WAIT)
    code = lecture_code(first)
    secret = secret_of(first, code)
    first.keyboard.press("ArrowRight")
    expect()(counter(first)).to_have_text("2 / 8", timeout=WAIT)
    first.locator("#lesson-copy").click()
    expect()(first.locator("#lesson-copy")).to_contain_text("Copied")
    first.wait_for_function("async () => (await navigator.clipboard.readText()).includes('present=')")
    link = first.evaluate("() => navigator.clipboard.readText()")
    assert link == f"{server.url}?present={secret}" and secret not in first.content()
    other = browser.new_context().new_page()                            # no localStorage in common
    other.set_default_timeout(WAIT)
    other.goto(link, wait_until="domcontentloaded", timeout=60_000)
    expect()(counter(other)).to_have_text("2 / 8", timeout=WAIT)
    other.wait_for_function("() => !location.search.includes('present')")
    assert secret not in other.url and secret not in other.content()
    stranger = browser.new_context().new_page()                          # the code alone drives nothing
    stranger.set_default_timeout(WAIT)
    open_app(stranger, server.url, f"?lecture={code}")
    expect()(stranger.locator("#lesson-bar")).to_contain_text("does not hold the presenter's key", timeout=WAIT)
    assert not stranger.locator("#lesson-next").is_visible()
    for page in (first, other, stranger):
        page.close()
