"""Architecture experiments: small GPTs that differ from a baseline in exactly one thing.

    toyviz experiments [--steps N | --minutes-per-variant M] [--variants baseline,rope] [--out DIR]
                       [--device cuda] [--seed S]

Every variant trains on the shipped GPT's Shakespeare split (Hamlet and Twelfth Night held out),
with the same tokenizer, seed, schedule and number of training tokens, and a parameter count within
±5 % of the baseline. Results go to `<out>/results.json`; the no-mask model is saved to
`<out>/no_causal_mask/` so the app can show what it attends to. The variants themselves are
listed in `toyviz.training.variants` (pure data, importable without the training loop).

A time budget (`--minutes-per-variant`) still gives every variant the same token budget: the first
variant trains for that long, and the number of steps it reached is used for all the others.
"""
from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from toyviz.data.tokens import cached_ids, cached_tokenizer
from toyviz.training import evaluate
from toyviz.api import BOS_GPT, resolve_device
from toyviz.models.checkpoint import CHECKPOINTS, save_folder
from toyviz.models.gpt import ToyGPT
from toyviz.models.size import count_parameters
from toyviz.training.batches import gpt_batch
from toyviz.training.card import device_name
from toyviz.training.distributed import Distributed
from toyviz.training.loop import Evaluation, Schedule, train_loop
from toyviz.training.variants import BASELINE, POSITIONAL, VARIANTS, variant_config

HONEST_WINDOWS = 16                                           # windows scored one prefix at a time
DEFAULT_STEPS = 1400                                           # 8 × 1400 × 0.26 s ≈ 49 min on 2 cores
BATCH, LR, WARMUP, EVAL_EVERY = 16, 2e-3, 100, 100


@torch.no_grad()
def honest_position_nats(model, window: torch.Tensor, bos: int) -> torch.Tensor:
    """[len(window)] nats of each token, each predicted by a pass over the prefix that ends just
    before it: nothing after position t exists in that input, so no mask (or its absence) can leak."""
    device = next(model.parameters()).device
    x = torch.cat([torch.tensor([bos]), window[:-1]]).to(device)
    losses = [torch.nn.functional.cross_entropy(model(x[None, : t + 1])[0][0, -1:].float(),
                                                window[t: t + 1].to(device)) for t in range(len(window))]
    return torch.stack(losses).cpu()


def honest_nats(model, ids: torch.Tensor, bos: int, context: int, windows: int = HONEST_WINDOWS) -> tuple[float, int]:
    """(total nats, tokens scored) over the first `windows` context-sized windows of ids."""
    model.eval()
    scores = [honest_position_nats(model, w, bos) for w in ids.split(context)[:windows]]
    return float(sum(s.sum() for s in scores)), sum(len(s) for s in scores)


def to_bits_per_char(nats_per_token: float, chars_per_token: float) -> float:
    return nats_per_token / chars_per_token / math.log(2)


def no_mask_card(result: dict, steps: int, device: str) -> str:
    """The model card of the no-mask model: what it is and why its low training loss is a cheat."""
    return (f"---\nlibrary_name: toyviz\nlicense: mit\ntags: [education, gpt, toyviz]\n---\n\n"
            f"# toyviz experiment: a GPT trained without the causal mask\n\n"
            f"The experiments' baseline GPT ({result['params']:,} parameters, {steps} steps on {device_name(device)}, "
            f"`toyviz experiments`) with one change: attention may look at later tokens. On the validation "
            f"plays it scores {result['val_bits_per_char_as_trained']} bits/char when it can see the future — it "
            f"copies the next token — and {result['val_bits_per_char']} bits/char when each position is scored "
            f"from its prefix alone, as generation must. Shipped only so the explorer can show what it attends to.\n")


