"""Why this token? Evidence for one GPT prediction, each piece checked against the model.

Four methods, plain functions on a loaded `toyviz.api.GPT` (no figures, no UI):

1. `components` — direct logit attribution (DLA) of the embedding, every head and every MLP to
   the chosen token's logit minus the *mean logit*, then a real ablation (zero and mean) of the
   top components, with the rank correlation between the two.
2. `saliency` — gradient × input and integrated gradients of the chosen token's logit with
   respect to the token embeddings, one number per input token.
3. `patching` — activation patching between a clean and a corrupted prompt: the clean residual
   stream at each layer × position, and each head's output, patched into the corrupted run.
4. `build_index` / `where_from` — how often the last n = 1…4 tokens followed by the predicted token
   occur in the training text (a sorted n-gram index over token ids).

What each can claim, in one line each (the docstrings say more):
- DLA is linear: it splits this pass's logit exactly, but a part's share is not what removing
  the part would do (the final norm's scale is frozen, later layers would react). Ablation is
  what removing it does, on this one prompt, and "zero" and "mean" are two different removals.
- Saliency is local (gradient × input) or path-dependent (integrated gradients: the answer
  depends on the baseline). Neither says the model "looks at" a token.
- Patching shows where information that *distinguishes the two prompts* lives; it says nothing
  about what the prompts share.
- n-gram counts show what the training text makes plausible; the model need not have used them.
- Attention weights are none of the above: attention is not explanation.

The patched and ablated runs are composed here from the model's own modules (its blocks, norms,
projections), so no model file changes and no hooks are registered: a shared model stays safe
to use from other threads while these functions run. They expect the model in eval mode (as
`toyviz.load` returns it): dropout is not re-created here.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
import torch.nn.functional as F

from . import names
from .api import GPT, PromptError
from .layers import apply_rope, rope_angles

Edit = Callable[[torch.Tensor], torch.Tensor]
KINDS = ("zero", "mean")


# ------------------------------------------------------------------ the forward, from the model's pieces ----
# Edit points (the names an `edits` dict may use):
#   "resid_pre.<i>"  the stream entering block i           (B, T, C)
#   "attn.<i>.heads" block i's per-head outputs before W_O  (B, nh, T, hs)
#   "mlp.<i>"        block i's feed-forward write           (B, T, C)
#   "final"          the stream the final norm reads        (B, T, C)

def resid_pre(layer: int) -> str:
    return f"resid_pre.{layer}"


def heads_site(layer: int) -> str:
    return f"{names.attn(layer)}.heads"


def _inputs(model, idx: torch.Tensor):
    """idx (B, T) → token embeddings (B, T, C) as the model scales them, the positional vectors
    (T, C) or None, and the RoPE angles (T, hs/2) or None."""
    positions = torch.arange(idx.shape[1], device=idx.device)
    tok = model.tok_emb(idx) * model.embed_scale
    rope = rope_angles(positions, model.config.d_head) if model.config.positional == "rope" else None
    return tok, model.positional(positions), rope


def _embed(model, idx: torch.Tensor):
    """idx (B, T) → the stream entering block 0 (B, T, C) and the RoPE angles."""
    tok, pos, rope = _inputs(model, idx)
    return model.drop(tok if pos is None else tok + pos), rope


def _attention(attn, h: torch.Tensor, *, causal: bool, rope, edit: Edit | None) -> torch.Tensor:
    """MultiHeadAttention.forward without cache/padding, with an edit of the heads' outputs:
    h (B, T, C) → (B, T, C)."""
    B, T, C = h.shape
    q, k, v = (attn._heads(lin(h)) for lin in (attn.q, attn.k, attn.v))   # (B, nh, T, hs)
    if rope is not None:
        q, k = apply_rope(q, rope), apply_rope(k, rope)
    mask = torch.ones(T, T, dtype=torch.bool, device=h.device).tril()[None, None] if causal and T > 1 else None
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)             # (B, nh, T, hs)
    if edit is not None:
        y = edit(y)
    return attn.o(y.transpose(1, 2).reshape(B, T, C))


def _sublayer(block, x, fn, norm):
    """Block._sublayer without recording: pre-norm x + f(norm(x)), post-norm norm(x + f(x))."""
    if block.pre_norm:
        return x + block.drop(fn(norm(x)))
    return norm(x + block.drop(fn(x)))


def _block(model, i: int, x, *, rope, edits: dict[str, Edit]):
    """Block i on x (B, T, C). Without an edit inside it, the model's own Block.forward runs."""
    block, causal = model.blocks[i], model.config.causal
    attn_edit, mlp_edit = edits.get(heads_site(i)), edits.get(names.mlp(i))
    if attn_edit is None and mlp_edit is None:
        return block(x, index=i, causal=causal, rope=rope, cache=None, ablate=None, rec=None)
    attn = lambda h: _attention(block.attn, h, causal=causal, rope=rope, edit=attn_edit)
    x = _sublayer(block, x, attn, block.ln1)
    mlp = block.mlp if mlp_edit is None else (lambda h: mlp_edit(block.mlp(h)))
    return _sublayer(block, x, mlp, block.ln2)


