"""A student's browser as the server sees it (benchmarks.load --browser, issue 31). A real Chromium page's first
visit is recorded once (sample_in_browser: the GETs, the queue joins it sends as it opens, and what sampling in the
browser costs), then replayed by every simulated student (open_page): 100 Chromiums do not fit in 2 cores.
browsers_during_class adds a few real pages that arrive late in the class.
"""
from __future__ import annotations

import asyncio
import collections
import json
import random
import time

from benchmarks.harness import fetch_files
from benchmarks.students import NEW_TOKENS, Record

NOT_FILES = ("/queue/", "/heartbeat", "/upload", "/stream/", "/run/", "/call/")   # a page's requests that are not files
MODEL_FILES = (".onnx", "model.safetensors", ".wasm.gz")   # what the page keeps in its Cache API after a first visit


def open_page(page: dict, timeout: float) -> Record:
    """A first visit as the server sees it: page["files"] fetched as a browser does (six keep-alive
    connections, compressed as it accepts them, every byte read; benchmarks.harness.fetch_files, a client that
    costs little, so that a hundred students in this process measure the server, not an HTTP library); then
    the events the page sends as it opens (page["events"]: queue joins as recorded) in a fresh session,
    answered when the queue says each completed."""
    import httpx
    start, session = time.monotonic(), f"load{random.getrandbits(40):x}"
    try:
        counts = collections.Counter()
        asyncio.run(asyncio.wait_for(fetch_files([{"url": u, "headers": {}} for u in page["files"]], 6, counts),
                                     timeout))
        if counts["failed"]:
            raise RuntimeError(f"{counts['failed']} of the page's files failed")
        with httpx.Client(timeout=timeout) as http:
            pending = set()
            for url, body in page["events"]:
                joined = http.post(url, json={**body, "session_hash": session})
                joined.raise_for_status()
                pending.add(joined.json()["event_id"])
            with http.stream("GET", page["stream"], params={"session_hash": session}) as response:
                for line in response.iter_lines():
                    message = json.loads(line[5:]) if line.startswith("data:") else {}
                    if message.get("msg") == "process_completed":
                        if not message.get("success", False):
                            raise RuntimeError(f"an event failed: {str(message.get('output'))[:200]}")
                        pending.discard(message.get("event_id"))
                        if not pending:
                            break
        return Record("page", "page", "ok", time.monotonic() - start)
    except (httpx.TimeoutException, TimeoutError) as err:
        return Record("page", "page", "timeout", time.monotonic() - start, message=repr(err)[:300])
    except Exception as err:                                           # noqa: BLE001 — counted, reported
        return Record("page", "page", "error", time.monotonic() - start, message=repr(err)[:300])


def sample_in_browser(browser, url: str) -> dict:
    """A real Chromium page, fresh profile: open the Sample tab, load the model, move the temperature slider
    and generate 64 tokens in the browser → {backend, ready_s, slider_ms, tokens_per_s, queue_requests while
    sampling, page_mb, page: what it sent until its tab was drawn (open_page replays it)}."""
    from benchmarks.browser import GENERATE, SLIDER
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    files, sizes, events = {}, [], []

    def fetched(r):                                   # blob: and data: urls never reach the server
        if r.method == "GET" and r.url.startswith("http") and not any(part in r.url for part in NOT_FILES):
            files[r.url] = None
            sizes.append(r.sizes()["responseBodySize"])

    def sent(r):                                      # the events the page sends as it opens
        if "/queue/join" in r.url:
            events.append((r.url, json.loads(r.post_data)))
    context.on("requestfinished", fetched)
    context.on("request", sent)
    page = context.new_page()
    try:
        page.goto(f"{url.rstrip('/')}/?tab=sample", wait_until="domcontentloaded", timeout=180_000)
        page.wait_for_function("window.toyviz !== undefined", timeout=180_000)
        backend = page.evaluate("window.toyviz.ready")
        figures = {"backend": backend, "ready_s": round(page.evaluate("window.toyviz.readyAt") / 1000, 2)}
        if backend != "browser":
            return {**figures, "reason": page.evaluate("window.toyviz.reason")}
        page.wait_for_function("window.toyviz.shownAt !== undefined", timeout=180_000)
        page.locator("#bars-plot .gtitle").first.wait_for(timeout=180_000)      # the server's own plot: tab drawn
        page.wait_for_timeout(500)
        context.remove_listener("requestfinished", fetched)
        context.remove_listener("request", sent)
        queue = []
        page.on("request", lambda r: queue.append(r.url) if "/queue/" in r.url or "/run/" in r.url else None)
        slider = sorted(page.evaluate(SLIDER, 0.5 + i / 10) for i in range(10))
        run = page.evaluate(GENERATE, [NEW_TOKENS, 0])
        stream = events[0][0].split("/queue/join")[0] + "/queue/data" if events else None
        return {**figures, "slider_ms": round(slider[len(slider) // 2], 1),
                "tokens_per_s": round(len(run["tokens"]) / run["seconds"], 1), "queue_requests": len(queue),
                "page_mb": round(sum(sizes) / 1e6, 2),
                "page": {"files": list(files), "events": events, "stream": stream}}
    finally:
        context.close()


def browsers_during_class(url: str, pages: int, seconds: float) -> tuple[list, callable]:
    """→ (their figures, filled in as they run; meanwhile(): from a third into the class, `pages` real
    Chromium pages one after another, each a student arriving late)."""
    results = []

    def meanwhile():
        from playwright.sync_api import sync_playwright
        from benchmarks import stream
        time.sleep(seconds / 3)
        with sync_playwright() as p:
            browser = stream.launch(p)
            for _ in range(pages):
                figures = sample_in_browser(browser, url)
                figures.pop("page", None)
                results.append(figures)
            browser.close()
    return results, meanwhile


