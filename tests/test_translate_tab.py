"""The Translate tab's register choice: today's Spanish or the 1909 Bible's, the same sentence's attention under
each, and a checkpoint from before the registers (1909 only) answering with a note. Tiny models: no Gradio."""
import numpy as np

from toyviz.app.explorer import Explorer
from toyviz.app.views.translation import translate_view

SENTENCE = "In the beginning God created the heavens."


def test_each_register_is_the_translation_and_cross_attention_of_its_source_token(registered_translator):
    ex = Explorer(None, registered_translator)
    shown = {}
    for register in ("today", "1909"):
        note, text, cross, *_ = translate_view(ex, SENTENCE, 2, "cross", "average", "average", False, register)
        done = registered_translator.translate(SENTENCE, 2, register=register)
        assert note == "" and text == done.text
        assert cross.data[0].x[-2].endswith(f"&lt;|{register}|&gt;")          # the register token is a column
        assert ("today's Spanish" if register == "today" else "the 1909 Bible") in cross.layout.title.text
        assert np.allclose(np.nan_to_num(np.asarray(cross.data[0].z, dtype=float)),
                           done.trace.cross_attention.float().mean((0, 1)), atol=1e-5)
        shown[register] = done.trace.src_ids
    assert shown["today"][:-2] == shown["1909"][:-2] and shown["today"][-2] != shown["1909"][-2]
    assert translate_view(ex, SENTENCE, 2)[1] == registered_translator.translate(SENTENCE, 2, register="today").text
    assert ex.translate(SENTENCE, 2)[0].trace.src_ids == shown["today"]             # today's Spanish by default


def test_a_1909_only_translator_answers_in_the_1909_register_and_says_so(tiny_translator):
    ex = Explorer(None, tiny_translator)
    note, text, *_ = translate_view(ex, SENTENCE, 1, "cross", "average", "average", False, "today")
    assert "trained for the 1909 Bible only" in note
    assert text == tiny_translator.translate(SENTENCE, 1).text
    assert translate_view(ex, SENTENCE, 1, "cross", "average", "average", False, "1909")[0] == ""
    assert translate_view(ex, SENTENCE, 1)[0] == ""                            # its default: no note
    for junk in ("1492", ["today"], 3.5):
        assert "The register is one of" in translate_view(ex, SENTENCE, 1, "cross", "average", "average", False, junk)[0]


def test_the_page_selects_the_translators_default_register(tiny_translator, registered_translator):
    assert Explorer(None, registered_translator).models.sizes().translator_registers[0] == "today"
    assert Explorer(None, tiny_translator).models.sizes().translator_registers == ("1909",)
