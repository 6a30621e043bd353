"""Core speed figures, printed as one JSON line (a benchmark, not a test: nothing here asserts).

    python -m benchmarks.core [--quick] [--checkpoint gpt]

- plain_vs_reference / traced_vs_reference: the plain and the traced forward at T=128 against a forward
  of the same shape written the nanoGPT way (benchmarks/reference.py), timed interleaved in one
  process (median of repeats); reference_max_abs_diff: how far apart their logits are
- trace_ratio: traced forward time / plain forward time at T=128
- traced_every_head_read_vs_reference: the traced forward and then every per-head tensor read (q, k, v,
  scores, outputs, writes: a trace assembles those [L, H, …] when a view first asks, toyviz.models.trace.PerHead)
- generation tokens/s for 256 new tokens after a 64-token prompt, with and without the KV cache
- streams_tokens_per_s: 8 generations of new_tokens each (different prompts, sampled), all tokens per
  second when read one after another ("alone") and when read at once, decoded in one batch
  (toyviz.serving.batching, "together")
- busy_tokens_per_s: cached generation while two threads run pure Python (as figure builders do in a
  server), at the interpreter's default switch interval and at toyviz.serving.server's (see there);
  new_tokens, or as many as BUSY_S seconds allow (a token can take seconds at the default interval)
Measured with the server's malloc settings (toyviz.serving.memory.settle_allocator, "allocator"): they
are what the app runs with, and they keep a figure from depending on what ran before it in the process
(glibc's default thresholds move with the tensors freed so far: the reference's own time moved by 10 %).
Targets on a 2-core CPU: plain ≤ 1.05× and traced ≤ 1.2× the reference, cached ≥ 3× uncached.
"""
import argparse
import json
import statistics
import sys
import threading
import time

import torch

import toyviz
from benchmarks.reference import reference_forward
from toyviz.models.trace import PerHead
from toyviz.serving.batching import Streams
from toyviz.serving.memory import settle_allocator
from toyviz.serving.server import SWITCH_INTERVAL_S


BUSY_S = 10.0


def median_seconds(fn, repeats: int) -> float:
    fn()                                                   # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def interleaved(fns: dict, repeats: int, warm_ups: int = 1) -> dict[str, list[float]]:
    """Seconds of each function's runs, interleaved round by round (after `warm_ups` rounds), so that a machine
    busy with other work slows them alike (the ratios hold where the absolute times do not)."""
    for _ in range(warm_ups):
        for fn in fns.values():
            fn()
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return times


def interleaved_medians(fns: dict, repeats: int) -> dict:
    """Median seconds of each function, their runs interleaved (`interleaved`)."""
    return {name: statistics.median(t) for name, t in interleaved(fns, repeats).items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checkpoint", default="gpt")
    parser.add_argument("--device", default=None)
    parser.add_argument("--quick", action="store_true", help="few repetitions and short generation (CI)")
    args = parser.parse_args(argv)
    allocator = "server" if settle_allocator() else "default"
    gpt = toyviz.load(args.checkpoint, device=args.device)
    model = gpt.model
    repeats, new_tokens = (3, 32) if args.quick else (20, 256)
    T = min(128, model.config.context)
    ids = torch.randint(0, model.config.vocab_size - 1, (T,), generator=torch.Generator().manual_seed(0)).tolist()
    batch = torch.tensor([ids], device=gpt.device)
    with torch.no_grad():
        timed = interleaved_medians({"reference": lambda: reference_forward(model, batch),
                                     "plain": lambda: model(batch), "traced": lambda: model.trace(ids),
                                     "every_head_read": lambda: every_head_read(model.trace(ids))},
                                    repeats * 3)
        reference_diff = float((reference_forward(model, batch) - model(batch)[0]).abs().max())
    plain, traced, reference = timed["plain"], timed["traced"], timed["reference"]
    prompt = ids[:64]

    def tokens_per_second(use_cache: bool, within_s: float = float("inf")) -> float:
        """new_tokens generated, or as many as `within_s` seconds allow, per second."""
        start, n = time.perf_counter(), 0
        for _ in model.generate_ids(prompt, new_tokens, temperature=0.0, use_cache=use_cache):
            n += 1
            if time.perf_counter() - start > within_s:
                break
        return n / (time.perf_counter() - start)

    cached, uncached = tokens_per_second(True), tokens_per_second(False)
    streams = {"alone": round(eight_streams(model, prompt, new_tokens, together=False), 1),
               "together": round(eight_streams(model, prompt, new_tokens, together=True), 1)}
    # at the default 5 ms switch interval a token can take seconds: each rate is read within BUSY_S
    busy = {f"{interval * 1e3:g}ms": round(beside_busy_threads(lambda: tokens_per_second(True, BUSY_S), interval), 2)
            for interval in (sys.getswitchinterval(), SWITCH_INTERVAL_S)}
    print(json.dumps({
        "device": str(gpt.device), "threads": torch.get_num_threads(), "allocator": allocator, "T": T,
        "reference_forward_ms": round(reference * 1e3, 2),
        "plain_forward_ms": round(plain * 1e3, 2), "traced_forward_ms": round(traced * 1e3, 2),
        "plain_vs_reference": round(plain / reference, 3), "traced_vs_reference": round(traced / reference, 3),
        "traced_every_head_read_vs_reference": round(timed["every_head_read"] / reference, 3),
        "reference_max_abs_diff": reference_diff, "trace_ratio": round(traced / plain, 3),
        "prompt_tokens": len(prompt), "new_tokens": new_tokens,
        "cached_tokens_per_s": round(cached, 1), "uncached_tokens_per_s": round(uncached, 1),
        "cache_speedup": round(cached / uncached, 2), "streams_tokens_per_s": streams, "busy_tokens_per_s": busy, "quick": args.quick}))


def every_head_read(trace):
    for kind in PerHead.KINDS:
        trace.per_head[kind]


def eight_streams(model, prompt: list[int], new_tokens: int, together: bool) -> float:
    """Tokens per second of 8 sampled generations (prompts differing in their first token), read one
    after another, or each on its own thread through one Streams batch."""
    prompts = [[(prompt[0] + i) % model.config.vocab_size] + prompt[1:] for i in range(8)]
    source = Streams(model) if together else model

    def read(i: int):
        for _ in source.generate_ids(prompts[i], new_tokens, seed=i):
            pass
    threads = [threading.Thread(target=read, args=(i,)) for i in range(8)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
        if not together:
            thread.join()                       # one after another
    for thread in threads:
        thread.join()
    return 8 * new_tokens / (time.perf_counter() - start)


def beside_busy_threads(measure, switch_interval: float, threads: int = 2):
    """measure() while `threads` threads spin in pure Python, at this switch interval."""
    default, stop = sys.getswitchinterval(), threading.Event()

    def spin():
        while not stop.is_set():
            sum(i * i for i in range(1000))
    spinners = [threading.Thread(target=spin) for _ in range(threads)]
    sys.setswitchinterval(switch_interval)
    for spinner in spinners:
        spinner.start()
    try:
        return measure()
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join()
        sys.setswitchinterval(default)


if __name__ == "__main__":
    main()
