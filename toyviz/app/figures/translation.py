"""Translation tab: which source words each output word looks at (cross-attention), the
encoder's and decoder's self-attention, the candidates the decoder weighed at each step, and
which source words each output word depends on (saliency) beside its cross-attention."""
from __future__ import annotations

import plotly.graph_objects as go

from toyviz.i18n import t
from toyviz.app.figures import figure, heatmap, numpy, style, subplots, token_labels, visible
from toyviz.app.figures.attention import attention_figure, masked
from toyviz.interpret.explain.translation import SourceSaliency
from toyviz.models.trace import TranslatorTrace

KINDS = ("cross", "encoder", "decoder")


def _select(stack, layer: int | None, head: int | None):
    """[L, H, Tq, Tk] → one head, or the mean over heads (head=None) and/or layers (layer=None)."""
    stack = stack.float()
    stack = stack.mean(0) if layer is None else stack[layer]
    return stack.mean(0) if head is None else stack[head]


def where(layer: int | None, head: int | None) -> str:
    """Which map is shown: "layer 1, mean over heads", in the event's language."""
    return t("figures.translation.where", layer=t("figures.translation.layer", layer=layer) if layer is not None else
             t("figures.translation.mean_layers"),
             head=t("figures.translation.head", head=head) if head is not None else t("figures.translation.mean_heads"))


def translation_attention(trace: TranslatorTrace, kind: str = "cross", layer: int | None = None,
                          head: int | None = None, *, projector: bool = False, register: str = "") -> go.Figure:
    """One attention map of the translator: "cross" (each output token → source tokens: the
    learned alignment), "encoder" (source ↔ source) or "decoder" (output → earlier outputs,
    future greyed); layer/head None averages over them. `register` names the Spanish asked for in the
    title, in the event's language (the source's register token is a column of the map)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    src, out = token_labels(trace.src_tokens), token_labels(trace.output_tokens)
    stack, rows, cols = {"cross": (trace.cross_attention, out, src),
                         "encoder": (trace.encoder_attention, src, src),
                         "decoder": (trace.decoder_attention, token_labels(trace.tgt_tokens),
                                     token_labels(trace.tgt_tokens))}[kind]
    z = masked(_select(stack, layer, head), causal=kind == "decoder")
    into = t("figures.translation.into", register=register) if register else ""
    return attention_figure(z, rows=rows, cols=cols, title=t(f"figures.translation.{kind}", into=into,
                                                              where=where(layer, head)),
                            filename=f"toyviz-{kind}-attention-L{'all' if layer is None else layer}"
                                     f"-H{'all' if head is None else head}", projector=projector)


def decoding_candidates(trace: TranslatorTrace, piece, *, n: int = 5, projector: bool = False) -> go.Figure:
    """At each output position, the decoder's n most likely tokens and their probabilities (the
    chosen one in bold), to show how sure it was and what it almost said. `piece(id)` names a target token."""
    probs = trace.logits.float().softmax(-1)
    values, ids = probs.topk(min(n, probs.shape[-1]), dim=-1)          # [T, n]
    shown = lambda t, i: (f"<b>{visible(piece(i))}</b>" if piece(i) == trace.output_tokens[t] else visible(piece(i)))
    text = [[shown(t, int(i)) for i in row] for t, row in enumerate(ids)]
    fig = figure(heatmap(numpy(values), x=[f"#{r + 1}" for r in range(ids.shape[1])],
                         y=token_labels(trace.output_tokens), colorscale="Blues", zmin=0, zmax=1, text=text, texttemplate="%{text}",
                         hover=t("figures.hover.candidate"), colorbar_title="p"))
    fig.update_layout(yaxis_title_text=t("figures.translation.output_position"), yaxis_autorange="reversed",
                      xaxis_side="top")
    return style(fig, t("figures.translation.candidates"), filename="toyviz-decoding-candidates",
                 projector=projector, height=min(200 + 26 * ids.shape[0], 1400))


def saliency_beside_attention(s: SourceSaliency, *, compared: str, projector: bool = False) -> go.Figure:
    """Left: how much each output token's log-probability depends on each source token (|gradient ×
    input|, each row scaled to its largest); right: the cross-attention `compared` names. Where the two
    maps differ, the attention map is not the explanation."""
    src, out = token_labels(s.source), token_labels(s.output)
    magnitude = s.saliency.abs()
    scaled = magnitude / magnitude.max(-1, keepdim=True).values.clamp_min(1e-12)
    fig = subplots(rows=1, cols=2, shared_yaxes=True, horizontal_spacing=0.06,
                   subplot_titles=(t("figures.translation.saliency"), t("figures.translation.compared", compared=compared)))
    fig.add_trace(heatmap(scaled, x=src, y=out, colorscale="Greens", zmin=0, zmax=1, showscale=False,
                          hover=t("figures.hover.depends")), 1, 1)
    fig.add_trace(heatmap(s.attention, x=src, y=out, colorscale="Blues", zmin=0, zmax=1,
                          colorbar_title=t("figures.translation.attention"),
                          hover=t("figures.hover.attends")), 1, 2)
    fig.update_yaxes(autorange="reversed", title_text=t("figures.translation.output_token"), col=1)
    fig.update_xaxes(title_text=t("figures.translation.source_token"))
    return style(fig, t("figures.translation.agree", agreement=f"{s.agreement:.2f}", top_match=f"{s.top_match:.0%}"),
                 filename="toyviz-translation-saliency", projector=projector, height=220 + 22 * len(out))
