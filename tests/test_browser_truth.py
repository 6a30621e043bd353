"""Issue #32 in Chromium: every output shows what the current inputs produce or is cleared with the
reason, a number out of range is the nearest in range and the note says so (issue 51), and a user's mistake
never becomes a corner toast.

Reuses tests/test_browser.py's server, browser and helpers (skipped as it is). Screenshots land in
screenshots/truth-*.png.
"""
import re
import pytest

from benchmarks import stream
from test_browser import (WAIT, browser, error_toasts, expect, open_app, page, pytestmark, settle, shot,  # noqa: F401
                          title, url)

PAIR_MISMATCH = ("The Duke of York is dead", "The Duke of Suffolk is dead, and the Duke of")


def toasts(page) -> list[str]:
    """Every toast, of any kind: a user's mistake must show in place, never in a corner."""
    return [t.strip() for t in page.locator(".toast-body").all_text_contents()]


def test_stop_and_a_new_generation_clear_the_last_runs_figures(url, page):
    """After a generation, a new one starts from cleared figures and a busy button; Stop leaves the
    figures cleared with the reason, not the previous run's "N generated tokens". The server's sampler: the
    page's own (tests/test_browser_sampler.py) is kept out."""
    stream.server_samples(page)
    open_app(page, url, "?tab=sample&max_new=6")
    expect()(title(page, "bars-plot")).to_contain_text("Next token", timeout=WAIT)
    page.locator("#generate").click()
    expect()(title(page, "generated-plot")).to_contain_text("6 generated tokens", timeout=WAIT)
    settle(page)
    page.locator("#max-new input[type=number]").fill("256")
    page.keyboard.press("Tab")
    page.locator("#generate").click()
    button = page.locator("#generate")
    expect()(button).to_contain_text("Generating", timeout=WAIT)          # a second press is not ignored in silence
    expect()(button).to_be_disabled()
    expect()(title(page, "generated-plot")).to_have_text("The generated tokens", timeout=WAIT)   # not the last 6
    expect()(title(page, "bars-plot")).to_contain_text("after the generated text")
    # Stop at once: waiting for a few tokens first, a page slowed by a busy machine showed its first ones only after
    # the server had sent all 256, and Stop came after the end (CI: the run's own figures, no "Stop leaves …")
    page.locator("#stop").click()
    expect()(button).to_have_text("Generate", timeout=WAIT)
    expect()(button).to_be_enabled()
    page.wait_for_timeout(1000)
    for plot in ("bars-plot", "generated-plot"):
        expect()(page.locator(f"#{plot} .annotation-text").first).to_contain_text("Stop leaves this empty")
    shot_now(page, "truth-stopped")
    assert not toasts(page) and not page.errors, (toasts(page), page.errors)


def shot_now(page, name):
    """A screenshot of the page as it is, pending events and all (shot() waits for them)."""
    from test_browser import SHOTS
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def test_an_empty_english_input_clears_the_last_translation(url, page):
    open_app(page, url, "?tab=translate")
    page.locator("#translate").click()
    spanish = page.locator("#spanish textarea")
    expect()(spanish).not_to_have_value("", timeout=WAIT)
    page.locator("#source textarea").fill("   ")
    page.locator("#translate").click()
    expect()(page.locator("#note")).to_contain_text("The English sentence is empty", timeout=WAIT)
    expect()(spanish).to_have_value("")
    expect()(title(page, "cross-plot")).to_contain_text("Nothing drawn")
    shot(page, "truth-translate-empty")
    assert not toasts(page), toasts(page)


@pytest.mark.parametrize("typed, words", [("999999", "steering feature 999999 is above the highest, 2047: using 2047."),
                                          ("-5", "steering feature -5 is below the lowest, -1 (off): using -1.")])
