"""Core speed figures, printed as one JSON line (a benchmark, not a test: nothing here asserts).

    python -m benchmarks.core [--quick] [--checkpoint gpt]

- trace_ratio: traced forward time / plain forward time at T=128 (median of repeats)
- generation tokens/s for 256 new tokens after a 64-token prompt, with and without the KV cache
Targets on a 2-core CPU: trace_ratio ≤ 1.5, cached ≥ 3× uncached.
"""
import argparse
import json
import statistics
import time

import torch

import toyviz


def median_seconds(fn, repeats: int) -> float:
    fn()                                                   # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--checkpoint", default="gpt")
    parser.add_argument("--device", default=None)
    parser.add_argument("--quick", action="store_true", help="few repetitions and short generation (CI)")
    args = parser.parse_args(argv)
    gpt = toyviz.load(args.checkpoint, device=args.device)
    model = gpt.model
    repeats, new_tokens = (3, 32) if args.quick else (20, 256)
    T = min(128, model.config.context)
    ids = torch.randint(0, model.config.vocab_size - 1, (T,), generator=torch.Generator().manual_seed(0)).tolist()
    batch = torch.tensor([ids], device=gpt.device)
    with torch.no_grad():
        plain = median_seconds(lambda: model(batch), repeats)
    traced = median_seconds(lambda: model.trace(ids), repeats)
    prompt = ids[:64]

    def tokens_per_second(use_cache: bool) -> float:
        start = time.perf_counter()
        n = sum(1 for _ in model.generate_ids(prompt, new_tokens, temperature=0.0, use_cache=use_cache))
        return n / (time.perf_counter() - start)

    cached, uncached = tokens_per_second(True), tokens_per_second(False)
    print(json.dumps({
        "device": str(gpt.device), "threads": torch.get_num_threads(), "T": T,
        "plain_forward_ms": round(plain * 1e3, 2), "traced_forward_ms": round(traced * 1e3, 2),
        "trace_ratio": round(traced / plain, 3),
        "prompt_tokens": len(prompt), "new_tokens": new_tokens,
        "cached_tokens_per_s": round(cached, 1), "uncached_tokens_per_s": round(uncached, 1),
        "cache_speedup": round(cached / uncached, 2), "quick": args.quick}))


if __name__ == "__main__":
    main()
