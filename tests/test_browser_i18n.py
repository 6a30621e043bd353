"""Issue 56 in Chromium: the page in Spanish for a Spanish browser (Accept-Language: es) and for `?lang=es`, back in
English for `?lang=en`; the header's switch (in projector mode behind "⋯") opens the same view in the other language,
and Copy link keeps the language. Header, tab labels, the first explanation and an empty prompt's message are checked
in each language; the Spanish page is shot in normal and projector mode at 1280×720 (screenshots/i18n-*.png).

One app for the file, with a worker process computing the tabs as app.py runs them (a message crosses from it);
the browser and helpers are tests/test_browser.py's (skipped as it is).
"""
import re

import pytest

from test_browser import SHOTS, WAIT, browser, expect, open_app, pytestmark, settle, shot, title  # noqa: F401
from toyviz.app.explorer import Explorer
from toyviz.classroom.store import Lectures

SPANISH_TABS = ["Tokens", "Posiciones", "Atención", "Dentro de una cabeza", "Normalización", "Flujo residual",
                "¿Por qué este token?", "Rasgos", "Circuitos", "Muestreo", "Traducir", "Experimentos", "Modelo",
                "Míralo aprender"]
ENGLISH_TABS = ["Tokens", "Positions", "Attention", "Inside a head", "Layer norm", "Residual stream", "Why this token?",
                "Features", "Circuits", "Sample", "Translate", "Experiments", "Model", "Watch it learn"]


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    """The app as app.py serves it, the phones' routes attached, its lectures in a temporary file."""
    import app
    from toyviz.app.compute import start_workers
    lectures = Lectures(tmp_path_factory.mktemp("lectures") / "lectures.sqlite3")
    with start_workers(1, "gpt", "translator", "cpu") as workers:
        demo = app.build(Explorer.load("gpt", "translator", "cpu"), lectures, workers=workers.wait_ready())
        demo.queue(default_concurrency_limit=demo.ui.at_once, max_size=64)
        _, address, _ = demo.launch(**app.launch_options(demo.ui.presenter), server_name="127.0.0.1",
                                    prevent_thread_lock=True, quiet=True)
        yield address
        demo.close()


