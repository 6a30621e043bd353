"""count_parameters takes what toyviz.load returns (a GPT or Translator wrapper), not only configs and modules."""
import pytest

import toyviz
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.models.size import count_parameters


def _shipped(kind):
    return pytest.mark.skipif(not (CHECKPOINTS / kind / "config.json").is_file(),
                              reason=f"checkpoints/{kind} is missing: run `python -m toyviz.train {kind}`")


def _module_total(module) -> int:
    return sum(p.numel() for p in module.parameters())          # parameters() yields a tied tensor once


@_shipped("gpt")
def test_shipped_gpt_as_loaded():
    gpt = toyviz.load("gpt", device="cpu")
    counts = count_parameters(gpt)
    assert counts["total"] == 4_208_128 == _module_total(gpt.model)
    assert counts == count_parameters(gpt.model) == count_parameters(gpt.model.config)


@_shipped("translator")
def test_shipped_translator_as_loaded():
    mt = toyviz.load("translator", device="cpu")
    counts = count_parameters(mt)
    assert counts["total"] == _module_total(mt.model) == 5_003_776     # the register tokens: two source rows of 256
    assert counts == count_parameters(mt.model)


def test_tiny_wrappers_count_their_module(tiny_gpt, tiny_translator):
    for wrapper in (tiny_gpt, tiny_translator):
        counts = count_parameters(wrapper)
        assert counts["total"] == _module_total(wrapper.model)
        assert counts["total"] == sum(n for k, n in counts.items() if k != "total")


def test_anything_else_is_a_type_error():
    with pytest.raises(TypeError, match="toyviz.load"):
        count_parameters(3)
