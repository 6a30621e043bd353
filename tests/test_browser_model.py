"""The GPT in the student's browser (issue #31), checked in Debian's Chromium against the Python model.

Needs the page's build (cd web && npm ci && npm run build) and the exported graphs (python -m
toyviz.web); skipped without Chromium. The tokenizer is compared on > 30,000 tokens of mixed text,
the forward pass on prompts up to the full context, greedy generation token for token; the Sample tab's
sliders and generation, answered by the page's own model, must send no request to the server's queue
(tests/test_browser_sampler.py checks the one sampler further); and a browser that cannot fetch the
weights must fall back to the server and say why.
"""
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import base64
import random
from pathlib import Path

import numpy as np
import pytest

from benchmarks import stream
from test_browser import browser  # noqa: F401  (the fixture: Debian's Chromium driven by Playwright)
from toyviz.app import browser_model
from toyviz.app.explorer import Explorer
from toyviz.models.checkpoint import CHECKPOINTS

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(stream.CHROMIUM).exists(), reason=f"Debian's chromium is not at {stream.CHROMIUM}"),
    pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(), reason="checkpoints/gpt is missing"),
    pytest.mark.skipif(browser_model.missing() is not None, reason=str(browser_model.missing())),
]
WAIT = 60_000


@pytest.fixture(scope="module")
def explorer():
    return Explorer.load("gpt", "translator", "cpu")


@pytest.fixture(scope="module")
def url(explorer):
    import app
    demo = app.build(explorer)
    demo.queue(default_concurrency_limit=4, max_size=64)
    _, address, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **app.launch_options())
    yield address
    demo.close()


def open_page(browser, url, weights=None):
    """The Sample tab once window.toyviz is ready; `queue`: the queue requests the page sent after that.
    weights: what a request for the weights gets instead of the file, "unreachable" or other bytes."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})   # a new context: an empty Cache API
    page.set_default_timeout(WAIT)
    if weights == "unreachable":
        page.route("**/model.safetensors*", lambda route: route.abort())
    elif weights is not None:
        page.route("**/model.safetensors*", lambda route: route.fulfill(body=weights))
    page.goto(f"{url.rstrip('/')}/?tab=sample", wait_until="domcontentloaded")
    page.wait_for_function("window.toyviz !== undefined")
    page.evaluate("window.toyviz.ready")
    page.wait_for_function("!(document.querySelector('#browser-model .tv-backend')?.textContent ?? 'Loading').startsWith('Loading')")
    page.locator("#bars-plot .gtitle").first.wait_for()     # the page's own first requests (its tab drawn) are over
    page.queue = []
    page.on("request", lambda r: page.queue.append(r.url) if "/queue/" in r.url or "/run/" in r.url else None)
    return page


@pytest.fixture(scope="module")
def page(browser, url):
    page = open_page(browser, url)
    assert page.evaluate("window.toyviz.backend") == "browser", page.evaluate("window.toyviz.reason")
    yield page
    page.close()


def mixed_texts(seed=0):
    """Text a class might type: this repository's prose and code, plus everything that trips a BPE port."""
    prose = (ROOT / "README.md").read_text() + "".join(p.read_text() for p in sorted((ROOT / "toyviz").rglob("*.py")))
    tricky = ["DON'T", "I'LL", "WE'VE", "THEY'RE", "IT'S", "I'M", "HE'D", "Don'T", "'S", "'ſ", "'ll", "O'Neil's",
              "\r\n", "\r\n\r\n", "\r", "\n\n\n", "\t", "   ", "\u00a0", "\u0085", "\ufeff", "\u2028", "\u3000",
              "café", "naïve", "Ångström", "Zürich", "e\u0301", "ﬁ", "Ελληνικά", "русский", "日本語", "العربية",
              "हिन्दी", "한국어", "👍", "👨‍👩‍👧", "🇫🇷", "🙂🙃", "∑x²", "½", "١٢٣", "12345678", "3.14159", "<|endoftext|>",
              "<|endoftext", "...", "?!", "—", "“quoted”", "$100", "#tag", "a\u200db"]
    rng = random.Random(seed)
    words = prose.split(" ")
    texts = []
    for _ in range(700):
        parts = [rng.choice(tricky) if rng.random() < 0.3 else rng.choice(words) for _ in range(rng.randint(1, 40))]
        texts.append("".join(p + rng.choice([" ", "", " ", "\n", "\r\n", "  "]) for p in parts))
    texts += [prose[i: i + 600] for i in range(0, len(prose), 600)]
    return [t for t in texts if t.strip()]


