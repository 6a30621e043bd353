"""A real browser — Debian's Chromium driven by Playwright — clicks through the app (shipped models).

Skipped when /usr/lib/chromium/chromium or the shipped checkpoints are absent; never runs
`playwright install`. Screenshots, one per tab and a few of states, land in screenshots/ at the
repository root (git-ignored). Every wait is bounded; the whole module takes about a minute.
"""
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import re
from pathlib import Path

import pytest

from benchmarks import stream
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.app.explorer import EXPERIMENTS, Explorer

CHROMIUM = stream.CHROMIUM
SHOTS = Path(__file__).resolve().parent.parent / "screenshots"
WAIT = 30_000                     # ms for any one expectation; the first plotly render alone takes ~3 s
TABS = stream.TABS
EXPERIMENTS_READY = ((EXPERIMENTS / "results.json").is_file()
                     and (EXPERIMENTS / "no_causal_mask" / "config.json").is_file())

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"Debian's chromium is not installed at {CHROMIUM} "
                                                           "(apt-get install chromium)"),
    pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(),
                       reason="checkpoints/gpt is missing: run `python -m toyviz.train gpt`"),
    pytest.mark.skipif(not (CHECKPOINTS / "translator" / "config.json").is_file(),
                       reason="checkpoints/translator is missing: run `python -m toyviz.train translator`"),
]


@pytest.fixture(scope="module")
def url():
    """The app as `python app.py` serves it: its renderers computed in two worker processes (issue 43)."""
    import app
    from toyviz.app.compute import start_workers
    with start_workers(2, "gpt", "translator", "cpu") as workers:
        demo = app.build(Explorer.load("gpt", "translator", "cpu"), workers=workers.wait_ready())
        demo.queue(default_concurrency_limit=demo.ui.at_once, max_size=64)
        _, address, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False,
                                    show_error=True, css=app.CSS)
        yield address
        demo.close()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = stream.launch(p)
        yield b
        b.close()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(WAIT)
    page.errors = []
    page.on("pageerror", lambda err: page.errors.append(str(err)))
    yield page
    page.close()


def expect():
    from playwright.sync_api import expect as playwright_expect
    return playwright_expect


def title(page, elem_id):
    return page.locator(f"#{elem_id} .gtitle").first


def error_toasts(page) -> list[str]:
    return [t.strip() for t in page.locator(".toast-body.error").all_text_contents()]


def settle(page):
    """Wait until no event is pending (Gradio dims the outputs of a running event and shows an ETA bar;
    an output whose event failed keeps its tracker, showing "Error")."""
    page.wait_for_function("() => document.querySelectorAll("
                           "'.eta-bar, .wrap.default:not(.hide):not(:has(.error))').length === 0", timeout=WAIT)


def shot(page, name):
    settle(page)
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def open_app(page, url, query=""):
    page.goto(url + query, wait_until="domcontentloaded", timeout=60_000)


def test_every_tab_draws_its_first_figure(url, page):
    open_app(page, url)
    expect()(title(page, "attn-plot")).to_contain_text("layer 0, head 0", timeout=WAIT)     # the default tab
    for label, tab_id, plot_id, words in TABS:
        page.get_by_role("tab", name=label, exact=True).click()
        if tab_id == "experiments" and not EXPERIMENTS_READY:
            # no results yet: the tab must say how to get them rather than stay silently empty
            expect()(page.locator("#exp-summary")).to_contain_text("python -m toyviz.experiments", timeout=WAIT)
        else:
            if words is None:
                expect()(title(page, plot_id)).not_to_be_empty(timeout=WAIT)
            else:
                expect()(title(page, plot_id)).to_contain_text(words, timeout=WAIT)
            assert page.locator(f"#{plot_id} .js-plotly-plot .main-svg").count() > 0
        shot(page, f"tab-{tab_id}")
    assert not error_toasts(page), error_toasts(page)
    assert not page.errors, page.errors