def test_a_steering_feature_out_of_range_is_the_nearest_and_said_in_place(url, page, typed, words):
    """Issue 51's one rule: never another feature in silence — the nearest one, and the note says so."""
    open_app(page, url, "?tab=sample&max_new=4&steer_alpha=5")
    expect()(title(page, "bars-plot")).to_contain_text("Next token", timeout=WAIT)
    page.locator("#steer-feature input").fill(typed)
    page.locator("#generate").click()
    expect()(page.locator("#note")).to_contain_text(words, timeout=WAIT)
    expect()(page.locator("#generate")).to_have_text("Generate", timeout=WAIT)
    assert page.locator("#generated .token-prob").count() == 4
    settle(page)
    shot(page, f"truth-steer-{typed}")
    assert not toasts(page) and not page.errors, (toasts(page), page.errors)


@pytest.mark.parametrize("typed, words", [("999999", "feature 999999 is past the last, 2047: showing 2047."),
                                          ("-5", "feature -5 is below the first, -1 (the prompt's strongest)")])
def test_a_feature_number_out_of_range_is_the_nearest_and_said_in_place(url, page, typed, words):
    open_app(page, url, "?tab=features")
    expect()(title(page, "feature-contexts-plot")).not_to_be_empty(timeout=WAIT)
    settle(page)
    page.locator("#feature input").fill(typed)
    page.keyboard.press("Tab")
    expect()(page.locator("#note")).to_contain_text(words, timeout=WAIT)
    expect()(page.locator("#feature input")).to_have_value(typed)         # the note says why the box differs
    expect()(page.locator("#feature-about")).to_contain_text("Feature #")
    shot(page, f"truth-feature-{typed}")
    assert not toasts(page), toasts(page)


def test_a_number_typed_in_the_why_tab_that_is_no_token_is_refused_in_tokens_terms(url, page):
    """999999 typed is text: not one token of the vocabulary, said as the tabs show tokens, not as an id (issue 44)."""
    open_app(page, url, "?tab=why")
    expect()(title(page, "why-components-plot")).to_contain_text("Which parts push", timeout=3 * WAIT)
    settle(page)
    box = page.locator("#why-token input")
    box.fill("999999")
    box.press("Enter")
    expect()(page.locator("#why-components-plot .annotation-text").first).to_contain_text(
        re.compile(r"is\s*not\s*a\s*token\s*of\s*the\s*GPT"), timeout=2 * WAIT)
    assert " id" not in page.locator("#why-components-plot .annotation-text").first.text_content()
    shot(page, "truth-why-id")
    assert not toasts(page), toasts(page)


def test_a_patching_mistake_shows_in_place_not_as_a_toast(url, page):
    open_app(page, url, "?tab=why")
    expect()(title(page, "why-components-plot")).to_contain_text("Which parts push", timeout=3 * WAIT)
    settle(page)
    page.locator("#why-clean textarea, #why-clean input").first.fill(PAIR_MISMATCH[0])
    page.locator("#why-corrupted textarea, #why-corrupted input").first.fill(PAIR_MISMATCH[1])
    page.locator("#why-patch").click()
    expect()(page.locator("#why-patching-stream-plot .annotation-text").first).to_be_visible(timeout=2 * WAIT)
    expect()(title(page, "why-patching-stream-plot")).to_contain_text("Nothing drawn")
    settle(page)
    shot(page, "truth-patching-mistake")
    assert not toasts(page) and page.locator(".wrap .error").count() == 0, toasts(page)