def run_variant(name, seed, steps, device, tok, train_ids, val_ids, val_chars, out: Path,
                minutes_budget: float | None = None) -> dict:
    """Train and evaluate one variant: `steps` optimizer steps, or (steps None) as many as fit `minutes_budget`."""
    config = replace(variant_config(name), vocab_size=tok.vocab_size)
    torch.manual_seed(seed + VARIANTS[name][2])
    model = ToyGPT(config).to(device)
    bos = tok.special(BOS_GPT)
    gen = torch.Generator().manual_seed(seed)              # the same batches for every variant
    chars_per_token = val_chars / len(val_ids)
    eval_slice = val_ids[: 16 * config.context]

    def loss_fn(step, wrapped):
        x, y = gpt_batch(train_ids, bos, BATCH, config.context, gen)
        return wrapped(x.to(device), y.to(device))[1]

    start = time.time()
    history = train_loop(model, loss_fn, Schedule(steps, minutes_budget, LR, WARMUP), dist=Distributed(device),
                         tokens_per_step=BATCH * config.context,
                         evaluation=Evaluation(lambda: evaluate.gpt_nats(model, eval_slice, bos) / len(eval_slice),
                                               EVAL_EVERY))
    minutes = (time.time() - start) / 60
    bpc = lambda nats, n: to_bits_per_char(nats / n, chars_per_token)
    result = {
        "differs": VARIANTS[name][0], "config": asdict(config), "params": count_parameters(config)["total"],
        "minutes": round(minutes, 2), "steps": len(history),
        "train_curve": [[h["tokens"], round(to_bits_per_char(h["train_loss"], chars_per_token), 4)] for h in history],
        "val_curve": [[h["tokens"], round(to_bits_per_char(h["val_loss"], chars_per_token), 4)]
                      for h in history if "val_loss" in h],
        "time_curve": [[h["seconds"], round(to_bits_per_char(h["val_loss"], chars_per_token), 4)]
                       for h in history if "val_loss" in h],
    }
    full = evaluate.gpt_nats(model, val_ids, bos)
    if config.causal:
        result["val_bits_per_char"] = round(bpc(full, len(val_ids)), 4)
    else:
        honest, scored = honest_nats(model, val_ids, bos, config.context)
        result["val_bits_per_char"] = round(bpc(honest, scored), 4)
        result["val_bits_per_char_as_trained"] = round(bpc(full, len(val_ids)), 4)
        result["honest_tokens_scored"] = scored
        save_folder(model, {"tokenizer": tok}, out / name, model_card=no_mask_card(result, len(history), device))
    if name in POSITIONAL:
        result["extrapolation"] = {}
        for factor in (1, 2, 4):
            try:
                nats = evaluate.gpt_nats(model, val_ids, bos, context=factor * config.context)
                result["extrapolation"][f"{factor}x"] = round(bpc(nats, len(val_ids)), 4)
            except ValueError as err:                   # learned positions have no rows past the table
                result["extrapolation"][f"{factor}x"] = None
                result["extrapolation_note"] = str(err)
    return result


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--steps", type=int, default=None, help=f"optimizer steps per variant (default {DEFAULT_STEPS})")
    budget.add_argument("--minutes-per-variant", type=float, default=None,
                        help="train the first variant this long; the others take as many steps as it reached")
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset")
    parser.add_argument("--out", default=str(CHECKPOINTS / "experiments"))
    parser.add_argument("--device", default=None)
    parser.add_argument("--seed", type=int, default=1337)
    args = parser.parse_args(argv)
    names = [n for n in args.variants.split(",") if n]
    unknown = set(names) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose from {list(VARIANTS)}")
    device = resolve_device(args.device)
    from toyviz.data import shakespeare
    train_text, val_text = shakespeare.split(shakespeare.load_works())
    tok = cached_tokenizer("shakespeare-gpt", [train_text], BASELINE.vocab_size, [BOS_GPT])
    train_ids = cached_ids(tok, train_text, f"shakespeare-{BASELINE.vocab_size}-train")
    val_ids = torch.tensor(tok.encode(val_text), dtype=torch.long)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    steps = args.steps or (None if args.minutes_per_variant else DEFAULT_STEPS)
    results = {"command": "python -m toyviz.experiments " + " ".join(shlex.quote(a) for a in argv),
               "device": device_name(device), "batch": BATCH, "context": BASELINE.context, "seed": args.seed,
               "variants": {}}
    for name in names:
        result = run_variant(name, args.seed, steps, device, tok, train_ids, val_ids, len(val_text), out,
                             minutes_budget=args.minutes_per_variant)
        steps = result["steps"]                          # a time budget is fixed by the first variant
        results.update(steps=steps, tokens_per_variant=steps * BATCH * BASELINE.context)
        results["variants"][name] = result
        (out / "results.json").write_text(json.dumps(results, indent=1))   # each variant saved as it ends
    print(json.dumps({n: {k: v for k, v in r.items() if k in ("params", "minutes", "val_bits_per_char",
                                                               "val_bits_per_char_as_trained", "extrapolation")}
                      for n, r in results["variants"].items()}))