def test_tokenize_equals_the_python_tokenizer(page, explorer):
    gpt = explorer.gpt
    texts = mixed_texts()
    expected = [gpt.encode(t)[0] for t in texts]
    got = page.evaluate("texts => texts.map(t => window.toyviz.tokenize(t))", texts)
    wrong = [(t, e, g) for t, e, g in zip(texts, expected, got) if e != g]
    assert not wrong, f"{len(wrong)} of {len(texts)} texts differ, first: {wrong[0]}"
    assert sum(map(len, expected)) >= 30_000
    assert any("<|endoftext|>" in t for t in texts) and any("\r\n" in t for t in texts)


FORWARD = """async ids => {
  const out = await window.toyviz.forward(ids);
  const b64 = a => btoa(Array.from(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), c => String.fromCharCode(c)).join(""));
  return {logits: b64(out.logits), attention: b64(out.attention), T: out.T, V: out.V, L: out.L, H: out.H};
}"""


def floats(b64: str, shape) -> np.ndarray:
    return np.frombuffer(base64.b64decode(b64), dtype=np.float32).reshape(shape)


def test_forward_equals_the_python_trace(page, explorer):
    gpt = explorer.gpt
    c = gpt.config
    rng = np.random.default_rng(1)
    for ids in ([gpt.bos], gpt.encode("ROMEO:\nBut soft, what light through yonder window breaks?")[0],
                rng.integers(0, c.vocab_size, c.context).tolist()):
        out = page.evaluate(FORWARD, ids)
        T = len(ids)
        assert (out["T"], out["V"], out["L"], out["H"]) == (T, c.vocab_size, c.n_layer, c.n_head)
        trace = gpt.model.trace(ids)
        # float32 summed in another order than torch's (wasm; the prefill graph loads unoptimised, see
        # web/src/model.js): at T = 256 of random ids up to 1.09e-4 off (8.6e-5 with ORT's optimisers on),
        # hence 2e-4 here, where onnxruntime in Python keeps 1e-4 (test_web.py); a wrong layout or
        # output would be off by whole units
        assert np.abs(floats(out["logits"], (T, c.vocab_size)) - trace.logits.numpy()).max() <= 2e-4
        assert np.abs(floats(out["attention"], (c.n_layer, c.n_head, T, T)) - trace.attention.numpy()).max() <= 1e-5


def set_value(page, elem_id, value):
    """Type into the Sample tab's control (a slider's box or the seed) and leave it, as a student would."""
    box = page.locator(f"#{elem_id} input[type=number]")
    box.fill(str(value))
    box.press("Tab")


def generate(page, prompt, tokens, temperature, seed=0):
    page.locator("#prompt textarea").fill(prompt)
    set_value(page, "temperature", temperature)
    set_value(page, "max-new", tokens)
    set_value(page, "seed", seed)
    page.evaluate("window.toyviz.sampler.lastRun = null")
    page.locator("#generate").click()
    page.wait_for_function("window.toyviz.sampler.lastRun !== null")
    return page.evaluate("window.toyviz.sampler.lastRun")