@pytest.fixture
def spanish(browser):
    """A page of a browser whose language is Spanish (its Accept-Language and navigator.language)."""
    context = browser.new_context(locale="es-ES", extra_http_headers={"Accept-Language": "es-ES,es;q=0.9"},
                                  viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(WAIT)
    yield page
    context.close()


@pytest.fixture
def english(browser):
    context = browser.new_context(locale="en-US", viewport={"width": 1280, "height": 720})
    page = context.new_page()
    page.set_default_timeout(WAIT)
    yield page
    context.close()


def tab_labels(page) -> list[str]:
    return [text.strip() for text in page.locator("#tabs [role=tab]").all_text_contents()]


def says_spanish(page):
    expect()(page.locator("#intro")).to_contain_text("mira cómo trabaja un transformer", timeout=WAIT)
    expect()(page.locator("#run")).to_have_text("Explorar")
    expect()(page.locator("#projector")).to_contain_text("Modo proyector")
    expect()(page.locator("#tabs [role=tab]").nth(2)).to_have_text("Atención")
    assert tab_labels(page) == SPANISH_TABS
    expect()(page.get_by_text("Cada cabeza de atención convierte cada token")).to_be_visible()
    expect()(page.locator("#layer")).to_contain_text("capa")                      # the controls' labels too
    expect()(page.locator("#mode")).to_contain_text("puntuaciones")
    expect()(page.get_by_role("button", name="una frase repetida (inducción)")).to_be_visible()   # an example's name


def says_english(page):
    expect()(page.locator("#intro")).to_contain_text("see a transformer work", timeout=WAIT)
    expect()(page.locator("#run")).to_have_text("Explore")
    assert tab_labels(page) == ENGLISH_TABS
    expect()(page.get_by_text("Each head turns every token into a query")).to_be_visible()


def empty_prompt_says(page, text):
    expect()(title(page, "attn-plot")).to_contain_text("0", timeout=WAIT)     # the first figure drawn
    settle(page)
    page.locator("#prompt textarea").fill("   ")
    page.locator("#run").click()
    expect()(page.locator("#attn-plot .annotation-text").first).to_contain_text(text, timeout=WAIT)
    expect()(page.locator("#note")).to_contain_text(text)


def test_a_spanish_browser_gets_the_page_in_spanish(url, spanish):
    open_app(spanish, url, "?tab=attention")
    says_spanish(spanish)
    expect()(title(spanish, "attn-plot")).to_contain_text("0", timeout=WAIT)
    shot(spanish, "i18n-es")
    spanish.screenshot(path=str(SHOTS / "i18n-es-first-screen.png"))
    empty_prompt_says(spanish, "está en blanco")
    expect()(title(spanish, "attn-grid-plot")).to_contain_text("No se dibujó nada")


def test_lang_es_in_the_link_makes_an_english_browser_spanish(url, english):
    open_app(english, url, "?tab=attention&lang=es")
    says_spanish(english)
    empty_prompt_says(english, "está en blanco")


def test_lang_en_in_the_link_brings_english_back(url, spanish):
    open_app(spanish, url, "?tab=attention&lang=en")
    says_english(spanish)
    empty_prompt_says(spanish, "The prompt is empty")


def test_the_switch_in_projector_mode_keeps_the_view_and_copy_link_keeps_the_language(url, english):
    open_app(english, url, "?tab=residual&projector=1")
    expect()(english.locator("body")).to_have_class(re.compile(r"\bprojector\b"), timeout=WAIT)
    expect()(english.locator("#language")).to_be_hidden()               # in the one-line header's "⋯"
    english.locator(".tv-more").click()
    english.locator("#language").click()
    english.wait_for_url(re.compile(r"lang=es"), timeout=WAIT)
    assert "tab=residual" in english.url and "projector=1" in english.url
    expect()(english.locator("body")).to_have_class(re.compile(r"\bprojector\b"), timeout=WAIT)
    expect()(english.locator("#tabs [role=tab][aria-selected=true]")).to_have_text("Flujo residual", timeout=WAIT)
    expect()(english.locator("#res-norm-plot .gtitle").first).to_be_visible(timeout=WAIT)
    shot(english, "i18n-es-projector")
    english.screenshot(path=str(SHOTS / "i18n-es-projector-first-screen.png"))
    english.locator(".tv-more").click()
    english.locator("#copy-link").click()
    expect()(english.locator("#link textarea, #link input").first).to_have_value(re.compile(r"lang=es"), timeout=WAIT)
    english.locator("#language").click()                                  # and back
    english.wait_for_url(re.compile(r"lang=en"), timeout=WAIT)
    expect()(english.locator("#tabs [role=tab][aria-selected=true]")).to_have_text("Residual stream", timeout=WAIT)


def test_a_spanish_lecture_its_bar_and_its_phones_page(url, spanish, browser):
    """The Lessons picker of a Spanish page lists the Spanish lessons; the lecture's bar speaks Spanish, and its join
    link (the QR code's) opens the phones' page in Spanish, even on an English phone."""
    open_app(spanish, url, "?tab=tokens")
    spanish.locator("#lesson-pick input").click()
    assert "Sampling" not in spanish.get_by_role("option").all_text_contents()
    spanish.get_by_role("option", name="Muestreo").click()
    bar = spanish.locator("#lesson-bar")
    expect()(bar).to_contain_text("Predice:", timeout=WAIT)
    expect()(bar).to_contain_text("¿Qué token pondrá primero el modelo")
    expect()(bar.locator(".lesson-waiting")).to_contain_text("0 votos hasta ahora")
    expect()(spanish.locator("#lesson-next")).to_have_text("Adelante ▶")
    expect()(spanish.locator("#lesson-reveal")).to_have_text("Revelar")
    shot(spanish, "i18n-es-lecture")
    spanish.locator("#projector input").check()                             # the hall's screen: docs/teach-with-it.es.md
    expect()(spanish.locator("body")).to_have_class(re.compile(r"\bprojector\b"), timeout=WAIT)
    expect()(spanish.locator("#bars-plot .gtitle").first).to_be_visible(timeout=WAIT)
    settle(spanish)
    spanish.screenshot(path=str(SHOTS / "i18n-es-lecture-projector.png"))
    link = bar.locator(".lesson-link").inner_text() + "?lang=es"           # the QR code's link: the lecture's language
    phone = browser.new_page(viewport={"width": 390, "height": 844})           # an English phone
    try:
        phone.goto(url.split("://")[0] + "://" + link, wait_until="domcontentloaded", timeout=60_000)
        expect()(phone.locator("#counter")).to_have_text("paso 1 de 8", timeout=WAIT)
        expect()(phone.locator("#question")).to_contain_text("¿Qué token pondrá primero el modelo")
        expect()(phone.locator("#status")).to_have_text("Vota antes de que se revele la respuesta.")
        expect()(phone.locator("#explore-button")).to_have_text("Explorar")
        phone.screenshot(path=str(SHOTS / "i18n-es-phone.png"))
    finally:
        phone.close()
