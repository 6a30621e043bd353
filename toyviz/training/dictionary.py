"""Features, not neurons: train a sparse autoencoder on the GPT and describe every feature it finds.

    toyviz features [--site block1.resid_post] [--width 2048] [--k 32] [--minutes 10] [--out DIR]

reads the GPT's activations at a site (toyviz.interpret.sites) on random windows of its training text,
trains a TopK sparse autoencoder on them (toyviz.interpret.sae), measures it on held-out text (Hamlet and
Twelfth Night, which the GPT never saw), builds every feature's dashboard (toyviz.interpret.dashboards) and
saves it all in <checkpoint>/features/. The last line printed is one JSON object:

- fve: the share of the site's variance on held-out tokens that the reconstruction explains,
  1 − Σ‖x − x̂‖² / Σ‖x − mean x‖²;
- ce_recovered: (CE_zero − CE_sae) / (CE_zero − CE_gpt), where CE is the GPT's next-token loss on
  held-out text with the site's activations as they are (gpt), replaced by the reconstruction
  (sae) or by zeros (zero): 1 = nothing lost, 0 = as bad as removing the site;
- l0: features active per token, on average (at most k);
- dead: the share of features active on no held-out token.

A window's first position, its BOS, is left out everywhere (training, metrics, dashboards) and is
never replaced: it is one and the same vector in every window, so it would only add one easy point.
The saved dictionary is read back by toyviz.interpret.dictionary (`toyviz.load_features`).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from toyviz.interpret import sites
from toyviz.api import GPT, load, resolve_device
from toyviz.interpret.dashboards import Dashboards, build, logit_effects
from toyviz.interpret.dictionary import FOLDER
from toyviz.interpret.sae import SAEConfig, SparseAutoencoder
from toyviz.training.batches import gpt_batch

MAX_FILE_BYTES = 10 * 2 ** 20      # the repository keeps every file under 10 MiB
LR_DECAY = 0.2                     # the learning rate falls linearly to 0 over this last share of training
DEAD_AFTER = 200_000               # training tokens without firing after which a feature counts as dead
LOG_EVERY = 100


# ---------------------------------------------------------------- activations ----------------

def held_out_windows(ids: torch.Tensor, bos: int, context: int) -> tuple[torch.Tensor, torch.Tensor]:
    """ids (N,) → inputs and targets (W, context): whole windows, each read as BOS + all but its
    last token, as toyviz.evaluate reads held-out text (the last, partial window is dropped)."""
    y = ids[: len(ids) // context * context].view(-1, context).long()
    return torch.cat([torch.full((len(y), 1), bos), y[:, :-1]], dim=1), y


@torch.no_grad()
def collect(model, site: sites.Site, x: torch.Tensor, batch: int = 16, dtype=torch.float32) -> torch.Tensor:
    """Input windows (W, T) → the site's activations (W, T, width), on the CPU."""
    device = model.tok_emb.weight.device
    return torch.cat([sites.read(model, x[i: i + batch].to(device), site).to("cpu", dtype)
                      for i in range(0, len(x), batch)])


def training_windows(gpt: GPT, text: str, tokens: int, seed: int) -> torch.Tensor:
    """Random windows of the training text, BOS first, as the GPT was trained: (tokens / (T−1), T)."""
    ids = torch.tensor(gpt.tokenizer.encode(text), dtype=torch.int32)
    context = gpt.config.context
    n = math.ceil(tokens / (context - 1))
    return gpt_batch(ids, gpt.bos, n, context, torch.Generator().manual_seed(seed))[0]


# ---------------------------------------------------------------- training -------------------

