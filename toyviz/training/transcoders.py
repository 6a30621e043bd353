"""Train one transcoder per layer of the GPT, measure them, and ship them with a card.

    toyviz transcoders [--width 2048] [--k 32] [--minutes 60] [--out DIR]

Each chunk of training is a batch of random windows of the GPT's training text (the project's own
batches, as the GPT was trained, BOS first); one plain forward pass of the GPT records every layer's
MLP input and output through the hook mechanism (toyviz.interpret.transcoders: "block{i}.ln2" and "block{i}.mlp"),
and all four transcoders train together on shuffled minibatches of the chunk, each token seen `--reuse`
times. The learning rate decays over the last LR_DECAY of the wall-time budget. Every `--save-every`
seconds the whole state (weights, optimiser, dead-feature counters, chunk, elapsed time) goes to
<out>/resume.pt, so a stopped run started again with the same command continues where it was; the file is
removed once the transcoders are saved.

`evaluate` measures them on held-out text (Hamlet and Twelfth Night, which the GPT never saw; a window's BOS
left out everywhere, as in the SAE trainer) and `card` writes README.md from exactly those figures:

- fve: per layer, 1 − Σ‖y − ŷ‖² / Σ‖y − mean y‖² for the MLP's output y and the transcoder's ŷ;
- l0: features active per token (at most k); dead: share of features active on no held-out token;
- ce_recovered: (CE_zero − CE_spliced) / (CE_zero − CE_gpt), the GPT's next-token loss with the MLPs as they
  are (gpt), replaced by transcoders (spliced) or by zeros (zero); per layer alone and all four together.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from toyviz.api import GPT, load, resolve_device
from toyviz.interpret.dashboards import Dashboards, build, logit_effects
from toyviz.interpret.transcoders import (DASHBOARDS, FOLDER, Transcoder, TranscoderConfig, TranscoderSet, mlp_input, mlp_output,
                                          splicing)
from toyviz.training.batches import gpt_batch
from toyviz.training.dictionary import DEAD_AFTER, LR_DECAY, MAX_FILE_BYTES, held_out_windows


@torch.no_grad()
def record_mlps(model, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Windows x (B, T) → every layer's MLP input and output (L, B, T, d), read by hooks on a plain pass."""
    seen = {}
    keep = lambda name: (lambda t: seen.__setitem__(name, t))
    layers = range(model.config.n_layer)
    model(x, hooks={name: keep(name) for layer in layers for name in (mlp_input(layer), mlp_output(layer))})
    return (torch.stack([seen[mlp_input(layer)] for layer in layers]),
            torch.stack([seen[mlp_output(layer)] for layer in layers]))


class Trainer:
    """Four transcoders, their optimiser and dead-feature counters, trained chunk by chunk; the state
    round-trips through `state()` / `restore()` for resuming."""

    def __init__(self, gpt: GPT, width: int, k: int, lr: float, seed: int):
        torch.manual_seed(seed)
        c = gpt.config
        self.set = TranscoderSet([Transcoder(TranscoderConfig(c.d_model, width, k, layer)).to(gpt.device)
                                  for layer in range(c.n_layer)])
        self.opt = torch.optim.Adam([p for t in self.set for p in t.parameters()], lr=lr, eps=6.25e-10)
        self.lr = lr
        self.idle = torch.zeros(c.n_layer, width, dtype=torch.long, device=gpt.device)   # tokens since last fired
        self.step, self.chunk, self.elapsed = 0, 0, 0.0
        self.started = False                     # the decoder biases start at the first chunk's mean output

    def state(self) -> dict:
        return {"transcoders": [t.state_dict() for t in self.set], "opt": self.opt.state_dict(), "idle": self.idle,
                "step": self.step, "chunk": self.chunk, "elapsed": self.elapsed, "started": self.started}

    def restore(self, state: dict) -> None:
        for t, weights in zip(self.set, state["transcoders"]):
            t.load_state_dict(weights)
        self.opt.load_state_dict(state["opt"])
        self.idle.copy_(state["idle"])
        self.step, self.chunk, self.elapsed, self.started = (state[k] for k in ("step", "chunk", "elapsed", "started"))

    def train_chunk(self, inputs: torch.Tensor, outputs: torch.Tensor, batch: int, reuse: int, progress) -> float:
        """inputs, outputs (L, N, d) → the mean loss over the chunk's steps; `progress()` → share of the budget
        spent, which sets the learning rate (linear decay to 0 over the last LR_DECAY)."""
        if not self.started:
            with torch.no_grad():
                for t, y in zip(self.set, outputs):
                    t.b_dec.copy_(y.mean(0))
            self.started = True
        n, total, steps = inputs.shape[1], 0.0, 0
        for _ in range(reuse):
            for rows in torch.randperm(n).split(batch):
                if len(rows) < batch // 2:
                    continue
                for group in self.opt.param_groups:
                    group["lr"] = self.lr * max(0.0, min(1.0, (1 - progress()) / LR_DECAY))
                loss = 0.0
                for layer, t in enumerate(self.set):
                    _, values, indices, layer_loss = t(inputs[layer, rows], outputs[layer, rows],
                                                       dead=self.idle[layer] >= DEAD_AFTER)
                    loss = loss + layer_loss
                    self.idle[layer] += len(rows)
                    self.idle[layer, indices[values > 0]] = 0
                self.opt.zero_grad(set_to_none=True)
                loss.backward()
                for t in self.set:
                    t.remove_parallel_gradient()
                self.opt.step()
                for t in self.set:
                    t.normalise_decoder()
                total, steps, self.step = total + loss.item() / len(self.set), steps + 1, self.step + 1
        self.chunk += 1
        return total / max(steps, 1)


