"""The GPT in the student's browser (issue #31): figures measured in Debian's Chromium, printed as one
JSON line (a benchmark: nothing here asserts).

    python -m benchmarks.browser [--quick] [--url URL]

- first_visit_bytes: everything the page and the model's worker transferred in a fresh profile until the
  Sample tab was drawn, its server plot and the browser's bars (Gradio's page and the model: onnxruntime's
  wasm gzipped, the graphs, model.safetensors, the tokenizer); first_visit_ready_s / second_visit_ready_s: navigation → ready, the
  second from the browser's Cache API, and *_visit_ms where that went, in order: page (navigation → the
  page script runs: Gradio's page and its <head>), worker (the model's worker starts), files (fetched,
  or read from the cache), hash (sha256 of the weights; none from the cache), session (wasm compiled,
  prefill graph's session created); then bars (ready → the Sample tab's first bars and heatmap drawn)
- step_session_ms: the step graph's session, created in the worker after the first forward pass
- slider_to_bars_ms: median, a temperature change → the bars redrawn and the frame painted
- keystroke_to_forward_ms: median, a character typed (T ≤ 64) → tokenized, forward pass, heatmap and bars painted
- tokens_per_s_cpu_2x: live generation of 128 tokens (temperature 1) with the page's CPU slowed 2×, each
  token shown as it comes: the renderer process (its main thread and the model's worker) is stopped 10 ms
  of every 20 (SIGSTOP/SIGCONT), since CDP's Emulation.setCPUThrottlingRate slows the main thread only
- stop_ms: Stop pressed during a long generation → the generation loop ended
- queue_requests: requests to the server's queue or API while the sliders moved and tokens were generated
- js_heap_mb: the page's JavaScript heap at the end (CDP Performance.getMetrics; the worker and wasm memory
  not included)
- load_avg: the machine's 1-minute load average at the start and the end (other work skews every figure)
Targets (2-core CPU): slider ≤ 30 ms, keystroke ≤ 100 ms, ≥ 30 tokens/s at 2× slowdown, Stop ≤ 100 ms,
0 queue requests, first visit ≤ 15 MB, second visit ready ≤ 1.5 s.
"""
import argparse
import contextlib
import json
import os
import signal
import statistics
import threading
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

from benchmarks import stream

# the Sample tab's one sampler while the page's model runs it (web/src/sampler.js): a slider moved, a keystroke
# in the header's prompt, a generation of `tokens` pressed Stop on after `stopAfter` characters
DRAWN = """async (sampler, drawn) => {      // until the sampler drew its next figure (2 s at most)
  for (const t0 = performance.now(); sampler.drawn === drawn && performance.now() - t0 < 2000;)
    await new Promise(r => requestAnimationFrame(r));
  await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));      // the frame with the new bars
}"""
SLIDER = """async value => {
  const drawn = """ + DRAWN + """, sampler = window.toyviz.sampler, before = sampler.drawn;
  const slider = document.querySelector('#temperature input[type=range]'), t0 = performance.now();
  slider.value = value; slider.dispatchEvent(new Event('input', {bubbles: true}));
  await drawn(sampler, before);
  return performance.now() - t0;
}"""
KEYSTROKE = """async text => {
  const drawn = """ + DRAWN + """, sampler = window.toyviz.sampler, before = sampler.drawn;
  const prompt = document.querySelector('#prompt textarea'), t0 = performance.now();
  prompt.value = text; prompt.dispatchEvent(new Event('input', {bubbles: true}));
  await drawn(sampler, before);
  return [performance.now() - t0, sampler.read.T];
}"""
GENERATE = """async ([tokens, stopAfter]) => {
  const sampler = window.toyviz.sampler, generated = document.querySelector('#generated');
  sampler.lastRun = null;
  const sliders = sampler.sliders();                     // settled: {values, note}, as the page's Generate hands them on
  sampler.generate(document.querySelector('#prompt textarea').value,
                   {...sliders, values: {...sliders.values, max_new: tokens, seed: 0}});
  let stopped = null;
  const began = performance.now();
  while (sampler.lastRun === null) {
    await new Promise(r => setTimeout(r, 1));
    if (performance.now() - began > 300000) throw new Error("the page's generation never finished (300 s)");
    if (stopAfter && stopped === null && generated.textContent.length > stopAfter) {
      stopped = performance.now(); document.querySelector('#stop').click();
    }
  }
  return {...sampler.lastRun, stopMs: stopped === null ? null : performance.now() - stopped};
}"""


