"""A trained model's card (README.md beside its weights): its data, its recipe, its held-out numbers,
written from the run's record; the sections people wrote by hand in an earlier card are kept."""
from __future__ import annotations

import json
import os
from pathlib import Path

import torch

from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.training.record import RunRecord

WRITTEN_SECTIONS = ("Data", "Recipe", "Metrics (held-out data)", "Licence")   # what model_card writes
WHAT = {"gpt": "decoder-only GPT", "translator": "encoder–decoder translator (English → Spanish)"}
TAG = {"gpt": "gpt", "translator": "translation"}
PUBLIC_DOMAIN = 'Training texts public domain (the name "World English Bible" is a trademark for unmodified text).'


def kept_sections(card: Path) -> str:
    """The sections of an existing model card that people wrote by hand ("What it does", "History"):
    a retrained model keeps them (a test of the docs then says which of their numbers changed)."""
    if not card.is_file():
        return ""
    parts = card.read_text(encoding="utf-8").split("\n## ")[1:]
    return "".join(f"## {part.rstrip()}\n\n" for part in parts if part.split("\n", 1)[0] not in WRITTEN_SECTIONS)


def model_card(kind: str, record: RunRecord, kept: str = "") -> str:
    """The card of a `kind` model; `record.data.card_text()` says what it trained on."""
    return f"""---
library_name: toyviz
license: mit
tags: [toyviz, education, {TAG[kind]}]
---
# toyviz {kind}

A small {WHAT[kind]} trained from
scratch by toyviz for teaching. Load it with `toyviz.load("{record.out}")`.

## Data
{record.data.card_text()}

Training text: {record.data.train_chars:,} characters. {record.data.licence()[0]}

## Recipe
{recipe_lines(record)}{why_line(record)}- Config: `{json.dumps(record.config)}`
- Parameters: {record.params:,}; weights stored as {record.dtype}

## Metrics (held-out data)
```json
{json.dumps(record.metrics, indent=2)}
```

{kept}## Licence
Code MIT. {record.data.licence()[1]}
"""


def recipe_lines(record: RunRecord) -> str:
    """The command and its cost; for a run that continued an earlier checkpoint (--init), each stage."""
    runs = record.stages()
    if len(runs) == 1:
        return (f"- Command: `{record.command}`\n- Trained on: {record.device} ({record.train_minutes:.1f} "
                f"minutes, {record.steps} steps, {record.tokens:,} tokens)\n")
    lines = [f"- Stage {i}{' (from the weights of stage %d)' % (i - 1) if i > 1 else ''}: `{run.command}` "
             f"on {run.device}: {run.train_minutes:.1f} minutes, {run.steps} steps, {run.tokens:,} tokens"
             for i, run in enumerate(runs, 1)]
    total = sum(run.train_minutes for run in runs)
    return "\n".join(lines) + f"\n- In all: {total:.1f} minutes, {sum(run.tokens for run in runs):,} tokens\n"


def why_line(record: RunRecord) -> str:
    return f"- Why: {record.note}\n" if record.note else ""


def loadable_name(out: Path, kind: str) -> str:
    """What the model card tells `toyviz.load` to take: the bare name for the repository's own folder,
    which works from any clone, instead of this machine's absolute path."""
    return kind if out.resolve() == (CHECKPOINTS / kind).resolve() else str(out)


def device_name(device: str) -> str:
    """The machine a run trained on, as its card names it."""
    if device.startswith("cuda"):
        return torch.cuda.get_device_name(torch.device(device))
    return f"CPU ({os.cpu_count()} cores)"
