"""The Sample tab's one sampler (issue 44) in Chromium: one prompt (the header's), one set of sliders, one
Generate and one Stop, answered by the page's own model once it is ready — with no request to the server —
and by the server when it is not; the same refusals as the server's, in the same place; and a lesson's
revealed answer is the top bar of the one bars figure on the first screen.

Reuses tests/test_browser_model.py's server and page (skipped as it is: Chromium, the exported graphs and
the page's build) and tests/test_browser_lessons.py's lecture server. Screenshots land in
screenshots/sampler-*.png.
"""
import re
from urllib.parse import quote

import pytest

from test_browser import SHOTS, expect, settle
from test_browser_lessons import Server, counter
from test_browser_model import WAIT, browser, explorer, open_page, page, pytestmark, url  # noqa: F401

BARS = "document.querySelector('#bars-plot .js-plotly-plot')"
TITLE = f"() => {BARS}.layout.title.text"


def set_slider(page, elem_id, value):
    """Type into a slider's box and leave it, as a student would: Gradio's input event follows."""
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Tab")


def top_bar(page) -> str:
    """The top bar's token as the figure labels it: "␣be (#123)" → "␣be"."""
    return page.evaluate(f"() => {BARS}.data[0].y[0]").rsplit(" (#", 1)[0]


def test_the_tab_has_one_prompt_one_set_of_controls_and_says_who_samples(page):
    assert page.locator("#prompt textarea").count() == 1 and page.locator("textarea").count() >= 1
    for control in ("#generate", "#stop", "#temperature", "#top-k", "#top-p", "#max-new", "#seed"):
        assert page.locator(control).count() == 1, control
    assert page.locator("#browser-model button, #browser-model input, #browser-model textarea").count() == 0
    line = page.locator("#browser-model .tv-backend").inner_text()
    assert line.startswith("The sampler runs in your browser") and "\n" not in line


def test_sliders_prompt_and_generation_send_nothing_when_the_page_samples(page, explorer):
    """The bars follow the sliders and the prompt as the server would draw them, and a seeded generation of
    max new tokens runs and stops in the page: 0 requests to the server's queue all along."""
    page.locator("#prompt textarea").fill("First Citizen:\nBefore we proceed")
    expect()(page.locator("#bars-plot .gtitle").first).to_contain_text("Next token", timeout=WAIT)
    set_slider(page, "temperature", 0.3)
    set_slider(page, "top-k", 3)
    page.wait_for_function(f"() => ({TITLE})().includes('temperature 0.3, top-k 3')")
    assert page.evaluate(f"() => {BARS}.data[0].x.filter(p => p > 0).length") == 3
    gpt = explorer.gpt
    logits = gpt.model.trace(gpt.encode("First Citizen:\nBefore we proceed")[0]).logits[-1]
    expected = gpt.tokenizer.piece(int(logits.argmax()))
    from toyviz.app.figures import visible
    assert top_bar(page) == visible(expected)
    set_slider(page, "top-k", 50)
    set_slider(page, "max-new", 12)
    page.evaluate("window.toyviz.sampler.lastRun = null")
    page.locator("#generate").click()
    page.wait_for_function("window.toyviz.sampler.lastRun !== null")
    run = page.evaluate("window.toyviz.sampler.lastRun")
    assert len(run["tokens"]) == 12 and not run["stopped"]
    assert page.locator("#generated .token-prob").count() == 12
    assert page.queue == [], page.queue


def test_max_new_tokens_past_the_limit_stops_at_the_limit_and_stop_ends_it(page):
    """100000 typed into max new tokens is the server's maximum (256), not minutes past the context."""
    page.locator("#prompt textarea").fill("KING:")
    set_slider(page, "max-new", 100000)
    expect()(page.locator("#max-new input[type=number]")).to_have_value("256")
    page.evaluate("window.toyviz.sampler.lastRun = null")
    page.locator("#generate").click()
    page.wait_for_function("window.toyviz.sampler.lastRun !== null", timeout=2 * WAIT)
    assert len(page.evaluate("window.toyviz.sampler.lastRun.tokens")) == 256
    page.evaluate("window.toyviz.sampler.lastRun = null")
    page.locator("#generate").click()
    page.wait_for_function("document.querySelectorAll('#generated .token-prob').length > 10")
    page.locator("#stop").click()
    page.wait_for_function("window.toyviz.sampler.lastRun !== null")
    run = page.evaluate("window.toyviz.sampler.lastRun")
    assert run["stopped"] and len(run["tokens"]) < 256
    expect()(page.locator("#generate")).to_have_text("Generate")
    assert page.queue == [], page.queue


