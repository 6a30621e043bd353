"""Train the shipped models from a fresh machine: fetch data, train tokenizers, train, evaluate, save.

    toyviz train gpt         [--minutes 55 | --steps N] [--out DIR] [--device cuda] …
    toyviz train translator  […]
    torchrun --nproc_per_node 2 -m toyviz.train gpt …   # same run on several processes (python -m's alias)

Under torchrun each rank draws its own slice of every global batch, so the global batch and the
learning-rate schedule, and hence the loss curve, do not depend on the number of processes.
Only rank 0 logs, evaluates and writes checkpoints.
"""
from __future__ import annotations

import argparse
import json
import sys

from toyviz.training.distributed import Distributed
from toyviz.training.gpt import gpt_recipe
from toyviz.training.resume import Paused
from toyviz.training.run import run
from toyviz.training.translator import translator_recipe

# size and schedule flags; the defaults are the shipped recipes
DEFAULTS = {
    "gpt": dict(layers=4, heads=4, d_model=256, d_ff=0, context=256, vocab=4096, batch=16, lr=1e-3, warmup=200,
                lr_floor=0.1, dropout=0.0, positional="sinusoidal", feed_forward="gelu", norm="pre",
                repeat_share=0.1, repeat_start=0.5, repeat_fade=1500, probe_every=50),
    "translator": dict(layers=3, heads=4, d_model=256, d_ff=512, context=128, vocab=2048, batch=64, lr=1e-3, warmup=400,
                       lr_floor=0.1, dropout=0.1, positional="sinusoidal", feed_forward="relu", norm="pre",
                       repeat_share=0.0, repeat_start=0.0, repeat_fade=0, probe_every=0),
}
RECIPES = {"gpt": gpt_recipe, "translator": translator_recipe}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["gpt", "translator"], help="which model: the GPT (Shakespeare) or the translator")
    p.add_argument("--minutes", type=float, help="wall-clock budget (the step count follows the measured step time)")
    p.add_argument("--steps", type=int, help="number of optimizer steps (overrides --minutes)")
    p.add_argument("--out", help="checkpoint folder (default checkpoints/<kind>)")
    p.add_argument("--device", default=None, help="cpu | cuda (default: TOYVIZ_DEVICE or auto)")
    p.add_argument("--seed", type=int, default=1337)
    for flag in DEFAULTS["gpt"]:
        kind_type = str if isinstance(DEFAULTS["gpt"][flag], str) else type(DEFAULTS["translator"][flag])
        p.add_argument("--" + flag.replace("_", "-"), type=kind_type, default=None,
                       help=f"default {DEFAULTS['gpt'][flag]} (gpt) / {DEFAULTS['translator'][flag]} (translator)")
    p.add_argument("--eval-every", type=int, default=100)
    p.add_argument("--eval-limit", type=int, help="translator: evaluate on the first N test pairs only")
    p.add_argument("--shared-vocab", action="store_true",
                   help="translator: one BPE vocabulary and embedding table for English and Spanish")
    p.add_argument("--text", action="append", help="gpt: train on this UTF-8 file or folder of .txt files")
    p.add_argument("--val-text", help="gpt: held-out text (default: the last 5%% of --text)")
    p.add_argument("--init", help="continue from this checkpoint folder's weights and history "
                                  "(its architecture; the size flags are ignored)")
    p.add_argument("--average-last", type=int, default=1,
                   help="ship the mean of the weights at the last N evaluation points, if its validation loss "
                        "is lower than the last weights' (default 1: the last weights)")
    p.add_argument("--sources", default="web,kjv",
                   help="translator: English sources, comma-separated (web, kjv); one is drawn per verse per epoch")
    p.add_argument("--everyday", type=int, default=0,
                   help="translator: also train on N everyday sentences translated into today's Spanish by "
                        "apertium-eng-spa (toyviz.data.everyday), each pair tagged with its register")
    p.add_argument("--resume", action="store_true",
                   help="go on with the run saved in the state folder exactly where it stopped (same flags)")
    p.add_argument("--state", help="where the run's resumable state is saved (default: the data cache's "
                                   "runs/<name of --out>)")
    p.add_argument("--pause-after-minutes", type=float,
                   help="stop this session's part of the run after so many minutes, saving it for --resume")
    p.add_argument("--pause-at-step", type=int, help="stop at this step, saving the run for --resume")
    p.add_argument("--copy-batch", type=int, default=0,
                   help="gpt: also train on this many short repeated random-token sequences a step "
                        "(they make induction heads form; see toyviz.training.batches.copy_batch)")
    args = p.parse_args(argv)
    for flag, value in DEFAULTS[args.kind].items():
        if getattr(args, flag) is None:
            setattr(args, flag, value)
    if args.steps is None and args.minutes is None:
        p.error("give --steps or --minutes")
    if args.steps is None and (args.pause_at_step or args.pause_after_minutes):
        p.error("a run that pauses needs --steps: its schedule must be fixed before the first session ends")
    args.argv = list(argv)
    return args


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    from toyviz.api import resolve_device
    args.device = resolve_device(args.device)
    dist = Distributed(args.device)
    try:
        result = run(args, RECIPES[args.kind](args, dist), dist)
    except Paused as paused:
        if dist.main:
            print(json.dumps({"paused_at_step": paused.step, "steps": paused.total, "state": str(paused.folder)}))
        return None
    finally:
        dist.close()
    if result is not None:
        print(json.dumps(result))

