"""Issue #32 in Chromium: every output shows what the current inputs produce or is cleared with the
reason, a number out of range is refused in place, and a user's mistake never becomes a corner toast.

Reuses tests/test_browser.py's server, browser and helpers (skipped as it is). Screenshots land in
screenshots/truth-*.png.
"""
import pytest

from test_browser import (WAIT, browser, error_toasts, expect, open_app, page, pytestmark, settle, shot,  # noqa: F401
                          title, url)

PAIR_MISMATCH = ("The Duke of York is dead", "The Duke of Suffolk is dead, and the Duke of")


def toasts(page) -> list[str]:
    """Every toast, of any kind: a user's mistake must show in place, never in a corner."""
    return [t.strip() for t in page.locator(".toast-body").all_text_contents()]


def test_stop_and_a_new_generation_clear_the_last_runs_figures(url, page):
    """After a generation, a new one starts from cleared figures and a busy button; Stop leaves the
    figures cleared with the reason, not the previous run's "N generated tokens"."""
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
    page.locator("#generated .token-prob").nth(5).wait_for(state="attached", timeout=WAIT)
    shot_now(page, "truth-generating")
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
    expect()(page.locator("#note")).to_contain_text("empty", timeout=WAIT)
    expect()(spanish).to_have_value("")
    expect()(title(page, "cross-plot")).to_contain_text("Nothing drawn")
    shot(page, "truth-translate-empty")
    assert not toasts(page), toasts(page)


@pytest.mark.parametrize("typed, words", [("999999", "from -1 to"), ("-5", "not -5")])
def test_a_steering_feature_out_of_range_is_refused_in_place(url, page, typed, words):
    open_app(page, url, "?tab=sample&max_new=4&steer_alpha=5")
    expect()(title(page, "bars-plot")).to_contain_text("Next token", timeout=WAIT)
    page.locator("#steer-feature input").fill(typed)
    page.locator("#generate").click()
    expect()(page.locator("#note")).to_contain_text(words, timeout=WAIT)
    expect()(page.locator("#bars-plot .annotation-text").first).to_contain_text("steer feature")
    assert page.locator("#generated .token-prob").count() == 0
    expect()(page.locator("#generate")).to_have_text("Generate", timeout=WAIT)
    settle(page)
    shot(page, f"truth-steer-{typed}")
    assert not toasts(page) and not page.errors, (toasts(page), page.errors)


@pytest.mark.parametrize("typed", ["999999", "-5"])
def test_a_feature_number_out_of_range_is_refused_where_its_dashboard_was(url, page, typed):
    open_app(page, url, "?tab=features")
    expect()(title(page, "feature-contexts-plot")).not_to_be_empty(timeout=WAIT)
    settle(page)
    page.locator("#feature input").fill(typed)
    page.keyboard.press("Tab")
    expect()(page.locator("#feature-contexts-plot .annotation-text").first).to_contain_text("from -1 to", timeout=WAIT)
    expect()(page.locator("#feature input")).to_have_value(typed)         # the box and the message agree
    assert "Feature #" not in page.locator("#feature-about").inner_text()
    shot(page, f"truth-feature-{typed}")
    assert not toasts(page), toasts(page)


def test_a_token_id_past_the_vocabulary_is_refused_in_the_why_tab(url, page):
    open_app(page, url, "?tab=why")
    expect()(title(page, "why-components-plot")).to_contain_text("Which parts push", timeout=3 * WAIT)
    settle(page)
    box = page.locator("#why-token input")
    box.fill("999999")
    box.press("Enter")
    expect()(page.locator("#why-components-plot .annotation-text").first).to_contain_text("token id must be",
                                                                                       timeout=2 * WAIT)
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