def _stream(model, x, *, rope, edits: dict[str, Edit] | None = None, start: int = 0):
    """The stream entering block `start` (B, T, C) → the stream the final norm reads (B, T, C)."""
    edits = edits or {}
    for i in range(start, len(model.blocks)):
        if resid_pre(i) in edits:
            x = edits[resid_pre(i)](x)
        x = _block(model, i, x, rope=rope, edits=edits)
    return edits["final"](x) if "final" in edits else x


def _logits(model, final):
    """Final stream (B, T, C) → logits (B, T, V)."""
    return model.head(model.ln_f(final))


def run(gpt: GPT, ids: list[int], edits: dict[str, Edit] | None = None) -> torch.Tensor:
    """Logits [T, V] of one forward pass over ids with `edits` applied (see the edit points above).
    Without edits this is the model's own forward (same modules, same order)."""
    idx = torch.tensor([ids], device=gpt.device)
    with torch.no_grad():
        x, rope = _embed(gpt.model, idx)
        return _logits(gpt.model, _stream(gpt.model, x, rope=rope, edits=edits))[0]


def _capture(store: dict, key: str) -> Edit:
    def keep(t):
        store[key] = t
        return t
    return keep


def _replace(value: torch.Tensor | None, kind: str) -> Edit:
    """An edit that zeroes its tensor, replaces it by its mean over positions (dim -2), or by `value`."""
    if kind == "zero":
        return torch.zeros_like
    if kind == "mean":
        return lambda t: t.mean(dim=-2, keepdim=True).expand_as(t)
    return lambda t: value.expand_as(t)


# ------------------------------------------------------------------ helpers ----

def _encode(gpt: GPT, text: str) -> list[int]:
    return gpt.encode(text)[0]


def _token(gpt: GPT, token, logits: torch.Tensor) -> int:
    """None → the top token of `logits`; a string → its single token id; an int → checked id."""
    if token is None:
        return int(logits.argmax())
    if isinstance(token, str):
        ids = gpt.tokenizer.encode(token)
        if len(ids) != 1:
            raise PromptError(f"{token!r} is {len(ids)} tokens ({gpt.tokenizer.pieces(ids)}); pick one token")
        return ids[0]
    if not 0 <= int(token) < gpt.config.vocab_size:
        raise PromptError(f"token id {token} is outside the vocabulary (0…{gpt.config.vocab_size - 1})")
    return int(token)


def _position(position: int, T: int) -> int:
    if not -T <= position < T:
        raise PromptError(f"position {position} is outside the prompt's {T} tokens")
    return position % T


def ranks(x) -> np.ndarray:
    """Ranks 0…n-1 of x, ties sharing their mean rank."""
    x = np.asarray(x, dtype=np.float64)
    r = np.empty(len(x))
    r[x.argsort(kind="stable")] = np.arange(len(x))
    _, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    return np.bincount(inverse, weights=r)[inverse] / counts[inverse]


def spearman(a, b) -> float:
    """Spearman rank correlation (Pearson of the ranks); nan for fewer than 3 points or a constant side."""
    if len(a) < 3:
        return float("nan")
    ra, rb = ranks(a), ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denom = math.sqrt((ra * ra).sum() * (rb * rb).sum())
    return float((ra * rb).sum() / denom) if denom > 0 else float("nan")


# ------------------------------------------------------------------ 1. components, verified ----

