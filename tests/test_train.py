"""Training on a user's own text, and training on several processes.

The texts are non-Latin (Greek, Russian) with emoji, so every step must handle multi-byte UTF-8.
Everything runs on the CPU with tiny models; the caches go to a temporary TOYVIZ_DATA so the
user's ~/.cache/toyviz is never touched. Multi-process tests use gloo on loopback and bound every
wait, so a broken rendezvous fails the test instead of hanging CI.
"""
import json
import multiprocessing
import os
import random
import socket
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
import torch

import toyviz
from toyviz.data.text import load_text
from toyviz.models.config import GPTConfig
from toyviz.models.gpt import ToyGPT
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.training import loop
from toyviz.training.batches import copy_batch, copy_period_at, gpt_batch
from toyviz.training.card import loadable_name
from toyviz.training.cli import main
from toyviz.training.distributed import Distributed
from toyviz.training.gpt import MIN_TRAIN_CHARS
from toyviz.training.loop import TIMED_STEPS, Checkpointing, Evaluation, Schedule, train_loop

REPO = Path(__file__).resolve().parent.parent
SENTENCES = [
    "Мороз и солнце; день чудесный! ❄️☀️",
    "Ещё ты дремлешь, друг прелестный — пора, красавица, проснись.",
    "Я помню чудное мгновенье: передо мной явилась ты. ✨",
    "Μῆνιν ἄειδε θεὰ Πηληϊάδεω Ἀχιλῆος.",
    "Ἄνδρα μοι ἔννεπε, Μοῦσα, πολύτροπον, ὃς μάλα πολλὰ πλάγχθη. 🌊⛵",
    "Καλημέρα, τι κάνεις; Όλα καλά, ευχαριστώ! 😀",
    "Кошка спит на окне, а собака гуляет в саду. 🐈🐕",
    "Η θάλασσα είναι γαλάζια και ο ήλιος λάμπει. 🌞",
]
TINY = ["--layers", "1", "--heads", "2", "--d-model", "32", "--context", "64", "--batch", "8", "--vocab", "300",
        "--warmup", "5", "--lr", "3e-3", "--device", "cpu"]
SUBPROCESS_TIMEOUT = 180     # seconds; a 2-process run here takes a few seconds on 2 cores


