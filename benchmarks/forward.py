"""The GPT's forward against the floor: a reference of the same shape written the nanoGPT way, one process.

    python -m benchmarks.forward [--quick] [--checkpoint gpt] [--T 128] [--threads 2] [--repeats N]

The reference (below, `Reference`) is nanoGPT's model.py with rotary positions: one fused QKV matmul
(`c_attn`), rotate-half with cos/sin cached once as buffers, `F.scaled_dot_product_attention(is_causal=True)`,
a GELU MLP, the tied head, logits at every position. It loads the shipped checkpoint's own file
(model.safetensors): q, k, v concatenated into `c_attn` at load, and each head's q/k rows reordered from the
interleaved pairs (2i, 2i+1) the shipped weights rotate into rotate-half's halves (i, i + hs/2), as
transformers' Llama conversion does; the same rotary, so its logits are the shipped model's (printed:
reference_max_abs_diff).

Printed as one JSON line, each the median over interleaved repeats (a machine busy with other work slows
every contender alike, so the ratios hold where the absolute times do not):
- plain_vs_reference: `model(idx)` (no hooks) / the reference, at T positions, B = 1
- traced_vs_reference: `model.trace(ids)` (every hook point recorded, the Trace built) / the reference
- pattern_vs_reference: a forward recording only every layer's attention pattern / the reference
Targets (issue 54): plain ≤ 1.05×, traced ≤ 1.2× on 2 threads.
"""
import argparse
import json
import statistics
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from safetensors.torch import load_file

import toyviz
from benchmarks.core import interleaved
from toyviz.models.checkpoint import resolve
from toyviz.models import names
from toyviz.serving.memory import settle_allocator


# ---------------------------------------------------------------- the reference: nanoGPT's model.py + RoPE ------

class CausalSelfAttention(nn.Module):
    def __init__(self, d_model: int, n_head: int, context: int, base: float = 10000.0):
        super().__init__()
        self.n_head, self.d_head = n_head, d_model // n_head
        self.c_attn = nn.Linear(d_model, 3 * d_model)                   # q, k, v in one matmul
        self.c_proj = nn.Linear(d_model, d_model)
        inv_freq = base ** (-torch.arange(0, self.d_head, 2).float() / self.d_head)
        angles = torch.arange(context).float()[:, None] * inv_freq       # (context, hs/2)
        self.register_buffer("cos", angles.cos().repeat(1, 2))          # (context, hs): halves alike
        self.register_buffer("sin", angles.sin().repeat(1, 2))

    def rotate(self, x, T):  # (B, nh, T, hs): each (i, i + hs/2) pair turned by its angle
        x1, x2 = x.chunk(2, dim=-1)
        return x * self.cos[:T] + torch.cat((-x2, x1), dim=-1) * self.sin[:T]

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, self.d_head).transpose(1, 2)      # (B, nh, T, hs)
        k = k.view(B, T, self.n_head, self.d_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, self.d_head).transpose(1, 2)
        q, k = self.rotate(q, T), self.rotate(k, T)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(B, T, C)                # re-assemble heads
        return self.c_proj(y)


class MLP(nn.Module):
    def __init__(self, d_model: int, d_ff: int):
        super().__init__()
        self.c_fc, self.c_proj = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x)))


