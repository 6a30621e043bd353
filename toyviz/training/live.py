"""Live runs: a tiny transformer trained in front of the class, recorded every few steps so every page
watches the same run as it happens ("Watch it learn", issue 46).

Two recipes:
- "induction": a 2-layer attention-only transformer (the project's MultiHeadAttention) on random tokens
  that repeat with a random period. Tokens of the first period cannot be predicted; the later ones can,
  once an induction head looks at what followed the current token's earlier occurrence. The record shows
  the loss plateau, then the drop of the in-context loss (late tokens) as a previous-token head and an
  induction head form together (Olsson et al. 2022).
- "text": a tiny character-level ToyGPT on a text the lecturer pastes, a sample drawn every few seconds:
  gibberish, then the text's letters, then its words.

A run trains in its own spawned process, niced and on one thread (torch.set_num_threads is process-wide,
so a thread of the app's process would set the serving threads' count too, and share their interpreter
lock), and streams its records back through a queue. `LiveRuns` holds the one run of this process and
the last finished one; every caller reads the same record.

A run is shared, so it has an owner (`Who`): the page that started it, or the lecture it was started for. Only
its owner stops it (the page, or the lecture's presenter from any page); everyone else watches.
"""
from __future__ import annotations

import math
import multiprocessing
import os
import queue
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field, replace

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from toyviz.errors import UserError, log
from toyviz.interpret.heads import pattern_scores
from toyviz.models import names
from toyviz.models.config import GPTConfig
from toyviz.models.gpt import ToyGPT
from toyviz.models.hooks import at
from toyviz.models.layers import MultiHeadAttention, Pass

NICE = 10                   # the run yields the cores to the app's serving processes
STOP_WAIT_S = 1.0           # Stop waits this long for the run to end itself, then ends its process
MAX_TEXT_CHARS = 200_000    # a pasted text beyond this is refused (a few KB is plenty)
MIN_TEXT_CHARS = 200
BORN_AT = 0.5               # a head's induction score this high: it has formed (the figures mark it, a lesson asks when)


class RunRefused(UserError):
    """The user's mistake: a run while another runs, a Stop of another's run, an unknown recipe, a text too short to
    learn from, a seed that is not a whole number."""


@dataclass(frozen=True)
class Who:
    """Who starts or stops a run: a page (an identity its server gives it, toyviz.app.watch.who; "" for none) and
    the lecture it presents (a join code, when the page holds that lecture's presenter's secret; "" for none).
    A run keeps who started it: that page may stop it, and so may the lecture's presenter, from any page."""
    page: str = ""
    lecture: str = ""

    def owns(self, run: "Run") -> bool:
        owner = run.owner
        return bool(owner.page and owner.page == self.page or owner.lecture and owner.lecture == self.lecture)


def whole_seed(seed) -> int:
    """A seed as typed: a whole number from 0 to 2^31 - 1, or refused. Never rounded: 1.5 would run seed 2, a
    run nobody asked for, whose curve the next run with seed 1.5 would not repeat."""
    try:
        number = float(seed)
    except (TypeError, ValueError):
        number = math.nan
    if not (math.isfinite(number) and number == int(number) and 0 <= number < 2**31):
        typed = "the box is empty" if seed is None or seed == "" else f"not {seed}"
        raise RunRefused(f"the seed must be a whole number from 0 to {2**31 - 1:,} ({typed})")
    return int(number)


# ---------------------------------------------------------------- the recipes' settings ----

@dataclass(frozen=True)
class Induction:
    vocab: int = 32             # random tokens; a period draws distinct ones
    length: int = 48            # positions a training sequence has
    periods: tuple[int, int] = (8, 16)   # a sequence repeats its first P tokens, P uniform in this range
    d_model: int = 64
    n_head: int = 4
    n_layer: int = 2
    batch: int = 32
    lr: float = 3e-3
    steps: int = 600
    every: int = 10             # record every this many steps
    probes: int = 32            # fixed sequences the record measures loss and heads on
    min_step_s: float = 0.05    # the pace (see `paced`): at least 30 s for the run


@dataclass(frozen=True)
class Text:
    context: int = 64
    d_model: int = 64
    n_head: int = 4
    n_layer: int = 2
    batch: int = 32
    lr: float = 3e-3
    steps: int = 600            # a few KB is memorised by then: words from step ~300, whole lines from ~450
    every: int = 20
    sample_every_s: float = 3.0  # wall-clock seconds between two samples
    sample_chars: int = 160
    min_step_s: float = 0.05    # the pace (see `paced`): at least 30 s for the run


RECIPES = {"induction": Induction, "text": Text}


