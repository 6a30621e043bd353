"""3. Activation patching between a clean and a corrupted prompt: the clean residual stream at
each layer × position, and each head's output, patched into the corrupted run.

Patching shows where information that *distinguishes the two prompts* lives; it says nothing
about what the prompts share.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from toyviz.api import GPT
from toyviz.i18n import mistake
from toyviz.interpret.explain.prompt import capture, encode, heads_site, pick_token, resid_pre, run
from toyviz.models import names
from toyviz.models.names import Name


@dataclass(frozen=True)
class Pair:
    """A clean and a corrupted prompt of the same token length, and the answer each one predicts."""
    name: str
    clean: str
    corrupted: str
    clean_answer: str
    corrupted_answer: str


# Same token length and single-token answers under the shipped tokenizer, chosen on the shipped RoPE GPT so
# that the metric separates the prompts clearly (logit difference clean / corrupted): a name it copies from
# earlier in the line (+6.7 / +0.8), the verb that agrees with "thou" or "you" (+5.8 / −5.6: the answer flips),
# and "lord" or "lady" repeated from the line's start (+4.6 / +1.7). Where the corrupted prompt still prefers
# the clean answer, the metric is still normalised between the two runs: 0 = corrupted, 1 = clean.
PAIRS = (
    Pair("Who is addressed: a name swap", "Come, Kate, come. I will not go, good",
         "Come, Iago, come. I will not go, good", " Kate", " Iago"),
    Pair("Thou or you: the verb agrees", "Thou art a villain, and thou", "You are a villain, and you",
         " art", " are"),
    Pair("Lord or lady: a word from the line's start", "O my lord, my lord! What, my",
         "O my lady, my lady! What, my", " lord", " lady"),
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
    resid_names: list[Name]       # the sites "block0.resid_pre" … "block<L-1>.resid_pre", "final"
    resid: torch.Tensor           # [L+1, T] the clean stream at one site and one position
    heads: torch.Tensor           # [L, H] the clean output of one head at every position


def _pair_ids(gpt: GPT, clean: str, corrupted: str) -> tuple[list[int], list[int]]:
    a, b = encode(gpt, clean), encode(gpt, corrupted)
    if len(a) != len(b):
        raise mistake("errors.same_length", clean=len(a), corrupted=len(b))
    return a, b


def _cache(gpt: GPT, ids: list[int]) -> dict[str, torch.Tensor]:
    """The patchable points' values in one pass over ids: block{i}.resid_pre and final (1, T, C),
    block{i}.attn.heads (1, nh, T, hs)."""
    store: dict[str, torch.Tensor] = {}
    L = gpt.config.n_layer
    points = [resid_pre(i) for i in range(L)] + [heads_site(i) for i in range(L)] + [names.FINAL]
    run(gpt, ids, {k: v for point in points for k, v in capture(store, point).items()})
    return store


def patch_run(gpt: GPT, clean: str, corrupted: str, site: str, positions=None, head: int | None = None) -> torch.Tensor:
    """Logits [T, V] of the corrupted prompt with the clean value of `site` ("block<i>.resid_pre", "final",
    "block<i>.attn.heads") patched in at `positions` (default all); for heads, only head `head`
    (default all heads). One unbatched run, for checking the grids and for a what-if view."""
    site = names.parse(site)
    a, b = _pair_ids(gpt, clean, corrupted)
    value = _cache(gpt, a)[site]
    sel = slice(None) if positions is None else list(positions)

    def patch(t):
        t = t.clone()
        if site.point == "heads":
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
    final = names.FINAL
    ca = pick_token(gpt, clean_answer, model.head(model.ln_f(clean_cache[final]))[0, -1])
    cb = pick_token(gpt, corrupted_answer, model.head(model.ln_f(corr_cache[final]))[0, -1])
    if ca == cb:
        raise mistake("errors.same_answer", token=repr(gpt.tokenizer.piece(ca)))
    W = model.head.weight
    metric = lambda final: model.ln_f(final[:, -1]) @ (W[ca] - W[cb])   # (B, T, C) → (B,)
    m_clean, m_corr = float(metric(clean_cache[final])), float(metric(corr_cache[final]))
    if abs(m_clean - m_corr) < 1e-6:
        raise mistake("errors.same_metric")

    def final_stream(edits: dict) -> torch.Tensor:
        """The stream the final norm reads in the corrupted run with `edits` (a batch, one row per patch)."""
        seen: dict[str, torch.Tensor] = {}
        run(gpt, b, {**edits, **capture(seen, final)})
        return seen[final]

    T, H = len(a), gpt.config.n_head
    rows = torch.eye(T, dtype=torch.bool, device=gpt.device)[:, :, None]      # (T, T, 1) row r patches position r
    resid = []
    for i in range(L + 1):
        site = resid_pre(i) if i < L else final
        x = torch.where(rows, clean_cache[site], corr_cache[site])            # (T, T, C)
        resid.append(metric(final_stream({site: lambda t, x=x: x}) if i < L else x))
    head_rows = torch.eye(H, dtype=torch.bool, device=gpt.device)[:, :, None, None]   # (H, H, 1, 1)
    heads = [metric(final_stream({heads_site(i): lambda y, i=i: torch.where(head_rows, clean_cache[heads_site(i)], y)}))
             for i in range(L)]                                               # row h: head h given its clean output
    norm = lambda m: ((torch.stack(m).double() - m_corr) / (m_clean - m_corr)).float()
    return Patching(gpt.tokenizer.pieces(a), gpt.tokenizer.pieces(b), ca, cb, m_clean, m_corr,
                    [resid_pre(i) for i in range(L)] + [final], norm(resid), norm(heads))