def test_a_tabs_example_fills_the_prompt_and_redraws_the_tab(url, page):
    open_app(page, url, "?tab=residual")
    expect()(title(page, "res-norm-plot")).to_contain_text("suffer", timeout=WAIT)        # the default prompt
    page.get_by_text("an easy next token", exact=True).click()
    expect()(page.locator("#prompt textarea")).to_have_value("To be, or not to", timeout=WAIT)
    expect()(title(page, "res-norm-plot")).to_contain_text("\u2423to", timeout=WAIT)
    expect()(title(page, "res-norm-plot")).not_to_contain_text("suffer", timeout=WAIT)
    assert not error_toasts(page) and not page.errors


def test_temperature_slider_redraws_the_bars(url, page):
    open_app(page, url, "?tab=sample")
    bars = title(page, "bars-plot")
    expect()(bars).to_contain_text("temperature 0.8", timeout=WAIT)
    page.locator("#temperature input[type=range]").fill("1.5")
    expect()(bars).to_contain_text("temperature 1.5", timeout=WAIT)
    page.locator("#temperature input[type=range]").fill("0")
    expect()(bars).to_contain_text("temperature 0,", timeout=WAIT)
    assert not error_toasts(page)


def test_generation_streams_text_into_the_page(url, page):
    """64 tokens appear a few at a time without freezing the page (measured in the page itself)."""
    max_new = 64
    figures = stream.stream(page, url, max_new)
    print(f"\nstreaming {max_new} tokens: {figures['updates']} distinct updates in {figures['seconds']:.2f} s "
          f"({figures['updates_per_s']:.1f}/s), longest main-thread stall {figures['longest_stall_ms']} ms")
    assert page.locator("#generated").inner_text().strip(), "the generated text is empty"
    assert figures["updates"] >= 20, f"only {figures['updates']} visible updates"
    # a freeze a student would notice, with a margin for a laptop twice as slow and busy (the figure
    # itself is benchmarks.app's: 67 ms here on a quiet machine)
    assert figures["longest_stall_ms"] <= 2000, f"the page froze for {figures['longest_stall_ms']} ms while streaming"
    expect()(title(page, "generated-plot")).not_to_be_empty(timeout=WAIT)
    shot(page, "generated")
    assert not error_toasts(page)


