"""Shared fixtures: tiny models with random weights and tokenizers trained on a few lines.

They exercise the real code paths (tokenizer training, save/load, tracing) in milliseconds;
tests that need the shipped checkpoints say so and skip when they are absent.
"""
import os

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("MKL_DISABLE_FAST_MM", "1")      # as app.py sets it before torch loads: tests run the app in-process

import pytest
import torch

from toyviz.api import BOS_GPT, GPT, TRANSLATOR_SPECIALS, Translator, resolve_device
from toyviz.models.checkpoint import save_folder
from toyviz.models.config import GPTConfig, TranslatorConfig
from toyviz.models.gpt import ToyGPT
from toyviz.models.tokenizer import train_tokenizer
from toyviz.models.translator import ToyTranslator

ENGLISH = ("To be, or not to be, that is the question. Whether 'tis nobler in the mind to suffer "
           "the slings and arrows of outrageous fortune. In the beginning God created the heavens "
           "and the earth. The earth was formless and empty. ") * 20
SPANISH = ("En el principio crió Dios los cielos y la tierra. Y la tierra estaba desordenada y vacía, "
           "y las tinieblas estaban sobre la haz del abismo. ") * 20


def tiny_gpt_config(vocab_size: int, **overrides) -> GPTConfig:
    return GPTConfig(**{"vocab_size": vocab_size, "context": 64, "n_layer": 2, "n_head": 4,
                        "d_model": 32, **overrides})


@pytest.fixture(scope="session")
def gpt_tokenizer():
    return train_tokenizer([ENGLISH], 384, [BOS_GPT], "tiny-gpt")


@pytest.fixture(scope="session")
def tiny_gpt(gpt_tokenizer) -> GPT:
    torch.manual_seed(0)
    # on TOYVIZ_DEVICE (or auto) so the suite also checks the CUDA path where a GPU exists
    return GPT(ToyGPT(tiny_gpt_config(gpt_tokenizer.vocab_size)).to(resolve_device()).eval(), gpt_tokenizer)


@pytest.fixture(scope="session")
def tiny_translator() -> Translator:
    torch.manual_seed(0)
    src = train_tokenizer([ENGLISH], 384, TRANSLATOR_SPECIALS, "tiny-en")
    tgt = train_tokenizer([SPANISH], 384, TRANSLATOR_SPECIALS, "tiny-es")
    config = TranslatorConfig(src_vocab_size=src.vocab_size, tgt_vocab_size=tgt.vocab_size, context=48,
                              n_encoder_layer=2, n_decoder_layer=2, n_head=4, d_model=32, d_ff=64)
    return Translator(ToyTranslator(config).to(resolve_device()).eval(), src, tgt)


@pytest.fixture(scope="session")
def registered_translator(tiny_translator) -> Translator:
    """The tiny translator with the two register tokens in its source vocabulary, as --everyday trains one."""
    from toyviz.training.translator import with_registers

    src = with_registers(tiny_translator.src_tok)
    model = ToyTranslator(TranslatorConfig(**vars(tiny_translator.config))).to(tiny_translator.device).eval()
    model.load_state_dict(tiny_translator.model.state_dict())
    model.grow_source(src.vocab_size, like=src.special("<|eos|>"))
    return Translator(model, src, tiny_translator.tgt_tok)


@pytest.fixture(scope="session")
def tiny_checkpoints(tmp_path_factory, tiny_gpt, tiny_translator) -> dict:
    """Both tiny models saved as checkpoint folders (fp32, so reloads are bit-identical)."""
    root = tmp_path_factory.mktemp("checkpoints")
    save_folder(tiny_gpt.model, {"tokenizer": tiny_gpt.tokenizer}, root / "gpt", dtype=torch.float32)
    save_folder(tiny_translator.model, {"source": tiny_translator.src_tok, "target": tiny_translator.tgt_tok},
                root / "translator", dtype=torch.float32)
    return {"gpt": root / "gpt", "translator": root / "translator"}
