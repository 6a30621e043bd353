"""Attribution graphs of the shipped GPT with its transcoders, printed as one JSON line (a benchmark:
nothing here asserts).

    python -m benchmarks.circuits [--threads N] [--transcoders DIR]

- prompts: five predictions, each with its target, the GPT's probability of it, the graph's size (feature
  nodes; nodes and links the pruning kept at circuit-tracer's 0.8 / 0.98), its replacement and completeness
  scores (toyviz.interpret.circuits.prune), the share of the logit's direct input that comes from error nodes,
  and the seconds it took
- graph_32_s: a 32-token prompt (BOS + 31) → its pruned graph with scores, median of 3 after one warm-up;
  graph_32_cold_s: the first one in the process (torch's batched-gradient machinery loads then)
- plain_forward_ms: one plain forward of those 32 tokens, the yardstick when the machine is busy
Target (2-core CPU): graph_32_s ≤ 10 s.
"""
import argparse
import json
import statistics
import time

import torch

PROMPTS = [   # (prompt, target or None for the GPT's top prediction)
    ("To be, or not to", " be"),
    ("Mistress Quickly and Master Slender went to the fair. Mistress Quickly told Master", " S"),   # induction
    ("I pray you, good my", " lord"),
    ("KING HENRY. Now, lords, for France! KING", None),
    ("Shall I compare thee to a summer's", None),
]
LONG = ("Now is the winter of our discontent made glorious summer by this sun of York; and all the clouds that "
        "loured upon our house in the deep bosom of the ocean buried.")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    parser.add_argument("--transcoders", default=None, help="folder (default: the shipped ones)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    import toyviz
    from toyviz.interpret.circuits import load_transcoders, trace

    gpt = toyviz.load("gpt", device="cpu")
    transcoders = load_transcoders(gpt, args.transcoders)
    long = gpt.tokenizer.decode(gpt.tokenizer.encode(LONG)[:31])
    start = time.perf_counter()
    trace(gpt, transcoders, long)
    cold = time.perf_counter() - start
    rows = []
    for prompt, target in PROMPTS:
        c = trace(gpt, transcoders, prompt, target)
        kinds = c.graph.kinds()
        logit_inputs = c.graph.adjacency[c.graph.logit_index].abs()
        rows.append({"prompt": prompt, "target": c.target_piece, "prob": round(c.prob, 4),
                     "positions": c.graph.n_positions, "features": c.graph.n_features,
                     "nodes_kept": int(c.pruned.nodes.sum()), "links_kept": int(c.pruned.edges.sum()),
                     "replacement": round(c.replacement, 4), "completeness": round(c.completeness, 4),
                     "logit_input_from_errors": round(float(logit_inputs[kinds == 1].sum() / logit_inputs.sum()), 4),
                     "seconds": round(c.seconds, 2)})
    times = []
    for _ in range(3):
        start = time.perf_counter()
        c = trace(gpt, transcoders, long)
        times.append(time.perf_counter() - start)
    ids = torch.tensor([gpt.encode(long)[0]])
    with torch.no_grad():
        forward = []
        for _ in range(5):
            start = time.perf_counter()
            gpt.model(ids)
            forward.append(time.perf_counter() - start)
    print(json.dumps({"prompts": rows, "graph_32_positions": c.graph.n_positions,
                      "graph_32_features": c.graph.n_features, "graph_32_s": round(statistics.median(times), 2),
                      "graph_32_cold_s": round(cold, 2), "plain_forward_ms": round(statistics.median(forward) * 1e3, 1),
                      "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