def test_generation_in_the_browser_is_python_greedy_and_seeded_and_sends_nothing(page, explorer):
    prompt = "To be, or not to be"
    greedy = generate(page, prompt, 64, 0)
    assert greedy["tokens"] == [s.token for s in explorer.gpt.generate(prompt, 64, temperature=0)]
    first, again = generate(page, prompt, 40, 1.2, seed=7), generate(page, prompt, 40, 1.2, seed=7)
    assert first["tokens"] == again["tokens"] and len(first["tokens"]) == 40
    assert generate(page, prompt, 40, 1.2, seed=8)["tokens"] != first["tokens"]
    assert page.queue == []


def test_sliders_redraw_the_bars_without_the_server(page):
    page.locator("#prompt textarea").fill("First Citizen:\nBefore we proceed")
    bars = "() => document.querySelector('#bars-plot .js-plotly-plot').data[0].x"
    kept = lambda: sum(p > 0 for p in page.evaluate(bars))
    page.wait_for_function("document.querySelector('#bars-plot .js-plotly-plot').layout.title.text.includes('top-k 50')")
    before = page.evaluate(bars)
    set_value(page, "temperature", 0.3)
    page.wait_for_function(f"() => ({bars})()[0] !== {before[0]}")
    set_value(page, "top-k", 3)
    page.wait_for_function("document.querySelector('#bars-plot .js-plotly-plot').layout.title.text.includes('top-k 3')")
    assert kept() == 3
    set_value(page, "top-k", 0)
    set_value(page, "top-p", 0.05)
    page.wait_for_function("document.querySelector('#bars-plot .js-plotly-plot').layout.title.text.includes('top-p 0.05')")
    assert kept() >= 1
    set_value(page, "top-p", 1)
    assert page.queue == []


MODEL_FILES = ("toyviz.js", ".onnx", "model.safetensors", ".wasm", "tokenizer.tiktoken")


def test_a_page_opened_on_another_tab_fetches_the_model_only_when_the_sample_tab_needs_it(browser, url):
    page = browser.new_page()
    page.set_default_timeout(WAIT)
    fetched = []
    page.on("request", lambda r: fetched.append(r.url) if any(part in r.url for part in MODEL_FILES) else None)
    page.goto(url, wait_until="domcontentloaded")                         # the first tab, not Sample
    page.wait_for_function("window.toyviz !== undefined")
    page.locator(".js-plotly-plot").first.wait_for()
    page.wait_for_timeout(1500)
    assert fetched == [] and page.evaluate("window.toyviz.backend") == "server"
    assert "when a view needs it" in page.evaluate("window.toyviz.reason")
    page.get_by_role("tab", name="Sample").click()
    assert page.evaluate("window.toyviz.ready") == "browser"
    assert {part for part in MODEL_FILES if any(part in u for u in fetched)} == set(MODEL_FILES)
    page.close()


@pytest.mark.parametrize("weights, why", [("unreachable", "model.safetensors"),
                                          (b"\0" * 4096, "not the file this server checked")])
def test_a_browser_that_cannot_load_the_model_uses_the_server_and_says_why(browser, url, weights, why):
    page = open_page(browser, url, weights)
    assert page.evaluate("window.toyviz.backend") == "server"
    note = page.locator("#browser-model .tv-backend").inner_text()
    assert "server" in note and why in note
    assert page.evaluate("window.toyviz.sampler") is None
    assert page.locator("#generate").is_visible()        # the same controls, the server answering them
    page.close()


# ---------------------------------------------------------------- the model's files from another origin ---