def refusal(page) -> dict:
    return {"note": page.locator("#note").inner_text().strip(),
            "figure": page.locator("#bars-plot .gtitle").first.text_content(),
            "says": page.locator("#bars-plot .annotation-text").first.text_content()}


def test_an_empty_prompt_is_refused_in_place_with_the_servers_message(browser, url, page):
    page.locator("#prompt textarea").fill("   ")
    page.locator("#generate").click()
    expect()(page.locator("#note")).to_contain_text("The prompt is empty", timeout=WAIT)
    in_page = refusal(page)
    assert page.locator("#generated .token-prob").count() == 0
    assert page.queue == [], page.queue
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "sampler-empty-prompt.png"))
    # the same press where the server samples (the page's model kept out)
    served = open_page(browser, url, weights="unreachable")
    try:
        assert served.evaluate("window.toyviz.backend") == "server"
        served.locator("#prompt textarea").fill("   ")
        served.locator("#generate").click()
        expect()(served.locator("#note")).to_contain_text("The prompt is empty", timeout=WAIT)
        expect()(served.locator("#generate")).to_have_text("Generate", timeout=WAIT)
        assert refusal(served) == in_page
        assert served.queue, "the server's sampler sent nothing"
    finally:
        served.close()
    page.locator("#prompt textarea").fill("ROMEO:")          # the next prompt draws again
    page.wait_for_function(f"() => ({TITLE})().startsWith('Next token')")
    # at the bars' own height (issue 55: they kept the 240-px message's, 15 bars squashed, until Explore)
    height = page.evaluate("() => document.querySelector('#bars-plot .js-plotly-plot')._fullLayout.height")
    assert height > 400, height


LONG = "Now is the winter of our discontent made glorious summer by this sun of York. " * 25   # a link holds it


def note(page) -> str:
    return page.locator("#note").inner_text().strip()


def test_a_value_past_its_range_and_a_long_prompt_get_the_servers_words_in_the_page(browser, url, page):
    """Issue 51, one rule on every path: a temperature typed past its range (the page's model answers) and the same
    value in a deep link (the server draws the tab) get the same note, the prompt's cut to the context said in it
    too; the box then shows the bound. A generation in the page says it reads the prompt's last tokens."""
    page.locator("#prompt textarea").fill(LONG)
    set_slider(page, "temperature", 5)
    expect()(page.locator("#note")).to_contain_text("temperature 5 is above the highest, 2: using 2.", timeout=WAIT)
    expect()(page.locator("#note")).to_be_visible()
    in_page = note(page)
    assert re.match(r"^Only the first 256 tokens fit the model's context; \d+ more were left out\. temperature 5",
                    in_page), in_page
    expect()(page.locator("#temperature input[type=number]")).to_have_value("2")
    page.wait_for_function(f"() => ({TITLE})().startsWith('Next token: temperature 2')")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / "sampler-settled-note.png"))
    linked = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        linked.goto(f"{url.rstrip('/')}/?tab=sample&temperature=5&prompt={quote(LONG)}", wait_until="domcontentloaded")
        expect()(linked.locator("#note")).to_contain_text("temperature 5 is above", timeout=WAIT)
        settle(linked)                  # the tab's draws one after another: the note shows a pending one's timer
        assert note(linked) == in_page
        linked.screenshot(path=str(SHOTS / "sampler-settled-note-linked.png"))
    finally:
        linked.close()
    set_slider(page, "max-new", 3)
    page.evaluate("window.toyviz.sampler.lastRun = null")
    page.locator("#generate").click()
    page.wait_for_function("window.toyviz.sampler.lastRun !== null")
    assert len(page.evaluate("window.toyviz.sampler.lastRun.tokens")) == 3
    assert re.match(r"^Only the last 256 tokens fit the model's context; \d+ more were left out\.", note(page)), note(page)
    expect()(page.locator("#note")).to_be_visible()
    assert page.queue == [], page.queue


