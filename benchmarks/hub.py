"""What a GPT-2-small-sized Hugging Face model costs in toyviz, printed as one JSON line (a benchmark: nothing
here asserts, and nothing is downloaded).

    python -m benchmarks.hub [--repeats 5] [--tokens 128] [--folder DIR]

The model is GPT-2 small's shape (12 layers, d_model 768, 12 heads, vocabulary 50,257, context 1,024: 124M
parameters) with transformers' random weights, saved with save_pretrained beside a byte-level BPE trained on
the docs (speed does not depend on what the weights or the merges are); `--folder` keeps it between runs.
toyviz opens it as `python app.py --gpt FOLDER` would (toyviz.load → toyviz.models.hub), then, on a prompt of
exactly --tokens tokens (its first token included), medians of --repeats runs:

- open_s, rss_added_mb: converting and loading the folder, and the resident memory it added (what each worker
  process holds: the app's workers load one copy each)
- trace_s: one traced forward (every attention pattern, head output, norm and residual write recorded)
- transformers_forward_s: transformers' own eager forward returning every attention pattern, for comparison
- attention_update_s: the Attention tab's update on a prompt not seen before — the renderer
  (toyviz.app.views.attention.attention_view: trace, head labels, the 12 × 12 grid, the chosen head, the
  head table) and its figures serialised to JSON as the server sends them; attention_json_mb their size
- attention_other_head_s: the same tab when only the head changes (the trace is cached)
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def make_folder(folder: Path) -> None:
    """A GPT-2-small-shaped model with random weights and a BPE of 4,096 tokens learned from docs/*.md."""
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    text = [p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer, tok.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
    tok.train_from_iterator(text, trainers.BpeTrainer(vocab_size=4096, special_tokens=["<|endoftext|>"],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>",
                                                eos_token="<|endoftext|>")
    fast.save_pretrained(folder)
    config = transformers.GPT2Config(bos_token_id=0, eos_token_id=0)      # GPT-2 small's shape, the defaults
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(config).save_pretrained(folder)


def prompt_of(gpt, tokens: int) -> str:
    """A prose prompt that the model's tokenizer cuts into exactly `tokens` − 1 tokens (its first token makes
    `tokens`)."""
    words = (ROOT / "docs" / "tabs.md").read_text().split()
    text = " ".join(words[:tokens])
    while len(gpt.tokenizer.encode(text)) > tokens - 1:
        text = text.rsplit(" ", 1)[0]
    for extra in ("a", "b", "c", "d", "e", "f", "g", "h"):     # pad a token at a time
        if len(gpt.tokenizer.encode(text)) == tokens - 1:
            break
        text += f" {extra}"
    assert len(gpt.encode(text)[0]) == tokens, len(gpt.encode(text)[0])
    return text


def median(fn, repeats: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds of this process (every thread's) over `repeats` calls after
    a warm-up: on a machine other work shares, the wall time grows with the load and the CPU time much less."""
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu)


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--tokens", type=int, default=128)
    p.add_argument("--folder", default=None, help="where the model is made, or found when already there")
    args = p.parse_args(argv)
    scratch = None
    if args.folder is None:
        scratch = tempfile.TemporaryDirectory(prefix="toyviz-hub-bench-")
        folder = Path(scratch.name)
    else:
        folder = Path(args.folder)
    if not (folder / "config.json").is_file():
        folder.mkdir(parents=True, exist_ok=True)
        make_folder(folder)

    import plotly.io

    import toyviz
    from toyviz.app.explorer import Explorer
    from toyviz.app.views.attention import attention_view
    from toyviz.models.size import count_parameters
    from toyviz.serving.memory import nbytes

    before = rss_mb()
    start = time.perf_counter()
    gpt = toyviz.load(str(folder), device="cpu")
    open_s = time.perf_counter() - start
    rss_added = rss_mb() - before
    prompt = prompt_of(gpt, args.tokens)
    ids = torch.tensor([gpt.encode(prompt)[0]])

    import transformers
    theirs = transformers.AutoModelForCausalLM.from_pretrained(str(folder), attn_implementation="eager").eval()
    with torch.no_grad():
        transformers_s = median(lambda: theirs(ids, output_attentions=True), args.repeats)
        trace = gpt.trace(prompt)
        out = theirs(ids, output_attentions=True)
    logit_diff = float((trace.logits - out.logits[0]).abs().max())
    pattern_diff = float((trace.attention - torch.stack([a[0] for a in out.attentions])).abs().max())
    del theirs, out

    def update(explorer, head):
        result = attention_view(explorer, prompt, 5, head)
        return sum(len(plotly.io.to_json(r)) for r in result if hasattr(r, "to_plotly_json"))

    trace_s = median(lambda: gpt.trace(prompt), args.repeats)
    new_prompt_s = median(lambda: update(Explorer(gpt, None), 3), args.repeats)     # a fresh cache each time
    explorer = Explorer(gpt, None)
    json_bytes = update(explorer, 3)
    heads = iter(range(10**6))
    other_head_s = median(lambda: update(explorer, next(heads) % 12), args.repeats)
    timed = {"trace": trace_s, "transformers_forward": transformers_s, "attention_update": new_prompt_s,
             "attention_other_head": other_head_s}
    figures = {
        "model": "GPT-2 small's shape, random weights (transformers GPT2Config defaults)",
        "parameters": count_parameters(gpt)["total"], "tokens": args.tokens, "repeats": args.repeats,
        "torch_threads": torch.get_num_threads(), "load_average_1min": round(os.getloadavg()[0], 1),
        "open_s": round(open_s, 2), "rss_added_mb": round(rss_added),
        **{f"{name}_s": round(wall, 3) for name, (wall, _) in timed.items()},
        **{f"{name}_cpu_s": round(cpu, 3) for name, (_, cpu) in timed.items()},
        "trace_mb": round(nbytes(gpt.trace(prompt)) / 2**20, 1),
        "attention_json_mb": round(json_bytes / 2**20, 2),
        "logits_max_abs_diff": logit_diff, "attention_max_abs_diff": pattern_diff,
    }
    print(json.dumps(figures))
    if scratch is not None:
        scratch.cleanup()
    return figures


if __name__ == "__main__":
    main()
