"""The Translate tab: the translation, its attention, the decoder's candidates, saliency beside attention."""
from __future__ import annotations

from toyviz.app.explorer import Explorer
from toyviz.app.figures import translation as translation_figs
from toyviz.settings.controls import clamp


def translate_view(explorer: Explorer, text, beam=4, kind="cross", layer="average", head="average", projector=False):
    out, note = explorer.translate(text, beam)
    layer, layer_note = explorer.translator_layer(kind, layer)
    head = None if head in (None, "average") else clamp(head, 0, explorer.translator.config.n_head - 1, int, "head")
    # saliency is compared with the cross-attention on screen, or with its mean when another map is shown
    cross_layer, cross_head = (layer, head) if kind == "cross" else (None, None)
    compared = (f"layer {cross_layer}" if cross_layer is not None else "mean over layers") + ", " + \
               (f"head {cross_head}" if cross_head is not None else "mean over heads")
    return (note + layer_note, out.text,
            translation_figs.translation_attention(out.trace, kind, layer, head, projector=projector),
            translation_figs.decoding_candidates(out.trace, explorer.translator.tgt_tok.piece, projector=projector),
            translation_figs.saliency_beside_attention(explorer.source_saliency(out, cross_layer, cross_head),
                                                       compared=compared, projector=projector))