@dataclass
class Components:
    """Direct logit attribution of every write, and real ablations of the top ones.

    target = logit(token) − mean logit over the vocabulary at `position`. The attributions sum to
    it exactly. For the verified components, `effect[k, j]` is log p(token) in the clean pass minus
    log p(token) with component k removed by KINDS[j] ("zero", "mean"): positive = it helped.
    `effect_target` is the same change measured on the target, in the attribution's own units.
    """
    tokens: list[str]
    position: int
    token: int
    piece: str
    target: float
    logprob: float
    names: list[str]              # "embed", "L0 H0" …, "L0 attn bias", "mlp.0" …, "ln_f β"
    attribution: torch.Tensor     # [N] sums to target
    verified: list[str]           # top_k of embed/heads/MLPs by |attribution|
    verified_attribution: torch.Tensor   # [k]
    effect: torch.Tensor          # [k, 2] drop in log p(token): zero, mean ablation
    effect_target: torch.Tensor   # [k, 2] drop in the target
    spearman: tuple[float, float] # rank correlation of attribution and effect (zero, mean)

    def disagreements(self, kind: str = "zero") -> list[str]:
        """Verified components whose ablation moved log p(token) against their attribution's sign."""
        e = self.effect[:, KINDS.index(kind)]
        return [n for n, a, d in zip(self.verified, self.verified_attribution, e) if float(a) * float(d) < 0]


@torch.no_grad()
def attribution(trace, model, position: int, token: int) -> tuple[list[str], torch.Tensor]:
    """(names, [N]) direct contributions to logit(token) − mean logit at `position`.

    The final norm is LN(x) = γ ⊙ (x − mean x) / σ(x) + β and the logit difference is u · LN(x)
    with u = W_U[token] − mean_v W_U[v] (the head has no bias). σ is frozen at the clean pass's
    value (as TransformerLens does), so each write p contributes (γ ⊙ u) · (p − mean p) / σ and β
    contributes u · β. An attention write is split into its heads' writes plus W_O's bias, kept
    as its own term ("L<i> attn bias": it belongs to no head). Exact for this pass, linear by
    construction: removing a write would change σ and every later layer, which DLA ignores.
    """
    ln = trace.layernorms[names.LN_F]
    W = model.head.weight.double()
    u = W[token] - W.mean(0)                                          # (C,)
    direction = ln["weight"].double() * u / ln["std"][position].double()
    labels, vectors = [], []                                          # vectors: each (C,)
    for name, part in trace.residual_parts.items():
        parsed = names.parse(name)
        if parsed.kind == "attn":
            for h in range(trace.n_head):
                labels.append(f"L{parsed.layer} H{h}")
                vectors.append(trace.head_writes[parsed.layer, h, position])
            labels.append(f"L{parsed.layer} attn bias")
            # the Trace stores the biases concatenated ([L·C], though its comment says [L, C])
            vectors.append(trace.attn_out_bias[parsed.layer])
        else:
            labels.append(name)
            vectors.append(part[position])
    v = torch.stack(vectors).double()                                 # (N, C)
    contrib = (v - v.mean(-1, keepdim=True)) @ direction              # (N,)
    return labels + ["ln_f β"], torch.cat([contrib, (u @ ln["bias"].double())[None]])


def _ablation(gpt: GPT, label: str, kind: str) -> tuple[dict, dict]:
    """A component's label → (the forward's `ablate` for a head, or edits for embed/MLP)."""
    if label.startswith("L"):                                         # "L1 H3"
        layer, head = (int(s[1:]) for s in label.split())
        return gpt.ablation([(layer, head)], kind), {}
    site = resid_pre(0) if label == names.EMBED else label            # "mlp.2" is its own edit point
    return {}, {site: _replace(None, kind)}


def ablated_logits(gpt: GPT, ids: list[int], label: str, kind: str) -> torch.Tensor:
    """Logits [T, V] with one component removed: a head through the model's own `ablate` argument;
    the embedding (the stream entering block 0) or an MLP's write zeroed or replaced by its mean
    over positions, in the forward composed from the model's modules (`run`)."""
    ablate, edits = _ablation(gpt, label, kind)
    if ablate:
        with torch.no_grad():
            return gpt.model(torch.tensor([ids], device=gpt.device), ablate=ablate)[0][0]
    return run(gpt, ids, edits)


