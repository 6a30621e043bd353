"""The training loop both models share: AdamW on a warm-up + cosine schedule, the history it records,
the checkpoints it saves along the way, and a state it can pause in and resume from exactly.

What varies between runs comes in a few small objects: the `Schedule` (how long, how fast), the
`Evaluation` (what is measured besides the training loss), the `Checkpointing` (what is saved, and
when) and, for a run that may outlive its session, a `Resumable` (toyviz.training.resume).
"""
from __future__ import annotations

import collections
import contextlib
import math
import time
from dataclasses import dataclass, replace
from typing import Callable

import torch
from tqdm import tqdm

from toyviz.training.distributed import Distributed
from toyviz.training.resume import Paused, Resumable, StopSignal

TIMED_STEPS = (5, 25)                  # --minutes: the steps whose time first fixes the step count
RETIME_EVERY = 100                     # --minutes: steps between two new estimates of the step count
UNTIMED = 10**9                        # the step count until --minutes fixes it


@dataclass(frozen=True)
class Schedule:
    """How long a run trains and how fast it learns: `steps`, or a wall-clock budget of `minutes` whose
    step count the loop estimates as it goes; a linear warm-up to `lr`, then a cosine decay to
    `lr_floor` × `lr` (0 anneals fully: better when steps are scarce) that ends at the last step."""
    steps: int | None = None
    minutes: float | None = None
    lr: float = 1e-3
    warmup: int = 100
    lr_floor: float = 0.1
    weight_decay: float = 0.1

    def lr_at(self, step: int, total: int) -> float:
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        progress = (step - self.warmup) / max(1, total - self.warmup)
        return self.lr * (self.lr_floor + (1 - self.lr_floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


@dataclass(frozen=True)
class Evaluation:
    """What rank 0 measures besides the training loss: `eval_fn()` → the validation loss, every `every`
    steps and at the last; `probe_fn()` → a dict stored in the history every `probe_every` steps and at
    the last (the GPT's head scores); with `average_last` > 1 the weights at the last that many
    evaluations are averaged at the end (see average_checkpoints)."""
    eval_fn: Callable[[], float] | None = None
    every: int = 0
    probe_fn: Callable[[], dict] | None = None
    probe_every: int = 0
    average_last: int = 1


@dataclass(frozen=True)
class Checkpointing:
    """What rank 0 saves along the way: `save(history, sub)` writes the model and its history (sub: a
    snapshot's folder, None: the run's own), every `every_minutes`, at the `snapshot_at` fractions of
    training, and at the first history record for which `snapshot_when(record)` holds (the GPT: the
    step its first induction head is born). Ranks other than 0 pass no `save`."""
    save: Callable[[list, str | None], None] | None = None
    every_minutes: float = 5.0
    snapshot_at: tuple[float, ...] = ()
    snapshot_when: Callable[[dict], bool] | None = None


class StepCount:
    """The run's length in steps: the schedule's `steps`, or, with `minutes` alone, estimated from the
    time of steps 5–25 and the time already spent, and estimated again every RETIME_EVERY steps from
    the latest steps, so a run that slows down (another job on the machine) still ends on its budget.
    The first steps are left out of the timing because they run slower (allocation, DDP set-up)."""

    def __init__(self, schedule: Schedule, start: float):
        self.fixed = schedule.steps is not None
        self.total = schedule.steps or UNTIMED
        self.minutes, self.start = schedule.minutes, start
        self.timed_from = (TIMED_STEPS[0], start)

    def update(self, step: int, dist: Distributed) -> bool:
        """Called before each step; → whether the total changed."""
        if self.fixed:
            return False
        if step == self.timed_from[0]:
            self.timed_from = (step, time.time())
        if step < TIMED_STEPS[1] or (step != TIMED_STEPS[1] and step % RETIME_EVERY):
            return False
        now = time.time()
        per_step = (now - self.timed_from[1]) / (step - self.timed_from[0])
        left = int((self.minutes * 60 - (now - self.start)) / per_step)
        self.total = dist.agree(step + max(1, left))             # ranks that disagree hang
        self.timed_from = (step, now)
        return True


def train_loop(model, loss_fn, schedule: Schedule, *, dist: Distributed, tokens_per_step: int,
               evaluation: Evaluation = Evaluation(), checkpointing: Checkpointing = Checkpointing(),
               resumable: Resumable | None = None, earlier: list | None = None) -> list[dict]:
    """Train `model` on `schedule` → its history, one record a step. loss_fn(step, wrapped) → this rank's
    mean loss of that step's batch, or a dict of named losses whose sum is minimised and each of which
    the history records ("train_loss": the language-modelling loss, which the curves compare across runs).

    `earlier`: the history of the run whose weights this one continues; the new records follow it
    (steps, tokens and seconds counted on from its last record), so one curve tells the whole story.
    `resumable`: the run saves its whole state with every periodic save, and when it stops early (at
    the resumable's pause step or minutes, or at SIGTERM/SIGINT) by raising `Paused`; with its
    `resume` set, the loop starts from that state.
    """
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": schedule.weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=schedule.lr, betas=(0.9, 0.95))
    history, start, last_save = list(earlier or []), time.time(), time.time()
    before = history[-1] if history else {"step": 0, "tokens": 0, "seconds": 0.0}
    count = StepCount(schedule, start)
    snapshots_left, snapshot_when = set(checkpointing.snapshot_at), checkpointing.snapshot_when
    kept = collections.deque(maxlen=evaluation.average_last)      # the weights at the last evaluation points
    step = 0
    if resumable and resumable.resume:
        saved = resumable.state.load(model, opt, resumable.generators)
        step, history, start = saved["step"], saved["history"], start - saved["seconds"]
        count = StepCount(replace(schedule, steps=saved["total"]), start)   # the length was fixed when it began
        kept.extend(saved["kept"])
        snapshots_left, snapshot_when = saved["snapshots_left"], snapshot_when if saved["snapshot_pending"] else None
    wrapped = dist.wrap(model)                  # after loading: DDP broadcasts rank 0's weights once, here
    session_start = time.time()
    bar = tqdm(total=count.total if count.fixed else None, initial=step, disable=not dist.main, unit="step",
               dynamic_ncols=True, mininterval=2)

    def save_state():
        resumable.state.save(step=step, total=count.total, seconds=time.time() - start, model=model, opt=opt,
                             history=history, kept=list(kept), generators=resumable.generators,
                             argv=list(resumable.argv),
                             extra={"snapshots_left": snapshots_left, "snapshot_pending": snapshot_when is not None})

    stop = StopSignal() if resumable else contextlib.nullcontext()
    with stop:
        while step < count.total:
            if count.update(step, dist):
                bar.total = count.total
            for group in opt.param_groups:
                group["lr"] = schedule.lr_at(step, count.total)      # UNTIMED until --minutes fixes the total
            wrapped.train()
            losses = loss_fn(step, wrapped)
            losses = losses if isinstance(losses, dict) else {"train_loss": losses}
            loss = sum(losses.values())
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            step += 1
            losses = {name: dist.mean(value).item() for name, value in losses.items()}   # collectives: every rank calls them
            loss = sum(losses.values())
            if dist.main:
                elapsed = time.time() - start
                record = {"step": before["step"] + step, "tokens": before["tokens"] + step * tokens_per_step,
                          "seconds": round(before["seconds"] + elapsed, 1),
                          **{name: round(value, 4) for name, value in losses.items()}, "lr": opt.param_groups[0]["lr"]}
                last = step == count.total
                if evaluation.eval_fn and (step % evaluation.every == 0 or last):
                    record["val_loss"] = round(evaluation.eval_fn(), 4)
                    if evaluation.average_last > 1:
                        kept.append({k: v.detach().clone() for k, v in model.state_dict().items()})
                if evaluation.probe_fn and (step % evaluation.probe_every == 0 or last):
                    record["heads"] = evaluation.probe_fn()
                history.append(record)
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{(step - bar.initial) * tokens_per_step / (time.time() - session_start):,.0f}")
                due = {f for f in snapshots_left if step >= f * count.total}
                snapshots_left -= due
                if snapshot_when is not None and snapshot_when(record):
                    due, snapshot_when = {"event"}, None
                if due and checkpointing.save and not last:
                    checkpointing.save(history, f"snapshots/step-{record['step']:06d}")
            # decided together (any rank's clock or signal counts): saving and pausing need every rank
            periodic, pause = dist.any(
                time.time() - last_save > checkpointing.every_minutes * 60,
                resumable is not None and step < count.total and resumable.pauses(step, stop.received, session_start))
            if periodic:
                if checkpointing.save:
                    checkpointing.save(history, None)
                if resumable:
                    save_state()
                last_save = time.time()
            if pause:
                save_state()
                bar.close()
                raise Paused(step, count.total, resumable.state.folder)
    bar.close()
    if dist.main and len(kept) > 1:
        history[-1].update(average_checkpoints(model, list(kept), evaluation.eval_fn))
    return history


def average_checkpoints(model, kept: list[dict], eval_fn) -> dict:
    """Load the mean of the `kept` weights if its validation loss is below the last weights' (averaging
    the last checkpoints smooths out the noise of the final steps: Vaswani et al. 2017 averaged their
    last 5), else keep the last. → what the last history record says about it."""
    last = {k: v.clone() for k, v in model.state_dict().items()}
    last_loss = eval_fn()
    model.load_state_dict({k: torch.stack([w[k] for w in kept]).mean(0) if v.is_floating_point() else v
                           for k, v in last.items()})
    averaged_loss = eval_fn()
    if averaged_loss >= last_loss:
        model.load_state_dict(last)
    return {"averaged_checkpoints": len(kept), "averaged_val_loss": round(averaged_loss, 4),
            "last_val_loss": round(last_loss, 4), "shipped": "averaged" if averaged_loss < last_loss else "last"}