def test_where_the_page_cannot_load_the_model_the_same_controls_use_the_server(browser, url):
    page = open_page(browser, url, weights="unreachable")
    try:
        assert "runs on the server" in page.locator("#browser-model .tv-backend").inner_text()
        set_slider(page, "max-new", 5)
        page.locator("#generate").click()
        expect()(page.locator("#generated-plot .gtitle").first).to_contain_text("5 generated tokens", timeout=WAIT)
        assert any("/queue/" in u for u in page.queue)
    finally:
        page.close()


@pytest.fixture(scope="module")
def lectures(tmp_path_factory):
    served = Server(tmp_path_factory.mktemp("lectures") / "lectures.sqlite3").start()
    yield served
    served.demo.close()


@pytest.mark.parametrize("size", [(1280, 900), (1440, 900)])
def test_the_sampling_lessons_revealed_answer_is_the_top_bar_on_the_first_screen(browser, lectures, size):
    """A lecture of the shipped Sampling lesson, its first step revealed: the one bars figure on the Sample tab
    is on the first screen, unscrolled, and its top bar's token is the answer the reveal names."""
    page = browser.new_page(viewport={"width": size[0], "height": size[1]})
    page.set_default_timeout(WAIT)
    page.goto(f"{lectures.url}?lesson=sampling", wait_until="domcontentloaded")
    expect()(counter(page)).to_have_text(re.compile(r"^1 / \d+$"), timeout=WAIT)
    page.wait_for_function("window.toyviz.ready")
    page.locator("#lesson-reveal").click()
    answer = page.locator("#lesson-bar .lesson-answer")
    expect()(answer).to_contain_text("The model:", timeout=WAIT)
    page.wait_for_function("() => !document.body.classList.contains('lesson-hides')")
    page.evaluate("window.scrollTo(0, 0)")
    revealed = re.search(r"The model:\s*(.+?)\s+—", answer.inner_text()).group(1).strip("“”\"")
    assert top_bar(page) == revealed, (top_bar(page), revealed)
    assert page.evaluate(f"() => {BARS}.layout.title.text").startswith("Next token: temperature 1, top-k off, top-p 1")
    SHOTS.mkdir(exist_ok=True)
    page.screenshot(path=str(SHOTS / f"sampler-lesson-revealed-{size[0]}.png"))
    label = page.evaluate(f"() => {BARS}.data[0].y[0]")
    bar = page.locator("#bars-plot .ytick").filter(has_text=label).first.bounding_box()
    assert bar["y"] + bar["height"] <= size[1], f"the top bar is at {bar['y']:.0f} px, below the first screen"
    page.close()


CANDIDATES = "document.querySelector('#tv-branches .tv-candidates .js-plotly-plot')"


def generated_text(page) -> str:
    return page.locator("#generated .prose").inner_text()


