"""A training run that survives the end of a session: its whole state saved, and restored exactly.

One cosine schedule may take longer than a session lasts. `RunState` keeps what a run needs to go on
bit for bit where it stopped — weights, optimizer moments, the step and the schedule's length, the
history, the weights kept for averaging, the random generators of every process — in one folder of
the data cache (cache_dir()/runs/<name>/, outside git: a translator's state is ~60 MB). Rank 0
writes the shared part; every rank writes its own random state. Files are written whole and then
renamed, so a run killed mid-save leaves the previous state, never a torn one.

A run stops and saves when it receives SIGTERM or SIGINT (the end of a session), when its
`--pause-after-minutes` or `--pause-at-step` is reached, and saves every few minutes in case it is
killed outright. `toyviz train … --resume` goes on from the state.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import torch


class Paused(Exception):
    """Raised by the training loop when it stopped early and saved its state for --resume."""

    def __init__(self, step: int, total: int, folder: Path):
        super().__init__(f"paused at step {step} of {total}; state saved in {folder}: "
                         "run the same command with --resume to go on")
        self.step, self.total, self.folder = step, total, folder


class RunState:
    """The saved state of one run, in `folder`; `rank` and `world` as the Distributed object has them."""

    def __init__(self, folder: Path, rank: int = 0, world: int = 1):
        self.folder, self.rank, self.world = Path(folder), rank, world
        self.main_file = self.folder / "state.pt"

    def rank_file(self, rank: int) -> Path:
        return self.folder / f"random-rank{rank}.pt"

    def exists(self) -> bool:
        return self.main_file.is_file()

    def save(self, *, step: int, total: int, seconds: float, model, opt, history: list, kept: list,
             generators, argv: list[str], extra: dict):
        """Every rank calls it. The rank files go first: the main file, renamed last, marks a complete save."""
        self.folder.mkdir(parents=True, exist_ok=True)
        _write(self.rank_file(self.rank), {"step": step, "torch": torch.get_rng_state(),
                                           "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
                                           "generators": [g.get_state() for g in generators]})
        if self.rank == 0:
            _write(self.main_file, {"step": step, "total": total, "seconds": seconds, "world": self.world,
                                    "model": model.state_dict(), "optimizer": opt.state_dict(),
                                    "history": history, "kept": kept, "argv": argv, **extra})

    def load(self, model, opt, generators) -> dict:
        """Restore weights, optimizer and this rank's random state → the main file's other fields."""
        state = torch.load(self.main_file, weights_only=False)
        if state["world"] != self.world:
            raise SystemExit(f"{self.folder} was saved by {state['world']} processes, not {self.world}: "
                             "resume it with the same number (the data each process draws depends on it)")
        mine = torch.load(self.rank_file(self.rank), weights_only=False)
        if mine["step"] != state["step"]:
            raise SystemExit(f"{self.folder}: rank {self.rank}'s random state is from step {mine['step']}, "
                             f"the run's from {state['step']} (a save was cut short): no exact resume possible")
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        torch.set_rng_state(mine["torch"])
        if mine["cuda"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(mine["cuda"])
        for generator, saved in zip(generators, mine["generators"]):
            generator.set_state(saved)
        return state

    def clear(self):
        """A finished run has nothing left to resume."""
        for path in (self.main_file, *(self.rank_file(r) for r in range(self.world))):
            path.unlink(missing_ok=True)


@dataclass
class Resumable:
    """How one session takes part in a run that may outlive it: where the run's state is saved, whether
    this session goes on from it (`resume`), the recipe's own random generators (its data order) saved
    and restored with it, the recipe's command line that --resume checks, and when this session stops
    early (besides SIGTERM/SIGINT): at `pause_at_step`, or after `pause_after_minutes`."""
    state: RunState
    resume: bool = False
    generators: tuple[torch.Generator, ...] = ()
    argv: list[str] = ()
    pause_at_step: int | None = None
    pause_after_minutes: float | None = None

    def pauses(self, step: int, signalled: bool, session_start: float) -> bool:
        """Whether this session stops after `step` (the loop asks only while steps are left)."""
        return (signalled or step == self.pause_at_step
                or (self.pause_after_minutes is not None
                    and time.time() - session_start > self.pause_after_minutes * 60))


def _write(path: Path, obj):
    tmp = path.with_suffix(".tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


class StopSignal:
    """SIGTERM/SIGINT set a flag the loop reads between steps, instead of killing it mid-step."""

    def __init__(self):
        self.received = False
        self.previous = {}

    def __enter__(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            try:
                self.previous[sig] = signal.signal(sig, self._set)
            except ValueError:                  # not the main thread: leave the signals alone
                pass
        return self

    def _set(self, signum, frame):
        self.received = True

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