@torch.no_grad()
def components(gpt: GPT, text: str, token=None, *, position: int = -1, top_k: int | None = 8) -> Components:
    """Attribute, then verify: DLA of every write, and zero/mean ablation of the top_k embed/head/MLP
    components by |attribution| (None: all of them). Biases and β are attributed, never ablated.

    Can claim: how much each write adds to the target in this pass (exact, linear), and how much
    log p(token) really drops without each verified component. Cannot claim: that the ranking would
    hold on another prompt, or that components act alone (ablating two at once is not the sum).
    """
    ids = _encode(gpt, text)
    trace = gpt.model.trace(ids, pieces=gpt.tokenizer.pieces)
    p = _position(position, len(ids))
    logits = trace.logits[p]                                          # (V,)
    tok = _token(gpt, token, logits)
    labels, attr = attribution(trace, gpt.model, p, tok)
    ablatable = [i for i, n in enumerate(labels) if n == names.EMBED or n.startswith("mlp.") or " H" in n]
    ablatable.sort(key=lambda i: -abs(float(attr[i])))
    chosen = ablatable[:top_k] if top_k is not None else ablatable
    clean_lp, clean_t = _logprob_and_target(logits, tok)
    effect, effect_t = torch.zeros(len(chosen), 2), torch.zeros(len(chosen), 2)
    for k, i in enumerate(chosen):
        for j, kind in enumerate(KINDS):
            lp, t = _logprob_and_target(ablated_logits(gpt, ids, labels[i], kind)[p], tok)
            effect[k, j], effect_t[k, j] = clean_lp - lp, clean_t - t
    va = attr[chosen].float()
    return Components(trace.tokens, p, tok, gpt.tokenizer.piece(tok), clean_t, clean_lp, labels, attr.float(),
                      [labels[i] for i in chosen], va, effect, effect_t,
                      (spearman(va, effect[:, 0]), spearman(va, effect[:, 1])))


def _logprob_and_target(logits: torch.Tensor, token: int) -> tuple[float, float]:
    """logits (V,) → (log p(token), logit(token) − mean logit)."""
    logits = logits.double()
    return float(logits.log_softmax(-1)[token]), float(logits[token] - logits.mean())


# ------------------------------------------------------------------ 2. input saliency ----

@dataclass
class Saliency:
    """Per input token: gradient × input and integrated gradients of logit(token) at `position`.

    Both are taken with respect to the *token* embedding (scaled as the model scales it); the
    positional vectors stay as they are, in the input and in the baseline, so the numbers say how
    much each token's identity matters, not its place. Tokens after `position` get exactly 0 in
    a causal model. `gap` = |Σ integrated − (logit − baseline_logit)| / |logit − baseline_logit|.
    """
    tokens: list[str]
    position: int
    token: int
    piece: str
    grad_x_input: torch.Tensor    # [T] Σ_d ∂logit/∂e_t,d · e_t,d at the input
    integrated: torch.Tensor      # [T] Σ_d (e − b)_t,d · ∫ ∂logit/∂e_t,d along the straight path
    logit: float
    baseline_logit: float
    gap: float
    baseline: str
    steps: int


def _baseline(gpt: GPT, tok: torch.Tensor, baseline: str) -> torch.Tensor:
    """tok (1, T, C) → the baseline token embeddings (1, T, C): BOS's at every position, or zeros."""
    if baseline == "zero":
        return torch.zeros_like(tok)
    if baseline == "bos":
        bos = gpt.model.tok_emb.weight[gpt.bos] * gpt.model.embed_scale
        return bos.expand_as(tok)
    raise PromptError(f"baseline must be 'bos' or 'zero', not {baseline!r}")