@contextlib.contextmanager
def half_speed(browser):
    """Every renderer process of `browser` stopped for 10 ms of every 20 ms: the page's main thread and the
    model's worker both run as on a CPU 2× slower."""
    processes = browser.new_browser_cdp_session().send("SystemInfo.getProcessInfo")["processInfo"]
    renderers = [p["id"] for p in processes if p["type"] == "renderer"]
    done = threading.Event()

    def cycle():
        while not done.is_set():
            for pid in renderers:
                os.kill(pid, signal.SIGSTOP)
            time.sleep(0.01)
            for pid in renderers:
                os.kill(pid, signal.SIGCONT)
            time.sleep(0.01)

    thread = threading.Thread(target=cycle)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join()


def start_app():
    import app
    from toyviz.app.explorer import Explorer
    demo = app.build(Explorer.load("gpt", "translator", "cpu"))
    demo.queue(default_concurrency_limit=4, max_size=64)
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, **app.launch_options())
    return demo, url


def visit(context, url):
    """Open the Sample tab and wait for window.toyviz; → (page, bytes transferred, ready seconds, cdp session,
    where the time went: ms until the page's script ran, then the worker's start, reading the files,
    hashing, the prefill session, and from ready to the first bars)."""
    page = context.new_page()
    cdp = context.new_cdp_session(page)
    received = []
    def count(request):   # the context's requests: the page's and its worker's
        sizes = request.sizes()
        received.append(sizes["responseBodySize"] + sizes["responseHeadersSize"])
    context.on("requestfinished", count)
    page.goto(f"{url.rstrip('/')}/?tab=sample", wait_until="domcontentloaded", timeout=120_000)
    page.wait_for_function("window.toyviz !== undefined", timeout=120_000)
    backend = page.evaluate("window.toyviz.ready")
    if backend != "browser":
        raise SystemExit(f"the page fell back to the server: {page.evaluate('window.toyviz.reason')}")
    page.wait_for_function("window.toyviz.shownAt !== undefined", timeout=120_000)
    page.locator("#bars-plot .gtitle").first.wait_for(timeout=120_000)   # the server's own plot: the tab is drawn
    page.wait_for_timeout(500)
    context.remove_listener("requestfinished", count)
    ms = page.evaluate("({page: toyviz.startedAt, ...toyviz.model.loaded.ms, bars: toyviz.shownAt - toyviz.readyAt})")
    return page, sum(received), page.evaluate("window.toyviz.readyAt") / 1000, cdp, {k: round(v) for k, v in ms.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--url", help="a running app (default: start one here)")
    args = parser.parse_args(argv)
    demo, url = (None, args.url) if args.url else start_app()
    repeats = 5 if args.quick else 20
    load = [os.getloadavg()[0]]
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = stream.launch(p)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        page, first_bytes, first_s, _, first_ms = visit(context, url)
        page.close()
        page, _, second_s, cdp, second_ms = visit(context, url)           # same profile: the Cache API has the model
        queue = []
        page.on("request", lambda r: queue.append(r.url) if "/queue/" in r.url or "/run/" in r.url else None)
        slider = [page.evaluate(SLIDER, 0.5 + (i % 10) / 10) for i in range(repeats)]
        text = ("To be, or not to be, that is the question: whether 'tis nobler in the mind to suffer the slings "
                "and arrows of outrageous fortune, or to take arms against a sea of troubles, and by opposing end them")
        keys = [page.evaluate(KEYSTROKE, text[: 20 + i * (len(text) - 20) // repeats]) for i in range(repeats)]
        with half_speed(browser):
            run = page.evaluate(GENERATE, [64 if args.quick else 128, 0])
        stop = page.evaluate(GENERATE, [2000, 120])
        step_ms = page.evaluate("window.toyviz.model.timings()")["step"]
        cdp.send("Performance.enable")
        metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        browser.close()
    load.append(os.getloadavg()[0])
    if demo is not None:
        demo.close()
    print(json.dumps({
        "first_visit_bytes": first_bytes, "first_visit_ready_s": round(first_s, 2), "second_visit_ready_s": round(second_s, 2),
        "first_visit_ms": first_ms, "second_visit_ms": second_ms, "step_session_ms": round(step_ms),
        "slider_to_bars_ms": round(statistics.median(slider), 1),
        "keystroke_to_forward_ms": round(statistics.median(ms for ms, _ in keys), 1), "keystroke_T": max(T for _, T in keys),
        "tokens_per_s_cpu_2x": round(len(run["tokens"]) / run["seconds"], 1),
        "stop_ms": round(stop["stopMs"], 1), "queue_requests": len(queue),
        "js_heap_mb": round(metrics["JSHeapUsedSize"] / 1e6, 1), "load_avg": [round(x, 1) for x in load],
        "quick": args.quick}))


if __name__ == "__main__":
    main()
