"""Every named endpoint at the worst input it accepts (issue 51): its time and the memory it adds, printed as one
JSON line (a benchmark: nothing here asserts). docs/deploying.md's bounds table quotes it.

    python -m benchmarks.bounds [--threads 1] [--only NAME …] [--quick]

Each endpoint runs in a process of its own on the shipped models (torch with --threads threads: a worker's share
of a 2-core machine is 1), as a worker runs it: first once on the page's own inputs (what a class's first visit
warms: the models' first use, the n-gram index, the transcoders), then, after the process's peak-memory mark is
reset (/proc/self/clear_refs), once at its worst: the prompt at the GPT's whole context and beyond (20,000
characters: it is cut to the context, the circuits to their last 64 tokens), a sentence past the translator's
context at the widest beam, the most tokens to generate, every head switched off, the projector's larger figures.
seconds: that call's wall time; added_mb: its peak resident memory above what the process held before it.
"""
from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path

LONG_PROMPT = ("Now is the winter of our discontent made glorious summer by this sun of York; and all the clouds "
               "that loured upon our house in the deep bosom of the ocean buried. ") * 140          # ~20,000 chars
LONG_SOURCE = "And the king spoke to his servants, and they went out to the city by the river, " * 20
ENDPOINTS = ("tokens", "positional", "attention", "inside", "layernorm", "residual", "why", "features",
             "next_token", "translate", "experiments", "model", "circuits", "circuit", "circuit_intervene",
             "generate", "kv_cache", "patching", "size", "export")
QUICK = ("attention", "translate", "circuit")


def rss_mb() -> tuple[float, float]:
    """(resident now, its peak since the last reset), MB."""
    status = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines())
    return int(status["VmRSS"].split()[0]) / 1024, int(status["VmHWM"].split()[0]) / 1024


def worst_calls(explorer):
    """name → (renderer, its first-visit inputs, its worst inputs)."""
    from toyviz.app.compute import export_tab
    from toyviz.app.tabs import TABS
    from toyviz.app.views import circuits, sampling, size, why
    from toyviz.interpret.explain import PAIRS
    from toyviz.settings.controls import DEFAULTS, MAX_BEAM, MAX_NEW_TOKENS
    sizes, pair = explorer.models.sizes(), PAIRS[0]
    page = {"prompt": DEFAULTS["prompt"], "projector": False, "model": "gpt", "metric": "cosine", "layer": 0,
            "head": 0, "mode": "probs", "ablate": [], "query": -1, "last_word": "dream", "norm_name": "block0.ln1",
            "ln_position": -1, "res_position": -1, "why_token": "", "feature": -1, "feature_search": "",
            "temperature": 0.8, "top_k": 50, "top_p": 0.95, "source": DEFAULTS["text"], "beam": 4,
            "attention_kind": "cross", "tr_layer": "average", "tr_head": "average", "register": "today",
            "exp_variants": ["baseline"], "exp_x": "tokens", "snapshot": -1, "x_axis": "step",
            "circuit_target": "", "supernodes": ""}
    worst = page | {"prompt": LONG_PROMPT, "projector": True, "mode": "scores", "ablate": list(sizes.gpt_heads),
                    "feature_search": "king", "temperature": 2.0, "top_k": 200, "top_p": 1.0, "source": LONG_SOURCE,
                    "beam": MAX_BEAM, "exp_variants": list(explorer.experiment_results()["variants"])}
    calls = {}
    for name, tab in TABS.items():
        inputs = [i for i in tab.inputs if i in page]
        calls[tab.api or name] = (tab.render, [page[i] for i in inputs], [worst[i] for i in inputs])
    sampling_args = lambda p, new: [p["prompt"], p["temperature"], p["top_k"], p["top_p"], new, 0, p["projector"],
                                    -1, 0.0]
    calls |= {"generate": (sampling.generate_view, sampling_args(page, 16), sampling_args(worst, MAX_NEW_TOKENS)),
              "kv_cache": (sampling.kv_cache_view, [page["prompt"]], [LONG_PROMPT]),
              "size": (size.size_view, ["gpt2"], ["custom", 96, 96, 12288, 49152, 50257, 8192, "learned", "gelu",
                                                  True, True]),
              "patching": (why.patching_view, [pair.clean, pair.corrupted, "", ""], [LONG_PROMPT, LONG_PROMPT, "", "", True]),
              "circuit": (circuits.circuit_json, [page["prompt"], ""], [LONG_PROMPT, ""]),
              "circuit_intervene": (circuits.intervention_view, [page["prompt"], "", "", 0.0],
                                    [LONG_PROMPT, "", "", 4.0, True]),
              "export": (export_tab, ["attention"] + calls["attention"][1], ["attention"] + calls["attention"][2])}
    return calls


def run(render, explorer, args):
    answer = render(explorer, *args)
    if inspect.isgenerator(answer):
        for answer in answer:
            pass
    return answer


def one(name: str, threads: int) -> dict:
    import torch
    torch.set_num_threads(threads)
    from toyviz.app.explorer import Explorer
    from toyviz.errors import UserError
    explorer = Explorer.load("gpt", "translator", "cpu")
    render, page, worst = worst_calls(explorer)[name]
    try:
        run(render, explorer, page)
    except UserError:                     # an intervention before a feature is picked: what a first visit gets
        pass
    if name == "circuit_intervene":       # a feature of the worst graph, as a student clicks one
        from toyviz.app.views.circuits import circuit_of
        circuit, _ = circuit_of(explorer, LONG_PROMPT, "")
        g = circuit.graph
        worst[2] = f"{int(g.layer[-1])}_{int(g.feature[-1])}_{int(g.position[-1])}"
    Path("/proc/self/clear_refs").write_text("5")            # the peak mark from here
    before, _ = rss_mb()
    start = time.perf_counter()
    try:
        run(render, explorer, worst)
        refused = ""
    except UserError as err:
        refused = str(err)[:120]
    seconds = time.perf_counter() - start
    _, peak = rss_mb()
    return {"endpoint": name, "seconds": round(seconds, 2), "added_mb": round(peak - before), "refused": refused}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)          # the child's own run
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)} (CI: so it cannot rot)")
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one, args.threads)))
        return
    rows = []
    for name in args.only or (QUICK if args.quick else ENDPOINTS):
        done = subprocess.run([sys.executable, "-m", "benchmarks.bounds", "--one", name, "--threads", str(args.threads)],
                              capture_output=True, text=True, env=dict(os.environ, GRADIO_ANALYTICS_ENABLED="False"))
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        rows.append(json.loads(lines[-1]) if lines else {"endpoint": name, "failed": done.stderr[-300:]})
    print(json.dumps({"threads": args.threads, "endpoints": rows}))


if __name__ == "__main__":
    main()
