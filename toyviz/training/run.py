"""One run of a recipe, from its parts to a checkpoint folder: the resumable state, the loop, the saves,
the held-out evaluation of the weights as trained and as shipped, training.json and the model card.

A recipe (toyviz.training.gpt, toyviz.training.translator) builds its data, model and loss and hands
them over as a `Recipe`; the flags that are the same for both (schedule, evaluation, pausing) are read
here, once.
"""
from __future__ import annotations

import json
import shlex
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

import torch

from toyviz.data import cache_dir
from toyviz.models.checkpoint import CHECKPOINTS, kind_of, load_folder, save_folder
from toyviz.models.tokenizer import Tokenizer
from toyviz.training.card import device_name, kept_sections, loadable_name, model_card
from toyviz.training.distributed import Distributed
from toyviz.training.loop import Checkpointing, Evaluation, Schedule, train_loop
from toyviz.training.record import Earlier, RunRecord
from toyviz.training.resume import Resumable, RunState

SESSION_FLAGS = {"--resume": 0, "--pause-at-step": 1, "--pause-after-minutes": 1, "--state": 1}   # flag → values


@dataclass
class Recipe:
    """What a recipe hands the run. `loss_fn(step, wrapped)`: see train_loop; `eval_fn()`: the validation
    loss; `probe_fn()`: the history's probe scores (the GPT's heads); `data`: what it trains on (its own
    dataclass, the record's first fields, with a `card_text()`); `evaluate(model, folder)`: held-out
    metrics of a trained model; `earlier`: the checkpoint it continues (--init)."""
    kind: str
    model: torch.nn.Module
    tokenizers: dict[str, Tokenizer]
    loss_fn: Callable
    tokens_per_step: int
    eval_fn: Callable[[], float]
    evaluate: Callable[[torch.nn.Module, Path], dict]
    data: Any
    earlier: Earlier | None = None
    note: str | None = None
    probe_fn: Callable[[], dict] | None = None
    snapshot_at: tuple[float, ...] = ()
    snapshot_when: Callable[[dict], bool] | None = None
    generators: tuple[torch.Generator, ...] = ()


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


def run_state(args, out: Path, argv: list[str], dist: Distributed) -> RunState:
    """Where this run's resumable state lives, checked against --resume: a resumed run must find a state
    of the same recipe, and a fresh one must not start over an unfinished one."""
    state = RunState(Path(args.state) if args.state else cache_dir() / "runs" / out.resolve().name, dist.rank, dist.world)
    if args.resume and not state.exists():
        raise SystemExit(f"--resume: no saved run in {state.folder} (saved states live in the data cache, "
                         "TOYVIZ_DATA; if this machine lost it, start the run again without --resume)")
    if args.resume:
        saved_argv = torch.load(state.main_file, weights_only=False)["argv"]
        if saved_argv != argv:
            raise SystemExit(f"--resume: {state.folder} holds a run of `{shlex.join(saved_argv)}`, "
                             f"not `{shlex.join(argv)}`: give the same flags")
    elif state.exists():
        raise SystemExit(f"{state.folder} holds an unfinished run: add --resume to go on with it, "
                         "or delete that folder to start again")
    return state


def continued(folder: Path, kind: str, tokenizers: dict[str, Tokenizer], sample: str, device: str):
    """The model saved in `folder`, to train on (--init), and what its training recorded. Its tokenizers
    must be the ones this corpus is cached with (checked on `sample`): the token ids it learned must
    mean the same. → (model, Earlier)"""
    if kind_of(folder) != kind:
        raise SystemExit(f"{folder} holds a {kind_of(folder)}, not a {kind}")
    _, model, saved = load_folder(folder, device)
    if any(saved[stem].encode(sample) != tok.encode(sample) for stem, tok in tokenizers.items()):
        raise SystemExit(f"{folder} was trained with other tokenizers than this corpus's "
                         f"(--vocab, --shared-vocab): --init continues a run on the same data only")
    return model, Earlier.read(folder)


def run(args, recipe: Recipe, dist: Distributed) -> dict | None:
    """Train the recipe as the flags say, saving its folder (weights, tokenizers, history.json) as it goes;
    then, on rank 0, evaluate it and write training.json and the card → the result main prints (None on
    the other ranks). Raises Paused when the session stops before the run's end."""
    out = Path(args.out or CHECKPOINTS / recipe.kind)
    argv = recipe_argv(args.argv)
    resumable = Resumable(run_state(args, out, argv, dist), args.resume, recipe.generators, argv,
                          args.pause_at_step, args.pause_after_minutes)
    earlier = recipe.earlier
    if earlier and dist.main and (Path(args.init) / "snapshots").is_dir():   # the scrubber shows both runs
        shutil.copytree(Path(args.init) / "snapshots", out / "snapshots", dirs_exist_ok=True)
    model = recipe.model

    def save(history, sub):
        folder = out / sub if sub else out
        save_folder(model, recipe.tokenizers, folder)
        (folder / "history.json").write_text(json.dumps(history))

    history = train_loop(
        model, recipe.loss_fn, Schedule(args.steps, args.minutes, args.lr, args.warmup, args.lr_floor),
        dist=dist, tokens_per_step=recipe.tokens_per_step,
        evaluation=Evaluation(recipe.eval_fn, args.eval_every, recipe.probe_fn, args.probe_every, args.average_last),
        checkpointing=Checkpointing(save if dist.main else None, snapshot_at=recipe.snapshot_at,
                                    snapshot_when=recipe.snapshot_when),
        resumable=resumable, earlier=earlier.history if earlier else None)
    resumable.state.clear()
    if not dist.main:
        return None
    dist.take_all_cores()
    model.eval()
    save(history, None)
    metrics = {"fp32": recipe.evaluate(model, out), "shipped": recipe.evaluate(load_folder(out, args.device)[1], out)}
    before = earlier.history if earlier else []
    steps = len(history) - len(before)                                # this run's, one record a step
    record = RunRecord(
        data=recipe.data, earlier=earlier.stages if earlier else None, note=recipe.note,
        out=loadable_name(out, recipe.kind), command=f"{dist.launcher} -m toyviz.train " + shlex.join(argv),
        device=device_name(args.device), config=asdict(model.config), params=sum(p.numel() for p in model.parameters()),
        dtype="float16", train_minutes=(history[-1]["seconds"] - (before[-1]["seconds"] if before else 0.0)) / 60,
        processes=dist.world, steps=steps, tokens=steps * recipe.tokens_per_step, metrics=metrics)
    record.write(out)
    (out / "README.md").write_text(model_card(recipe.kind, record, kept_sections(out / "README.md")))
    return {"metrics": metrics, "command": record.command, "train_minutes": round(record.train_minutes, 2),
            "steps": steps, "params": record.params, "device": record.device}
