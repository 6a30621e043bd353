"""Model configurations: plain dataclasses that round-trip through config.json.

Every field is a JSON scalar so `PyTorchModelHubMixin` can save and rebuild them.
"""
from dataclasses import dataclass

POSITIONAL_KINDS = ("sinusoidal", "learned", "rope", "none")
FEED_FORWARD_KINDS = ("gelu", "swiglu", "relu", "gelu_tanh")   # gelu_tanh: GPT-2's "gelu_new" approximation
NORM_PLACEMENTS = ("pre", "post")
NORM_KINDS = ("layernorm", "rmsnorm")


def _check(value, allowed, field):
    if value not in allowed:
        raise ValueError(f"{field} must be one of {allowed}, got {value!r}")


@dataclass
class GPTConfig:
    vocab_size: int = 4096
    context: int = 256          # longest sequence the model is trained on
    n_layer: int = 4
    n_head: int = 4
    d_model: int = 256
    d_ff: int = 0               # 0 means the usual 4 * d_model
    positional: str = "sinusoidal"
    feed_forward: str = "gelu"
    norm: str = "pre"
    causal: bool = True         # False only for the "no mask" experiment
    bias: bool = True
    tie_head: bool = True       # LM head shares the token-embedding matrix (GPT-2 does)
    dropout: float = 0.0
    # what models trained elsewhere need (toyviz.models.hub); the defaults are the shipped GPT's
    norm_kind: str = "layernorm"  # "rmsnorm": scale by the root mean square, no centring, no β (Llama)
    norm_eps: float = 1e-5
    parallel: bool = False      # x + attn(ln1(x)) + mlp(ln2(x)), both reading the same stream (GPT-NeoX)
    n_kv_head: int = 0          # 0 means n_head; fewer: grouped-query attention, each K/V head serves a group
    rotary_dims: int = 0        # 0 means the whole head; fewer: only each head's first dims rotate (Pythia)
    rope_base: float = 10000.0

    def __post_init__(self):
        _check(self.positional, POSITIONAL_KINDS, "positional")
        _check(self.feed_forward, FEED_FORWARD_KINDS, "feed_forward")
        _check(self.norm, NORM_PLACEMENTS, "norm")
        _check(self.norm_kind, NORM_KINDS, "norm_kind")
        if self.d_model % self.n_head:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_head={self.n_head}")
        if self.n_kv_head == 0:
            self.n_kv_head = self.n_head
        if self.n_head % self.n_kv_head:
            raise ValueError(f"n_head={self.n_head} is not a multiple of n_kv_head={self.n_kv_head}")
        if self.rotary_dims == 0:
            self.rotary_dims = self.d_head
        if self.positional == "rope" and (self.rotary_dims % 2 or self.rotary_dims > self.d_head):
            raise ValueError(f"rope needs an even head size (d_model / n_head = {self.d_head}), and rotary dims "
                             f"(here {self.rotary_dims}) even and at most the head size")
        if self.parallel and self.norm != "pre":
            raise ValueError("a parallel block is pre-norm")
        if self.d_ff == 0:
            self.d_ff = 4 * self.d_model

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head


@dataclass
class TranslatorConfig:
    src_vocab_size: int = 4096
    tgt_vocab_size: int = 4096
    context: int = 128          # longest source or target sequence, in tokens
    n_encoder_layer: int = 3
    n_decoder_layer: int = 3
    n_head: int = 4
    d_model: int = 256
    d_ff: int = 1024
    feed_forward: str = "relu"  # the paper's choice
    norm: str = "pre"           # "post" is the paper's placement; pre-norm trains more easily
    dropout: float = 0.1
    # one BPE vocabulary for both languages and one embedding table for source, target and output (the
    # paper's setup): a name spelled alike in both is then one token the model can copy across
    shared_vocab: bool = False

    def __post_init__(self):
        _check(self.feed_forward, FEED_FORWARD_KINDS, "feed_forward")
        _check(self.norm, NORM_PLACEMENTS, "norm")
        if self.d_model % self.n_head:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_head={self.n_head}")
        if self.shared_vocab and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(f"a shared vocabulary has one size: src_vocab_size={self.src_vocab_size}, "
                             f"tgt_vocab_size={self.tgt_vocab_size}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_head
