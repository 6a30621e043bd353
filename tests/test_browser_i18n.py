"""Issue 56 in Chromium: the page in Spanish for a Spanish browser (Accept-Language: es) and for `?lang=es`, back in
English for `?lang=en`; the header's switch (in projector mode behind "⋯") opens the same view in the other language,
and Copy link keeps the language. Header, tab labels, the first explanation and an empty prompt's message are checked
in each language; the Spanish page is shot in normal and projector mode at 1280×720 (screenshots/i18n-*.png).

One app for the file, with a worker process computing the tabs as app.py runs them (a message crosses from it);
the browser and helpers are tests/test_browser.py's (skipped as it is).
"""
import html
import json
import re
import urllib.request

import pytest

from test_browser import SHOTS, WAIT, browser, expect, open_app, pytestmark, settle, shot, title  # noqa: F401
from toyviz.app.explorer import Explorer
from toyviz.classroom.store import Lectures
from toyviz.i18n import t

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
    expect()(title(spanish, "attn-plot")).to_contain_text("Probabilidades de atención: capa 0, cabeza 0")  # the figures'
    expect()(title(spanish, "attn-grid-plot")).to_contain_text("Todas las cabezas")                        # words too
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
    expect()(title(english, "res-norm-plot")).to_contain_text("Flujo residual en", timeout=WAIT)
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
    spanish.screenshot(path=str(SHOTS / "i18n-es-lecture-projector.png"))   # docs/teach-with-it-es-projector.png
    link = bar.locator(".lesson-link").inner_text() + "?lang=es"           # the QR code's link: the lecture's language
    phone = browser.new_page(viewport={"width": 390, "height": 844})           # an English phone
    try:
        phone.goto(url.split("://")[0] + "://" + link, wait_until="domcontentloaded", timeout=60_000)
        expect()(phone.locator("#counter")).to_have_text("paso 1 de 8", timeout=WAIT)
        expect()(phone.locator("#question")).to_contain_text("¿Qué token pondrá primero el modelo")
        expect()(phone.locator("#status")).to_have_text("Vota antes de que se revele la respuesta.")
        expect()(phone.locator("#explore-button")).to_have_text("Explorar")
        phone.screenshot(path=str(SHOTS / "i18n-es-phone.png"))          # docs/teach-with-it-es-phone.png
    finally:
        phone.close()


