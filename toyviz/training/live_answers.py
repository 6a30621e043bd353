"""What a live run's record answers (toyviz.training.live): when its induction head was born, and the
in-context loss on the plateau before. The Watch tab marks the first, a lesson's reveal asks both.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from toyviz.training.live import Run

BORN_AT = 0.5               # a head's induction score this high: it has formed (the figures mark it, a lesson asks when)


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