def fixture_text(chars: int, seed: int = 0) -> str:
    """Paragraphs of shuffled hand-written sentences, numbered so the text is not pure repetition."""
    rng = random.Random(seed)
    paragraphs, size, n = [], 0, 0
    while size < chars:
        n += 1
        paragraph = f"{n}. " + " ".join(rng.choice(SENTENCES) for _ in range(rng.randint(2, 5)))
        paragraphs.append(paragraph)
        size += len(paragraph) + 1
    return "\n".join(paragraphs)[:chars]


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    """Tokenizer and token caches in a temporary folder, not the user's."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("TOYVIZ_DATA", str(folder))
    return folder


@pytest.fixture(scope="module")
def corpus_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "poems.txt"
    path.write_text(fixture_text(40_000), encoding="utf-8")
    return path


# ---------------------------------------------------------------- load_text ---------------

def test_file_splits_95_5_at_a_line_break_and_round_trips(tmp_path):
    text = fixture_text(20_000)
    path = tmp_path / "greek.txt"
    path.write_text(text, encoding="utf-8")
    train, val, source = load_text([str(path)], None)
    assert train + val == text
    assert train.endswith("\n")                         # validation starts on a whole line
    assert abs(len(val) / len(text) - 0.05) < 0.01
    assert str(path) in source and f"{len(train):,}" in source


def test_file_without_line_breaks_still_splits_95_5(tmp_path):
    text = "αβγδε 😀" * 1000
    (tmp_path / "one-line.txt").write_text(text, encoding="utf-8")
    train, val, _ = load_text([str(tmp_path / "one-line.txt")], None)
    assert train + val == text and len(val) == len(text) // 20


def test_folder_reads_txt_files_in_name_order(tmp_path):
    folder = tmp_path / "books"
    folder.mkdir()
    (folder / "b.txt").write_text("Β: Ἄνδρα μοι ἔννεπε 🌊\n" * 500, encoding="utf-8")
    (folder / "a.txt").write_text("А: Мороз и солнце ❄️\n" * 500, encoding="utf-8")
    (folder / "notes.md").write_text("not training text", encoding="utf-8")
    train, val, source = load_text([str(folder)], None)
    text = (folder / "a.txt").read_text() + "\n\n" + (folder / "b.txt").read_text()
    assert train + val == text
    assert "2 .txt files: a.txt, b.txt" in source and "notes.md" not in source


def test_val_path_is_the_validation_text(tmp_path):
    (tmp_path / "train.txt").write_text("Мороз и солнце\n" * 100, encoding="utf-8")
    (tmp_path / "val.txt").write_text("Καλημέρα 😀\n", encoding="utf-8")
    train, val, source = load_text([str(tmp_path / "train.txt")], str(tmp_path / "val.txt"))
    assert (train, val) == ("Мороз и солнце\n" * 100, "Καλημέρα 😀\n")
    assert "val.txt" in source


def test_missing_path_is_named(tmp_path):
    with pytest.raises(SystemExit, match="no such file or folder: .*nowhere.txt"):
        load_text([str(tmp_path / "nowhere.txt")], None)


def test_non_utf8_names_the_file_and_line(tmp_path):
    good, bad = tmp_path / "good.txt", tmp_path / "cp1251.txt"
    good.write_text("Мороз и солнце\n", encoding="utf-8")
    bad.write_bytes("строка\nМороз и солнце\n".encode("cp1251"))
    with pytest.raises(SystemExit, match=r"cp1251.txt is not UTF-8 text \(byte 0x.. at line 1\)"):
        load_text([str(good), str(bad)], None)


def test_blank_file_says_it_is_empty(tmp_path):
    (tmp_path / "blank.txt").write_text(" \n", encoding="utf-8")
    with pytest.raises(SystemExit, match="blank.txt is empty"):
        load_text([str(tmp_path / "blank.txt")], None)


def test_folder_without_txt_files_says_so(tmp_path):
    (tmp_path / "notes.md").write_text("Καλημέρα", encoding="utf-8")
    with pytest.raises(SystemExit, match="has no .txt files"):
        load_text([str(tmp_path)], None)


# ---------------------------------------------------------------- training on --text -------

def test_training_on_user_text_end_to_end(tmp_path, data_dir, corpus_file):
    out = tmp_path / "gpt"
    main(["gpt", "--text", str(corpus_file), "--steps", "50", "--eval-every", "10", *TINY, "--out", str(out)])

    history = json.loads((out / "history.json").read_text())
    assert [r["step"] for r in history] == list(range(1, 51))
    assert history[-1]["train_loss"] < history[0]["train_loss"] - 1.0
    val = [r["val_loss"] for r in history if "val_loss" in r]
    assert len(val) == 5 and val[-1] < val[0]

    gpt = toyviz.load(str(out), device="cpu")
    prompt = "Мороз и солнце 😀 Καλημέρα"
    trace = gpt.trace(prompt)
    assert gpt.tokenizer.decode(trace.token_ids[1:]) == prompt and len(trace.tokens) == len(trace.token_ids)
    assert trace.attention.shape[:2] == (1, 2)
    text = corpus_file.read_text(encoding="utf-8")
    assert gpt.tokenizer.decode(gpt.tokenizer.encode(text)) == text

    train_text, _, _ = load_text([str(corpus_file)], None)
    card = (out / "README.md").read_text()
    assert str(corpus_file) in card and f"{len(train_text):,} characters" in card
    assert f'toyviz.load("{out}")' in card          # a folder elsewhere is loaded by its path
    assert list((data_dir / "tokenizers").glob("text-*.tiktoken"))


def test_card_loads_the_repository_checkpoints_by_name():
    """The shipped cards must say toyviz.load("gpt"), not the absolute path of the machine that trained them."""
    assert loadable_name(CHECKPOINTS / "gpt", "gpt") == "gpt"
    assert loadable_name(CHECKPOINTS / "translator", "translator") == "translator"
    assert loadable_name(Path("/elsewhere/gpt"), "gpt") == "/elsewhere/gpt"


def test_lr_warms_up_then_decays_to_its_floor():
    floor, full = Schedule(lr=1.0, warmup=10, lr_floor=0.1), Schedule(lr=2.0, warmup=10, lr_floor=0.0)
    assert floor.lr_at(0, 100) == pytest.approx(0.1)                   # warm-up starts at peak / warmup
    assert floor.lr_at(9, 100) == pytest.approx(1.0)
    assert floor.lr_at(10, 100) == pytest.approx(1.0)                  # cosine starts at the peak
    assert full.lr_at(55, 100) == pytest.approx(1.0)                   # half-way: half the peak
    assert floor.lr_at(100, 100) == pytest.approx(0.1)
    assert full.lr_at(100, 100) == 0.0


def test_too_short_text_says_how_much_is_needed(tmp_path, data_dir):
    path = tmp_path / "short.txt"
    path.write_text(fixture_text(MIN_TRAIN_CHARS // 2), encoding="utf-8")
    with pytest.raises(SystemExit, match=f"needs at least {MIN_TRAIN_CHARS:,}"):
        main(["gpt", "--text", str(path), "--steps", "5", *TINY, "--out", str(tmp_path / "gpt")])


# ---------------------------------------------------------------- several processes -------

BATCH, CONTEXT, STEPS = 8, 16, 2


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tiny_run(dist: Distributed):
    """A tiny GPT and its loss_fn, built as gpt_recipe builds them: the same seed and batch generator
    on every rank, so each rank cuts its rows (Distributed.shard) out of one global gpt_batch."""
    torch.manual_seed(0)
    model = ToyGPT(GPTConfig(vocab_size=64, context=CONTEXT, n_layer=1, n_head=2, d_model=32))
    ids = torch.randint(0, 64, (2_000,), generator=torch.Generator().manual_seed(1), dtype=torch.int32)
    gen = torch.Generator().manual_seed(2)

    def loss_fn(step, wrapped):
        x, y = gpt_batch(ids, 63, BATCH, CONTEXT, gen)
        return wrapped(dist.shard(x), dist.shard(y))[1]

    return model, loss_fn


def run_steps(out: Path) -> None:
    """STEPS optimizer steps through train_loop (DDP under two ranks); saves what this rank ends with.
    Also one separate backward pass, to compare raw (unclipped) gradients: AdamW's first step and
    the clipping are blind to a gradient's scale, so a sum-instead-of-mean bug shows only there."""
    torch.set_num_threads(1)
    dist = Distributed("cpu")
    probe, loss_fn = tiny_run(dist)
    wrapped = dist.wrap(probe)          # kept alive: DDP all-reduces in hooks it owns
    loss_fn(0, wrapped).backward()
    grads = {n: p.grad.clone() for n, p in probe.named_parameters()}

    model, loss_fn = tiny_run(dist)
    history = train_loop(model, loss_fn, Schedule(steps=STEPS, lr=1e-3, warmup=1), dist=dist,
                         tokens_per_step=BATCH * CONTEXT)
    torch.save({"params": model.state_dict(), "grads": grads, "history": history}, out / f"rank{dist.rank}.pt")
    dist.close()