def test_two_tabs_of_one_browser_stream_at_once(url, browser):
    """A student with the Sample tab open twice: both generations stream, at the same time."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        pages = [context.new_page() for _ in range(2)]
        for page in pages:
            stream.open_sample_tab(page, url, 64)
        for page in pages:
            page.locator("#generate").click()
        for page in pages:
            page.locator("#generated .token-prob").nth(63).wait_for(state="attached", timeout=60_000)
        # [tokens shown, ms since the epoch] for each update of each page
        runs = [page.evaluate("window.__updates.map(([n, t]) => [n, performance.timeOrigin + t])") for page in pages]
    finally:
        context.close()
    print("\ntwo tabs: " + ", ".join(f"{len(r)} updates over {(r[-1][1] - r[0][1]) / 1000:.2f} s" for r in runs))
    assert all(len(r) >= 20 for r in runs), [len(r) for r in runs]
    (a, b) = runs
    assert a[0][1] < b[-1][1] and b[0][1] < a[-1][1], "one tab waited for the other to finish"


def test_stop_ends_a_generation_promptly(url, page):
    figures = stream.stop(page, url)
    print(f"\nstop: the last update came {figures['after_stop_s']:.2f} s after Stop, "
          f"at {figures['tokens_shown']} of 256 tokens")
    # a page that lags behind the server keeps drawing a finished generation long after Stop; the bound
    # holds on a machine twice as slow and busy, the figure itself is benchmarks.app's (0.00 s here)
    assert figures["after_stop_s"] <= 3.0, figures


def test_a_page_with_every_tab_opened_keeps_up_with_a_stream(url, page):
    """A lecturer who toured every tab, then samples: the page shows all 128 tokens, many updates of them,
    and does not fall behind by more than twice the time the server took to send them (128 / TOKENS_PER_S,
    ~5 s): a page that redrew its figures for every update would. How far behind it is — within half a
    second on an idle machine; it was 1.3-1.7 s at 32 updates a second, pacing.TEXT_EVERY_S — depends on
    the machine and what else runs on it (a fresh clone beside other work: 2.57 s), so that figure is
    measured by `python -m benchmarks.app` (after_every_tab) and only printed here."""
    from toyviz.serving.pacing import TOKENS_PER_S
    figures = stream.keeping_up(page, url)
    sent_s = 128 / TOKENS_PER_S                     # the stream at the server's pace
    print(f"\nafter every tab: {figures['updates']} updates, the last {figures['behind_s']:.2f} s behind the server")
    assert figures["behind_s"] <= 2 * sent_s, figures
    assert figures["updates"] >= 20, figures
    assert not error_toasts(page)


def test_translation_shows_spanish_and_cross_attention(url, page):
    open_app(page, url, "?tab=translate")
    expect()(title(page, "cross-plot")).to_contain_text("attention", timeout=WAIT)
    page.locator("#source textarea").fill("The Lord is my shepherd.")
    page.locator("#translate").click()
    # translator-v8 writes "pastor ." (a space before the stop, learned from its teacher's pairs: its model card)
    expect()(page.locator("#spanish textarea")).to_have_value(re.compile(r"^El Señor es mi pastor ?\.$"), timeout=WAIT)
    expect()(title(page, "cross-plot")).to_contain_text("Cross attention", timeout=WAIT)
    expect()(title(page, "candidates-plot")).to_contain_text("Decoding", timeout=WAIT)
    shot(page, "translated")
    assert not error_toasts(page)


def test_why_this_token_links_its_numbers_and_patches_a_pair(url, page):
    """The paragraph's numbers jump to their panels; a prepared pair fills the fields and draws the grids."""
    from toyviz.interpret.explain import PAIRS
    open_app(page, url, "?tab=why")
    # the costliest tab (16 ablated passes, 33 gradient passes): on a machine busy with the rest of the suite,
    # more than WAIT for its first draw
    expect()(title(page, "why-components-plot")).to_contain_text("Which parts push", timeout=3 * WAIT)
    settle(page)
    page.locator("#why-summary a[href='#why-saliency-plot']").first.click()
    page.wait_for_function("() => { const r = document.querySelector('#why-saliency-plot').getBoundingClientRect();"
                           " return r.top > -5 && r.top < window.innerHeight / 2; }", timeout=5_000)
    page.locator("#why-pair input").click()
    page.locator("[role=option]", has_text=PAIRS[1].name).first.click()
    expect()(page.locator("#why-clean textarea, #why-clean input").first).to_have_value(PAIRS[1].clean, timeout=WAIT)
    expect()(title(page, "why-patching-stream-plot")).to_contain_text("Patching the clean residual", timeout=WAIT)
    expect()(title(page, "why-patching-heads-plot")).to_contain_text("one head", timeout=WAIT)
    shot(page, "why-patching")
    assert not error_toasts(page) and not page.errors, (error_toasts(page), page.errors)


def test_a_number_typed_past_a_sliders_range_is_shown_and_used_clamped(url, page):
    """A lecturer types 99 into the layer box: the box says 3 (the last layer), the figures show layer 3,
    the note says why (issue 51: "layer 99 is past the last, 3: showing 3"), and no error appears; -5 likewise
    becomes 0. A deep link with the same number gets the same note."""
    open_app(page, url, "?tab=attention")
    expect()(title(page, "attn-plot")).to_contain_text("layer 0, head 0", timeout=WAIT)
    last = Explorer.load("gpt", "no-translator", "cpu").gpt.config.n_layer - 1
    box = page.locator("#layer input[type=number]")
    for typed, shown, said in (("99", last, f"layer 99 is past the last, {last}: showing {last}."),
                               ("-5", 0, "layer -5 is below the first, 0: showing 0.")):
        box.fill(typed)         # the box's input event sends what was typed: the renderer settles it, and says so
        expect()(page.locator("#note")).to_contain_text(said, timeout=WAIT)
        expect()(title(page, "attn-plot")).to_contain_text(f"layer {shown}, head 0", timeout=WAIT)
        # Leaving the box, Gradio's own front end shows the bound in it (a change, which redraws nothing), and the
        # note stays. (Left before the input event had collected its values, the page would send the bound
        # itself: a busy CI browser did, once; the figure was right, but there was nothing to note.)
        page.keyboard.press("Tab")
        expect()(box).to_have_value(str(shown), timeout=WAIT)
        expect()(page.locator("#note")).to_contain_text(said, timeout=WAIT)
    open_app(page, url, "?tab=features&feature=999999")
    expect()(page.locator("#note")).to_contain_text("feature 999999 is past the last, 2047: showing 2047.",
                                                    timeout=WAIT)
    expect()(page.locator("#feature-about")).to_contain_text("Feature #2047:", timeout=WAIT)
    shot(page, "feature-past-the-last")
    settle(page)
    assert not error_toasts(page) and not page.errors, (error_toasts(page), page.errors)