# Every pair of texts in one figure that cover each other (tick labels, colour-bar ticks and titles, cell
# texts, annotations, titles). Two texts at the same angle (rotated tick labels) are compared in their own
# frame: along the text by their lengths, across it by their font size (their axis-aligned boxes overlap
# when rotated though the letters do not); others by their boxes. 2 px of touching is not overlapping.
# And every axis tick label that lies over a plot area (a subplot's ticks pressed into its neighbour).
OVERLAPS = """() => {
    const problems = [];
    for (const plot of document.querySelectorAll('.js-plotly-plot')) {
        const id = plot.closest('[id]') ? plot.closest('[id]').id : '?';
        const r0 = plot.getBoundingClientRect();
        if (r0.width === 0 || r0.height === 0) continue;
        const areas = [...plot.querySelectorAll('rect.nsewdrag')].map(a => a.getBoundingClientRect());
        for (const t of plot.querySelectorAll('.xaxislayer-above text, .yaxislayer-above text')) {
            const r = t.getBoundingClientRect(), text = t.textContent.trim();
            if (!text || r.width < 1 || getComputedStyle(t).opacity === '0') continue;
            for (const a of areas) {
                const w = Math.min(a.right, r.right) - Math.max(a.left, r.left) - 2;
                const h = Math.min(a.bottom, r.bottom) - Math.max(a.top, r.top) - 2;
                if (w > 0 && h > 0) problems.push(`${id}: tick "${text.slice(0, 30)}" lies over a plot area`);
            }
        }
        const texts = [];
        for (const t of plot.querySelectorAll('svg text')) {
            const text = t.textContent.trim();
            const r = t.getBoundingClientRect();
            if (!text || r.width < 1 || r.height < 1 || getComputedStyle(t).opacity === '0') continue;
            const m = t.getScreenCTM();
            texts.push({text, r, angle: Math.round(Math.atan2(m.b, m.a) * 180 / Math.PI),
                        length: t.getComputedTextLength(), size: parseFloat(getComputedStyle(t).fontSize),
                        x: (r.left + r.right) / 2, y: (r.top + r.bottom) / 2});
        }
        for (let i = 0; i < texts.length; i++) {
            for (let j = i + 1; j < texts.length; j++) {
                const a = texts[i], b = texts[j];
                let covers;
                if (a.angle === b.angle && a.angle !== 0) {
                    const rad = a.angle * Math.PI / 180, dx = b.x - a.x, dy = b.y - a.y;
                    const along = Math.abs(dx * Math.cos(rad) + dy * Math.sin(rad));
                    const across = Math.abs(-dx * Math.sin(rad) + dy * Math.cos(rad));
                    covers = along < (a.length + b.length) / 2 - 2 && across < 0.8 * (a.size + b.size) / 2;
                } else {
                    const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left) - 2;
                    const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top) - 2;
                    covers = w > 0 && h > 0;
                }
                if (covers) problems.push(`${id}: "${a.text.slice(0, 30)}" overlaps "${b.text.slice(0, 30)}"`);
            }
        }
    }
    return problems;
}"""


@pytest.mark.parametrize("size", [(1280, 720), (1920, 1080)], ids=["720p", "1080p"])
def test_no_two_texts_of_a_figure_overlap_in_projector_mode(url, browser, size):
    """Tick labels, colour-bar ticks and titles, cell texts and annotations: none covers another and no
    tick label lies over a plot area, on every tab, on a projector at 720p and 1080p."""
    from test_browser import on_every_tab_in_projector_mode
    problems = on_every_tab_in_projector_mode(browser, url, size, OVERLAPS, "truth-projector")
    assert not problems, "\n".join(sorted(set(problems)))


def test_the_layer_norm_heatmaps_name_every_norm_on_a_projector(url, browser):
    """Each of the four heatmaps labels every norm's row (plotly drops every other label where rows are close)."""
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.set_default_timeout(WAIT)
    try:
        open_app(page, url, "?tab=layernorm&projector=1")
        expect()(title(page, "ln-heat-plot")).not_to_be_empty(timeout=WAIT)
        settle(page)
        labels = page.locator("#ln-heat-plot .yaxislayer-above text").all_text_contents()
        rows = page.locator("#ln-heat-plot .js-plotly-plot").evaluate("p => p.data[0].y.length")
        assert rows >= 9 and len(labels) == 4 * rows, labels
    finally:
        page.close()
