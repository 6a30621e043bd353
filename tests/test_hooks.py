"""The one hook mechanism: an empty map changes nothing, reading changes nothing, every point the
forward passes has a name from toyviz.models.names, and edits act where their name says."""
import pytest
import torch

from conftest import tiny_gpt_config
from toyviz.models import names
from toyviz.models.gpt import ToyGPT
from toyviz.models.hooks import Record, ablation, chain, replace, steering

@pytest.fixture(params=[{}, {"positional": "rope", "norm": "post", "feed_forward": "swiglu"},
                        {"positional": "learned", "bias": False}])
def model(request):
    torch.manual_seed(0)
    return ToyGPT(tiny_gpt_config(97, **request.param)).eval()


def test_no_hooks_an_empty_map_and_hooks_that_only_read_leave_the_logits_bit_identical(model):
    idx = torch.randint(0, 97, (2, 11))
    plain = model(idx)[0]
    assert torch.equal(model(idx, hooks={})[0], plain)
    reads = {name: (lambda t: None) for name in (names.EMBED, names.resid_pre(1), names.heads(names.attn(0)),
                                                 names.mlp(1), names.FINAL)}
    assert torch.equal(model(idx, hooks=reads)[0], plain)


def test_recording_every_point_changes_the_logits_by_float_rounding_only(model):
    idx = torch.randint(0, 97, (1, 11))
    record = Record()
    recorded = model(idx, hooks=record)[0]            # the explicit attention path: same maths, other kernels
    torch.testing.assert_close(recorded, model(idx)[0], rtol=1e-5, atol=1e-5)
    unnamed = [name for name in record.values if not isinstance(name, names.Name) or names.parse(str(name)) != name
               or name.head is not None or name.point in ("bias", "change")]    # terms of attribution, not points
    assert not unnamed, unnamed
    L = model.config.n_layer
    for i in range(L):
        for point in (names.resid_pre(i), names.resid_post(i), names.heads(names.attn(i)), names.hidden(i)):
            assert point in record.values
    # the stream leaving a block is the stream entering the next
    assert torch.equal(record.values[names.resid_post(0)], record.values[names.resid_pre(1)])


def test_an_edit_acts_where_its_name_says(model):
    idx = torch.randint(0, 97, (1, 9))
    record = Record()
    model(idx, hooks=chain(replace(names.mlp(0), "zero"), record))
    assert torch.all(record.values[names.mlp(0)] == 0)                       # the edited write
    assert torch.any(record.values[names.attn(0)] != 0)                      # its neighbour untouched
    vector = torch.randn(model.config.d_model)
    plain, steered = Record(), Record()
    model(idx, hooks=plain)
    model(idx, hooks=chain(steering({0: vector}), steered))
    torch.testing.assert_close(steered.values[names.resid_pre(1)], plain.values[names.resid_post(0)] + vector)
    assert torch.equal(steered.values[names.resid_pre(0)], plain.values[names.resid_pre(0)])


def test_ablation_names_its_kind_and_heads_are_zeroed_where_the_trace_sees_them(model):
    with pytest.raises(ValueError, match="zero"):
        ablation({"attn.0": {0: "half"}})
    ids = torch.randint(0, 97, (8,)).tolist()
    trace = model.trace(ids, ablate={names.attn(1): {2: "zero"}})
    assert torch.all(trace.head_out[1, 2] == 0) and torch.any(trace.head_out[1, 1] != 0)


def test_the_translator_takes_the_same_hooks_under_its_stacks_prefix(tiny_translator):
    model = tiny_translator.model
    src, tgt = torch.randint(0, 50, (1, 7)), torch.randint(0, 50, (1, 5))
    plain = model(src, tgt)
    assert torch.equal(model(src, tgt, hooks={}), plain)
    record = Record()
    model(src, tgt, hooks=record)
    assert all(isinstance(name, names.Name) and name.stack in (names.ENCODER, names.DECODER) for name in record.values)
    assert {"enc.embed", "dec.block0.cross.pattern", "dec.final"} <= record.values.keys()
    zeroed = model(src, tgt, hooks=replace(names.in_stack(names.DECODER, names.cross(0)), "zero"))
    assert not torch.allclose(zeroed, plain)


def test_a_callers_hooks_may_use_the_old_names_and_a_malformed_one_is_refused(model):
    """Code and notebooks written before issue 42 keyed hooks "mlp.0", "attn.1.heads": they still act."""
    idx = torch.randint(0, 97, (1, 9))
    old, new = Record(), Record()
    model(idx, hooks=chain({"mlp.0": torch.zeros_like}, old))
    model(idx, hooks=chain(replace(names.mlp(0), "zero"), new))
    assert torch.equal(old.values[names.resid_post(1)], new.values[names.resid_post(1)])
    assert torch.equal(model(idx, hooks=ablation({"attn.1": {0: "zero"}}))[0],
                       model(idx, hooks=ablation({names.attn(1): {0: "zero"}}))[0])
    with pytest.raises(ValueError, match="'mlp.0.hiden' is not a name"):
        model(idx, hooks={"mlp.0.hiden": torch.zeros_like})