def test_quick_presses_of_a_slider_draw_its_last_value(url, page):
    """Presses of the layer slider's arrow keys in a row: once every draw has landed, the figure shows the layer the
    slider shows. Each press is an input event; with an event per trigger set to "once", those sent while a draw
    was pending were dropped (three presses left the slider at 3 over the figure of layer 1), and an earlier draw
    could land after a later one."""
    open_app(page, url, "?tab=attention")
    expect()(title(page, "attn-plot")).to_contain_text("layer 0, head 0", timeout=WAIT)
    settle(page)
    page.locator("#layer input[type=range]").focus()
    for key in ("ArrowRight", "ArrowRight", "ArrowRight", "ArrowLeft", "ArrowLeft", "ArrowRight"):
        page.keyboard.press(key)
    expect()(page.locator("#layer input[type=number]")).to_have_value("2")
    settle(page)
    expect()(title(page, "attn-plot")).to_contain_text("layer 2, head 0")


def test_deep_link_opens_layer_and_head(url, page):
    open_app(page, url, "?tab=attention&layer=1&head=2")
    head = title(page, "attn-plot")
    expect()(head).to_contain_text("layer 1", timeout=WAIT)
    expect()(head).to_contain_text("head 2", timeout=WAIT)
    expect()(page.locator("#layer input[type=number]")).to_have_value("1", timeout=WAIT)
    expect()(page.locator("#head input[type=number]")).to_have_value("2", timeout=WAIT)
    options = page.locator("#attn-plot .js-plotly-plot").evaluate("e => e._context.toImageButtonOptions")
    assert options["scale"] == 2 and options["filename"] == "toyviz-attention-L1-H2-probs"
    # the "Copy link" button writes the same view back
    page.locator("#copy-link").click()
    expect()(page.locator("#link textarea, #link input").first).to_have_value(
        re.compile(r"tab=attention.*layer=1.*head=2"), timeout=WAIT)
    shot(page, "deep-link")
    assert not error_toasts(page)


FONT_SIZES = """() => { const size = s => { const e = document.querySelector(s);
                                                return e ? parseFloat(getComputedStyle(e).fontSize) : null; };
    return {title: size('#attn-plot .gtitle'), ticks: size('#attn-plot .xtick text'), prompt: size('#prompt textarea'),
            explanation: size('#tabs .prose p'), label: size('#prompt [data-testid=block-info]'),
            tab: size('[role=tab]'), button: size('#run'), table: size('#head-labels td')}; }"""


def projector_sizes(page, url, query="?tab=attention"):
    """Computed font sizes (px) of the page's parts, before and after switching projector mode on."""
    open_app(page, url, query)
    expect()(title(page, "attn-plot")).to_contain_text("layer 0", timeout=WAIT)
    settle(page)
    before = page.evaluate(FONT_SIZES)
    page.locator("#projector input[type=checkbox]").check()
    expect()(page.locator("body")).to_have_class(re.compile(r"\bprojector\b"), timeout=WAIT)
    page.wait_for_function(f"() => parseFloat(getComputedStyle(document.querySelector('#attn-plot .gtitle'))"
                           f".fontSize) > {before['title']}", timeout=WAIT)
    settle(page)
    page.wait_for_timeout(500)                                  # Gradio's buttons ease font changes over 0.2 s
    return before, page.evaluate(FONT_SIZES)