def test_a_generated_token_shows_its_candidates_and_branches_into_a_tree_all_in_the_page(page):
    """Beyond the anchors: a click on a generated token shows the candidates the model weighed there (before
    and after the settings), a click on another candidate's bar branches from it, the tree goes back to the
    run and forth to the branch — and the page sends no request at all meanwhile."""
    sent = []
    count = lambda request: sent.append(request.url)
    page.locator("#prompt textarea").fill("ROMEO:")
    set_slider(page, "temperature", 1)
    set_slider(page, "top-k", 5)
    set_slider(page, "top-p", 1)
    set_slider(page, "max-new", 16)
    set_slider(page, "seed", 3)
    page.wait_for_function(f"() => ({TITLE})().includes('temperature 1, top-k 5')")
    page.on("request", count)
    try:
        page.evaluate("window.toyviz.sampler.lastRun = null")
        page.locator("#generate").click()
        page.wait_for_function("window.toyviz.sampler.lastRun !== null")
        run = page.evaluate("window.toyviz.sampler.lastRun.tokens")
        assert len(run) == 16
        text = generated_text(page)
        step = 4
        page.locator(f"#generated .token-prob[data-step='{step}']").click()
        expect()(page.locator("#tv-branches .tv-candidates")).to_be_visible()
        page.wait_for_function(f"() => {CANDIDATES}?.layout.title.text.startsWith('Token {step + 1} (drew')")
        assert "top-k 5" in page.evaluate(f"() => {CANDIDATES}.layout.title.text")
        after, before, names = page.evaluate(f"() => [{CANDIDATES}.data[0].x, {CANDIDATES}.data[1].x, {CANDIDATES}.data[0].y]")
        # before: a plain softmax, every candidate > 0; after: top-k 5 leaves five, renormalised
        assert all(p > 0 for p in before) and sum(p > 0 for p in after) == 5
        assert max(after) > max(before)
        drawn = [i for i, name in enumerate(names) if name.startswith("<b>")]
        assert len(drawn) == 1 and names[drawn[0]].endswith(f"(#{run[step]})</b>")
        assert "tv-picked" in page.locator(f"#generated .token-prob[data-step='{step}']").get_attribute("class")
        shoot(page, "sampler-candidates")
        # another candidate the settings keep: a click on its row branches there
        other = next(i for i, p in enumerate(after) if p > 0 and i != drawn[0])
        page.evaluate("window.toyviz.sampler.lastRun = null")
        click_row(page, other)
        page.wait_for_function("window.toyviz.sampler.lastRun !== null")
        branch = page.evaluate("window.toyviz.sampler.lastRun.tokens")
        chosen = names[other]
        assert branch[:step] == run[:step] and chosen.endswith(f"(#{branch[step]})") and len(branch) == 16
        assert page.evaluate(f"() => {CANDIDATES}.data[0].y[{other}]") == f"<b>{chosen}</b>"     # the one it took now
        tree = page.locator("#tv-branches .tv-tree button")
        expect()(tree).to_have_count(2)
        assert tree.nth(1).get_attribute("aria-current") == "true" and f"token {step + 1}:" in tree.nth(1).inner_text()
        branched = generated_text(page)
        assert branched != text
        assert "tv-branched" in page.locator(f"#generated .token-prob[data-step='{step}']").get_attribute("class")
        shoot(page, "sampler-branch")
        # back through the tree: the run, then the branch again, each with its own text
        page.locator("#tv-branches .tv-attention").scroll_into_view_if_needed()       # drawn once on screen
        expect()(page.locator("#tv-branches .tv-attention .gtitle")).to_contain_text("as it drew token", timeout=WAIT)
        tree.nth(0).click()
        expect()(page.locator("#generated .prose")).to_have_text(text)
        assert tree.nth(0).get_attribute("aria-current") == "true"
        # the attention follows what is on screen: the run's prompt, not the branch's token (issue 55)
        expect()(page.locator("#tv-branches .tv-attention .gtitle")).to_contain_text("Where the prompt's last token",
                                                                                   timeout=WAIT)
        tree.nth(1).click()
        expect()(page.locator("#generated .prose")).to_have_text(branched)
        # from the run, the same candidate again: the branch it made, not a second one
        tree.nth(0).click()
        page.locator(f"#generated .token-prob[data-step='{step}']").click()
        click_row(page, other)
        expect()(page.locator("#generated .prose")).to_have_text(branched)
        assert tree.count() == 2 and tree.nth(1).get_attribute("aria-current") == "true"
    finally:
        page.remove_listener("request", count)
    assert sent == [], sent


def click_row(page, index):
    """A click on candidate `index`'s row of the candidates figure, right of its bars, as a student would."""
    point = page.locator("#tv-branches .tv-candidates .barlayer .trace").nth(1).locator(".point").nth(index)
    point.scroll_into_view_if_needed()
    row = point.bounding_box()
    area = page.locator("#tv-branches .tv-candidates .nsewdrag").first.bounding_box()
    page.mouse.click(area["x"] + area["width"] * 0.6, row["y"] + row["height"] / 2)


def shoot_attention(page, path, projector):
    """The attention figure, once drawn (on screen) in the mode's sizes."""
    page.locator("#tv-branches .tv-attention").scroll_into_view_if_needed()
    page.wait_for_function(f"() => ({ATTENTION}?.layout.template.layout.font.size > 20) === {str(projector).lower()}")
    page.locator("#tv-branches .tv-attention").screenshot(path=str(path))


