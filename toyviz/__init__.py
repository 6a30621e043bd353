"""toyviz: two small transformers trained from scratch, and everything needed to see them work.

    import toyviz
    gpt = toyviz.load("gpt")
    trace = gpt.trace("To be, or not to be")
    features = toyviz.load_features(gpt)   # its sparse-autoencoder features (toyviz features)
"""
import os

# read once, when torch loads MKL (toyviz.api loads torch below): no MKL buffers kept per thread, which a server's
# many threads would each keep (toyviz.serving.memory.mkl_keeps_thread_buffers). Here, because the installed
# `toyviz serve` imports this package before any of its own modules; set it to 0 beforehand to keep MKL's default
os.environ.setdefault("MKL_DISABLE_FAST_MM", "1")

from toyviz.api import GPT, Step, Translation, Translator, load, resolve_device
from toyviz.errors import PromptError, UserError
from toyviz.models.checkpoint import CheckpointError
from toyviz.models.config import GPTConfig, TranslatorConfig
from toyviz.interpret.dictionary import Features, load_features
from toyviz.models.layers import sinusoidal_encoding
from toyviz.models.size import count_parameters
from toyviz.models.trace import HeadView, Trace, TranslatorTrace

__all__ = ["GPT", "Translator", "Translation", "Step", "UserError", "PromptError", "CheckpointError", "GPTConfig",
           "TranslatorConfig", "Trace", "TranslatorTrace", "HeadView", "load", "resolve_device",
           "sinusoidal_encoding", "count_parameters", "Features", "load_features"]
