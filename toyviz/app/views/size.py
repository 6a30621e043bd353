"""The size calculator: a preset's, the app's own models' or the fields' configuration, counted."""
from __future__ import annotations

from toyviz.app.explorer import Explorer
from toyviz.app.figures import model as model_figs
from toyviz.errors import UserError
from toyviz.models.config import GPTConfig
from toyviz.models.size import PRESETS, count_parameters, describe_size
from toyviz.settings.controls import clamp


LOADED_GPT, LOADED_TRANSLATOR = "this app's GPT", "this app's translator"     # size-calculator presets


def size_config(explorer: Explorer, preset, layers=12, heads=12, d_model=768, d_ff=0, vocab=50257, context=1024,
                positional="learned", feed_forward="gelu", tied=True):
    """The configuration the calculator describes: a preset's, the app's own models', or the fields'."""
    if preset == LOADED_TRANSLATOR:
        return explorer.models.need_translator().config
    if preset == LOADED_GPT:
        return explorer.models.need_gpt().config
    if preset in PRESETS:
        return PRESETS[preset]
    d_model = clamp(d_model, 1, 65536, int, "d_model")
    fields = dict(vocab_size=clamp(vocab, 2, 10**6, int, "vocab"), context=clamp(context, 1, 10**6, int, "context"),
                  n_layer=clamp(layers, 1, 512, int, "layers"), n_head=clamp(heads, 1, d_model, int, "heads"),
                  d_model=d_model, d_ff=clamp(d_ff, 0, 262144, int, "d_ff"), positional=positional,
                  feed_forward=feed_forward, tie_head=bool(tied))
    try:
        return GPTConfig(**fields)
    except ValueError as err:       # their combination: the heads must divide d_model, RoPE needs an even head
        raise UserError(str(err)) from None


def size_view(explorer: Explorer, preset, layers=12, heads=12, d_model=768, d_ff=0, vocab=50257, context=1024,
              positional="learned", feed_forward="gelu", tied=True, projector=False):
    config = size_config(explorer, preset, layers, heads, d_model, d_ff, vocab, context, positional, feed_forward,
                         tied)
    return describe_size(config, preset), model_figs.parameter_bars(count_parameters(config), projector=projector)


def preset_fields(explorer: Explorer, preset) -> list | None:
    """A preset's configuration for the calculator's fields (None: leave the fields as they are). The
    translator fills them per stack: its encoder and decoder each have that many layers."""
    if preset == LOADED_TRANSLATOR and explorer.translator:
        c = explorer.translator.config
        return [c.n_encoder_layer, c.n_head, c.d_model, c.d_ff, c.tgt_vocab_size, c.context, "sinusoidal",
                c.feed_forward, False]
    config = explorer.gpt.config if preset == LOADED_GPT and explorer.gpt else PRESETS.get(preset)
    if config is None:
        return None
    return [config.n_layer, config.n_head, config.d_model, config.d_ff, config.vocab_size, config.context,
            config.positional, config.feed_forward, config.tie_head]
