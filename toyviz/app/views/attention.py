"""The Attention tab: every head's pattern, one head up close, the heads' labels, switching heads off."""
from __future__ import annotations

from toyviz.i18n import t
from toyviz.app.explorer import Explorer
from toyviz.app.figures import attention as attention_figs
from toyviz.app.views.text import gpt_only
from toyviz.interpret.heads import HeadLabel, general_label, label_heads, pattern_name, why_labels_differ


def head_table(labels: list[HeadLabel], profile: dict | None = None) -> str:
    """The automatic head labels on this prompt as a Markdown table; with a probe profile, each head's
    label over the probe set beside it (does it do this in general, or only here?)."""
    general = (lambda l: "") if profile is None else (lambda l: f" {general_label(profile, l.layer, l.head)} |")
    differ = (lambda l: "") if profile is None else (lambda l: t("notes.heads.unlike", why=why)
                                                     if (why := why_labels_differ(l, profile)) else "")
    rows = "\n".join(f"| {l.layer}.{l.head} | **{pattern_name(l.label)}** | {l.score:.2f} | {l.description}{differ(l)} |"
                     f"{general(l)}" for l in labels)
    extra = ("", "") if profile is None else (t("notes.heads.over_probes"), "---|")
    return t("notes.heads.header") + f"{extra[0]}\n|---|---|---|---|{extra[1]}\n" + rows


def attention_view(explorer: Explorer, prompt, layer=0, head=0, mode="probs", ablate=(), projector=False,
                   model="gpt"):
    tr, note = explorer.view(prompt, model)
    layer, head, said = explorer.models.layer_head(tr, layer, head)
    note += said
    labels = label_heads(tr)
    if model == "gpt":
        heads = explorer.models.ablated_heads(ablate)
        ablated = explorer.caches.trace(prompt, ablate=heads)[0] if heads else tr
        ablation = attention_figs.ablation_comparison(tr, ablated, explorer.gpt.tokenizer.piece, projector=projector)
    else:
        ablation = gpt_only("ablation", "ablation", "ablation", projector)
    return (note, attention_figs.attention_grid(tr, mode=mode, labels=labels, projector=projector),
            attention_figs.attention_head(tr, layer, head, mode=mode, projector=projector),
            head_table(labels, explorer.caches.head_profile() if model == "gpt" else None), ablation)
