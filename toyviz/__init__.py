"""toyviz: two small transformers trained from scratch, and everything needed to see them work.

    import toyviz
    gpt = toyviz.load("gpt")
    trace = gpt.trace("To be, or not to be")
    features = toyviz.load_features(gpt)   # its sparse-autoencoder features (python -m toyviz.features)
"""
from .api import GPT, PromptError, Step, Translation, Translator, load, resolve_device
from .checkpoint import CheckpointError
from .config import GPTConfig, TranslatorConfig
from .dictionary import Features, load_features
from .layers import sinusoidal_encoding
from .size import count_parameters
from .trace import HeadView, Trace, TranslatorTrace

__all__ = ["GPT", "Translator", "Translation", "Step", "PromptError", "CheckpointError", "GPTConfig",
           "TranslatorConfig", "Trace", "TranslatorTrace", "HeadView", "load", "resolve_device",
           "sinusoidal_encoding", "count_parameters", "Features", "load_features"]
