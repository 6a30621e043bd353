"""The Circuits tab in Chromium (issue 45): the shipped example's graph drawn, a feature hovered shows its
dashboard with no request to the server, a click ablates it in the real GPT beside the graph's prediction; the
same on a projector. Reuses tests/test_browser.py's server and browser (skipped as it is); screenshots land in
screenshots/circuits-*.png."""
from urllib.parse import quote

from test_browser import WAIT, browser, expect, open_app, pytestmark, settle, title, url  # noqa: F401
from test_browser import SHOTS
from toyviz.app.views.circuits import EXAMPLES

PROMPT = EXAMPLES[0][1]           # the docs' worked example: " S" at p 0.97
CLICKED = "0_1603_8"              # its layer-0 ' S' feature at the first " S": the graph says −2.04, the GPT −0.46


def feature_point(page, key: str | None = None) -> tuple[str, float, float]:
    """(id, x, y on the page) of a feature node of the drawn graph: the one with this id, else the last of its
    trace (a small one: the panel's first content is the strongest feature's, so a hover must change it)."""
    return page.evaluate("""(key) => {
        const graph = document.querySelector('#circuit-graph-plot .js-plotly-plot');
        const index = graph.data.findIndex((t) => t.name.startsWith('feature'));
        const points = graph.querySelectorAll('.scatterlayer .trace')[index].querySelectorAll('path.point');
        const ids = graph.data[index].customdata.map((c) => c[0]);
        const k = key ? ids.indexOf(key) : points.length - 1;
        const box = points[k].getBoundingClientRect();
        return [ids[k], box.x + box.width / 2, box.y + box.height / 2];
    }""", key)


def hovered(page, key: str | None = None) -> tuple[str, float, float]:
    """Hover a feature node; its dashboard shows in the panel."""
    key, x, y = feature_point(page, key)
    layer, feature, position = key.split("_")
    page.mouse.move(x, y)
    panel = page.locator("#circuit-dashboard")
    expect()(panel).to_contain_text(f"Layer {layer}, feature #{feature}", timeout=WAIT)
    expect()(panel).to_contain_text(f"here at position {position}")
    expect()(panel).to_contain_text("Where it fires hardest")
    expect()(panel).to_contain_text("Tokens it promotes and suppresses")
    return key, x, y


def hover_and_ablate(page, name: str):
    """Hover two features: each one's dashboard shows, and nothing is sent; click the second (the docs' layer-0
    ' S' feature at position 8): the ablation's bars."""
    page.locator("#circuit-graph-plot").scroll_into_view_if_needed()
    sent = []
    page.on("request", lambda request: sent.append(request.url) if "/gradio_api/" in request.url else None)
    hovered(page)
    key, x, y = hovered(page, CLICKED)
    page.wait_for_timeout(300)
    assert not sent, sent                                   # the hovers asked the server nothing
    page.screenshot(path=str(SHOTS / f"{name}-hover.png"))
    page.mouse.click(x, y)
    expect()(page.locator("#circuit-node input, #circuit-node textarea").first).to_have_value(key, timeout=WAIT)
    result = title(page, "circuit-intervention-plot")
    expect()(result).to_contain_text(f"Ablated: feature {key}", timeout=WAIT)
    expect()(result).to_contain_text("in the GPT")
    expect()(page.locator("#circuit-intervention-plot")).to_contain_text("the graph predicts")
    settle(page)
    page.locator("#circuit-intervention-plot").scroll_into_view_if_needed()
    page.screenshot(path=str(SHOTS / f"{name}-ablated.png"))


def test_the_shipped_example_hovers_a_feature_and_ablates_it(url, browser):
    SHOTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(WAIT)
    errors = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    open_app(page, url, "?tab=circuits&prompt=" + quote(PROMPT))
    expect()(title(page, "circuit-graph-plot")).to_contain_text("Why ␣S (p=0.970)", timeout=60_000)
    expect()(page.locator("#circuit-about")).to_contain_text("Error nodes (what the transcoders miss) carry")
    hover_and_ablate(page, "circuits")
    # a supernode typed by hand is drawn, and the link keeps it
    page.locator("#supernodes textarea, #supernodes input").first.fill("S copy: 0_1603_8 0_962_8")
    page.locator("#supernodes textarea, #supernodes input").first.press("Enter")
    expect()(page.locator("#circuit-graph-plot .legendtext").filter(has_text="supernode")).to_have_count(1,
                                                                                                       timeout=WAIT)
    # a new graph (here its supernodes; a new prompt or target alike) clears the old graph's intervention and its id
    # (issue 55: "Ablated: feature 0_91_3" stayed under a new graph, and Ablate applied the old id to it)
    expect()(page.locator("#circuit-intervention-plot")).to_be_hidden(timeout=WAIT)
    expect()(page.locator("#circuit-node input, #circuit-node textarea").first).to_have_value("")
    page.locator("#copy-link").click()
    expect()(page.locator("#link input, #link textarea").first).to_have_value(
        __import__("re").compile(r"supernodes=S\+copy%3A\+0_1603_8\+0_962_8"), timeout=WAIT)
    page.close()
    assert not errors, errors


def test_on_a_projector_the_view_still_hovers_and_ablates(url, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.set_default_timeout(WAIT)
    open_app(page, url, "?tab=circuits&projector=1&prompt=" + quote(PROMPT))
    expect()(page.locator("body")).to_have_class(__import__("re").compile(r"\bprojector\b"), timeout=60_000)
    expect()(title(page, "circuit-graph-plot")).to_contain_text("Why ␣S", timeout=60_000)
    hover_and_ablate(page, "circuits-projector")
    page.close()