class Origin:
    """A second static HTTP server on loopback standing in for a CDN (the Hub's file urls): the repository's
    files at their paths, with CORS; `tamper`: a file name whose bytes it changes; `asked`: the paths asked."""

    def __init__(self, folder: Path):
        import functools
        import threading
        from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
        origin = self
        self.tamper, self.asked = None, []

        class Handler(SimpleHTTPRequestHandler):
            def end_headers(self):
                self.send_header("Access-Control-Allow-Origin", "*")
                super().end_headers()

            def do_GET(self):
                origin.asked.append(self.path)
                if origin.tamper and self.path.endswith(origin.tamper):
                    body = (folder / self.path.lstrip("/")).read_bytes()[:-8] + b"tampered"
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    return self.wfile.write(body)
                return super().do_GET()

            def log_message(self, *args):
                pass
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def elsewhere(explorer, tmp_path_factory):
    """The app with TOYVIZ_MODEL_ORIGIN and TOYVIZ_WASM_URL set to a second server holding copies of the
    files at their places in the repository → (the app's url, the second server)."""
    import shutil
    import app
    folder = tmp_path_factory.mktemp("cdn")
    gpt = CHECKPOINTS / "gpt"
    for path in [*(gpt / "web").iterdir(), gpt / "model.safetensors", gpt / "tokenizer.tiktoken", browser_model.WASM]:
        copy = folder / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, copy)
    origin = Origin(folder)
    settings = {browser_model.ORIGIN_SETTING: origin.url,
                browser_model.WASM_SETTING: origin.url + browser_model.WASM.relative_to(ROOT).as_posix()}
    before = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        demo = app.build(explorer)
        demo.queue(default_concurrency_limit=4, max_size=64)
        _, address, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True,
                                    **app.launch_options())
    finally:
        for k, v in before.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    yield address, origin
    demo.close()
    origin.server.shutdown()


def test_with_another_origin_the_page_loads_the_model_from_there_and_this_server_sends_none_of_it(browser, elsewhere):
    url, origin = elsewhere
    origin.tamper, origin.asked[:] = None, []
    seen = []
    page = browser.new_page()
    page.set_default_timeout(WAIT)
    page.on("request", lambda r: seen.append(r.url))
    page.goto(f"{url.rstrip('/')}/?tab=sample", wait_until="domcontentloaded")
    page.wait_for_function("window.toyviz !== undefined")
    assert page.evaluate("window.toyviz.ready") == "browser", page.evaluate("window.toyviz.reason")
    model = [u for u in seen if any(part in u for part in MODEL_FILES[1:])]
    assert len(model) == 5 and all(u.startswith(origin.url) for u in model)          # graphs ×2, weights, ranks, wasm
    assert not any(u.startswith(url) for u in model)
    assert sorted(p.rsplit("/", 1)[-1] for p in origin.asked) == sorted(u.rsplit("/", 1)[-1] for u in model)
    page.close()


def test_a_tampered_file_from_another_origin_is_refused_and_the_page_says_so(browser, elsewhere):
    url, origin = elsewhere
    origin.tamper = "step.onnx"
    try:
        page = browser.new_page()
        page.set_default_timeout(WAIT)
        page.goto(f"{url.rstrip('/')}/?tab=sample", wait_until="domcontentloaded")
        page.wait_for_function("window.toyviz !== undefined")
        assert page.evaluate("window.toyviz.ready") == "server"
        page.wait_for_function("!(document.querySelector('#browser-model .tv-backend')?.textContent ?? 'Loading').startsWith('Loading')")
        note = page.locator("#browser-model").inner_text()
        assert "step.onnx is not the file this server checked" in note and "server" in note
        page.close()
    finally:
        origin.tamper = None


def test_the_apps_page_is_small_compressed_and_its_model_files_immutable(url):
    """A page open sends the loader, not the page script (88 kB, inlined in every page until issue 41), and
    the page compressed; the model's files live at addresses named by their hash."""
    import re
    import httpx
    page = httpx.get(url, headers={"Accept-Encoding": "br"})
    assert page.headers["content-encoding"] == "br" and int(page.headers["content-length"]) < 40_000
    assert "window.toyvizConfig" in page.text and browser_model.SCRIPT.read_text()[:400] not in page.text
    assert httpx.get(url, headers={"If-None-Match": page.headers["etag"]}).status_code == 304
    script = re.search(r'toyviz/files/[0-9a-f]{16}/toyviz\.js', page.text).group(0)
    got = httpx.get(url + script, headers={"Accept-Encoding": "br"})
    assert got.status_code == 200 and "immutable" in got.headers["cache-control"]
    assert got.content == browser_model.SCRIPT.read_bytes()
