"""The size calculator: a preset's, the app's own models' or the fields' configuration, counted."""
from __future__ import annotations

from toyviz.app.explorer import Explorer
from toyviz.app.figures import model as model_figs
from toyviz.errors import UserError
from toyviz.i18n import mistake, t
from toyviz.models.config import GPTConfig, TranslatorConfig
from toyviz.models.size import PAPER_SIZES, PRESETS, count_parameters, human_bytes, memory_report
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
    # their combination, said before GPTConfig refuses it in its own (English, a programmer's) words
    if fields["d_model"] % fields["n_head"]:
        raise mistake("errors.size.heads_divide", d_model=fields["d_model"], heads=fields["n_head"])
    if positional == "rope" and (fields["d_model"] // fields["n_head"]) % 2:
        raise mistake("errors.size.rope_even", head=fields["d_model"] // fields["n_head"])
    try:
        return GPTConfig(**fields)
    except ValueError as err:       # what else a request may send (a positional kind the radio does not offer)
        raise UserError(str(err)) from None


def size_view(explorer: Explorer, preset, layers=12, heads=12, d_model=768, d_ff=0, vocab=50257, context=1024,
              positional="learned", feed_forward="gelu", tied=True, projector=False):
    config = size_config(explorer, preset, layers, heads, d_model, d_ff, vocab, context, positional, feed_forward,
                         tied)
    return size_note(config, preset), model_figs.parameter_bars(count_parameters(config), projector=projector)


def size_note(config, preset: str = "custom") -> str:
    """The calculator's paragraph for a config: its exact parameter count (beside the figure the paper quoted for a
    GPT-2 preset), the embeddings' share, weight and attention memory, KV cache, FLOPs."""
    counts = count_parameters(config)
    total = counts["total"]
    quoted = t("notes.size.paper", quoted=PAPER_SIZES[preset]) if preset in PAPER_SIZES else ""
    share = (counts["token_embedding"] + counts["position_embedding"]) / total
    text = t("notes.size.total", total=f"{total:,}", quoted=quoted, share=f"{share:.0%}")
    if isinstance(config, TranslatorConfig):                       # encoder + decoder stacks
        return text + t("notes.size.translator", fp32=human_bytes(4 * total), bf16=human_bytes(2 * total),
                        encoder=config.n_encoder_layer, decoder=config.n_decoder_layer)
    mem = memory_report(config)
    return text + t("notes.size.gpt", fp32=human_bytes(mem["weights_fp32_bytes"]),
                    bf16=human_bytes(mem["weights_bf16_bytes"]), context=config.context,
                    attention=human_bytes(mem["attention_bytes_per_layer_fp32"]),
                    kv_token=f"{mem['kv_cache_bytes_per_token_bf16']:,}",
                    kv_full=human_bytes(mem["kv_cache_bytes_full_context_bf16"]),
                    gflops=f"{mem['flops_per_token'] / 1e9:.2f}")


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