def train(gpt: GPT, train_ids: torch.Tensor, *, width: int, k: int, minutes: float, windows: int, batch: int,
          reuse: int, lr: float, seed: int, resume: Path, save_every: float, log=print) -> tuple[TranscoderSet, dict]:
    """Train for `minutes` of wall time in all (summed over resumed runs) → the transcoders and facts."""
    trainer = Trainer(gpt, width, k, lr, seed)
    if resume.is_file():
        trainer.restore(torch.load(resume, map_location=gpt.device, weights_only=False))
        log(f"resumed at step {trainer.step}, chunk {trainer.chunk}, {trainer.elapsed / 60:.1f} min in")
    budget, start, last_save = 60 * minutes, time.time(), time.time()
    spent = lambda: trainer.elapsed + time.time() - start
    while spent() < budget:
        gen = torch.Generator().manual_seed(seed * 1_000_003 + trainer.chunk)    # chunk c is the same on resume
        x, _ = gpt_batch(train_ids, gpt.bos, windows, gpt.config.context, gen)
        inputs, outputs = (a[:, :, 1:].flatten(1, 2) for a in record_mlps(gpt.model, x.to(gpt.device)))  # BOS out
        loss = trainer.train_chunk(inputs, outputs, batch, reuse, lambda: spent() / budget)
        dead = (trainer.idle >= DEAD_AFTER).float().mean(1).tolist()
        log(f"chunk {trainer.chunk}, step {trainer.step}: loss {loss:.4f} (1 − FVE, mean of layers), dead "
            f"{', '.join(f'{d:.3f}' for d in dead)}, {spent() / 60:.1f} min")
        if time.time() - last_save > save_every:
            trainer.elapsed, start, last_save = spent(), time.time(), time.time()
            save_state(trainer.state(), resume)
    for t in trainer.set:
        t.eval()
    facts = {"steps": trainer.step, "chunks": trainer.chunk, "tokens_seen": trainer.step * batch,
             "train_tokens": trainer.chunk * windows * (gpt.config.context - 1), "train_minutes": spent() / 60}
    return trainer.set, facts