@torch.inference_mode(False)                                          # gradients, even if the caller is in inference mode
def saliency(gpt: GPT, text: str, token=None, *, position: int = -1, steps: int = 32,
             baseline: str = "bos") -> Saliency:
    """Gradient × input, and integrated gradients from `baseline` ("bos": the BOS token's embedding
    at every position, so the BOS position itself always scores 0; "zero": no token at all) in
    `steps` trapezoid steps (steps + 1 gradients, one batched forward and backward).

    Can claim: integrated gradients split logit(input) − logit(baseline) among the input tokens
    (completeness; `gap` says how well `steps` achieve it). Cannot claim: that the split is unique
    (another baseline gives another split), or that a token with a small score is unused —
    gradient × input is a first-order, local measure and saturates.
    """
    if steps < 1:
        raise PromptError("steps must be 1 or more")
    model, ids = gpt.model, _encode(gpt, text)
    idx = torch.tensor([ids], device=gpt.device)
    p = _position(position, len(ids))
    with torch.no_grad():
        tok, pos, rope = _inputs(model, idx)                          # (1, T, C), (T, C)|None
        base = _baseline(gpt, tok, baseline)
        target = _token(gpt, token, run(gpt, ids)[p])
        alphas = torch.linspace(0, 1, steps + 1, device=tok.device)[:, None, None]
        path = (base + alphas * (tok - base)).detach()                # (S+1, T, C), path[-1] is the input
    with torch.enable_grad():
        path.requires_grad_(True)
        x = path if pos is None else path + pos
        final = _stream(model, x, rope=rope)[:, p]                    # (S+1, C)
        logit = model.head(model.ln_f(final))[:, target]              # (S+1,)
        grads, = torch.autograd.grad(logit.sum(), path)               # (S+1, T, C)
    logit = logit.detach()
    w = torch.full((steps + 1,), 1.0 / steps, device=tok.device)
    w[0] = w[-1] = 0.5 / steps                                        # trapezoid rule
    integrated = ((tok - base)[0] * torch.einsum("s,std->td", w, grads)).sum(-1)   # (T,)
    grad_x_input = (tok[0] * grads[-1]).sum(-1)                                  # (T,)
    diff = float(logit[-1] - logit[0])
    gap = abs(float(integrated.sum()) - diff) / abs(diff) if diff else float(abs(integrated.sum()))
    return Saliency(gpt.tokenizer.pieces(ids), p, target, gpt.tokenizer.piece(target), grad_x_input.detach(),
                    integrated.detach(), float(logit[-1]), float(logit[0]), gap, baseline, steps)


# ------------------------------------------------------------------ 3. activation patching ----

@dataclass(frozen=True)
class Pair:
    """A clean and a corrupted prompt of the same token length, and the answer each one predicts."""
    name: str
    clean: str
    corrupted: str
    clean_answer: str
    corrupted_answer: str


# Same token length and single-token answers under the shipped tokenizer. Chosen on the sinusoidal GPT,
# where each answer was its prompt's top-1; the RoPE GPT shipped after it prefers the clean answer on both
# prompts of every pair, so the pairs must be chosen again before a tab offers them.
PAIRS = (
    Pair("Who is addressed: a name swap", "Come, Kate, come. I will not go, good",
         "Come, Iago, come. I will not go, good", " Kate", " Iago"),
    Pair("Which duke: a title swap", "The Duke of York is dead, and the Duke of",
         "The Duke of Suffolk is dead, and the Duke of", " York", " Suffolk"),
    Pair("Who speaks next: a speaker-name swap", "Enter BRUTUS and CASSIUS.\n\nBRUTUS.\nGood night.\n\n",
         "Enter BRUTUS and CASSIUS.\n\nCASSIUS.\nGood night.\n\n", "BRUTUS", "CASSIUS"),
)


@dataclass
class Patching:
    """Normalised effect of patching clean activations into the corrupted run, on the metric
    m = logit(clean_answer) − logit(corrupted_answer) at the last position:
    (m_patched − m_corrupted) / (m_clean − m_corrupted), 0 = corrupted, 1 = clean."""
    clean_tokens: list[str]
    corrupted_tokens: list[str]
    clean_answer: int
    corrupted_answer: int
    clean_metric: float
    corrupted_metric: float
    resid_names: list[str]        # "resid_pre.0" … "resid_pre.<L-1>", "final"
    resid: torch.Tensor           # [L+1, T] the clean stream at one site and one position
    heads: torch.Tensor           # [L, H] the clean output of one head at every position


def _pair_ids(gpt: GPT, clean: str, corrupted: str) -> tuple[list[int], list[int]]:
    a, b = _encode(gpt, clean), _encode(gpt, corrupted)
    if len(a) != len(b):
        raise PromptError(f"the prompts must have the same number of tokens: clean has {len(a)}, "
                          f"corrupted has {len(b)}")
    return a, b


def _cache(gpt: GPT, ids: list[int]) -> dict[str, torch.Tensor]:
    """Every edit point's value in one pass over ids: resid_pre.i and final (1, T, C),
    attn.i.heads (1, nh, T, hs)."""
    store: dict[str, torch.Tensor] = {}
    L = gpt.config.n_layer
    sites = [resid_pre(i) for i in range(L)] + [heads_site(i) for i in range(L)] + ["final"]
    run(gpt, ids, {s: _capture(store, s) for s in sites})
    return store


