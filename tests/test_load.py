"""Many visitors at once: concurrent gradio_client clients on loopback, bounded in count and time."""
import os
import statistics
import threading
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import pytest

import app
from toyviz.checkpoint import CHECKPOINTS

CLIENTS = 20
SECONDS = float(os.environ.get("TOYVIZ_LOAD_SECONDS", "60"))
MAX_REQUESTS_PER_CLIENT = 40

pytestmark = [pytest.mark.load,
              pytest.mark.skipif(not (CHECKPOINTS / "gpt" / "config.json").is_file(), reason="no shipped checkpoints")]


def test_twenty_clients_for_a_minute():
    from gradio_client import Client
    demo = app.build(app.load_explorer("gpt", "translator", "cpu"))
    demo.queue(default_concurrency_limit=4, max_size=64)
    _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False)
    calls = [
        lambda c, i: c.predict(f"To be, or not to be {i}", 1, 2, "probs", [], False, api_name="/attention"),
        lambda c, i: list(c.submit(f"ROMEO {i}:", 0.8, 50, 0.95, 8, i, False, api_name="/generate")),
        lambda c, i: c.predict(f"The Lord is my shepherd {i}.", 2, "cross", "average", "average", False,
                               api_name="/translate"),
    ]
    latencies, failures, lock = [], [], threading.Lock()
    deadline = time.monotonic() + SECONDS

    def visitor(n):
        client = Client(url, verbose=False)
        for i in range(MAX_REQUESTS_PER_CLIENT):
            if time.monotonic() > deadline:
                return
            start = time.monotonic()
            try:
                calls[(n + i) % len(calls)](client, n * 1000 + i)
                with lock:
                    latencies.append(time.monotonic() - start)
            except Exception as err:                        # every failure is collected and reported
                with lock:
                    failures.append(repr(err)[:200])

    try:
        threads = [threading.Thread(target=visitor, args=(n,), daemon=True) for n in range(CLIENTS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=SECONDS + 120)
        stuck = sum(t.is_alive() for t in threads)
        latencies.sort()
        print(f"\nload: {len(latencies)} requests from {CLIENTS} clients in {SECONDS:.0f} s, "
              f"p50 {statistics.median(latencies):.2f} s, p95 {latencies[int(0.95 * len(latencies))]:.2f} s, "
              f"{len(failures)} failures")
        assert not failures, failures[:5]
        assert stuck == 0
        assert latencies
        after = Client(url, verbose=False).predict("Still there?", False, api_name="/tokens")
        assert after[1]["type"] == "plotly"
    finally:
        demo.close()