def shoot(page, name):
    """The generated text, the candidates and the tree as a student sees them, and the attention figure below
    them: at 1440×900, and in projector mode at 1280×720 (its class on the page: the page's figures take that
    mode's sizes; the checkbox would also have the server redraw its own); then as before."""
    SHOTS.mkdir(exist_ok=True)
    viewport = page.viewport_size
    top = "window.scrollTo(0, document.querySelector('#generated').getBoundingClientRect().top + scrollY - 8)"
    page.set_viewport_size({"width": 1440, "height": 900})
    page.evaluate(top)
    page.screenshot(path=str(SHOTS / f"{name}.png"))
    shoot_attention(page, SHOTS / f"{name}-attention.png", projector=False)
    page.set_viewport_size({"width": 1280, "height": 720})
    page.evaluate("document.body.classList.add('projector')")
    page.wait_for_function(f"() => {CANDIDATES}.layout.template.layout.font.size > 20")
    page.wait_for_timeout(500)                  # Plotly fits a figure to a resized window 100 ms later
    page.evaluate(top)
    page.screenshot(path=str(SHOTS / f"{name}-projector.png"))
    shoot_attention(page, SHOTS / f"{name}-attention-projector.png", projector=True)
    page.evaluate("document.body.classList.remove('projector')")
    page.set_viewport_size(viewport)


ATTENTION = "document.querySelector('#tv-branches .tv-attention .js-plotly-plot')"


def test_the_pages_bars_and_attention_are_the_servers_figures(page, explorer):
    """The bars the page draws are next_token_bars' (labels, numbers, title, trace styles), and its attention
    is the Attention tab's: its colour scale, token labels as token_labels writes them, heads named as its grid."""
    import json
    import numpy as np
    from toyviz.app.figures import attention, sampling, token_labels
    prompt = "First Citizen:\nBefore we proceed any further"
    page.locator("#prompt textarea").fill(prompt)
    set_slider(page, "temperature", 0.7)
    set_slider(page, "top-k", 20)
    set_slider(page, "top-p", 0.9)
    page.wait_for_function(f"() => ({TITLE})().includes('temperature 0.7, top-k 20, top-p 0.9')")
    page.locator("#tv-branches .tv-attention").scroll_into_view_if_needed()      # drawn once on screen
    page.wait_for_function(f"() => {ATTENTION}?.data[0].x.length === {len(explorer.gpt.encode(prompt)[0])}")
    gpt = explorer.gpt
    ids = gpt.encode(prompt)[0]
    trace = gpt.model.trace(ids)
    server = json.loads(sampling.next_token_bars(trace.logits[-1], gpt.tokenizer.piece, temperature=0.7, top_k=20,
                                                 top_p=0.9).to_json())
    bars = page.evaluate(f"() => ({{data: {BARS}.data.map(({{x, y, ...style}}) => ({{x: Array.from(x), y, style}})), "
                         f"title: {BARS}.layout.title.text}})")
    assert bars["title"] == server["layout"]["title"]["text"]
    for mine, theirs in zip(bars["data"], server["data"]):
        assert mine["y"] == theirs["y"]
        assert np.allclose(mine["x"], _floats(theirs["x"]), atol=2e-4)
        style = lambda trace: json.dumps({k: trace.get(k) for k in ("name", "marker", "hovertemplate", "orientation")})
        assert style(mine["style"]).replace(" ", "") == style(theirs).replace(" ", "")    # Plotly spaces rgba()'s
    seen = page.evaluate(f"() => {{ const t = {ATTENTION}.data[0]; return {{x: t.x, y: t.y, z: t.z, "
                         f"colorscale: t.colorscale, zmin: t.zmin, zmax: t.zmax}}; }}")
    assert seen["x"] == token_labels([gpt.tokenizer.piece(i) for i in ids])
    L, H = gpt.config.n_layer, gpt.config.n_head
    assert seen["y"] == [f"L{l} H{h}" for l in range(L) for h in range(H)]
    assert np.abs(np.asarray(seen["z"]) - trace.attention[:, :, -1, :].reshape(L * H, -1).numpy()).max() <= 1e-5
    assert (seen["colorscale"], seen["zmin"], seen["zmax"]) == \
           (json.loads(json.dumps(attention.PROBS_COLOURS["colorscale"])), 0, 1)
    assert page.queue == [], page.queue