def vote(url: str, code: str, step: int, choices: list[str]):
    """The class's phones vote on a step through the phones' route (one device id each, the same from step to step)."""
    for n, choice in enumerate(choices):
        body = json.dumps({"device": f"phone-{n:03d}", "step": step, "choice": choice}).encode()
        request = urllib.request.Request(f"{url}class/{code}/vote", body, {"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as answered:
            assert json.load(answered)["counted"], (step, n, choice)


def test_a_spanish_lecture_ends_in_a_report_in_spanish(url, spanish):
    """Fin de clase on a Spanish lecture: the presenter's buttons say the catalogue's words, the lecture ends, and the
    report's HTML page speaks the lecture's language (its headings, table and figure from [report] of es.toml) with
    the votes the phones cast. The pictures of docs/teach-with-it.es.md: the screen after the end
    (screenshots/i18n-es-ended.png -> docs/teach-with-it-es-ended.png) and the report's top down to step 1's end, 900 px
    wide (screenshots/i18n-es-report.png -> docs/teach-with-it-es-report.png), as the English page's pictures are."""
    open_app(spanish, url, "?lesson=sampling.es")
    bar = spanish.locator("#lesson-bar")
    expect()(bar).to_contain_text("¿Qué token pondrá primero el modelo", timeout=WAIT)
    spanish.wait_for_function("() => new URLSearchParams(location.search).has('lecture')", timeout=WAIT)
    code = spanish.evaluate("() => new URLSearchParams(location.search).get('lecture')")
    first = [" be"] * 9 + [" do"] * 5 + [" the"] * 5 + [" die"] * 4                  # 23 phones, as the English picture
    vote(url, code, 0, first)
    expect()(bar.locator(".lesson-waiting")).to_contain_text("23 votos hasta ahora", timeout=WAIT)
    cover = spanish.evaluate("() => getComputedStyle(document.querySelector('body.lesson-hides #note'), '::after').content")
    assert cover == '"' + t("bar.hidden", "es") + '"', cover                      # what covers the answer, in Spanish
    spanish.locator("#lesson-reveal").click()
    expect()(bar.locator(".lesson-votes")).to_contain_text(t("bar.class", "es", count=23), timeout=WAIT)
    expect()(bar.locator(".lesson-answer")).to_contain_text("el token siguiente más probable del modelo es")
    settle(spanish)
    spanish.locator("#lesson-next").click()
    expect()(bar).to_contain_text("Con temperatura 0,2", timeout=WAIT)
    second = ["más alta"] * 12 + ["más baja"] * 7 + ["igual"] * 2
    vote(url, code, 1, second)
    expect()(bar.locator(".lesson-waiting")).to_contain_text("21 votos hasta ahora", timeout=WAIT)
    spanish.locator("#lesson-reveal").click()
    expect()(bar.locator(".lesson-votes")).to_contain_text(t("bar.class", "es", count=21), timeout=WAIT)
    settle(spanish)

    end = spanish.locator("#lesson-end")
    expect()(end).to_have_text(t("labels.end_lecture", "es"))                         # "Fin de clase"
    end.click()
    sure = spanish.locator("#lesson-end-yes")
    expect()(sure).to_have_text(t("labels.end_lecture_yes", "es"), timeout=WAIT)
    sure.click()
    files = spanish.locator("#report-files")
    expect()(files.locator("a[href*='.html']").first).to_be_visible(timeout=WAIT)
    expect()(spanish.locator("#past-pick")).to_contain_text(t("labels.past_lectures", "es"))
    expect()(files).to_contain_text(t("labels.report_files", "es"))
    expect()(bar).to_contain_text(t("report.ended_head", "es", code=code))
    expect()(bar).to_contain_text("votaron en 7 preguntas")
    expect()(spanish.locator("#past-pick")).to_contain_text("El servidor guarda los informes de las")
    settle(spanish)
    spanish.evaluate("() => window.scrollTo(0, 0)")
    top = bar.bounding_box()["y"]
    bottom = spanish.locator("#lecture-reports").bounding_box()
    SHOTS.mkdir(exist_ok=True)
    spanish.screenshot(path=str(SHOTS / "i18n-es-ended.png"),
                       clip={"x": 0, "y": max(0, top - 16), "width": 1280,
                             "height": bottom["y"] + bottom["height"] + 16 - max(0, top - 16)})

    href = files.locator("a[href*='.html']").first.get_attribute("href")
    page = spanish.request.get(href if "://" in href else url.rstrip("/") + href).text()
    assert "lang='es'" in page
    first_step = t("report.step", "es", step=1, title="La distribución del siguiente token")
    for said in (t("report.heading", "es", lesson="Muestreo"), t("report.common", "es"), t("report.asked", "es"),
                 t("report.predicted", "es"), first_step, "gana la palabra más común del inglés",
                 t("report.not_revealed", "es")):
        assert html.escape(said) in page, said
    for english in ("the lecture's report", "Common misconceptions", "Asked:", "Predicted it:", "phones voted",
                    "the model's top next token"):
        assert english not in page, english
    table = files.locator("a[href*='.csv']").first.get_attribute("href")
    table = spanish.request.get(table if "://" in table else url.rstrip("/") + table).text()
    assert table.startswith("fecha,lección,código,teléfonos,paso,título,pregunta,opción,votos"), table[:200]
    report = spanish.context.new_page()
    report.set_viewport_size({"width": 900, "height": 1000})
    report.set_content(page, wait_until="load")
    expect()(report.locator("h1")).to_have_text(t("report.heading", "es", lesson="Muestreo"))
    expect()(report.locator(".meta").first).to_contain_text("votaron 23 teléfonos · 7 preguntas")
    expect()(report.locator("section").first.locator(".gtitle")).to_have_text(
        t("report.figure_title", "es", step=1, votes=23, said=t("report.the_model", "es", answer="␣be")), timeout=WAIT)
    rows = report.locator("section").first.locator("tr")
    expect()(rows.first).to_have_text("".join(t(f"report.{c}", "es") for c in ("choice", "votes", "share",
                                                                                 "misconception")))
    expect()(rows.nth(1)).to_have_text("␣be939 %")                                 # the model's answer: 9 of 23
    expect()(report.locator("li").filter(has_text="7 de 21 votos (33 %) en el paso 2")).to_have_count(1)
    step_1 = report.locator("section").first.bounding_box()                      # to the end of step 1, none cut
    report.screenshot(path=str(SHOTS / "i18n-es-report.png"),
                      clip={"x": 0, "y": 0, "width": 900, "height": min(1000, step_1["y"] + step_1["height"] + 8)})
    report.close()


# each tab's first figure and its Spanish title, as a Spanish page shows them on a laptop and on a projector (the Sample
# tab's bars are redrawn by the page's own model, web/src, in its own words: its lecture is shot above)
FIRST_FIGURES = {"tokens": ("tokens-plot", "El prompt en"), "positional": ("pe-plot", "Ángulos de rotación"),
                 "inside": ("head-steps-plot", "paso a paso para la consulta"),
                 "layernorm": ("ln-heat-plot", "Entradas y salidas de la norma de capa"),
                 "why": ("why-components-plot", "¿Qué partes empujan"),
                 "features": ("features-prompt-plot", "rasgos más activos"),
                 "translate": ("cross-plot", "Atención cruzada"),
                 "experiments": ("exp-curves-plot", "Pérdida de validación"),
                 "model": ("params-plot", "Parámetros por componente")}


@pytest.mark.parametrize("tab", list(FIRST_FIGURES))
@pytest.mark.parametrize("projector", [False, True])
def test_each_tabs_figures_are_titled_in_spanish(url, spanish, tab, projector):
    """Every tab in Spanish, its first figure titled in Spanish; shot whole (screenshots/i18n-es-<tab>[-projector].png)
    to look for the longer Spanish words clipped or overlapping."""
    plot, said = FIRST_FIGURES[tab]
    open_app(spanish, url, f"?tab={tab}&lang=es" + "&projector=1" * projector)
    expect()(title(spanish, plot)).to_contain_text(said, timeout=2 * WAIT)
    shot(spanish, f"i18n-es-{tab}" + "-projector" * projector)
