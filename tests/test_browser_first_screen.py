"""Issues 44 and 55 in Chromium: a first screen with a picture. On every tab the top of its first figure is on the
first screen, on a laptop (1440×900) and on a projector (1280×720 and 1920×1080, projector mode), and in a lesson's
step on a projector (the lesson bar, the compact header, the tab row, then the figure); a tab's note is drawn under
the tab bar, so the tab bar stands at the same height on every tab. On a projector (issue 55) the header is one line,
the tabs one row, and most of every tab's first figure, its plot area (not its title), is on the first screen.

Positions, not durations: where each element is once the tab is drawn. Reuses tests/test_browser_lessons.py's server
(the app as app.py serves it, over a lectures file of its own) and tests/test_browser.py's Chromium. The screens
land in screenshots/first-screen-*.png.
"""
import re

import pytest

from benchmarks import stream
from test_browser import WAIT, expect, open_app, pytestmark, settle  # noqa: F401
from test_browser import browser  # noqa: F401  (the module's Chromium)
from test_browser_lessons import Server, counter, presenter_page, screen

# (tab label, tab id, its first figure), in the page's order; Watch it learn's before a run is the loss axes
# of the recipe picked
TABS = [(label, tab, plot) for label, tab, plot, _ in stream.TABS] + [("Circuits", "circuits", "circuit-graph-plot"),
                                                                      ("Watch it learn", "watch", "watch-loss-plot")]
MODES = {"laptop": ((1440, 900), ""), "projector": ((1280, 720), "&projector=1"),
         "projector-1080": ((1920, 1080), "&projector=1")}
