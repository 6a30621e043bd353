"""How many tab updates a second the app serves, with 0 (in-process), 1, 2 … worker processes (issue 43),
printed as one JSON line (a benchmark: nothing here asserts).

    python -m benchmarks.capacity [--workers 0 1 2] [--threads N] [--clients 8] [--seconds 30] [--per-s 6] [--words 127] [--quick]

For each worker count the app runs as its own process (`python app.py --device cpu`, TOYVIZ_WORKERS=n;
0: the renderers in the server's own process, as before issue 43) and:
- saturation: --clients clients send new-prompt Attention updates back to back (each prompt fresh, so no
  cache answers: a trace and the figures every time; --words words of benchmarks.app's, 127 by default: its
  128-token update, issue 43's "44 ms of the tab's own work") for --seconds; updates_per_s, the server's CPU (its
  process and its workers') in cores and per update (server_cpu_ms_per_update, and split: the Gradio
  process's share and the workers');
- fixed rate: updates arriving at --per-s a second (Poisson, each on its own connection) for the same
  time, answered p50_s/p95_s: the latency a class sees at a rate every configuration can keep up with;
- from_cache: the same, one update over and over (≤ 10 s): the server answers it from its cache, no worker
  computes, so this is what the Gradio process alone can route, the ceiling of one server however many
  workers it has;
- rss_mb: each process's resident memory at the end (server, workers).
The clients are asyncio coroutines on raw HTTP connections (Gradio's /gradio_api/call API: a POST, then
its event stream read to the end), so that they cost the machine little: on 2 cores every client's CPU
is taken from the server.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import time

from benchmarks.harness import Connection, Server, cpu_seconds, memory_mb, spread
from benchmarks.app import WORDS

PLAIN = {"Accept-Encoding": "identity", "Content-Type": "application/json"}


async def update(connection: Connection, rng: random.Random, words: int) -> float:
    """One new-prompt Attention update through the API → seconds until its answer was read whole."""
    start = time.monotonic()
    prompt = " ".join(rng.choice(WORDS) for _ in range(words))
    body = json.dumps({"data": [prompt, rng.randrange(4), rng.randrange(4), "probs", [], False, "gpt"]}).encode()
    status, answer = await connection.request("POST", "/gradio_api/call/attention", PLAIN, body)
    if status != 200:
        raise RuntimeError(f"POST {status}: {answer[:200]!r}")
    event = json.loads(answer)["event_id"]
    status, stream = await connection.request("GET", f"/gradio_api/call/attention/{event}", PLAIN)
    if status != 200 or b"event: complete" not in stream or b'"plotly"' not in stream:
        raise RuntimeError(f"GET {status}: {stream[:300]!r}")
    return time.monotonic() - start


async def saturate(server: Server, clients: int, seconds: float, words: int, fresh: bool = True,
                   seed: int = 0) -> dict:
    """Clients sending updates back to back: the server's throughput and what it costs (fresh False: one update
    over and over, answered from the server's cache: what the Gradio process alone can route). Client n draws
    its prompts from random.Random(seed + n): another seed, other prompts."""
    deadline, times, errors = time.monotonic() + seconds, [], []

    async def client(n: int):
        connection, rng = Connection("127.0.0.1", server.port), random.Random(seed + n)
        while time.monotonic() < deadline:
            try:            # not fresh: the same generator's first draw each time, so the same update
                times.append(await update(connection, rng if fresh else random.Random(0), words))
            except (OSError, RuntimeError, asyncio.IncompleteReadError, ValueError) as err:
                errors.append(repr(err)[:200])
                connection.close()
        connection.close()
    own, cpu, start, mine = cpu_seconds(server.proc.pid), server.cpu_s(), time.monotonic(), time.process_time()
    await asyncio.gather(*(client(n) for n in range(clients)))
    elapsed, cpu, own = time.monotonic() - start, server.cpu_s() - cpu, cpu_seconds(server.proc.pid) - own
    mine = time.process_time() - mine
    per_update = lambda seconds: round(1000 * seconds / max(1, len(times)), 1)
    return {"updates": len(times), "updates_per_s": round(len(times) / elapsed, 2), "errors": len(errors),
            "error_messages": errors[:3], "latency": spread(times), "server_cpu_cores": round(cpu / elapsed, 2),
            "server_cpu_ms_per_update": per_update(cpu), "clients_cpu_cores": round(mine / elapsed, 2),
            # the Gradio process's share (routing, queue, the answer's JSON) and the workers'
            "server_cpu_ms_per_update_by_process": {"gradio": per_update(own), "workers": per_update(cpu - own)}}


async def at_rate(server: Server, per_s: float, seconds: float, words: int) -> dict:
    """Updates arriving at random (Poisson) at `per_s` a second, each on its own connection: their latency."""
    rng, times, errors, tasks = random.Random(7), [], [], []

    async def one(n: int):
        connection = Connection("127.0.0.1", server.port)
        try:
            times.append(await update(connection, random.Random(1000 + n), words))
        except (OSError, RuntimeError, asyncio.IncompleteReadError, ValueError) as err:
            errors.append(repr(err)[:200])
        connection.close()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        tasks.append(asyncio.ensure_future(one(len(tasks))))
        await asyncio.sleep(rng.expovariate(per_s))
    await asyncio.gather(*tasks)
    return {"per_s": round(per_s, 2), "errors": len(errors), "latency": spread(times)}


def measure(workers: int, clients: int, seconds: float, per_s: float, words: int, threads: int = 0) -> dict:
    with Server(env={"TOYVIZ_WORKERS": str(workers), "TOYVIZ_WORKER_THREADS": str(threads)}) as server:
        # warm: every worker's first answers, on prompts of their own (the same ones would be answered from the
        # cache when measured: with the warm-up's seeds, the first 5 s of every client's prompts were)
        asyncio.run(saturate(server, clients, min(5.0, seconds), words, seed=10_000))
        figures = {"saturation": asyncio.run(saturate(server, clients, seconds, words)),
                   "from_cache": asyncio.run(saturate(server, clients, min(10.0, seconds), words, fresh=False)),
                   "fixed_rate": asyncio.run(at_rate(server, per_s, seconds, words)),
                   "rss_mb": {"server": round(server.memory_mb().get("rss", 0)),
                              "workers": [round(memory_mb(pid).get("rss", 0)) for pid in server.worker_pids()]}}
    return figures


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--per-s", type=float, default=6.0, help="updates a second in the fixed-rate part")
    parser.add_argument("--words", type=int, default=127, help="words of a fresh prompt (127: ~128 tokens)")
    parser.add_argument("--threads", type=int, default=0,
                        help="torch threads a worker computes with (0: the app's default, the cores shared out; "
                             "1: a core a worker, to see what processes add)")
    parser.add_argument("--quick", action="store_true", help="1 and 2 workers, 4 clients, 8 s each")
    args = parser.parse_args(argv)
    if args.quick:
        args.workers, args.clients, args.seconds = [1, 2], 4, 8.0
    results = {n: measure(n, args.clients, args.seconds, args.per_s, args.words, args.threads) for n in args.workers}
    rate = {n: r["saturation"]["updates_per_s"] for n, r in results.items()}
    print(json.dumps({"clients": args.clients, "threads": args.threads, "seconds": args.seconds, "words": args.words, "by_workers": results,
                      "two_over_one": round(rate[2] / max(0.01, rate[1]), 2) if 1 in rate and 2 in rate else None,
                      "quick": args.quick}))


if __name__ == "__main__":
    main()
