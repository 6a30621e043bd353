"""Speed of the "Why this token?" tab, printed as one JSON line (a benchmark: nothing here asserts).

    python -m benchmarks.explain [--quick] [--threads N]

- why_tab_ms: a NEW 64-token prompt → everything the tab shows (components with the top 8 ablated
  twice, integrated gradients with its default 32 steps, logit lens, n-gram counts, paragraph, the
  figures), median over fresh prompts; the n-gram index is built before (once per app: index_build_ms)
- patching_ms: a 32-token pair patched at every layer × position and every head, with its figures
- plain_forward_ms: one plain forward of 64 tokens, the yardstick when the machine is busy
Targets (2-core CPU): why tab ≤ 1.5 s, patching ≤ 3 s.
"""
import argparse
import json
import statistics
import time

import torch

from benchmarks.app import prompt_of
from benchmarks.core import median_seconds

PAIR = tuple(f"The Duke of {name} is dead, my lord, and the Duke of Gloucester shall be king in England; "
             f"and so, my good lord, the Duke of" for name in ("York", "Suffolk"))     # 32 tokens each


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer prompts (CI)")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    from toyviz.app.views.why import patching_view, why_view
    from toyviz.app.explorer import Explorer
    explorer = Explorer.load("gpt", "translator", "cpu")
    gpt = explorer.gpt
    start = time.perf_counter()
    index, reason = explorer.caches.training_index()
    index_ms = (time.perf_counter() - start) * 1e3
    prompts = [gpt.tokenizer.decode(gpt.tokenizer.encode(prompt_of(80, seed))[:63]) for seed in range(3 if args.quick else 9)]
    why_view(explorer, "warm up the kernels", "")
    times = []
    for prompt in prompts:
        start = time.perf_counter()
        why_view(explorer, prompt, "")
        times.append((time.perf_counter() - start) * 1e3)
    ids = torch.tensor([gpt.encode(prompts[0])[0]], device=gpt.device)
    with torch.no_grad():
        plain = median_seconds(lambda: gpt.model(ids), 5)
    patching = median_seconds(lambda: patching_view(explorer, *PAIR, " York", " Suffolk"), 2 if args.quick else 5)
    print(json.dumps({
        "threads": torch.get_num_threads(), "prompt_tokens": len(gpt.encode(prompts[0])[0]),
        "why_tab_ms": round(statistics.median(times), 1), "why_tab_ms_max": round(max(times), 1),
        "index_build_ms": round(index_ms, 1), "index_tokens": len(index.ids) if index else 0,
        "index_missing": reason or None, "patching_tokens": len(gpt.encode(PAIR[0])[0]),
        "patching_ms": round(patching * 1e3, 1), "plain_forward_ms": round(plain * 1e3, 2), "quick": args.quick}))


if __name__ == "__main__":
    main()