# at least a fifth of the screen below a figure's top is the figure: its title and the start of its drawing
SHOWN = 0.8
# on a projector, the share of each tab's first plot area on the first screen, every tab's (issue 55: 11 of 14 tabs were
# under 60 %; the figures are sized to the screen, toyviz.app.projector, and Inside a head and Circuits have projector
# layouts of their own: measured 74-100 % at 1280×720, Inside a head 91 %, Circuits 76 %)
PLOT_SHOWN = 0.6
# px from the top of the screen (scrolled to the top of the page) to the first figure, of the tab bar's top and
# bottom, of the note (null: no note on this tab), of the header's bottom; the tab bar's rows (its tabs' distinct tops);
# the share of the figure's plot area on the screen (its subplots' drawing areas, from the top of the highest to the
# bottom of the lowest; the whole figure where it has none), and of the whole figure (its main svg)
WHERE = """(plot) => {
    scrollTo(0, 0);
    const top = (e) => e && e.getBoundingClientRect().height > 0 ? Math.round(e.getBoundingClientRect().top) : null;
    const bar = document.querySelector('#tabs [role=tablist]');
    const svg = document.querySelector(`#${plot} .main-svg`), box = svg.getBoundingClientRect();
    const areas = [...svg.querySelectorAll('.draglayer .nsewdrag')].map((e) => e.getBoundingClientRect())
                                                                   .filter((b) => b.height > 0);
    const area = areas.length ? [Math.min(...areas.map((b) => b.top)), Math.max(...areas.map((b) => b.bottom))]
                              : [box.top, box.bottom];
    const seen = ([from, to]) => Math.round(100 * Math.max(0, Math.min(to, innerHeight) - Math.max(from, 0))
                                            / Math.max(1, to - from)) / 100;
    return {figure: top(document.getElementById(plot)), tabs: top(bar), tabs_end: Math.round(bar.getBoundingClientRect().bottom),
            note: top(document.getElementById('note')), screen: innerHeight,
            header_end: Math.round(document.getElementById('header').getBoundingClientRect().bottom),
            tab_rows: new Set([...bar.querySelectorAll('[role=tab]')].map((t) => Math.round(t.getBoundingClientRect().top))).size,
            plot_share: seen(area), figure_share: seen([box.top, box.bottom])};
}"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    served = Server(tmp_path_factory.mktemp("lectures") / "lectures.sqlite3").start()
    yield served
    served.demo.close()


def where(page, plot: str) -> dict:
    page.locator(f"#{plot}").wait_for(timeout=WAIT)
    expect()(page.locator(f"#{plot} .gtitle").first).not_to_be_empty(timeout=WAIT)
    settle(page)
    page.wait_for_timeout(300)                      # Gradio's buttons ease font changes over 0.2 s
    return page.evaluate(WHERE, plot)


@pytest.mark.parametrize("mode", list(MODES))
def test_every_tab_shows_its_figure_on_the_first_screen(server, browser, mode):
    size, query = MODES[mode]
    page = presenter_page(browser, size)
    found = {}
    try:
        for _, tab, plot in TABS:
            open_app(page, server.url, f"?tab={tab}{query}")
            found[tab] = where(page, plot)
            screen(page, f"first-screen-{mode}-{tab}")
    finally:
        page.close()
    print(f"\n{mode} {size[0]}×{size[1]}: " + ", ".join(f"{tab} {at['figure']} px, plot {at['plot_share']:.0%}"
                                                       for tab, at in found.items()))
    off = {tab: at["figure"] for tab, at in found.items() if at["figure"] is None or at["figure"] > SHOWN * size[1]}
    assert not off, f"figures starting below {SHOWN:.0%} of the {size[1]} px screen: {off}"
    if mode.startswith("projector"):
        # the header one line (the prompt, the model, Explore, projector mode, "⋯"), the tabs one row
        assert all(at["header_end"] <= 80 for at in found.values()), {tab: at["header_end"] for tab, at in found.items()}
        assert {at["tab_rows"] for at in found.values()} == {1}, {tab: at["tab_rows"] for tab, at in found.items()}
        short = {tab: at["plot_share"] for tab, at in found.items() if at["plot_share"] < PLOT_SHOWN}
        assert not short, f"first figures with under {PLOT_SHOWN:.0%} of their plot on the first screen: {short}"
    # the tab bar does not move from tab to tab: a note is drawn under it, on the tabs that have one
    assert len({at["tabs"] for at in found.values()}) == 1, {tab: at["tabs"] for tab, at in found.items()}
    noted = {tab: at for tab, at in found.items() if at["note"] is not None}
    assert "positional" in noted, "the Positions tab's note (the GPT adds no position vector) is not shown"
    assert all(at["note"] >= at["tabs_end"] for at in noted.values()), noted


@pytest.mark.parametrize("lesson, plot, question", [("sampling", "bars-plot", True),
                                                    ("attention-from-the-ground-up", "tokens-plot", False)])
def test_a_lessons_first_step_on_a_projector_shows_its_figure_on_the_first_screen(server, browser, lesson, plot,
                                                                                  question):
    """The lesson bar, the header and the tab row leave the step's figure on the 720 px screen; a question's
    step covered until Reveal, and revealed (the bar grows by the votes)."""
    page = presenter_page(browser, MODES["projector"][0])
    try:
        open_app(page, server.url, f"?lesson={lesson}&projector=1")
        expect()(counter(page)).to_contain_text("1 /", timeout=WAIT)
        found = {"shown": where(page, plot)}
        screen(page, f"first-screen-lesson-{lesson}")
        if question:
            page.locator("#lesson-reveal").click()
            expect()(page.locator("body")).not_to_have_class(re.compile(r"\blesson-hides\b"), timeout=WAIT)
            found["revealed"] = where(page, plot)
            screen(page, f"first-screen-lesson-{lesson}-revealed")
    finally:
        page.close()
    print(f"\n{lesson} at 1280×720: " + ", ".join(f"{state} {at['figure']} px" for state, at in found.items()))
    for at in found.values():
        assert at["figure"] is not None and at["figure"] <= SHOWN * at["screen"], found