def test_projector_mode_makes_fonts_larger(url, page):
    before, after = projector_sizes(page, url)
    for part in ("title", "ticks", "prompt"):                    # the figures are redrawn with larger fonts
        assert after[part] > before[part], (part, before, after)
    shot(page, "projector")
    page.locator("#projector input[type=checkbox]").uncheck()
    page.wait_for_function(f"() => parseFloat(getComputedStyle(document.querySelector('#attn-plot .gtitle'))"
                           f".fontSize) <= {before['title']}", timeout=WAIT)
    assert "projector" not in (page.locator("body").get_attribute("class") or "")


def test_projector_mode_enlarges_the_text_around_the_figures_too(url, page):
    before, after = projector_sizes(page, url)
    smaller = {part: (before[part], after[part]) for part in ("explanation", "label", "tab", "button", "table")
               if not after[part] > before[part]}
    assert not smaller, f"not enlarged (px before, after): {smaller}"


def test_the_model_picker_switches_to_a_translator_stack_and_links_to_it(url, page):
    open_app(page, url, "?tab=attention")
    grid = title(page, "attn-grid-plot")
    expect()(grid).to_contain_text("4 layers × 4 heads", timeout=WAIT)                  # the GPT
    page.get_by_label("translator encoder", exact=True).check()
    expect()(page.locator("#note")).to_contain_text("The translator's encoder", timeout=WAIT)
    expect()(grid).to_contain_text("3 layers × 4 heads", timeout=WAIT)
    page.get_by_role("tab", name="Tokens", exact=True).click()
    expect()(title(page, "tokens-plot")).to_contain_text("English sentence", timeout=WAIT)
    page.locator("#copy-link").click()
    expect()(page.locator("#link textarea, #link input").first).to_have_value(re.compile(r"model=encoder"),
                                                                              timeout=WAIT)
    open_app(page, url, "?tab=layernorm&model=decoder")                            # and the link brings it back
    expect()(page.locator("#model input[value=decoder]")).to_be_checked(timeout=WAIT)
    expect()(page.locator("#note")).to_contain_text("The translator's decoder", timeout=WAIT)
    assert not error_toasts(page) and not page.errors