def train(acts: torch.Tensor, config: SAEConfig, *, minutes: float | None = None, steps: int | None = None,
          batch: int = 4096, lr: float = 1e-3, seed: int = 0, device="cpu", log=print
          ) -> tuple[SparseAutoencoder, dict]:
    """Train on activations (N, d) (kept where they are; each batch goes to `device`), shuffled each
    pass, for `steps` steps or `minutes` of wall time (the learning rate decays over the last LR_DECAY
    of either) → (autoencoder in eval mode, facts)."""
    if (minutes is None) == (steps is None):
        raise ValueError("give either minutes or steps")
    torch.manual_seed(seed)
    sae = SparseAutoencoder(config).to(device)
    with torch.no_grad():
        sae.b_dec.copy_(acts.float().mean(0))                        # the decoder bias starts at the data's mean
    opt = torch.optim.Adam(sae.parameters(), lr=lr, eps=6.25e-10)
    idle = torch.zeros(config.width, dtype=torch.long, device=device)   # tokens since each feature last fired
    order, at, step, start = torch.randperm(len(acts)), 0, 0, time.time()
    while True:
        progress = step / steps if steps else (time.time() - start) / (60 * minutes)
        if progress >= 1:
            break
        for group in opt.param_groups:
            group["lr"] = lr * min(1.0, (1 - progress) / LR_DECAY)
        if at + batch > len(order):
            order, at = torch.randperm(len(acts)), 0
        x = acts[order[at: at + batch]].to(device).float()
        at += batch
        _, values, indices, loss = sae(x, dead=idle >= DEAD_AFTER)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        sae.remove_parallel_gradient()
        opt.step()
        sae.normalise_decoder()
        idle += len(x)
        idle[indices[values > 0]] = 0
        step += 1
        if step % LOG_EVERY == 0:
            log(f"step {step}: loss {loss.item():.4f}, dead {int((idle >= DEAD_AFTER).sum())}, "
                f"{time.time() - start:.0f} s")
    return sae.eval(), {"steps": step, "tokens_seen": step * batch, "train_minutes": (time.time() - start) / 60}


# ---------------------------------------------------------------- measuring ------------------

@torch.no_grad()
def encode_all(sae: SparseAutoencoder, acts: torch.Tensor, chunk: int = 8192):
    """Activations (N, d) → the features kept per token, activations and ids (N, k), and the squared
    error of each token's reconstruction (N,)."""
    values, indices, errors = [], [], []
    for x in acts.split(chunk):
        x = x.to(sae.W_dec.device)
        v, i = sae.encode(x)
        errors.append((x - sae.decode(v, i)).pow(2).sum(-1).cpu())
        values.append(v.cpu())
        indices.append(i.cpu())
    return torch.cat(values), torch.cat(indices), torch.cat(errors)


def keep_bos(replace):
    """A site replacement that leaves the first position (BOS) as it was."""
    def replaced(a):                                                 # (B, T, d)
        out = replace(a)
        return torch.cat([a[:, :1], out[:, 1:]], dim=1)
    return replaced


@torch.no_grad()
def losses(gpt: GPT, sae: SparseAutoencoder, site: sites.Site, x: torch.Tensor, y: torch.Tensor,
           batch: int = 8) -> dict[str, float]:
    """Mean next-token loss over windows x, y (W, T) with the site as it is, reconstructed, and zeroed."""
    model, device = gpt.model, gpt.device
    reconstruct = lambda a: sae.decode(*sae.encode(a.flatten(0, 1))).view_as(a)
    runs = {"gpt": None, "sae": keep_bos(reconstruct), "zero": keep_bos(torch.zeros_like)}
    totals = dict.fromkeys(runs, 0.0)
    for i in range(0, len(x), batch):
        xb, yb = x[i: i + batch].to(device), y[i: i + batch].to(device)
        for name, replace in runs.items():
            logits = model(xb)[0] if replace is None else sites.splice(model, xb, site, replace)
            totals[name] += float(F.cross_entropy(logits.flatten(0, 1).float(), yb.flatten(), reduction="sum"))
    return {f"ce_{name}": total / y.numel() for name, total in totals.items()}


def stream_directions(gpt: GPT, sae: SparseAutoencoder, site: sites.Site) -> torch.Tensor:
    """Every feature's direction as the vector it adds to the stream after its block (F, d_model)."""
    return torch.stack([sites.stream_vector(gpt.model, site, d) for d in sae.W_dec.detach()])


@torch.no_grad()
def describe(gpt: GPT, sae: SparseAutoencoder, site: sites.Site, x: torch.Tensor) -> tuple[Dashboards, dict]:
    """Held-out input windows x (W, T) → every feature's dashboard, and the fraction of variance
    explained, L0 and dead share over their tokens (BOS left out)."""
    acts = collect(gpt.model, site, x).flatten(0, 1)                 # (W·T, d)
    values, indices, errors = encode_all(sae, acts)
    real = torch.arange(len(acts)) % x.shape[1] != 0                 # every token but a window's BOS
    kept = acts[real]
    active = torch.zeros(sae.config.width, dtype=torch.bool)
    active[indices[real][values[real] > 0]] = True
    quality = {"fve": 1 - float(errors[real].sum() / (kept - kept.mean(0)).pow(2).sum()),
               "l0": float((values[real] > 0).sum(-1).float().mean()), "dead": 1 - float(active.float().mean()),
               "held_out_tokens": int(real.sum())}
    effects = logit_effects(stream_directions(gpt, sae, site), gpt.model.ln_f.weight, gpt.model.head.weight)
    dashboards = build(x.flatten(), x.shape[1], indices, values, sae.config.width, effects.cpu(),
                       gpt.tokenizer.piece)
    return dashboards, quality


