"""A real browser (Debian's Chromium driven by Playwright) clicks through the app.

Skipped when Chromium is absent; `.ci/run` installs it. Screenshots land in screenshots/ (ignored by git).
"""
import os
from pathlib import Path

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import pytest

import app
from toyviz.checkpoint import CHECKPOINTS

CHROMIUM = "/usr/lib/chromium/chromium"
SHOTS = Path(__file__).resolve().parent.parent / "screenshots"
TABS = [("Tokens", "tokens-plot"), ("Positions", "pe-plot"), ("Attention", "attn-grid-plot"),
        ("Inside a head", "leak-plot"), ("Layer norm", "ln-heat-plot"), ("Residual stream", "res-norm-plot"),
        ("Sample", "bars-plot"), ("Translate", "cross-plot"), ("Model", "params-plot")]
WAIT = 45_000                                   # ms; the first plotly render alone takes ~3 s

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed"),
              pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(), reason="no shipped checkpoints")]


@pytest.fixture(scope="module")
def url():
    demo = app.build(app.load_explorer("gpt", "translator", "cpu"))
    demo.queue(default_concurrency_limit=4)
    _, address, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False,
                                css=app.CSS)
    yield address
    demo.close()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                                    "--disable-background-networking", "--disable-component-update"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    yield page
    page.close()


def title(page, elem_id):
    return page.locator(f"#{elem_id} .gtitle").first


def test_every_tab_draws_its_figures(url, page):
    from playwright.sync_api import expect
    SHOTS.mkdir(exist_ok=True)
    page.goto(url, wait_until="domcontentloaded")
    expect(title(page, "attn-plot")).to_contain_text("layer 0", timeout=WAIT)
    for name, plot_id in TABS:
        page.get_by_role("tab", name=name).click()
        expect(title(page, plot_id)).not_to_be_empty(timeout=WAIT)
        page.screenshot(path=str(SHOTS / f"tab-{name.lower().replace(' ', '-')}.png"), full_page=True)


def test_temperature_slider_redraws_the_bars(url, page):
    from playwright.sync_api import expect
    page.goto(url + "?tab=sample", wait_until="domcontentloaded")
    expect(title(page, "bars-plot")).to_contain_text("temperature 0.8", timeout=WAIT)
    page.locator("#temperature input[type=range]").fill("1.5")
    expect(title(page, "bars-plot")).to_contain_text("temperature 1.5", timeout=WAIT)


def test_generation_streams_text(url, page):
    from playwright.sync_api import expect
    page.goto(url + "?tab=sample&max_new=30", wait_until="domcontentloaded")
    expect(title(page, "bars-plot")).not_to_be_empty(timeout=WAIT)
    page.locator("#generate").click()
    expect(page.locator("#generated .token-prob").nth(5)).to_be_attached(timeout=WAIT)
    expect(page.locator("#generated .token-prob")).to_have_count(30, timeout=WAIT)
    page.screenshot(path=str(SHOTS / "generated.png"), full_page=True)


def test_translation_shows_cross_attention(url, page):
    from playwright.sync_api import expect
    page.goto(url + "?tab=translate", wait_until="domcontentloaded")
    page.locator("#source textarea").fill("The Lord is my shepherd.")
    page.locator("#translate").click()
    expect(page.locator("#spanish textarea")).to_have_value("El Señor es mi pastor.", timeout=WAIT)
    expect(title(page, "cross-plot")).to_contain_text("ross", timeout=WAIT)


def test_deep_link_and_projector_mode(url, page):
    from playwright.sync_api import expect
    page.goto(url + "?tab=attention&layer=1&head=2", wait_until="domcontentloaded")
    head_title = title(page, "attn-plot")
    expect(head_title).to_contain_text("layer 1, head 2", timeout=WAIT)
    download = page.locator("#attn-plot .js-plotly-plot").evaluate("e => e._context.toImageButtonOptions")
    assert download["scale"] == 2 and download["filename"] == "toyviz-attention-L1-H2-probs"
    size = lambda: float(head_title.evaluate("e => parseFloat(getComputedStyle(e).fontSize)"))
    before = size()
    page.locator("#projector input[type=checkbox]").check()
    expect(page.locator("body")).to_have_class("projector", timeout=WAIT)
    page.wait_for_function(f"() => parseFloat(getComputedStyle(document.querySelector('#attn-plot .gtitle')).fontSize) > {before}",
                           timeout=WAIT)
    assert size() > before
    page.screenshot(path=str(SHOTS / "projector.png"), full_page=True)
