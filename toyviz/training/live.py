"""Live runs: a tiny transformer trained in front of the class, recorded every few steps so every page
watches the same run as it happens ("Watch it learn", issue 46). What is trained, and how, is
toyviz.training.live_model; what its record answers, toyviz.training.live_answers; this module supervises.

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

import torch

from toyviz.errors import UserError, log
from toyviz.i18n import Term, mistake
from toyviz.training.live_model import RECIPES, induction_run, text_run

NICE = 10                   # the run yields the cores to the app's serving processes
STOP_WAIT_S = 1.0           # Stop waits this long for the run to end itself, then ends its process
MAX_TEXT_CHARS = 200_000    # a pasted text beyond this is refused (a few KB is plenty)
MIN_TEXT_CHARS = 200


class RunRefused(UserError):
    """The user's mistake: a run while another runs, a Stop of another's run, an unknown recipe, a text too short to
    learn from, a seed that is not a whole number."""


@dataclass(frozen=True)
class Who:
    """Who starts or stops a run: a page (an identity its server gives it, toyviz.app.views.watch.who; "" for none) and
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
        empty = seed is None or seed == ""
        raise mistake("errors.live.seed_empty" if empty else "errors.live.seed", RunRefused, most=f"{2**31 - 1:,}",
                      given=seed)
    return int(number)


def settings_for(recipe: str, **changes):
    """A recipe's settings, with fields changed (a test's short run, a tuning sweep)."""
    if recipe not in RECIPES:
        raise mistake("errors.live.recipe", RunRefused, recipes=", ".join(RECIPES), given=repr(recipe))
    return replace(RECIPES[recipe](), **changes)


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

    def whose(self, who: Who) -> Term:
        """Whose run this is, as the page `who` is told: a catalogue key (notes.watch.whose_*), said in its language."""
        if who.owns(self):
            return Term("notes.watch.whose_yours")
        if self.owner.lecture:
            return Term("notes.watch.whose_lecturer")
        return Term("notes.watch.whose_page" if self.owner.page else "notes.watch.whose_server")

    @property
    def stopper(self) -> Term:
        """Who may stop it: a catalogue key (notes.watch.stopper_*)."""
        return Term("notes.watch.stopper_lecturer" if self.owner.lecture else "notes.watch.stopper_page"
                    if self.owner.page else "notes.watch.stopper_server")

    def busy(self, who: Who) -> RunRefused:
        """Why `who` cannot start a run while this one trains, and what it can do instead."""
        if who.owns(self):
            return mistake("errors.live.yours_training", RunRefused, whose=self.whose(who), recipe=self.recipe,
                           seed=self.seed)
        return mistake("errors.live.one_at_a_time", RunRefused, whose=self.whose(who))


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
                raise self._run.busy(owner)
            settings, seed = settings_for(recipe, **changes), whole_seed(seed)
            if recipe == "text" and not MIN_TEXT_CHARS <= len(text) <= MAX_TEXT_CHARS:
                raise mistake("errors.live.text_length", RunRefused, low=f"{MIN_TEXT_CHARS:,}",
                              high=f"{MAX_TEXT_CHARS:,}", length=f"{len(text):,}")
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
            run.error = "errors.live.failed"            # a catalogue key: the page says it in its language
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
                raise mistake("errors.live.not_yours", RunRefused, whose=run.whose(by), stopper=run.stopper)
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
