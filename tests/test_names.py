"""Names: one grammar, made and parsed in toyviz.models.names. Every name the models make parses back
to its parts, the forms before issue 42 (deep links, shipped dictionaries) still open, a malformed
name is refused saying the grammar, and figures' labels are made from names."""
import pickle

import pytest

from toyviz.models import names
from toyviz.models.config import TranslatorConfig
from toyviz.models.translator import ToyTranslator


@pytest.mark.parametrize("stack", ["", names.ENCODER, names.DECODER])
@pytest.mark.parametrize("layer", [0, 3, 11])
def test_made_names_parse_back_to_their_parts(stack, layer):
    made = [names.attn(layer), names.cross(layer), names.mlp(layer), names.resid_pre(layer), names.resid_post(layer),
            names.hidden(layer), names.heads(names.attn(layer)), names.head(layer, 2),
            names.post_norm(names.mlp(layer)),
            *(names.part(names.cross(layer), p) for p in names.ATTENTION_PARTS),
            *(names.norm(layer, which) for which in names.NORMS), names.norm_input(names.norm(layer, "ln2"))]
    for name in made + [names.EMBED, names.TOKENS, names.FINAL, names.LN_F, names.norm_input(names.LN_F)]:
        inside = names.in_stack(stack, name)
        assert names.parse(str(inside)) == inside and isinstance(names.parse(str(inside)), names.Name)
        assert (inside.stack, inside.layer, inside.component, inside.point, inside.head) == \
            (stack, name.layer, name.component, name.point, name.head)
        assert pickle.loads(pickle.dumps(inside)).component == inside.component
    assert all(names.layer_of(name) == layer for name in made)


def test_the_grammar_reads_like_the_module_tree():
    assert [names.attn(2), names.cross(2), names.mlp(2), names.hidden(2)] == \
        ["block2.attn", "block2.cross", "block2.mlp", "block2.mlp.hidden"]
    assert [names.norm(0, w) for w in names.NORMS] == ["block0.ln1", "block0.ln_cross", "block0.ln2"]
    assert names.part(names.attn(1), "pattern") == "block1.attn.pattern" and names.head(1, 3) == "block1.attn.heads.3"
    assert names.post_norm(names.attn(0)) == "block0.ln1.change"
    assert names.in_stack(names.DECODER, names.cross(1)) == "dec.block1.cross"
    assert names.in_stack(names.ENCODER, names.LN_F) == "enc.ln_f"


@pytest.mark.parametrize("old, new", [
    ("attn.0", "block0.attn"), ("attn.3.pattern", "block3.attn.pattern"), ("attn.1.heads", "block1.attn.heads"),
    ("mlp.2", "block2.mlp"), ("mlp.1.hidden", "block1.mlp.hidden"), ("resid_pre.0", "block0.resid_pre"),
    ("resid_post.1", "block1.resid_post"), ("norm.attn.0", "block0.ln1.change"), ("norm.mlp.2", "block2.ln2.change"),
    ("dec.norm.cross.1", "dec.block1.ln_cross.change"), ("dec.cross.1.pattern", "dec.block1.cross.pattern"),
    ("block0.ln1", "block0.ln1"), ("enc.block1.ln2.input", "enc.block1.ln2.input"), ("embed", "embed"),
    ("embed.tokens", "embed.tokens"), ("final", "final"), ("ln_f", "ln_f"), ("ln_f.input", "ln_f.input")])
def test_the_old_forms_still_open(old, new):
    """Deep links, API calls and the shipped dictionary's config hold names in the forms before issue 42."""
    assert names.parse(old) == new


@pytest.mark.parametrize("text, says", [
    ("attn", "outside the blocks"), ("block0.attn.patern", "not 'patern'"), ("attn.0.hidden", "not 'hidden'"),
    ("block1.embed", "inside a block"), ("block1.mlp.hidden.2", "head's index"), ("norm.attn.0.q", "is not a name"), ("norm.resid_pre.0", "is not a name"),
    ("L1 H3.q", "is not a name"), ("ln_f β", "is not a name"), ("", "is not a name"),
    ("mid.block0.attn", "is not a name")])
def test_a_malformed_name_is_refused_saying_the_grammar(text, says):
    with pytest.raises(ValueError, match=says) as refused:
        names.parse(text)
    assert repr(text) in str(refused.value)


def test_a_label_is_the_name_itself_and_a_head_as_the_field_writes_it():
    assert [names.head(1, 3).label, names.part(names.attn(1), "bias").label, names.part(names.LN_F, "bias").label] == \
        ["L1 H3", "block1.attn.bias", "ln_f.bias"]
    assert [n.label for n in (names.EMBED, names.attn(0), names.mlp(2), names.resid_pre(0), names.FINAL)] == \
        ["embed", "block0.attn", "block2.mlp", "block0.resid_pre", "final"]
    assert names.post_norm(names.attn(0)).label == "block0.ln1.change" and names.norm(1, "ln2").label == "block1.ln2"
    assert names.in_stack(names.DECODER, names.part(names.cross(1), "pattern")).label == "dec.block1.cross.pattern"


def test_every_label_reads_back_as_its_name():
    shown = [names.head(1, 3), names.in_stack(names.DECODER, names.head(0, 2)), names.bias(names.LN_F),
             names.post_norm(names.mlp(1)), names.hidden(2), names.EMBED]
    assert [names.parse(n.label) for n in shown] == shown


def test_layer_of_puts_the_embedding_first_and_refuses_names_outside_the_blocks():
    assert names.layer_of("embed") == -1
    with pytest.raises(ValueError, match="no layer"):
        names.layer_of("ln_f")
    with pytest.raises(ValueError, match="ln1"):
        names.norm(0, "ln3")


def test_of_stack_keeps_one_stack_and_drops_its_prefix():
    entries = {"enc.block0.attn": 1, "enc.ln_f": 2, "dec.block0.attn": 3}
    assert names.of_stack(entries, names.ENCODER) == {"block0.attn": 1, "ln_f": 2}
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
        assert name.stack in (names.ENCODER, names.DECODER)
        assert name.component in names.NORMS + (names.LN_F,)