# ---------------------------------------------------------------- the command ----------------

def storage_dtype(config: SAEConfig):
    """float32 when the weights file stays under MAX_FILE_BYTES, else float16; SystemExit when neither does."""
    numbers = 2 * config.width * config.d_in                        # encoder and decoder
    if numbers * 4 < 0.95 * MAX_FILE_BYTES:
        return torch.float32
    if numbers * 2 < 0.95 * MAX_FILE_BYTES:
        return torch.float16
    fits = int(0.95 * MAX_FILE_BYTES / (2 * 2 * config.d_in))
    raise SystemExit(f"{config.width:,} features of {config.d_in:,} numbers do not fit in a 10 MiB file even in "
                     f"float16: choose --width {fits} or fewer")


def save(folder: Path, sae: SparseAutoencoder, dashboards: Dashboards, metrics: dict) -> None:
    sae.save(folder, storage_dtype(sae.config))
    dashboards.save(folder)
    (folder / "metrics.json").write_text(json.dumps(metrics, indent=2))
    too_big = [f.name for f in folder.iterdir() if f.stat().st_size >= MAX_FILE_BYTES]
    if too_big:
        raise SystemExit(f"{', '.join(too_big)} in {folder} reached 10 MiB: choose a smaller --width")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpt", default="gpt", help="the GPT: 'gpt' (shipped) or a checkpoint folder")
    p.add_argument("--site", default="block1.resid_post",
                   help="'block<layer>.resid_post' (the stream leaving a block) or 'block<layer>.mlp.hidden'")
    p.add_argument("--width", type=int, default=0, help="features (default 8 × the site's width)")
    p.add_argument("--k", type=int, default=32, help="features active per token")
    p.add_argument("--tokens", type=int, default=600_000, help="training activations to collect")
    p.add_argument("--minutes", type=float, default=10.0, help="training time (the whole run takes a few more)")
    p.add_argument("--steps", type=int, default=None, help="train for this many steps instead of --minutes")
    p.add_argument("--batch", type=int, default=4096)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ce-windows", type=int, default=64, help="held-out windows the loss is measured on")
    p.add_argument("--out", default=None, help="output folder (default <GPT checkpoint>/features)")
    p.add_argument("--device", default=None)
    return p.parse_args(argv)


def main(argv=None) -> dict:
    from toyviz.data import shakespeare

    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    start = time.time()
    log = lambda msg: print(f"[{time.time() - start:6.0f} s] {msg}", flush=True)
    gpt = load(args.gpt, resolve_device(args.device))
    site = sites.parse(args.site, gpt.config)
    width = args.width or 8 * site.width(gpt.config)
    config = SAEConfig(d_in=site.width(gpt.config), width=width, k=args.k, site=site.name)
    storage_dtype(config)                                            # fail now rather than after training
    train_text, held_text = shakespeare.split(shakespeare.load_works())
    windows = training_windows(gpt, train_text, args.tokens, args.seed)
    acts = collect(gpt.model, site, windows, dtype=torch.float16)[:, 1:].flatten(0, 1)   # BOS left out
    log(f"collected {len(acts):,} activations at {site.name}")
    sae, facts = train(acts, config, minutes=None if args.steps else args.minutes, steps=args.steps,
                       batch=args.batch, lr=args.lr, seed=args.seed, device=gpt.device, log=log)
    del acts
    x, y = held_out_windows(torch.tensor(gpt.tokenizer.encode(held_text)), gpt.bos, gpt.config.context)
    dashboards, quality = describe(gpt, sae, site, x)
    log(f"described {width:,} features on {quality['held_out_tokens']:,} held-out tokens")
    ce = losses(gpt, sae, site, x[: args.ce_windows], y[: args.ce_windows])
    metrics = {"site": site.name, "width": width, "k": args.k, "fve": quality["fve"],
               "ce_recovered": (ce["ce_zero"] - ce["ce_sae"]) / (ce["ce_zero"] - ce["ce_gpt"]), **ce,
               "l0": quality["l0"], "dead": quality["dead"], "train_tokens": len(windows) * (windows.shape[1] - 1),
               **facts, "held_out_tokens": quality["held_out_tokens"], "ce_tokens": int(y[: args.ce_windows].numel()),
               "minutes": (time.time() - start) / 60, "gpt": args.gpt,           # what toyviz.load was told, not this machine's path
               "command": " ".join(["python -m toyviz.features", *argv])}
    save(Path(args.out) if args.out else Path(gpt.source) / FOLDER, sae, dashboards, metrics)
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in metrics.items()}))
    return metrics