def save_state(state: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")                    # written whole, then renamed: never half a state
    torch.save(state, tmp)
    tmp.replace(path)


# ---------------------------------------------------------------- measuring ------------------

@torch.no_grad()
def evaluate(gpt: GPT, transcoders: TranscoderSet, x: torch.Tensor, y: torch.Tensor, batch: int = 8) -> dict:
    """Held-out windows x, y (W, T) → per layer fve, l0, dead and ce_recovered alone, and the losses with all
    of them spliced in (BOS left out of every figure and never replaced)."""
    model, device, n = gpt.model, gpt.device, len(transcoders)
    width = transcoders[0].config.width
    err = torch.zeros(n, dtype=torch.float64)
    var_terms = [[] for _ in range(n)]
    l0 = torch.zeros(n, dtype=torch.float64)
    active = torch.zeros(n, width, dtype=torch.bool)
    runs = {"gpt": {}, "spliced": splicing(transcoders, keep_first=True),
            "zero": {name: h for t in transcoders for name, h in zero_after_first(t.transcoder_config.layer).items()},
            **{f"spliced_{t.transcoder_config.layer}": splicing([t], keep_first=True) for t in transcoders}}
    ce = dict.fromkeys(runs, 0.0)
    for i in range(0, len(x), batch):
        xb, yb = x[i: i + batch].to(device), y[i: i + batch].to(device)
        inputs, outputs = (a[:, :, 1:].flatten(1, 2) for a in record_mlps(model, xb))
        for layer, t in enumerate(transcoders):
            values, indices = t.encode(inputs[layer])
            err[layer] += float((outputs[layer] - t.decode(values, indices)).pow(2).sum())
            var_terms[layer].append(outputs[layer].cpu().double())
            l0[layer] += float((values > 0).sum())
            active[layer, indices[values > 0].cpu()] = True
        for name, hooks in runs.items():
            logits = model(xb, hooks=hooks)[0][:, 1:]
            ce[name] += float(F.cross_entropy(logits.flatten(0, 1).float(), yb[:, 1:].flatten(), reduction="sum"))
    tokens = y[:, 1:].numel()
    ce = {name: total / tokens for name, total in ce.items()}
    recovered = lambda name: (ce["zero"] - ce[name]) / (ce["zero"] - ce["gpt"])
    layers = []
    for layer in range(n):
        outs = torch.cat(var_terms[layer])
        layers.append({"layer": layer, "fve": 1 - float(err[layer] / (outs - outs.mean(0)).pow(2).sum()),
                       "l0": float(l0[layer] / tokens), "dead": 1 - float(active[layer].float().mean()),
                       "ce_recovered_alone": recovered(f"spliced_{layer}")})
    return {"layers": layers, "ce_gpt": ce["gpt"], "ce_spliced": ce["spliced"], "ce_zero": ce["zero"],
            "ce_recovered": recovered("spliced"), "held_out_tokens": tokens}


@torch.no_grad()
def describe(gpt: GPT, transcoders: TranscoderSet, x: torch.Tensor, batch: int = 8) -> list[Dashboards]:
    """Held-out windows x (W, T) → every feature's dashboard, per layer (toyviz.interpret.dashboards: top
    contexts, histogram, the tokens its decoder row promotes through the final norm and the unembedding)."""
    kept = [([], []) for _ in transcoders]
    for i in range(0, len(x), batch):
        inputs, _ = record_mlps(gpt.model, x[i: i + batch].to(gpt.device))
        for t, (values, indices) in zip(transcoders, kept):
            v, ids = t.encode(inputs[t.transcoder_config.layer].flatten(0, 1))
            values.append(v.cpu())
            indices.append(ids.cpu())
    model = gpt.model
    return [build(x.flatten(), x.shape[1], torch.cat(indices), torch.cat(values), t.config.width,
                  logit_effects(t.W_dec.detach(), model.ln_f.weight, model.head.weight).cpu(), gpt.tokenizer.piece)
            for t, (values, indices) in zip(transcoders, kept)]


def save_dashboards(folder: Path, dashboards: list[Dashboards]) -> None:
    """<folder>/dashboards/layer<i>/ each, as toyviz.interpret.dashboards saves one dictionary's."""
    for layer, board in enumerate(dashboards):
        (folder / DASHBOARDS / f"layer{layer}").mkdir(parents=True, exist_ok=True)
        board.save(folder / DASHBOARDS / f"layer{layer}")


def zero_after_first(layer: int) -> dict:
    """A hook that zeroes layer's MLP output at every position but the first (the BOS)."""
    return {mlp_output(layer): lambda out: torch.cat([out[:, :1], torch.zeros_like(out[:, 1:])], dim=1)}


def card(metrics: dict) -> str:
    """README.md of the shipped transcoders: every figure from metrics.json (tests check they agree)."""
    rows = "\n".join(f"| {m['layer']} | {m['fve']:.4f} | {m['l0']:.2f} | {m['dead']:.4f} | {m['ce_recovered_alone']:.4f} |"
                     for m in metrics["layers"])
    return f"""# Transcoders of toyviz's GPT

One TopK transcoder per layer (toyviz.interpret.transcoders): it reads what the block's MLP reads (the output
of `ln2`) and predicts what the MLP writes into the stream, through {metrics['width']:,} features of which
{metrics['k']} are active per token. Attribution graphs (toyviz.interpret.circuits, docs/circuits.md) are made of
their features. Load them with `TranscoderSet.load("checkpoints/gpt/{FOLDER}")`; every feature's dashboard (top
contexts in the held-out plays, histogram, promoted tokens, label) is in `{DASHBOARDS}/layer<i>/`.

## Figures (held-out text: Hamlet and Twelfth Night, {metrics['held_out_tokens']:,} tokens, BOS left out)

| layer | FVE | L0 | dead | loss recovered, this layer alone |
|---|---|---|---|---|
{rows}

All four spliced in at once: loss recovered **{metrics['ce_recovered']:.4f}** (next-token loss {metrics['ce_gpt']:.4f}
with the MLPs, {metrics['ce_spliced']:.4f} with the transcoders, {metrics['ce_zero']:.4f} with the MLPs' outputs zeroed).

FVE = 1 − Σ‖y − ŷ‖² / Σ‖y − mean y‖² of the MLP's output; L0 = features active per token; dead = share of
features active on no held-out token; loss recovered = (CE_zero − CE_spliced) / (CE_zero − CE_gpt).

## Training
`{metrics['command']}`: {metrics['steps']:,} steps of {metrics['batch']:,} tokens per layer
({metrics['train_tokens']:,} training tokens, each used {metrics['reuse']} times), {metrics['train_minutes']:.1f} minutes
of wall time on a shared 2-core CPU, one thread; every figure above is in `metrics.json`.
"""


# ---------------------------------------------------------------- the command ----------------

def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpt", default="gpt", help="the GPT: 'gpt' (shipped) or a checkpoint folder")
    p.add_argument("--width", type=int, default=2048, help="features per layer")
    p.add_argument("--k", type=int, default=32, help="features active per token")
    p.add_argument("--minutes", type=float, default=60.0, help="training wall time, over all resumed runs")
    p.add_argument("--windows", type=int, default=32, help="windows of text per chunk")
    p.add_argument("--reuse", type=int, default=4, help="times each chunk's tokens are trained on")
    p.add_argument("--batch", type=int, default=2048)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-windows", type=int, default=64, help="held-out windows the figures are measured on")
    p.add_argument("--save-every", type=float, default=120.0, help="seconds between saves of the resumable state")
    p.add_argument("--threads", type=int, default=1, help="torch threads (the machine is shared)")
    p.add_argument("--describe", action="store_true",
                   help="only (re)build the saved transcoders' feature dashboards and card in --out, no training")
    p.add_argument("--out", default=None, help="output folder (default <GPT checkpoint>/transcoders)")
    p.add_argument("--device", default=None)
    return p.parse_args(argv)


def main(argv=None) -> dict:
    from toyviz.data import shakespeare

    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    start = time.time()
    log = lambda msg: print(f"[{time.time() - start:6.0f} s] {msg}", flush=True)
    gpt = load(args.gpt, resolve_device(args.device))
    if 2 * args.width * gpt.config.d_model * 2 >= 0.95 * MAX_FILE_BYTES:
        raise SystemExit(f"{args.width:,} features do not fit a 10 MiB file even in float16")
    dtype = torch.float32 if 2 * args.width * gpt.config.d_model * 4 < 0.95 * MAX_FILE_BYTES else torch.float16
    out = Path(args.out) if args.out else Path(gpt.source) / FOLDER
    train_text, held_text = shakespeare.split(shakespeare.load_works())
    x, y = held_out_windows(torch.tensor(gpt.tokenizer.encode(held_text)), gpt.bos, gpt.config.context)
    if args.describe:
        save_dashboards(out, describe(gpt, TranscoderSet.load(out, str(gpt.device)), x))
        log(f"described the features of {out} on {x[:, 1:].numel():,} held-out tokens")
        metrics = json.loads((out / "metrics.json").read_text())
        (out / "README.md").write_text(card(metrics))                 # the card names the dashboards
        return metrics
    train_ids = torch.tensor(gpt.tokenizer.encode(train_text), dtype=torch.int32)
    transcoders, facts = train(gpt, train_ids, width=args.width, k=args.k, minutes=args.minutes,
                               windows=args.windows, batch=args.batch, reuse=args.reuse, lr=args.lr, seed=args.seed,
                               resume=out / "resume.pt", save_every=args.save_every, log=log)
    measured = evaluate(gpt, transcoders, x[: args.eval_windows], y[: args.eval_windows])
    metrics = {"width": args.width, "k": args.k, **measured, **facts, "batch": args.batch, "reuse": args.reuse,
               "dtype": str(dtype).removeprefix("torch."), "gpt": args.gpt,
               "command": " ".join(["python -m toyviz.transcoders", *argv])}
    transcoders.save(out, dtype)
    save_dashboards(out, describe(gpt, transcoders, x))
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2))
    (out / "README.md").write_text(card(metrics))
    (out / "resume.pt").unlink(missing_ok=True)
    too_big = [f.name for f in out.rglob("*") if f.is_file() and f.stat().st_size >= MAX_FILE_BYTES]
    if too_big:
        raise SystemExit(f"{', '.join(too_big)} in {out} reached 10 MiB")
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items() if k != "layers"}))
    return metrics

