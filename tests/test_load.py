"""Many visitors at once: 20 gradio_client clients on loopback against the app with the shipped models.

Each client loops over /attention, /generate (8 tokens, streamed) and /translate with prompts of
its own (so the trace cache cannot answer for the model) until TOYVIZ_LOAD_SECONDS (default 60)
have passed or it has sent MAX_REQUESTS_PER_CLIENT. Every request is bounded by REQUEST_TIMEOUT.
Asserted: no request failed, no client got stuck, the app still answers afterwards. Printed, not
asserted: the request count, throughput and p50/p95 latency (overall and per endpoint).
"""
import os

os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported

import statistics
import threading
import time

import pytest

from toyviz.checkpoint import CHECKPOINTS
from toyviz.explorer import Explorer

CLIENTS = 20
SECONDS = float(os.environ.get("TOYVIZ_LOAD_SECONDS", "60"))
MAX_REQUESTS_PER_CLIENT = 60
REQUEST_TIMEOUT = 180             # s; a request still waiting then counts as a failure

pytestmark = [
    pytest.mark.load,
    pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(),
                       reason="checkpoints/gpt is missing: run `python -m toyviz.train gpt`"),
    pytest.mark.skipif(not (CHECKPOINTS / "translator" / "config.json").is_file(),
                       reason="checkpoints/translator is missing: run `python -m toyviz.train translator`"),
]

WORDS = ["To be, or not to be", "ROMEO: But soft", "Now is the winter", "Friends, Romans, countrymen",
         "All the world's a stage", "Once more unto the breach"]
SOURCES = ["The Lord is my shepherd", "In the beginning God created the heavens", "Jesus said to them, Come",
           "And God said, Let there be light", "Blessed are the poor in spirit"]


def attention(client, n):
    note, grid, head, table, ablation = client.submit(f"{WORDS[n % len(WORDS)]} {n}", 1, 2, "probs", [], False,
                                                      api_name="/attention").result(timeout=REQUEST_TIMEOUT)
    assert head["type"] == "plotly" and "layer 1, head 2" in head["plot"]


def generate(client, n):
    job = client.submit(f"{WORDS[n % len(WORDS)]} {n}:", 0.8, 50, 0.95, 8, n, False, api_name="/generate")
    final = job.result(timeout=REQUEST_TIMEOUT)
    assert final[1].count('class="token-prob"') == 8 and len(job.outputs()) > 1


def translate(client, n):
    note, spanish, cross, candidates = client.submit(f"{SOURCES[n % len(SOURCES)]} {n}.", 2, "cross", "average",
                                                     "average", False, api_name="/translate").result(
        timeout=REQUEST_TIMEOUT)
    assert spanish.strip() and cross["type"] == "plotly"


CALLS = {"/attention": attention, "/generate": generate, "/translate": translate}


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def test_twenty_clients_on_loopback(capsys):
    import app
    from gradio_client import Client

    demo = app.build(Explorer.load("gpt", "translator", "cpu"))
    demo.queue(default_concurrency_limit=4, max_size=64)                  # as app.main queues it
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False,
                            show_error=True)
    assert url.startswith("http://127.0.0.1:")
    latencies = {api: [] for api in CALLS}
    failures, lock = [], threading.Lock()
    deadline = time.monotonic() + SECONDS

    def visitor(v):
        try:
            client = Client(url, verbose=False, analytics_enabled=False)
        except Exception as err:                                          # noqa: BLE001 — reported below
            with lock:
                failures.append(f"client {v} could not connect: {err!r}"[:300])
            return
        for i in range(MAX_REQUESTS_PER_CLIENT):
            if time.monotonic() > deadline:
                return
            api = list(CALLS)[(v + i) % len(CALLS)]
            start = time.monotonic()
            try:
                CALLS[api](client, v * 1000 + i)
            except Exception as err:                                      # noqa: BLE001 — reported below
                with lock:
                    failures.append(f"{api} (client {v}, request {i}): {err!r}"[:300])
            else:
                with lock:
                    latencies[api].append(time.monotonic() - start)

    started = time.monotonic()
    try:
        threads = [threading.Thread(target=visitor, args=(v,), daemon=True, name=f"visitor-{v}")
                   for v in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:                 # the last request may start just before the deadline
            t.join(timeout=max(1.0, deadline + REQUEST_TIMEOUT + 30 - time.monotonic()))
        stuck = [t.name for t in threads if t.is_alive()]
        elapsed = time.monotonic() - started
        every = [x for values in latencies.values() for x in values]
        with capsys.disabled():
            print(f"\nload: {CLIENTS} clients, {len(every)} requests in {elapsed:.0f} s "
                  f"({len(every) / elapsed:.1f} req/s), {len(failures)} failures; latency p50 "
                  f"{percentile(every, 0.5):.2f} s, p95 {percentile(every, 0.95):.2f} s, max {max(every, default=0):.2f} s")
            for api, values in latencies.items():
                print(f"  {api:11} {len(values):4} requests, p50 {percentile(values, 0.5):.2f} s, "
                      f"p95 {percentile(values, 0.95):.2f} s, mean {statistics.fmean(values) if values else 0:.2f} s")
        assert not failures, failures[:10]
        assert not stuck, f"clients still waiting: {stuck}"
        assert all(latencies.values()), {api: len(v) for api, v in latencies.items()}
        after = Client(url, verbose=False, analytics_enabled=False)
        note, tokens, _ = after.submit("Still there?", False, api_name="/tokens").result(timeout=60)
        assert tokens["type"] == "plotly" and "tokens" in tokens["plot"]
    finally:
        demo.close()