def patch_run(gpt: GPT, clean: str, corrupted: str, site: str, positions=None, head: int | None = None) -> torch.Tensor:
    """Logits [T, V] of the corrupted prompt with the clean value of `site` ("resid_pre.<i>", "final",
    "attn.<i>.heads") patched in at `positions` (default all); for heads, only head `head`
    (default all heads). One unbatched run, for checking the grids and for a what-if view."""
    a, b = _pair_ids(gpt, clean, corrupted)
    value = _cache(gpt, a)[site]
    sel = slice(None) if positions is None else list(positions)

    def patch(t):
        t = t.clone()
        if site.endswith(".heads"):
            hs = slice(None) if head is None else head
            t[:, hs, sel] = value[:, hs, sel]
        else:
            t[:, sel] = value[:, sel]
        return t
    return run(gpt, b, {site: patch})


@torch.no_grad()
def patching(gpt: GPT, clean: str, corrupted: str, clean_answer=None, corrupted_answer=None) -> Patching:
    """Patch the clean residual stream into the corrupted run at every (site, position), and each
    head's clean output (all positions) into it, one batched pass per layer.

    Answers default to each prompt's top token; a string answer must be one token.
    Can claim: which activations carry what differs between the prompts, towards the metric.
    Cannot claim: what the shared parts of the prompts do, or that a site with effect ≈ 0 is
    unused (another pair could need it); patching one site at a time misses redundant routes.
    """
    model, L = gpt.model, gpt.config.n_layer
    a, b = _pair_ids(gpt, clean, corrupted)
    clean_cache, corr_cache = _cache(gpt, a), _cache(gpt, b)
    ca = _token(gpt, clean_answer, _logits(model, clean_cache["final"])[0, -1])
    cb = _token(gpt, corrupted_answer, _logits(model, corr_cache["final"])[0, -1])
    if ca == cb:
        raise PromptError(f"both prompts predict {gpt.tokenizer.piece(ca)!r}: name two different answers")
    W = model.head.weight
    metric = lambda final: model.ln_f(final[:, -1]) @ (W[ca] - W[cb])   # (B, T, C) → (B,)
    m_clean, m_corr = float(metric(clean_cache["final"])), float(metric(corr_cache["final"]))
    if abs(m_clean - m_corr) < 1e-6:
        raise PromptError("the metric is the same on both prompts: nothing to patch")
    T, rope = len(a), _embed(model, torch.tensor([a], device=gpt.device))[1]
    eye = torch.eye(T, dtype=torch.bool, device=gpt.device)[:, :, None]      # (T, T, 1) row r patches position r
    resid = []
    with torch.no_grad():
        for i in range(L + 1):
            site = resid_pre(i) if i < L else "final"
            x = torch.where(eye, clean_cache[site], corr_cache[site])        # (T, T, C)
            resid.append(metric(_stream(model, x, rope=rope, start=i) if i < L else x))
        heads = [metric(_heads_patched(gpt, i, clean_cache, corr_cache, rope)) for i in range(L)]
    norm = lambda m: ((torch.stack(m).double() - m_corr) / (m_clean - m_corr)).float()
    return Patching(gpt.tokenizer.pieces(a), gpt.tokenizer.pieces(b), ca, cb, m_clean, m_corr,
                    [resid_pre(i) for i in range(L)] + ["final"], norm(resid), norm(heads))


def _heads_patched(gpt: GPT, layer: int, clean_cache, corr_cache, rope) -> torch.Tensor:
    """Final streams (H, T, C) of the corrupted run with head h of `layer` given its clean output in row h."""
    H = gpt.config.n_head
    eye = torch.eye(H, dtype=torch.bool, device=gpt.device)[:, :, None, None]  # (H, H, 1, 1)
    clean_out = clean_cache[heads_site(layer)]                                 # (1, H, T, hs)
    edit = lambda y: torch.where(eye, clean_out, y)                            # y (H, H, T, hs)
    x = corr_cache[resid_pre(layer)].expand(H, -1, -1)
    return _stream(gpt.model, x, rope=rope, edits={heads_site(layer): edit}, start=layer)


# ------------------------------------------------------------------ 4. where it comes from ----

