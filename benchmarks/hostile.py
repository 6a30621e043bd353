"""A hostile visitor beside a small class (issue 51), printed as one JSON line (a benchmark: nothing here asserts).

    python -m benchmarks.hostile [--seconds 60] [--flooders 8] [--class-size 5] [--workers 2] [--quick]

The app runs as its own process (`python app.py`, TOYVIZ_WORKERS=--workers). For --seconds:
- the flood: --flooders threads each send /circuit a ~250-token prompt back to back, a new session every call
  (Gradio's /call API gives each call its own), counted as answered / refused (a message: an allowance, a cap) /
  failed (a fault, a lost connection, a timeout);
- the class: --class-size students each ask /attention for a fresh 10-50-word prompt, think 1-4 s, again
  (benchmarks.students), their latencies p50 / p95 / max and their errors;
- memory: the server's and its workers' resident memory summed every 0.5 s: at the start, at its peak, the rise.
Issue 51's targets (a 2-core machine): the class's p95 ≤ 1.5 s with 0 errors, the rise ≤ 1.5 GB.
Clients are threads on raw HTTP (benchmarks.students.Client): they cost the machine little beside the server.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import threading
import time

from benchmarks.harness import Server, memory_mb
from benchmarks.students import AppError, Class, Client, fresh_prompt, request, request_args

# ~250 tokens of the GPT's: a paragraph a student pastes (issue 51's was 802 characters, 226 tokens)
PARAGRAPH = ("Now is the winter of our discontent made glorious summer by this sun of York; and all the clouds that "
             "loured upon our house in the deep bosom of the ocean buried. ") * 6


def memory_total_mb(server: Server) -> float:
    return sum(memory_mb(pid).get("rss", 0) for pid in [server.proc.pid] + server.worker_pids())


def flood(url: str, deadline: float, seed: int, counts: dict, lock: threading.Lock):
    """One flooder: /circuit with a new prompt ending each time, back to back, until the deadline."""
    rng = random.Random(seed)
    client = Client(url, timeout=120)
    while time.monotonic() < deadline:
        prompt = PARAGRAPH + " ".join(rng.choice(["king", "queen", "night", "sword"]) for _ in range(4))
        try:
            client.call("circuit", (prompt, ""))
            outcome = "answered"
        except AppError as err:
            outcome = "failed" if "on our side" in str(err) else "refused"
        except Exception:                                                      # noqa: BLE001 — counted
            client.close()
            client, outcome = Client(url, timeout=120), "failed"
        with lock:
            counts[outcome] += 1
    client.close()


def student(url: str, deadline: float, seed: int, out: Class):
    rng = random.Random(seed)
    client = Client(url, timeout=60)
    while time.monotonic() < deadline:
        time.sleep(rng.uniform(1.0, 4.0))
        endpoint, args = request_args("tab", rng, "attention")
        out.add(request(client, "tab", endpoint, args, 60))
    client.close()


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else \
        (values[0] if values else float("nan"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--flooders", type=int, default=8)
    parser.add_argument("--class-size", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="10 s, 2 flooders, 2 students (CI: so it cannot rot)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.flooders, args.class_size = 10, 2, 2
    with Server(env={"TOYVIZ_WORKERS": str(args.workers)}) as server:
        warm = Client(server.url, timeout=120)
        warm.call(*request_args("tab", random.Random(99), "attention"))
        warm.close()
        start_mb = memory_total_mb(server)
        deadline = time.monotonic() + args.seconds
        counts, lock, out = {"answered": 0, "refused": 0, "failed": 0}, threading.Lock(), Class()
        threads = [threading.Thread(target=flood, args=(server.url, deadline, n, counts, lock), daemon=True)
                   for n in range(args.flooders)]
        threads += [threading.Thread(target=student, args=(server.url, deadline, 1000 + n, out), daemon=True)
                    for n in range(args.class_size)]
        for thread in threads:
            thread.start()
        peak_mb = start_mb
        while time.monotonic() < deadline:
            peak_mb = max(peak_mb, memory_total_mb(server))
            time.sleep(0.5)
        for thread in threads:
            thread.join(timeout=150)
        peak_mb = max(peak_mb, memory_total_mb(server))
        seconds = [r.seconds for r in out.records if r.outcome == "ok"]
        errors = [r.message for r in out.records if r.outcome != "ok"]
        print(json.dumps({
            "seconds": args.seconds, "workers": args.workers, "flooders": args.flooders,
            "flood": counts, "class_requests": len(out.records), "class_errors": len(errors),
            "class_error_examples": errors[:3],
            "class_p50_s": round(percentile(seconds, 50), 3), "class_p95_s": round(percentile(seconds, 95), 3),
            "class_max_s": round(max(seconds, default=float("nan")), 3),
            "memory_start_mb": round(start_mb), "memory_peak_mb": round(peak_mb),
            "memory_rise_mb": round(peak_mb - start_mb)}))


if __name__ == "__main__":
    main()
