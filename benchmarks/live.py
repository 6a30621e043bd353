"""The induction recipe of "Watch it learn" on several seeds, through the engine a lecturer's Start uses
(toyviz.training.live.LiveRuns: a spawned, niced, one-thread process), printed as JSON.

    python -m benchmarks.live [--seeds 0,1,2,3,4]

Each seed: the best head's induction score at the end (target ≥ 0.8 in at least 4 of 5), the in-context
loss at the end against its plateau (target ≤ 30 %), the step the induction score first reached 0.5, and
the wall time from Start to the last record (target ≤ 120 s) with the machine's load average beside it:
the run shares the cores with whatever else the machine does, the app's serving included.
"""
from __future__ import annotations

import argparse
import json
import os
import time

from toyviz.training import live

TARGETS = {"induction_at_end": 0.8, "in_context_share_of_plateau": 0.30, "wall_s": 120.0, "seeds_meeting": 4}


def one_seed(runs: live.LiveRuns, seed: int, **changes) -> dict:
    load_before = os.getloadavg()[0]
    started = time.perf_counter()
    runs.start("induction", seed=seed, **changes)
    while (run := runs.current()).running:
        time.sleep(0.1)
    wall = time.perf_counter() - started
    if run.state != "finished":
        raise RuntimeError(f"seed {seed}: the run {run.state}: {run.error}")
    last, plateau = run.records[-1], live.plateau_loss(run)
    best = max(map(max, last["induction"]))
    figures = {"seed": seed, "induction_at_end": round(best, 4), "in_context_loss_at_end": round(last["in_context_loss"], 4),
               "in_context_plateau": round(plateau, 4),
               "in_context_share_of_plateau": round(last["in_context_loss"] / plateau, 4),
               "early_loss_at_end": round(last["early_loss"], 4), "induction_born_at_step": live.crossing_step(run),
               "steps": run.settings["steps"], "wall_s": round(wall, 1), "training_s": round(last["elapsed"], 1),
               "load_average_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)]}
    figures["meets_targets"] = (best >= TARGETS["induction_at_end"] and figures["wall_s"] <= TARGETS["wall_s"]
                                and figures["in_context_share_of_plateau"] <= TARGETS["in_context_share_of_plateau"])
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="0,1,2,3,4")
    args = parser.parse_args()
    runs = live.LiveRuns()
    seeds = [one_seed(runs, int(s)) for s in args.seeds.split(",")]
    print(json.dumps({"recipe": live.settings_for("induction").__dict__, "cores": os.cpu_count(), "seeds": seeds,
                      "seeds_meeting_targets": sum(s["meets_targets"] for s in seeds), "targets": TARGETS}, indent=1),
          flush=True)


if __name__ == "__main__":
    main()