def spawn_ranks(target, out: Path, world: int = 2, timeout: float = SUBPROCESS_TIMEOUT) -> list[int | None]:
    """Run target(rank, world, port, out) in `world` fresh processes → their exit codes (None: killed
    after `timeout` seconds, so a stuck collective fails the test instead of hanging it)."""
    ctx = multiprocessing.get_context("spawn")
    port = free_port()
    procs = [ctx.Process(target=target, args=(rank, world, port, str(out))) for rank in range(world)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout
    for p in procs:
        p.join(timeout=max(0.0, deadline - time.monotonic()))
    codes = [p.exitcode for p in procs]
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()
    return codes


def _rank_main(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    run_steps(Path(out))


def test_two_ranks_take_the_same_step_as_one_process(tmp_path, monkeypatch):
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    run_steps(tmp_path / "one")

    assert spawn_ranks(_rank_main, tmp_path / "two") == [0, 0]

    one = torch.load(tmp_path / "one" / "rank0.pt")
    for rank in range(2):
        two = torch.load(tmp_path / "two" / f"rank{rank}.pt")
        for kind in ("grads", "params"):
            for name, value in one[kind].items():
                torch.testing.assert_close(two[kind][name], value, atol=1e-6, rtol=1e-5,
                                           msg=lambda m: f"rank {rank} {kind} {name}: {m}")
    # the logged loss is the global batch's, so the curve does not depend on the process count
    two = torch.load(tmp_path / "two" / "rank0.pt")
    assert [r["train_loss"] for r in two["history"]] == pytest.approx(
        [r["train_loss"] for r in one["history"]], abs=2e-4)


def _rank_minutes(rank: int, world: int, port: int, out: str) -> None:
    """Two ranks whose clocks disagree (rank 1's runs twice as fast), as real GPUs' timings always do a
    little: the step count fixed from the timed first steps must still be the same on both."""
    ticks = iter(range(10**6))
    loop.time = types.SimpleNamespace(time=lambda: next(ticks) * 0.01 / (rank + 1))
    os.environ.update({"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(world),
                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    torch.set_num_threads(1)
    dist = Distributed("cpu")
    model, loss_fn = tiny_run(dist)
    history = train_loop(model, loss_fn, Schedule(minutes=0.01, lr=1e-3, warmup=1), dist=dist,
                         tokens_per_step=BATCH * CONTEXT)
    Path(out, f"rank{rank}.json").write_text(json.dumps(history))
    dist.close()


def test_ranks_with_different_clocks_stop_together(tmp_path):
    """--minutes under torchrun: if each rank fixed its own step count, one would wait forever for the other."""
    exitcodes = spawn_ranks(_rank_minutes, tmp_path, timeout=60)
    assert exitcodes == [0, 0], "a rank hung or failed: the ranks disagreed about the number of steps"
    assert len(json.loads((tmp_path / "rank0.json").read_text())) > TIMED_STEPS[1]   # the timed count, not the floor


def test_minutes_budget_is_filled_despite_slow_first_steps(monkeypatch):
    """The first steps run slower (allocation, set-up); timing them made CPU runs stop 3–8 % short of
    --minutes. Here the first 5 steps take 3 s and the rest 1 s: a 2-minute budget must give ~2 minutes."""
    clock = {"now": 0.0}
    monkeypatch.setattr(loop, "time", types.SimpleNamespace(time=lambda: clock["now"]))

    def slow_then_steady(step, wrapped):
        clock["now"] += 3.0 if step < TIMED_STEPS[0] else 1.0
        return loss_fn(step, wrapped)

    model, loss_fn = tiny_run(Distributed("cpu"))
    history = train_loop(model, slow_then_steady, Schedule(minutes=2, lr=1e-3, warmup=1),
                         dist=Distributed("cpu"), tokens_per_step=BATCH * CONTEXT)
    assert 118 <= clock["now"] <= 120 and len(history) == 120 - 2 * TIMED_STEPS[0]


# each rank runs in its own folder, so a file written by rank 1 would land apart from rank 0's
PER_RANK_MAIN = ("import os, sys; from toyviz.train import main; os.mkdir(os.environ['RANK']); "
                 "os.chdir(os.environ['RANK']); main(sys.argv[1:])")


@pytest.mark.slow
def test_torchrun_two_ranks_only_rank_0_writes(tmp_path, corpus_file):
    runs = tmp_path / "runs"
    runs.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TOYVIZ_DATA": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    for name in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_addr", "127.0.0.1",
           "--master_port", str(free_port()), "--no-python", sys.executable, "-c", PER_RANK_MAIN,
           "gpt", "--text", str(corpus_file), "--steps", "3", "--eval-every", "3", *TINY, "--out", "gpt"]
    done = subprocess.run(cmd, cwd=runs, env=env, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT)
    assert done.returncode == 0, done.stderr[-3000:]
    written = [p for p in runs.rglob("model.safetensors") if "snapshots" not in p.parts]
    assert written == [runs / "0" / "gpt" / "model.safetensors"]
    assert sorted(p.name for p in runs.glob("1/**/*")) == []          # rank 1 wrote nothing at all
    assert len(json.loads((runs / "0" / "gpt" / "history.json").read_text())) == 3
    assert done.stdout.count('"metrics"') == 1         # one result line: rank 0's
    # the model card's command must reproduce the run, launcher included
    command = json.loads((runs / "0" / "gpt" / "training.json").read_text())["command"]
    assert command.startswith("torchrun --standalone --nproc_per_node 2 -m toyviz.train gpt --text ")
    # both ranks must tokenize with one tokenizer, cached under a key every process computes alike
    assert len(list((tmp_path / "cache" / "tokenizers").glob("*.tiktoken"))) == 1
    toyviz.load(str(runs / "0" / "gpt"), device="cpu")


def test_a_run_that_slows_down_still_ends_on_its_budget(monkeypatch):
    """--minutes re-estimates the step count as it goes: if steps take twice as long from step 150 on
    (another job on the machine), a 10-minute budget still ends near 10 minutes, not at 15."""
    clock = {"now": 0.0}
    monkeypatch.setattr(loop, "time", types.SimpleNamespace(time=lambda: clock["now"]))

    def slows_down(step, wrapped):
        clock["now"] += 1.0 if step < 150 else 2.0
        return loss_fn(step, wrapped)

    model, loss_fn = tiny_run(Distributed("cpu"))
    history = train_loop(model, slows_down, Schedule(minutes=10, lr=1e-3, warmup=1, lr_floor=0.0),
                         dist=Distributed("cpu"), tokens_per_step=BATCH * CONTEXT)
    assert 590 <= clock["now"] <= 610, clock["now"]
    assert history[-1]["lr"] < 1e-5            # the cosine still ends at the last step


def test_probe_scores_are_recorded_every_k_steps_in_the_history():
    model, loss_fn = tiny_run(Distributed("cpu"))
    history = train_loop(model, loss_fn, Schedule(steps=12, lr=1e-3, warmup=1), dist=Distributed("cpu"),
                         tokens_per_step=BATCH * CONTEXT,
                         evaluation=Evaluation(probe_fn=lambda: {"induction": [[0.5, 0.25]]}, probe_every=5))
    assert [r["step"] for r in history if "heads" in r] == [5, 10, 12]      # and the last step
    json.dumps(history)                                                     # history.json stays plain JSON


def test_the_first_record_that_meets_snapshot_when_is_saved_as_a_snapshot_once():
    model, loss_fn = tiny_run(Distributed("cpu"))
    saved = []
    scores = iter([0.1, 0.7, 0.9])                                          # probes at steps 4, 8, 12
    train_loop(model, loss_fn, Schedule(steps=13, lr=1e-3, warmup=1), dist=Distributed("cpu"),
               tokens_per_step=BATCH * CONTEXT,
               evaluation=Evaluation(probe_fn=lambda: {"induction": [[next(scores, 0.9)]]}, probe_every=4),
               checkpointing=Checkpointing(
                   save=lambda history, sub: saved.append(sub),
                   snapshot_when=lambda record: "heads" in record and record["heads"]["induction"][0][0] >= 0.5))
    assert saved == ["snapshots/step-000008"]                               # born at 8; not again at 12


def test_repeated_spans_copy_a_span_later_in_the_window():
    ids = torch.arange(10_000, dtype=torch.int32) % 3000               # no accidental repeats within 256
    x, y = gpt_batch(ids, 4095, 64, 256, torch.Generator().manual_seed(0), repeat_share=0.5)
    repeated = 0
    for row in y.tolist():
        # a repeat shows as a position whose 8 tokens from there appeared earlier in the window
        seen = {tuple(row[i: i + 8]) for i in range(len(row) - 8)}
        copies = sum(tuple(row[i: i + 8]) in {tuple(row[j: j + 8]) for j in range(i - 7)} for i in range(8, 249))
        repeated += copies > 0
        assert all(t < 4095 for t in row) and seen              # random spans use ordinary tokens only
    assert 16 <= repeated <= 48                                 # about half the 64 rows
    assert (x[:, 0] == 4095).all() and torch.equal(x[:, 1:], y[:, :-1])


def test_copy_batches_are_bos_then_a_random_run_twice():
    x, y = copy_batch(4095, 8, 16, torch.Generator().manual_seed(0))
    period = (x.shape[1]) // 2                                  # x = BOS + r + r[:-1]
    assert x.shape == y.shape == (8, 2 * period) and 8 <= period < 16
    assert (x[:, 0] == 4095).all() and torch.equal(x[:, 1:], y[:, :-1])
    assert torch.equal(y[:, :period], y[:, period:]) and (y < 4095).all()
    assert len({tuple(row) for row in y.tolist()}) == 8        # a fresh run in every row
    assert copy_period_at(0) == 16 and copy_period_at(600) == 40 and copy_period_at(10_000) == 64


def test_a_continued_run_carries_on_the_earlier_history():
    model, loss_fn = tiny_run(Distributed("cpu"))
    earlier = [{"step": s, "tokens": s * 100, "seconds": s * 2.0, "train_loss": 5.0, "lr": 0.0} for s in (1, 2, 3)]
    history = train_loop(model, loss_fn, Schedule(steps=4, lr=1e-3, warmup=1), dist=Distributed("cpu"),
                         tokens_per_step=BATCH * CONTEXT, earlier=earlier)
    assert history[:3] == earlier and [r["step"] for r in history[3:]] == [4, 5, 6, 7]
    assert history[-1]["tokens"] == 300 + 4 * BATCH * CONTEXT and history[3]["seconds"] >= 6.0


def test_init_continues_a_checkpoint_and_its_card_lists_both_stages(tmp_path, data_dir, corpus_file):
    first, second = tmp_path / "first", tmp_path / "second"
    main(["gpt", "--text", str(corpus_file), "--steps", "6", "--eval-every", "3", *TINY, "--out", str(first)])
    main(["gpt", "--text", str(corpus_file), "--steps", "4", "--eval-every", "2", *TINY, "--init", str(first),
          "--copy-batch", "4", "--lr", "1e-3", "--out", str(second)])
    history = json.loads((second / "history.json").read_text())
    assert [r["step"] for r in history] == list(range(1, 11))
    before = ToyGPT.from_pretrained(str(first)).state_dict()
    after = ToyGPT.from_pretrained(str(second)).state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)           # it trained on from there
    card = (second / "README.md").read_text()
    assert "Stage 1" in card and "Stage 2 (from the weights of stage 1)" in card and f"--init {first}" in card
    assert "- Why: Each step also trained on 4 short sequences" in card
    facts = json.loads((second / "training.json").read_text())
    assert [s["steps"] for s in facts["earlier"]["stages"]] == [6] and facts["steps"] == 4


def test_init_refuses_a_checkpoint_of_another_tokenizer_or_kind(tmp_path, data_dir, corpus_file):
    first = tmp_path / "first"
    main(["gpt", "--text", str(corpus_file), "--steps", "2", *TINY, "--out", str(first)])
    other = [a if a != "300" else "320" for a in TINY]                         # --vocab 320
    with pytest.raises(SystemExit, match="other tokenizers"):
        main(["gpt", "--text", str(corpus_file), "--steps", "2", *other, "--init", str(first),
              "--out", str(tmp_path / "second")])
    with pytest.raises(SystemExit, match="holds a translator, not a gpt"):
        main(["gpt", "--text", str(corpus_file), "--steps", "2", *TINY, "--init", str(CHECKPOINTS / "translator"),
              "--out", str(tmp_path / "third")])


def test_named_losses_are_each_recorded_and_their_sum_is_trained():
    model, loss_fn = tiny_run(Distributed("cpu"))
    seen = []

    def two_losses(step, wrapped):
        lm = loss_fn(step, wrapped)
        seen.append(lm.item())
        return {"train_loss": lm, "copy_loss": 2 * lm}

    history = train_loop(model, two_losses, Schedule(steps=3, lr=1e-3, warmup=1), dist=Distributed("cpu"),
                         tokens_per_step=BATCH * CONTEXT)
    assert [r["train_loss"] for r in history] == pytest.approx(seen, abs=1e-4)
    assert [r["copy_loss"] for r in history] == pytest.approx([2 * v for v in seen], abs=1e-4)


def test_average_last_ships_the_mean_of_the_last_evaluated_weights_only_when_it_validates_better():
    """--average-last: the weights at the last evaluation points are averaged, and the mean replaces the
    last weights only if eval_fn says it is better; the last history record says which was shipped."""
    def run(prefer_averaged: bool):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 1)
        seen = []

        def loss_fn(step, wrapped):
            return (wrapped(torch.ones(1, 3)) - 10.0).pow(2).mean()   # every step moves the weights

        def eval_fn():
            w = model.weight.detach().clone()
            seen.append(w)
            return float(w.sum()) if prefer_averaged else -float(w.sum())  # the weights grow: last is largest
        history = train_loop(model, loss_fn, Schedule(steps=6, lr=0.1, warmup=1), dist=Distributed("cpu"),
                             tokens_per_step=1, evaluation=Evaluation(eval_fn, every=2, average_last=3))
        return model.weight.detach(), seen, history[-1]

    weight, seen, record = run(prefer_averaged=True)
    at_evaluations = seen[:3]                                    # steps 2, 4, 6; then the two comparisons
    assert torch.allclose(weight, torch.stack(at_evaluations).mean(0))
    assert record["shipped"] == "averaged" and record["averaged_checkpoints"] == 3
    assert record["averaged_val_loss"] < record["last_val_loss"]
    weight, seen, record = run(prefer_averaged=False)
    assert torch.equal(weight, seen[2]) and record["shipped"] == "last"