def test_the_header_leaves_the_screen_to_the_figures(url, browser):
    """The prompt, the model picker and the buttons above the tabs take at most 300 px at 1440×900."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    try:
        open_app(page, url, "?tab=attention")
        expect()(title(page, "attn-plot")).to_contain_text("layer 0, head 0", timeout=WAIT)
        top = page.evaluate("document.querySelector('[role=tab]').getBoundingClientRect().top + window.scrollY")
    finally:
        page.close()
    print(f"\nthe tabs start {top:.0f} px from the top at 1440×900")
    assert top <= 300, top


def test_projector_deep_link(url, page):
    open_app(page, url, "?tab=sample&projector=1")
    expect()(page.locator("body")).to_have_class(re.compile(r"\bprojector\b"), timeout=WAIT)
    expect()(page.locator("#projector input[type=checkbox]")).to_be_checked(timeout=WAIT)
    expect()(title(page, "bars-plot")).to_contain_text("Next token", timeout=WAIT)


def test_an_empty_prompt_leaves_a_message_that_stays(url, page):
    """A hall needs time to read: the message replaces the figures it concerns and is still there 8 s
    later; no panel is left blank with an "Error" badge."""
    open_app(page, url, "?tab=attention")
    expect()(title(page, "attn-plot")).to_contain_text("layer 0, head 0", timeout=WAIT)
    page.locator("#prompt textarea").fill("   ")
    page.locator("#run").click()
    in_figure = page.locator("#attn-plot .annotation-text").first
    expect()(in_figure).to_contain_text("The prompt is empty", timeout=WAIT)
    expect()(page.locator("#note")).to_contain_text("The prompt is empty", timeout=WAIT)
    page.wait_for_timeout(8000)
    expect()(in_figure).to_be_visible()
    expect()(title(page, "attn-grid-plot")).to_contain_text("Nothing drawn")
    assert page.locator(".wrap .error").count() == 0, "a panel shows an Error badge"
    shot(page, "error-empty-prompt")


def test_enter_in_the_prompt_explores(url, page):
    open_app(page, url, "?tab=tokens")
    expect()(title(page, "tokens-plot")).to_contain_text("tokens", timeout=WAIT)
    text = "Friends, Romans, countrymen"
    n_tokens = len(Explorer.load("gpt", "no-translator", "cpu").gpt.encode(text)[0])
    page.locator("#prompt textarea").fill(text)
    page.locator("#prompt textarea").press("Enter")
    expect()(title(page, "tokens-plot")).to_contain_text(f"The prompt as {n_tokens} tokens", timeout=WAIT)
    assert page.locator("#prompt textarea").input_value() == "Friends, Romans, countrymen"   # no newline added


def test_a_missing_gpt_folder_is_named_in_the_page(browser, tmp_path):
    """Started with --gpt pointing nowhere, the page says which folder and why, not just "train one"."""
    import app
    missing = tmp_path / "no-such-gpt"
    demo = app.build(Explorer.load(str(missing), "translator", "cpu"))
    demo.queue()
    _, address, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False,
                                show_error=True, css=app.CSS)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        open_app(page, address, "?tab=attention")
        expect()(page.locator("#note")).to_contain_text(str(missing), timeout=WAIT)
        shot(page, "error-missing-gpt")
    finally:
        page.close()
        demo.close()


# "queue: 1/1" somewhere a reader sees it: Gradio keeps the trackers of events with show_progress="hidden"
# in the page, transparent, which Playwright's "visible" accepts
SHOWN_QUEUE_PLACE = """() => {
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node; (node = walker.nextNode()); ) {
        if (/queue: 1\\/1/.test(node.textContent) && node.parentElement.checkVisibility(
                {opacityProperty: true, visibilityProperty: true, contentVisibilityAuto: true})) return true;
    }
    return false;
}"""


def test_a_queued_generation_shows_its_place_in_the_queue(browser, monkeypatch):
    """With every generation slot taken (one here, so that one visitor can take it), a visitor pressing
    Generate sees where they stand in the queue ("queue: 1/1"), not a frozen panel, and then their text.
    The other visitor's generation holds the slot by its pacing, two tokens a second (128 s for all), until
    the page has shown its place, then is let go: paced for reading it held the slot ~10 s, which a slow
    machine could spend before the page had even pressed Generate."""
    import app
    import gradio_client
    from toyviz.serving import pacing
    import toyviz.app.page
    monkeypatch.setattr(toyviz.app.page, "GENERATIONS_AT_ONCE", 1)    # what app.build reads
    reading_pace = pacing.TOKENS_PER_S
    monkeypatch.setattr(pacing, "TOKENS_PER_S", 2.0)                  # the server runs in this process
    demo = app.build(Explorer.load("gpt", "translator", "cpu"))
    demo.queue(default_concurrency_limit=4, max_size=64)
    _, address, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False,
                                show_error=True, css=app.CSS)
    other = gradio_client.Client(address, verbose=False, analytics_enabled=False)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(WAIT)
    try:
        stream.open_sample_tab(page, address, 16)
        holding = other.submit("To be, or not to be", 0.8, 50, 0.95, 256, 0, False, api_name="/generate")
        for _ in range(200):
            if holding.outputs():
                break
            page.wait_for_timeout(50)
        assert holding.outputs() and not holding.done(), "the other visitor's generation did not hold the slot"
        page.locator("#generate").click()
        page.wait_for_function(SHOWN_QUEUE_PLACE, timeout=WAIT)
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "generate-queued.png"), full_page=True)      # while it waits
        monkeypatch.setattr(pacing, "TOKENS_PER_S", reading_pace)       # the slot's holder catches up and ends
        page.locator("#generated .token-prob").nth(15).wait_for(state="attached", timeout=60_000)
    finally:
        page.close()
        other.close()
        demo.close()

CLIPPED = """() => {
    // tab buttons out of reach, and text of plotly figures (titles, axis titles, annotations) outside its figure. On
    // a projector the tabs are one row that scrolls sideways (issue 55): a tab past the row's end is reached by
    // scrolling it, and the tab on screen is scrolled into the row's view
    const problems = [];
    const more = document.querySelector('button[aria-label="More tabs"]');
    if (more && more.getBoundingClientRect().width > 0) problems.push('tabs hidden behind a "More tabs" menu');
    const row = document.querySelector('#tabs [role=tablist]'), ends = row.getBoundingClientRect();
    const scrolls = row.scrollWidth > row.clientWidth && getComputedStyle(row).overflowX === 'auto';
    for (const t of document.querySelectorAll('#tabs [role=tab]')) {
        const r = t.getBoundingClientRect(), inside = r.left >= ends.left - 1 && r.right <= Math.min(ends.right, innerWidth) + 1;
        if (!(r.width > 0) || !(inside || scrolls)) problems.push(`tab "${t.innerText.trim()}" not visible`);
        else if (!inside && t.getAttribute('aria-selected') === 'true')
            problems.push(`the tab on screen, "${t.innerText.trim()}", is scrolled out of the tab row`);
    }
    for (const plot of document.querySelectorAll('.js-plotly-plot')) {
        const box = plot.getBoundingClientRect();
        if (box.width === 0) continue;                       // a hidden tab's figure
        const id = plot.closest('[id]') ? plot.closest('[id]').id : '?';
        for (const text of plot.querySelectorAll('.gtitle, .g-xtitle text, .g-ytitle text, .annotation-text')) {
            const r = text.getBoundingClientRect();
            if (r.width === 0) continue;
            if (r.left < box.left - 1 || r.right > box.right + 1 || r.top < box.top - 1 || r.bottom > box.bottom + 1)
                problems.push(`${id}: "${text.textContent.slice(0, 40)}" outside its figure`);
        }
    }
    // a word in a table broken across two lines (a line may break at a space, hyphen or slash)
    for (const cell of document.querySelectorAll('table th, table td')) {
        if (cell.getBoundingClientRect().width === 0) continue;
        const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
        for (let node; (node = walker.nextNode()); ) {
            for (const word of node.textContent.matchAll(/[^\s\-\/]+/g)) {
                const range = document.createRange();
                range.setStart(node, word.index);
                range.setEnd(node, word.index + word[0].length);
                const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
                if (lines.size > 1) problems.push(`table: the word "${word[0]}" is broken across lines`);
            }
        }
    }
    return problems;
}"""


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)], ids=["720p", "1080p"])
def test_projector_mode_fits_every_tab(url, browser, size):
    """On a projector every tab button is on screen or a sideways scroll of the tab row away (no overflow menu; the
    tab shown in view), every figure's titles and
    annotations stay inside the figure, and no word in a table is broken across two lines."""
    problems = on_every_tab_in_projector_mode(browser, url, size, CLIPPED, "projector")
    assert not problems, "\n".join(problems)


def on_every_tab_in_projector_mode(browser, url, size, check: str, shots: str) -> list[str]:
    """Every tab opened in projector mode at `size` (width, height), its figure drawn, the page script
    `check` run on it (→ the problems it finds); a screenshot of each, named shots-<height>p-<tab>."""
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.set_default_timeout(WAIT)
    problems = []
    try:
        for label, tab_id, plot_id, _ in TABS:
            open_app(page, url, f"?tab={tab_id}&projector=1")
            expect()(title(page, plot_id)).not_to_be_empty(timeout=WAIT)
            settle(page)
            page.wait_for_timeout(300)
            problems += [f"{size[1]}p {tab_id}: {p}" for p in page.evaluate(check)]
            shot(page, f"{shots}-{size[1]}p-{tab_id}")
    finally:
        page.close()
    return problems