class RefBlock(nn.Module):
    def __init__(self, d_model: int, n_head: int, d_ff: int, context: int):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.attn, self.mlp = CausalSelfAttention(d_model, n_head, context), MLP(d_model, d_ff)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class Reference(nn.Module):
    def __init__(self, vocab_size: int, d_model: int, n_layer: int, n_head: int, d_ff: int, context: int):
        super().__init__()
        self.wte = nn.Embedding(vocab_size, d_model)
        self.h = nn.ModuleList(RefBlock(d_model, n_head, d_ff, context) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight                           # tied

    def forward(self, idx):
        x = self.wte(idx)                                               # (B, T, C)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))                               # (B, T, V)


def halves(w: torch.Tensor, n_head: int) -> torch.Tensor:
    """q or k rows (nh·hs, …) with each head's interleaved pairs (2i, 2i+1) moved to (i, i + hs/2)."""
    heads = w.unflatten(0, (n_head, -1, 2))                             # (nh, hs/2, 2, …)
    return heads.transpose(1, 2).flatten(0, 2)


def load_reference(folder: Path) -> Reference:
    """The reference with the weights of the checkpoint folder's model.safetensors (a pre-norm RoPE GPT)."""
    c = json.loads((folder / "config.json").read_text())
    c = c.get("config", c)
    assert c["positional"] == "rope" and c["norm"] == "pre" and c["feed_forward"] == "gelu", c
    d_ff = c["d_ff"] or 4 * c["d_model"]
    ref = Reference(c["vocab_size"], c["d_model"], c["n_layer"], c["n_head"], d_ff, c["context"])
    sd = {k: v.float() for k, v in load_file(str(folder / "model.safetensors")).items()}
    nh = c["n_head"]
    mine = {"wte.weight": sd["head.weight"], "ln_f.weight": sd["ln_f.weight"], "ln_f.bias": sd["ln_f.bias"]}
    for i in range(c["n_layer"]):
        p, r = f"blocks.{i}.", f"h.{i}."
        for part in ("weight", "bias"):
            mine[r + "attn.c_attn." + part] = torch.cat((halves(sd[p + "attn.q." + part], nh),
                                                         halves(sd[p + "attn.k." + part], nh),
                                                         sd[p + "attn.v." + part]))
            for theirs, ours in (("attn.c_proj", "attn.o"), ("mlp.c_fc", "mlp.up"), ("mlp.c_proj", "mlp.down"),
                                 ("ln_1", "ln1"), ("ln_2", "ln2")):
                mine[r + theirs + "." + part] = sd[p + ours + "." + part]
    mine["lm_head.weight"] = mine["wte.weight"]
    missing, unexpected = ref.load_state_dict(mine, strict=False)
    assert not unexpected and all(m.endswith(("cos", "sin")) for m in missing), (missing, unexpected)
    return ref.eval()


# ---------------------------------------------------------------- timing ------

def pattern_hooks(n_layer: int) -> dict:
    """Hooks that keep every layer's attention pattern (the cheapest look inside: the Attention tab's)."""
    kept = {}
    return {names.part(names.attn(i), "pattern"): (lambda t, i=i: kept.__setitem__(i, t)) for i in range(n_layer)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", default="gpt")
    parser.add_argument("--T", type=int, default=128, help="positions a forward reads (default 128)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.add_argument("--repeats", type=int, default=0, help="interleaved rounds (default 200, --quick 10)")
    parser.add_argument("--quick", action="store_true", help="few rounds (CI: the benchmark runs, figures are rough)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    allocator = "server" if settle_allocator() else "default"
    gpt = toyviz.load(args.checkpoint, device="cpu")
    model = gpt.model
    folder = resolve(args.checkpoint)
    ref = load_reference(folder)
    T = min(args.T, model.config.context)
    ids = torch.randint(0, model.config.vocab_size, (T,), generator=torch.Generator().manual_seed(0)).tolist()
    idx = torch.tensor([ids])
    hooks = pattern_hooks(model.config.n_layer)
    repeats = args.repeats or (10 if args.quick else 200)
    with torch.inference_mode():
        diff = float((ref(idx) - model(idx)[0]).abs().max())
        times = interleaved({"reference": lambda: ref(idx), "plain": lambda: model(idx),
                             "traced": lambda: model.trace(ids), "pattern": lambda: model(idx, hooks=hooks)},
                            repeats, warm_ups=2)
    med = {name: statistics.median(t) for name, t in times.items()}
    # the ratio of each round's pair, then its median: steadier than a ratio of medians on a shared machine
    ratio = {name: statistics.median(a / b for a, b in zip(times[name], times["reference"]))
             for name in ("plain", "traced", "pattern")}
    print(json.dumps({
        "T": T, "threads": torch.get_num_threads(), "allocator": allocator, "repeats": repeats,
        "reference_ms": round(med["reference"] * 1e3, 3), "plain_ms": round(med["plain"] * 1e3, 3),
        "traced_ms": round(med["traced"] * 1e3, 3), "pattern_ms": round(med["pattern"] * 1e3, 3),
        "plain_vs_reference": round(med["plain"] / med["reference"], 3),
        "traced_vs_reference": round(med["traced"] / med["reference"], 3),
        "pattern_vs_reference": round(med["pattern"] / med["reference"], 3),
        "paired": {name: round(r, 3) for name, r in ratio.items()},
        "reference_max_abs_diff": diff, "quick": args.quick}))


if __name__ == "__main__":
    main()