@dataclass(frozen=True)
class NgramIndex:
    """Every corpus position sorted by the `width` tokens that start there, packed `bits` per token
    into one integer: the k-grams (k ≤ width) with a given prefix are one contiguous range, found by
    binary search. The last width − 1 positions (no full window) are checked directly."""
    ids: np.ndarray       # [N] the corpus, token ids
    order: np.ndarray     # [N − width + 1] int32 positions, sorted by their key
    keys: np.ndarray      # [N − width + 1] uint64 packed windows, sorted
    width: int
    bits: int


def build_index(ids, width: int = 5) -> NgramIndex:
    """Token ids [N] → an NgramIndex answering k-gram counts for k ≤ width (5 = 4 context + 1)."""
    ids = np.asarray(ids, dtype=np.int64)
    bits = max(1, int(ids.max()).bit_length()) if len(ids) else 1
    if bits * width > 64:
        raise ValueError(f"{width} tokens of {bits} bits do not fit one 64-bit key")
    n = max(0, len(ids) - width + 1)
    keys = np.zeros(n, dtype=np.uint64)
    for j in range(width):                                            # key = Σ ids[i+j] << bits·(width−1−j)
        keys = (keys << np.uint64(bits)) | ids[j: j + n].astype(np.uint64)
    order = np.argsort(keys, kind="stable").astype(np.int32)
    return NgramIndex(ids.astype(np.int32), order, keys[order], width, bits)


def occurrences(index: NgramIndex, gram) -> np.ndarray:
    """Every position (sorted) where the token sequence `gram` (1 ≤ len ≤ width) starts in the corpus."""
    gram = [int(t) for t in gram]
    k = len(gram)
    if not 1 <= k <= index.width:
        raise ValueError(f"an n-gram of this index has 1…{index.width} tokens, not {k}")
    if any(t < 0 or t >= 1 << index.bits for t in gram):
        return np.zeros(0, dtype=np.int64)
    lo = 0
    for t in gram:
        lo = (lo << index.bits) | t
    shift = index.bits * (index.width - k)
    lo, hi = lo << shift, (lo + 1) << shift                           # the prefix's key range [lo, hi)
    i = np.searchsorted(index.keys, np.uint64(lo), "left")
    j = len(index.keys) if hi >= 2 ** 64 else np.searchsorted(index.keys, np.uint64(hi), "left")
    found = index.order[i:j].astype(np.int64)
    N = len(index.ids)
    tail = [s for s in range(len(index.keys), N - k + 1) if index.ids[s: s + k].tolist() == gram]
    return np.sort(np.concatenate([found, np.asarray(tail, dtype=np.int64)]))


@dataclass
class Ngram:
    """The last n context tokens, how often they occur in the corpus, and how often the predicted token follows."""
    n: int
    context: list[int]
    context_count: int
    count: int                    # occurrences of context + [token]
    examples: list[int]           # corpus positions where context + [token] starts (spread out)

    @property
    def share(self) -> float:
        """count / context_count: the corpus's own next-token frequency after this context."""
        return self.count / self.context_count if self.context_count else float("nan")


def where_from(index: NgramIndex, context: list[int], token: int, max_n: int = 4, examples: int = 3) -> list[Ngram]:
    """For n = 1…max_n: counts of the last n context tokens, and of them followed by `token`, with up
    to `examples` positions spread over the corpus. Pass the context without BOS (the corpus has none).

    Can claim: how often the training text continues this context this way. Cannot claim that the
    model memorised or used those lines: a count of 0 for n = 4 is normal, and the model generalises.
    """
    out = []
    for n in range(1, min(max_n, len(context), index.width - 1) + 1):
        ctx = list(context[-n:])
        hits = occurrences(index, ctx + [token])
        pick = hits[np.linspace(0, len(hits) - 1, min(examples, len(hits))).round().astype(int)] if len(hits) else hits
        out.append(Ngram(n, ctx, len(occurrences(index, ctx)), len(hits), [int(p) for p in pick]))
    return out


def example_text(tokenizer, index: NgramIndex, position: int, n: int, before: int = 12, after: int = 6):
    """(text before, the matched n tokens, text after) around a corpus position, cut at line breaks;
    `tokenizer` is the GPT's (gpt.tokenizer)."""
    ids = index.ids
    left = tokenizer.decode(ids[max(0, position - before): position].tolist())
    match = tokenizer.decode(ids[position: position + n].tolist())
    right = tokenizer.decode(ids[position + n: position + n + after].tolist())
    return left.rsplit("\n", 1)[-1], match, right.split("\n", 1)[0]