def settings_for(recipe: str, **changes):
    """A recipe's settings, with fields changed (a test's short run, a tuning sweep)."""
    if recipe not in RECIPES:
        raise RunRefused(f"recipe must be one of {', '.join(RECIPES)}, not {recipe!r}")
    return replace(RECIPES[recipe](), **changes)


# ---------------------------------------------------------------- the attention-only model ----

class AttentionOnly(nn.Module):
    """Token + learned position embeddings → n_layer pre-norm attention-only blocks → final norm → unembed.
    No feed-forward: what it predicts, it must move between positions (the smallest model an induction
    head forms in; Elhage et al. 2021). The attention is toyviz.models.layers' own, named and hooked
    as in ToyGPT, so a Record or pattern hook reads it the same way."""

    def __init__(self, vocab: int, length: int, d_model: int, n_head: int, n_layer: int):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(length, d_model)
        self.norms = nn.ModuleList(nn.LayerNorm(d_model) for _ in range(n_layer))
        self.attns = nn.ModuleList(MultiHeadAttention(d_model, n_head, bias=False) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0.0, 0.02)

    def forward(self, idx, hooks=None):  # idx (B, T) -> logits (B, T, V)
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[1]))        # (B, T, C)
        for i, (norm, attn) in enumerate(zip(self.norms, self.attns)):
            x = at(hooks, names.resid_pre(i), x)
            x = x + at(hooks, names.attn(i), attn(norm(x), Pass(hooks, causal=True), names.attn(i)))
        return self.head(self.ln_f(x))


def repeating(n: int, s: Induction, gen: torch.Generator) -> torch.Tensor:
    """(n, length + 1) token ids: each row its own period P of distinct random tokens, repeated. A random
    P keeps position from giving the answer away: only the tokens' earlier occurrence does."""
    rows = []
    for _ in range(n):
        period = int(torch.randint(s.periods[0], s.periods[1] + 1, (1,), generator=gen))
        tokens = torch.randperm(s.vocab, generator=gen)[:period]
        rows.append(tokens.repeat(math.ceil((s.length + 1) / period))[: s.length + 1])
    return torch.stack(rows)


def early_late(s: Induction) -> tuple[slice, slice]:
    """Target positions always in a row's first period (unpredictable) and always in a repeat: the
    in-context loss is the loss on the late ones."""
    return slice(0, s.periods[0] - 1), slice(s.periods[1] - 1, s.length)


def induction_run(s: Induction, seed: int, stopped):
    """Train the attention-only model; yield the run's header, then a record every `s.every` steps."""
    torch.manual_seed(seed)
    model = AttentionOnly(s.vocab, s.length, s.d_model, s.n_head, s.n_layer)
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    probes = repeating(s.probes, s, torch.Generator().manual_seed(10_000))   # the same for every seed
    yield {"probe": probes[0, :-1].tolist(), "heads": [s.n_layer, s.n_head]}
    started = time.perf_counter()
    for step in range(s.steps + 1):
        if stopped():
            return
        if step % s.every == 0 or step == s.steps:
            yield dict(measure(model, probes, s), step=step, elapsed=time.perf_counter() - started)
        if step == s.steps:
            return
        began = time.perf_counter()
        batch = repeating(s.batch, s, gen)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.flatten(0, 1), batch[:, 1:].flatten())
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        paced(began, s.min_step_s)


def paced(began: float, min_step_s: float):
    """Wait until `min_step_s` after `began`: on an idle machine a step takes a few ms and a run would be over
    before the lecturer has said what to watch; on a busy one the steps are slower than the pace and nothing
    waits. Sleeping leaves the cores to the app; the numbers are the same at any pace."""
    time.sleep(max(0.0, began + min_step_s - time.perf_counter()))


SCORED_PROBES = 8           # head scores are averaged over this many probes (the loss over all of them)


@torch.no_grad()
def measure(model: AttentionOnly, probes: torch.Tensor, s: Induction) -> dict:
    """The model on the probe sequences: its loss overall, on early and on late tokens, each head's
    induction and previous-token scores (toyviz.interpret.heads), and every head's pattern on probe 0."""
    patterns = {}
    hooks = {names.part(names.attn(i), "pattern"): (lambda p, i=i: patterns.__setitem__(i, p))
             for i in range(s.n_layer)}
    model.eval()
    logits = model(probes[:, :-1], hooks)
    model.train()
    per_token = F.cross_entropy(logits.transpose(1, 2), probes[:, 1:], reduction="none")     # (N, T)
    att = torch.stack([patterns[i] for i in range(s.n_layer)], 1)                           # (N, L, H, T, T)
    scores = [[[pattern_scores(att[n, l, h], probes[n, :-1].tolist()) for h in range(s.n_head)]
               for l in range(s.n_layer)] for n in range(min(SCORED_PROBES, len(probes)))]
    mean = lambda key: np.mean([[[h[key] for h in l] for l in row] for row in scores], 0).round(4).tolist()
    early, late = early_late(s)
    return {"loss": float(per_token.mean()), "early_loss": float(per_token[:, early].mean()),
            "in_context_loss": float(per_token[:, late].mean()),
            "induction": mean("induction"), "previous": mean("previous-token"),
            "patterns": att[0].numpy().astype(np.float16)}                                  # (L, H, T, T)


