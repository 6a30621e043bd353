"""A run's record: what `training.json` says about how a checkpoint was made, and what its model card
quotes. Built once, when the run is over (toyviz.training.run); read back by a run that continues
the checkpoint (--init), which lists every stage that made the weights."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any


@dataclass
class Stage:
    """One run that trained the weights: its command, where it ran and what it cost."""
    command: str
    device: str
    train_minutes: float
    steps: int
    tokens: int


@dataclass
class Earlier:
    """The checkpoint a run continues (--init): the stages that made it and its history, which the new
    run's history carries on."""
    stages: list[Stage]
    history: list[dict]

    @classmethod
    def read(cls, folder: Path) -> Earlier:
        facts = json.loads((folder / "training.json").read_text())
        stages = (facts.get("earlier") or {}).get("stages", [])
        own = {f.name: facts[f.name] for f in fields(Stage)}
        return cls([Stage(**stage) for stage in [*stages, own]],
                   json.loads((folder / "history.json").read_text()))


@dataclass
class RunRecord:
    """`data`: what the recipe trained on (each recipe's own dataclass, written first); `earlier`: the
    stages before this one (--init), else None; `note`: why the recipe is as it is, for the card;
    `out`: what `toyviz.load` is told to take; `train_minutes`, `steps`, `tokens`: this run's alone."""
    data: Any
    earlier: list[Stage] | None
    note: str | None
    out: str
    command: str
    device: str
    config: dict
    params: int
    dtype: str
    train_minutes: float
    processes: int
    steps: int
    tokens: int
    metrics: dict

    def stages(self) -> list[Stage]:
        """Every run that made the checkpoint, first to last."""
        return [*(self.earlier or []), Stage(self.command, self.device, self.train_minutes, self.steps, self.tokens)]

    def to_json(self) -> dict:
        """training.json's contents: the data's fields first, then the rest; a note only when there is one."""
        facts = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "data"}
        facts["earlier"] = {"stages": [asdict(stage) for stage in self.earlier]} if self.earlier else None
        if self.note is None:
            del facts["note"]
        return {**asdict(self.data), **facts}

    def write(self, folder: Path) -> None:
        (folder / "training.json").write_text(json.dumps(self.to_json(), indent=2))