def corpus_ids(gpt: GPT) -> np.ndarray:
    """The training token ids of the shipped GPT: the trainer's cache (cache_dir()/tokens) if there,
    else the Shakespeare training text encoded now (fetched on first use). Only for a GPT trained on
    the default corpus; a round trip through this GPT's tokenizer checks that the ids are its own."""
    import json
    from pathlib import Path

    from .data import cache_dir
    facts = Path(gpt.source) / "training.json"
    if facts.is_file() and json.loads(facts.read_text()).get("text_source"):
        raise PromptError("this GPT was trained on a user's text: build the index from that text's ids")
    cached = cache_dir() / "tokens" / f"shakespeare-{gpt.config.vocab_size}-train.pt"
    if cached.is_file():
        ids = torch.load(cached).numpy()
    else:
        from .data import shakespeare
        ids = np.asarray(gpt.tokenizer.encode(shakespeare.split(shakespeare.load_works())[0]), dtype=np.int32)
    head = ids[:2000].tolist()                                        # the cut may re-split the last word
    if gpt.tokenizer.encode(gpt.tokenizer.decode(head))[:1900] != head[:1900]:
        raise PromptError("the cached training ids do not match this GPT's tokenizer")
    return ids


# ------------------------------------------------------------------ benchmark ----

BENCH_TEXT = ("KING RICHARD.\nNorfolk, for thee remains a heavier doom,\nWhich I with some unwillingness pronounce:\n"
              "The sly slow hours shall not determinate\nThe dateless limit of thy dear exile;\nThe hopeless word of "
              "'never to return'\nBreathe I against thee, upon pain of life.\n\nMOWBRAY.\nA heavy sentence, my most "
              "sovereign liege,\nAnd all unlook'd for from your highness' mouth")
BENCH_PAIR = tuple(f"The Duke of {name} is dead, my lord, and the Duke of Gloucester shall be king in England; "
                   f"and so, my good lord, the Duke of" for name in ("York", "Suffolk"))   # 32 tokens each


def bench(gpt: GPT | None = None, repeats: int = 3) -> dict[str, float]:
    """Print (and return) median wall times on this machine: a 64-token prompt through components
    (top 8 verified), saliency (integrated gradients, 32 steps) and an n-gram query; patching a
    32-token pair over all layers × positions and all heads. A plain forward pass is timed too, as
    the yardstick when the machine is busy with something else."""
    import statistics

    from . import load
    gpt = gpt or load("gpt", device="cpu")
    text64 = gpt.tokenizer.decode(_encode(gpt, BENCH_TEXT)[1:64])
    ids64 = _encode(gpt, text64)
    times = {}

    def timed(name, fn):
        fn()                                                          # warm-up
        runs = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            runs.append(time.perf_counter() - t0)
        times[name] = statistics.median(runs)
    timed(f"plain forward ({len(ids64)} tokens)", lambda: run(gpt, ids64))
    timed(f"components ({len(ids64)} tokens, top 8)", lambda: components(gpt, text64))
    timed(f"saliency ({len(ids64)} tokens, IG 32 steps)", lambda: saliency(gpt, text64))
    t0 = time.perf_counter()
    index = build_index(corpus_ids(gpt))
    times[f"n-gram index build, once ({len(index.ids):,} tokens)"] = time.perf_counter() - t0
    timed("n-gram query (n = 1…4)", lambda: where_from(index, ids64[1:], ids64[-1]))
    timed(f"patching ({len(_encode(gpt, BENCH_PAIR[0]))}-token pair)",
          lambda: patching(gpt, *BENCH_PAIR, " York", " Suffolk"))
    times["components + saliency + query"] = sum(
        v for k, v in times.items() if k.startswith(("components", "saliency", "n-gram query")))
    print(f"torch threads: {torch.get_num_threads()}")
    for k, v in times.items():
        print(f"{k:48s} {v * 1000:8.1f} ms")
    return times


if __name__ == "__main__":
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bench", action="store_true", help="time the methods on the shipped GPT")
    parser.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: torch's default)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.bench:
        bench()
    else:
        parser.print_help()
