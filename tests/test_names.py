"""Activation names: every name the models make parses back to what made it, and the strings
(which figures, tests and deep links show) stay as they were."""
import pytest

from toyviz.models import names
from toyviz.models.config import TranslatorConfig
from toyviz.models.translator import ToyTranslator


@pytest.mark.parametrize("stack", ["", names.ENCODER, names.DECODER])
@pytest.mark.parametrize("layer", [0, 3, 11])
def test_made_names_parse_back_to_their_parts(stack, layer):
    made = {"attn": names.attn(layer), "cross": names.cross(layer), "mlp": names.mlp(layer),
            "norm.attn": names.post_norm(names.attn(layer)), "norm.mlp": names.post_norm(names.mlp(layer)),
            **{which: names.norm(layer, which) for which in names.NORMS}}
    for kind, name in made.items():
        assert names.parse(stack + name) == names.Name(stack, kind, layer)
        assert names.layer_of(stack + name) == layer
    for name in (names.EMBED, names.LN_F):
        assert names.parse(stack + name) == names.Name(stack, name, None)


def test_the_strings_are_the_ones_figures_and_links_show():
    assert [names.attn(2), names.cross(2), names.mlp(2)] == ["attn.2", "cross.2", "mlp.2"]
    assert [names.norm(0, w) for w in names.NORMS] == ["block0.ln1", "block0.ln_cross", "block0.ln2"]
    assert names.post_norm("attn.0") == "norm.attn.0"
    assert names.DECODER + names.cross(1) == "dec.cross.1" and names.ENCODER + names.LN_F == "enc.ln_f"


def test_layer_of_puts_the_embedding_first_and_refuses_names_outside_the_blocks():
    assert names.layer_of("embed") == -1
    with pytest.raises(ValueError, match="no layer"):
        names.layer_of("ln_f")
    with pytest.raises(ValueError, match="ln1"):
        names.norm(0, "ln3")


def test_of_stack_keeps_one_stack_and_drops_its_prefix():
    entries = {"enc.attn.0": 1, "enc.ln_f": 2, "dec.attn.0": 3}
    assert names.of_stack(entries, names.ENCODER) == {"attn.0": 1, "ln_f": 2}
    assert names.of_stack(entries, "") == entries


def test_every_name_a_traced_translator_records_parses():
    """The models make their names with this module: all of them parse, into the stack and layer they came from."""
    model = ToyTranslator(TranslatorConfig(src_vocab_size=30, tgt_vocab_size=30, context=16, n_encoder_layer=2,
                                           n_decoder_layer=3, n_head=2, d_model=16, d_ff=32)).eval()
    tr = model.trace([3, 4, 5], [0, 6, 7])
    for stack, parts in ((names.ENCODER, tr.encoder_parts), (names.DECODER, tr.decoder_parts)):
        layers = [names.layer_of(n) for n in parts]
        assert layers == sorted(layers) and layers[0] == -1 and layers[-1] == (1 if stack == names.ENCODER else 2)
    for name in tr.layernorms:
        parsed = names.parse(name)
        assert parsed.stack in (names.ENCODER, names.DECODER)
        assert parsed.kind in names.NORMS + (names.LN_F,)
