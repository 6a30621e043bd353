"""The Translate tab: the translation into the register chosen (today's Spanish or the 1909 Bible's), its
attention, the decoder's candidates, saliency beside attention."""
from __future__ import annotations

from toyviz.i18n import LANGUAGES, catalogue, mistake, t
from toyviz.api import REGISTER_NAMES
from toyviz.app.explorer import Explorer
from toyviz.app.figures import translation as translation_figs
from toyviz.settings.controls import clamp, settle


def translate_view(explorer: Explorer, text, beam=4, kind="cross", layer="average", head="average", projector=False,
                   register=None):
    if kind not in translation_figs.KINDS:        # a choice the page's radio offers; the API may send anything
        raise mistake("errors.attention_kind", kinds=", ".join(translation_figs.KINDS), given=repr(kind))
    beam, said = settle("beam", beam)              # the one rule: a beam past 8 is 8, said in the note
    register, register_note = chosen_register(explorer, register)
    out, note = explorer.translate(text, beam, register)
    note += said + register_note
    layer, layer_note = explorer.models.translator_layer(kind, layer)
    head = None if head in (None, "average") else clamp(head, 0, explorer.translator.config.n_head - 1, int, "head")
    # saliency is compared with the cross-attention on screen, or with its mean when another map is shown
    cross_layer, cross_head = (layer, head) if kind == "cross" else (None, None)
    compared = translation_figs.where(cross_layer, cross_head)
    return (note + layer_note, out.text,
            translation_figs.translation_attention(out.trace, kind, layer, head, projector=projector,
                                                   register=register_name(register)),
            translation_figs.decoding_candidates(out.trace, explorer.translator.tgt_tok.piece, projector=projector),
            translation_figs.saliency_beside_attention(explorer.caches.source_saliency(out, cross_layer, cross_head),
                                                       compared=compared, projector=projector))


def register_name(register: str) -> str:
    """A register's name ("today's Spanish") in the event's language."""
    key = f"figures.translation.register_{register}"
    return t(key) if key in catalogue(LANGUAGES[0]) else REGISTER_NAMES.get(register, register)


def chosen_register(explorer: Explorer, register) -> tuple[str, str]:
    """The register asked for, or the translator's default with a note: a checkpoint from before the registers
    writes the 1909 Bible's Spanish alone, and a value from the API may be no register at all → (register, note)."""
    registers = explorer.models.need_translator().registers
    if register is None:                            # the translator's default: today's Spanish where it has it
        return registers[0], ""
    if isinstance(register, str) and register in registers:
        return register, ""
    if isinstance(register, str) and register in REGISTER_NAMES:
        return registers[0], t("notes.translation.one_register", trained=register_name(registers[0]),
                               asked=register_name(register))
    return registers[0], t("notes.translation.unknown_register", registers=", ".join(map(repr, REGISTER_NAMES)),
                           shown=register_name(registers[0]))
