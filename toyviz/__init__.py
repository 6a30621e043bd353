"""toyviz: two small transformers trained from scratch, and everything needed to see them work.

    import toyviz
    gpt = toyviz.load("gpt")
    trace = gpt.trace("To be, or not to be")
    features = toyviz.load_features(gpt)   # its sparse-autoencoder features (toyviz features)
"""
import os

# read once, when torch loads MKL (the first use of the API below loads torch): no MKL buffers kept per thread,
# which a server's many threads would each keep (toyviz.serving.memory.mkl_keeps_thread_buffers). Here, because the
# installed `toyviz serve` imports this package before any of its own modules; set it to 0 beforehand to keep
# MKL's default
os.environ.setdefault("MKL_DISABLE_FAST_MM", "1")

# the public API by where it lives, imported when first asked for (PEP 562): `import toyviz` alone, as the
# `toyviz` command does before choosing a subcommand, loads no torch, so `toyviz --help` answers at once
PUBLIC = {
    "toyviz.api": ("GPT", "Step", "Translation", "Translator", "load", "resolve_device"),
    "toyviz.errors": ("PromptError", "UserError"),
    "toyviz.models.checkpoint": ("CheckpointError",),
    "toyviz.models.config": ("GPTConfig", "TranslatorConfig"),
    "toyviz.interpret.dictionary": ("Features", "load_features"),
    "toyviz.models.layers": ("sinusoidal_encoding",),
    "toyviz.models.size": ("count_parameters",),
    "toyviz.models.trace": ("HeadView", "Trace", "TranslatorTrace"),
}
HOME = {name: module for module, exported in PUBLIC.items() for name in exported}
__all__ = list(HOME)


def __getattr__(name: str):
    if name not in HOME:
        raise AttributeError(f"module 'toyviz' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(HOME[name]), name)
    globals()[name] = value                  # asked once
    return value


def __dir__():
    return sorted(set(globals()) | set(HOME))