# ---------------------------------------------------------------- the text recipe ----

def text_run(s: Text, seed: int, stopped, text: str):
    """Train a character-level ToyGPT on `text`; yield the header, then a record every `s.every` steps,
    each with a sample when `s.sample_every_s` have passed since the last one."""
    chars = sorted(set(text))
    ids = torch.tensor([chars.index(c) for c in text])
    torch.manual_seed(seed)
    config = GPTConfig(vocab_size=len(chars), context=s.context, n_layer=s.n_layer, n_head=s.n_head,
                       d_model=s.d_model, positional="learned")
    model = ToyGPT(config)
    opt = torch.optim.AdamW(model.parameters(), lr=s.lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    yield {"chars": len(chars), "text_chars": len(text), "parameters": sum(p.numel() for p in model.parameters())}
    started, sampled = time.perf_counter(), -math.inf
    for step in range(1, s.steps + 1):
        if stopped():
            return
        began = time.perf_counter()
        starts = torch.randint(0, len(ids) - s.context - 1, (s.batch,), generator=gen)
        window = torch.stack([ids[i: i + s.context + 1] for i in starts.tolist()])     # (B, context + 1)
        _, loss = model(window[:, :-1], window[:, 1:])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        paced(began, s.min_step_s)
        if step % s.every and step != s.steps:
            continue
        record = {"step": step, "elapsed": time.perf_counter() - started, "loss": loss.item()}
        if time.perf_counter() - sampled >= s.sample_every_s or step == s.steps:
            sampled = time.perf_counter()
            record["sample"] = sample_text(model, ids[:1].tolist(), s.sample_chars, seed + step, chars, stopped)
        yield record


def sample_text(model: ToyGPT, start: list[int], n: int, seed: int, chars: list[str], stopped) -> str:
    """n characters the model writes after `start` (cut short when the run is stopped)."""
    model.eval()
    out = []
    for token in model.generate_ids(start, n, temperature=0.8, seed=seed):
        out.append(chars[token.token])
        if stopped():
            break
    model.train()
    return "".join(chars[i] for i in start) + "".join(out)


# ---------------------------------------------------------------- one run, in its own process ----

def _child(recipe: str, settings, seed: int, text: str, out, stop):
    """The run's process: niced, one thread; every message goes to `out`, the last one says how it ended."""
    os.nice(NICE)
    torch.set_num_threads(1)
    try:
        run = induction_run(settings, seed, stop.is_set) if recipe == "induction" else \
            text_run(settings, seed, stop.is_set, text)
        for message in run:
            out.put(("record", message))
        out.put(("end", "stopped" if stop.is_set() else "finished"))
    except Exception:                                   # a fault of ours: shown as such, with its traceback
        out.put(("end", "failed: " + traceback.format_exc()))


@dataclass
class Run:
    """What every watcher reads: a run's settings, header and records so far, and how it ended."""
    recipe: str
    seed: int
    settings: dict
    state: str = "starting"             # starting, running, finished, stopped, failed
    header: dict = field(default_factory=dict)
    records: list = field(default_factory=list)
    error: str = ""
    started: float = field(default_factory=time.time)
    ended: float | None = None
    owner: Who = Who()                  # nobody's: started by the server's own code (a test, a benchmark)

    @property
    def running(self) -> bool:
        return self.state in ("starting", "running")

    def view(self) -> "Run":
        """A copy whose record list will not grow under its reader."""
        return replace(self, records=list(self.records))

    def whose(self, who: Who) -> str:
        """Whose run this is, as the page `who` is told."""
        if who.owns(self):
            return "your run"
        if self.owner.lecture:
            return "the lecturer's run"
        return "a run started by another page" if self.owner.page else "a run started on the server"

    @property
    def stopper(self) -> str:
        """Who may stop it, in words."""
        return ("the lecturer" if self.owner.lecture else "the page that started it" if self.owner.page
                else "the server")

    def busy(self, who: Who) -> str:
        """Why `who` cannot start a run while this one trains, and what it can do instead."""
        if who.owns(self):
            return f"{self.whose(who)} ({self.recipe}, seed {self.seed}) is still training: Stop it first"
        return (f"{self.whose(who)} is training, and one run trains at a time on this server: you are watching it; "
                "Start again once it has ended")


class LiveRuns:
    """The one live run of this process, and the last finished one (to scrub through afterwards)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._ended = threading.Condition(self._lock)      # notified when a run ends
        self._run: Run | None = None            # the latest run, running or not
        self._finished: Run | None = None       # the last run that ended by itself
        self._process = self._stop = None
        self._context = multiprocessing.get_context("spawn")

    def start(self, recipe: str, *, seed=0, text: str = "", owner: Who = Who(), **changes) -> Run:
        """Start a run for `owner`, or refuse with a RunRefused that says why: while a run trains, that it does
        (whatever else is wrong, a run could not start now), else what is wrong with the request."""
        with self._lock:
            if self._run is not None and self._run.running:
                raise RunRefused(self._run.busy(owner))
            settings, seed = settings_for(recipe, **changes), whole_seed(seed)
            if recipe == "text" and not MIN_TEXT_CHARS <= len(text) <= MAX_TEXT_CHARS:
                raise RunRefused(f"paste a text of {MIN_TEXT_CHARS:,} to {MAX_TEXT_CHARS:,} characters "
                                 f"(this one has {len(text):,})")
            run = self._run = Run(recipe, seed, asdict(settings), owner=owner)
            out, self._stop = self._context.Queue(), self._context.Event()
            self._process = self._context.Process(target=_child, daemon=True,
                                                  args=(recipe, settings, seed, text, out, self._stop))
            self._process.start()
        threading.Thread(target=self._follow, args=(run, self._process, out), daemon=True).start()
        return run.view()

    def _follow(self, run: Run, process, out):
        """Move the run's messages into its record until it ends (or its process dies without saying so)."""
        while True:
            try:
                kind, message = out.get(timeout=0.2)
            except queue.Empty:
                if process.is_alive():
                    continue
                kind, message = "end", run.state if not run.running else "failed: the run's process ended"
            with self._lock:
                if kind == "record":
                    if not run.header:
                        run.header, run.state = message, "running"
                    else:
                        run.records.append(message)
                    continue
                if run.running:
                    self._end(run, message)
            process.join()                              # its exit (torch's teardown) is no watcher's wait
            return

    def _end(self, run: Run, how: str):
        run.state, why = how.split(":", 1)[0], how.partition(": ")[2]
        if run.state == "failed":                   # a fault of ours: its traceback to the log, not to the page
            log.error("live %s run (seed %d) failed: %s", run.recipe, run.seed, why)
            run.error = "Something went wrong on our side; the run's traceback is in the server's log."
        run.ended = time.time()
        if run.state == "finished":
            self._finished = run
        self._ended.notify_all()

    def stop(self, by: Who | None = None) -> Run | None:
        """End the running run within STOP_WAIT_S: it stops itself at its next step and says so, or its
        process is ended. Returns the run as it ended (None when nothing was running). `by`: the page asking,
        refused (RunRefused) unless it owns the run; None: the server's own code (a test, a shutdown)."""
        with self._lock:
            run, process, stop = self._run, self._process, self._stop
            if run is None or not run.running:
                return None
            if by is not None and not by.owns(run):
                raise RunRefused(f"{run.whose(by)} is training: only {run.stopper} can stop it; you are watching it")
        stop.set()
        with self._lock:
            self._ended.wait_for(lambda: not run.running, STOP_WAIT_S)
            if run.running:                              # stuck mid-step: end its process
                process.terminate()
                self._end(run, "stopped")
            return run.view()

    def current(self) -> Run | None:
        """The latest run as it stands (running or ended), what every page draws."""
        with self._lock:
            return self._run.view() if self._run else None

    def last_finished(self) -> Run | None:
        with self._lock:
            return self._finished.view() if self._finished else None


# ---------------------------------------------------------------- what a lesson asks of a run ----

def crossing_step(run: Run, threshold: float = BORN_AT, pattern: str = "induction") -> int | None:
    """The first recorded step at which some head's score (induction or previous) reached `threshold`:
    when the induction head was born, the answer to "after how many steps will the loss drop?"."""
    for record in run.records:
        if pattern in record and max(max(layer) for layer in record[pattern]) >= threshold:
            return record["step"]
    return None


def plateau_loss(run: Run, threshold: float = BORN_AT) -> float:
    """The in-context loss on its plateau: the median over the records before the induction score first
    reaches `threshold` (all of them, when it never does), from the second record on (the first is at
    initialisation)."""
    born = crossing_step(run, threshold)
    before = [r["in_context_loss"] for r in run.records[1:] if born is None or r["step"] < born]
    return float(np.median(before or [run.records[0]["in_context_loss"]]))
