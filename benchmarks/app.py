"""App speed and size figures, printed as one JSON line (a benchmark: nothing here asserts).

    python -m benchmarks.app [--quick]

- attention_tab_ms: server-side time from a NEW 128-token prompt to every figure of the Attention
  tab (trace + grid + large head + labels + ablation bars), median over fresh prompts, and
  attention_breakdown_ms: its medians split into the traced forward, the figure building, and
  serialising the figures to JSON (which Gradio does after; not in attention_tab_ms)
- attention_payload_bytes: JSON size of that tab update (what the browser receives)
- longest_context_ms: the same for a prompt that fills the whole context
- features_tab_ms: the same for the Features tab (the prompt's features, a dashboard, four figures)
- cold_start_s: `python app.py` until the page answers and the workers have drawn every tab (the page alone:
  benchmarks.cold_start); rss_mb: its resident memory after serving
- stream: 64 tokens sampled in a real page (benchmarks.stream; left out when Chromium is absent):
  distinct text updates the page showed, updates per second, the longest main-thread stall, the
  time from Stop to the page's last update, and after_every_tab: with every tab opened first, how far
  behind the server's schedule the page showed the last of 128 tokens
Targets (2-core CPU): ≤ 60 ms (issue 17; 150 before), ≤ 300 KB, features ≤ 1 s, ≤ 15 s, ≤ 1.5 GB;
streaming ≥ 10 updates/s, stall ≤ 500 ms, Stop ≤ 1.5 s, after every tab ≤ 0.5 s behind. Issue 16 aimed at ≥ 15 updates/s;
the app sends 12 (two tokens each), because a page with every tab opened fell behind 16 a second on a CPU
slowed 2x (see toyviz.serving.pacing, TEXT_EVERY_S).
"""
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

WORDS = ("love honour night crown blood sword king queen fair sweet death heaven earth gentle noble "
         "speak tongue heart eyes fortune grace friend foe time").split()


def prompt_of(n_tokens: int, seed: int) -> str:
    """A fresh prompt (so the trace cache cannot help) of roughly n_tokens words."""
    return " ".join(WORDS[(seed * 7 + i * (seed + 3)) % len(WORDS)] for i in range(n_tokens))


def payload_bytes(outputs) -> int:
    return sum(len(o.to_json()) if hasattr(o, "to_json") else len(json.dumps(o)) for o in outputs)


def time_tab(render, prompts, *args, trace=None):
    """Median ms of render(prompt, *args) over fresh prompts, and the payload of the last; with
    `trace` (which computes and caches the prompt's trace) also the median breakdown."""
    times, parts, payload = [], [], 0
    for p in prompts:
        start = time.perf_counter()
        if trace is not None:
            trace(p)
        traced = time.perf_counter()
        outputs = render(p, *args)
        built = time.perf_counter()
        payload = payload_bytes(outputs)
        times.append((built - start) * 1e3)
        parts.append(((traced - start) * 1e3, (built - traced) * 1e3, (time.perf_counter() - built) * 1e3))
    breakdown = {name: round(statistics.median(p[i] for p in parts), 1)
                 for i, name in enumerate(("trace", "figures", "serialise"))}
    return statistics.median(times), payload, breakdown


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    from benchmarks import stream
    from benchmarks.harness import Server
    from toyviz.app.explorer import Explorer
    from toyviz.app.views.attention import attention_view
    from toyviz.app.views.features import features_view
    explorer = Explorer.load("gpt", "translator", None)
    render = lambda prompt, *args: attention_view(explorer, prompt, *args)
    context = explorer.gpt.config.context
    n = 3 if args.quick else 15
    trace = lambda prompt: explorer.view(prompt, "gpt")
    ms, payload, breakdown = time_tab(render, [prompt_of(127, s) for s in range(n)], 1, 2, "probs", [], False,
                                      trace=trace)
    long_ms, long_payload, _ = time_tab(render, [prompt_of(context * 2, s) for s in range(max(2, n // 3))],
                                        1, 2, "probs", [], False)
    features_ms, features_payload, _ = time_tab(lambda prompt: features_view(explorer, prompt, -1, "", False),
                                                [prompt_of(127, 100 + s) for s in range(n)])
    start = time.perf_counter()
    with Server() as server:                     # `python app.py` until the page answers, warmed
        cold, rss = time.perf_counter() - start, server.memory_mb()["rss"]
        streamed = stream.measure(server.url) if stream.available() else "no chromium"
    print(json.dumps({"prompt_tokens": 128, "attention_tab_ms": round(ms, 1), "attention_breakdown_ms": breakdown,
                      "attention_payload_bytes": payload,
                      "longest_context_tokens": context, "longest_context_ms": round(long_ms, 1),
                      "longest_context_payload_bytes": long_payload, "features_tab_ms": round(features_ms, 1),
                      "features_payload_bytes": features_payload, "cold_start_s": round(cold, 2),
                      "rss_mb_after_start": round(rss, 1), "stream": streamed,
                      "quick": args.quick}))


if __name__ == "__main__":
    main()