def _floats(encoded):
    """A figure's numbers as plotly's JSON holds them: a list, or base64 {"dtype", "bdata"}."""
    import base64
    import numpy as np
    if isinstance(encoded, dict):
        return np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=encoded["dtype"])
    return np.asarray(encoded, dtype=np.float32)


def test_a_steered_run_goes_to_the_server_and_leaves_no_tree_of_the_pages_run(page):
    """Steering is the server's: its text keeps no candidates, so the tree and the hint of the page's last run go."""
    page.locator("#prompt textarea").fill("KING:")
    set_slider(page, "max-new", 4)
    page.evaluate("window.toyviz.sampler.lastRun = null")
    page.locator("#generate").click()
    page.wait_for_function("window.toyviz.sampler.lastRun !== null")
    expect()(page.locator("#tv-branches .tv-tree")).to_be_visible()
    page.locator("#steer-feature input").fill("0")
    page.locator("#steer-feature input").press("Tab")
    try:
        page.locator("#generate").click()
        expect()(page.locator("#generated-plot .gtitle").first).to_contain_text("4 generated tokens", timeout=WAIT)
        assert page.queue, "the steered run did not go to the server"
        expect()(page.locator("#tv-branches .tv-tree")).to_be_hidden()
        expect()(page.locator("#tv-branches .tv-hint")).to_be_hidden()
        assert page.locator("#generated .token-prob[data-step]").count() == 0
    finally:
        page.locator("#steer-feature input").fill("-1")
        page.locator("#steer-feature input").press("Tab")
        page.queue.clear()


def test_a_spanish_page_samples_in_spanish(browser, url):
    """Issue 56: the page's sampler says what the server would in the page's language (<html lang>, set as the page
    opens): who samples, Generate while it runs and after, the bars' title it draws, an empty prompt's refusal and a
    value past its range."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(WAIT)
    try:
        page.goto(f"{url.rstrip('/')}/?tab=sample&lang=es", wait_until="domcontentloaded")
        page.wait_for_function("document.documentElement.lang === 'es'")
        expect()(page.locator("#browser-model .tv-backend")).to_contain_text("El muestreo corre en tu navegador",
                                                                             timeout=WAIT)
        expect()(page.locator("#browser-model .tv-backend")).to_contain_text("pesos sha256 comprobados")
        expect()(page.locator("#generate")).to_have_text("Generar")
        expect()(page.locator("#stop")).to_have_text("Detener")
        set_slider(page, "max-new", 3)
        page.evaluate("window.toyviz.sampler.lastRun = null")
        page.locator("#generate").click()
        page.wait_for_function("window.toyviz.sampler.lastRun !== null")
        expect()(page.locator("#generate")).to_have_text("Generar")
        # the runs' tree and the candidates under the text, drawn by the page, in its language too
        expect()(page.locator("#tv-branches .tv-hint")).to_contain_text("Haz clic en cualquier token generado")
        expect()(page.locator("#tv-branches .tv-tree-head")).to_have_text(
            "Ejecuciones y ramas: haz clic en una para volver a verla")
        expect()(page.locator("#tv-branches .tv-tree button").first).to_contain_text("la ejecución «")
        # (a click as a student's is the English test's: this first token may be a line break, which has no size)
        page.locator("#generated .token-prob[data-step='0']").dispatch_event("click")
        page.wait_for_function(f"() => {CANDIDATES} && {CANDIDATES}.layout.title.text.startsWith('Token 1 (salió ')")
        set_slider(page, "temperature", 5)
        expect()(page.locator("#note")).to_contain_text("temperatura 5 supera el máximo, 2: se usa 2.", timeout=WAIT)
        page.wait_for_function(f"() => ({TITLE})().startsWith('Siguiente token: temperatura 2, top-k 50')")
        page.locator("#prompt textarea").fill("   ")
        page.locator("#generate").click()
        expect()(page.locator("#note")).to_contain_text("está en blanco", timeout=WAIT)
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "sampler-spanish.png"))
    finally:
        page.close()
