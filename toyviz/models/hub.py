"""Hugging Face causal LMs opened as the project's own GPT: converted once, at load, into ToyGPT.

A folder transformers wrote (config.json, model.safetensors or pytorch_model.bin, tokenizer.json) of one of
three families — GPT-2, GPT-NeoX (Pythia) and Llama (Mistral- and Qwen2-shaped configs too) — becomes a
`ToyGPT` state dict in the project's own parameter layout, loaded the way a toyviz checkpoint is; the one
forward, the one hook mechanism and the one name type then serve it, and every tab reads it as it reads the
shipped GPT (TransformerLens's approach). The conversion is data: per family, how its config reads as a
GPTConfig and a table of which stored weight goes to which of ours, through which transforms:

    positions   GPT-2's learned positions: the rows of the context toyviz reads (TRACE_BUDGET)
    conv1d      GPT-2's Conv1D stores (in, out): transposed to nn.Linear's (out, in)
    fused(j)    GPT-2's c_attn holds Q, K, V one after another: the j-th third of its rows
    per_head(j) GPT-NeoX's query_key_value interleaves them per head, (nh, 3, hs) rows: the j-th of each head's
    rotary      HF rotates halves, pairs (i, i + r/2) of a head's first r dims; ours rotates neighbours,
                (2i, 2i + 1) (toyviz.models.layers.apply_rope): the rows of Q and K permuted per head so the
                same pairs turn by the same angles (q·k is unchanged by permuting both alike)

A bias the family does not have (Llama's, most of Qwen2's) is zeros, which is exact. Checked against
transformers' own forward (tests/test_hub_models.py): logits within 1e-4, every attention pattern within 1e-5.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch

from toyviz.errors import HubError
from toyviz.machine import available_memory
from toyviz.models.config import GPTConfig
from toyviz.models.hub_tokenizer import HubTokenizer

CONFIG = "config.json"
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")
ROPE_CONTEXT_CAP = 4096     # a rotary model reads at most this many tokens here (its table, its figures)
# A traced pass keeps every head's scores and pattern (T² each) and, per token, each layer's streams, norms, q, k,
# v and head outputs: GPT-2 small's trace held 148 MB at 128 tokens, 675 MB at 448 and 2,192 MB at 1,024, which
# 8 bytes per layer × head × T² and 116 per layer × d_model × T fit. An opened model's context is cut to what
# keeps one trace under TRACE_BUDGET (GPT-2 small: 320 tokens), so a class cannot ask a worker for gigabytes.
TRACE_BUDGET = int(os.environ.get("TOYVIZ_TRACE_MB", "512")) * 2**20      # a bigger machine may allow more
PER_SCORE, PER_STREAM = 8, 116


def is_hub_folder(folder: Path) -> bool:
    """A folder transformers wrote: config.json naming a model_type, weights, and no toyviz tokenizer."""
    folder = Path(folder)
    if (folder / "tokenizer.tiktoken").is_file() or not (folder / CONFIG).is_file():
        return False
    try:
        config = json.loads((folder / CONFIG).read_text())
    except (json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(config, dict) and "model_type" in config


# ------------------------------------------------------------------ the families, as data -------

Rule = tuple[str, str, tuple[str, ...]]       # (our module, theirs, transforms); "{i}": every layer


@dataclass(frozen=True)
class Family:
    name: str                                  # what a message calls it
    prefix: str                                # what the stored names may start with ("transformer.")
    config: Callable[[object], dict]           # transformers' config → GPTConfig fields
    modules: tuple[Rule, ...]                  # each rule maps the module's weight and bias
    ignored: str = r"$^"                       # stored buffers that are no weights (a regex on the bare name)


ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "relu": "relu"}


def activation(name: str, family: str) -> str:
    if name not in ACTIVATIONS:
        raise HubError(f"this {family} uses the activation {name!r}; toyviz's feed-forward has "
                       f"{', '.join(sorted(ACTIVATIONS))}")
    return ACTIVATIONS[name]


def rope_fields(c, family: str) -> dict:
    """Rotary settings from transformers' config (rope_parameters in transformers 5, rope_theta before)."""
    rope = dict(getattr(c, "rope_parameters", None) or getattr(c, "rope_scaling", None) or {})
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind != "default":
        raise HubError(f"this {family} scales its rotary positions ({kind!r}); toyviz reads the plain rotary only")
    d_head = c.hidden_size // c.num_attention_heads
    partial = rope.get("partial_rotary_factor", getattr(c, "partial_rotary_factor", getattr(c, "rotary_pct", 1.0)))
    return dict(positional="rope", rotary_dims=int(d_head * partial),
                rope_base=float(rope.get("rope_theta", getattr(c, "rope_theta", 10000.0))),
                context=min(c.max_position_embeddings, ROPE_CONTEXT_CAP))


def gpt2_config(c) -> dict:
    if not getattr(c, "scale_attn_weights", True) or getattr(c, "scale_attn_by_inverse_layer_idx", False):
        raise HubError("this GPT-2 scales its attention otherwise than by 1/√d_head; toyviz's attention does not")
    return dict(vocab_size=c.vocab_size, context=c.n_positions, n_layer=c.n_layer, n_head=c.n_head, d_model=c.n_embd,
                d_ff=c.n_inner or 4 * c.n_embd, positional="learned",
                feed_forward=activation(c.activation_function, "GPT-2"), norm_eps=c.layer_norm_epsilon,
                bias=True, tie_head=c.tie_word_embeddings)


def neox_config(c) -> dict:
    return dict(vocab_size=c.vocab_size, n_layer=c.num_hidden_layers, n_head=c.num_attention_heads,
                d_model=c.hidden_size, d_ff=c.intermediate_size, feed_forward=activation(c.hidden_act, "GPT-NeoX"),
                norm_eps=c.layer_norm_eps, parallel=c.use_parallel_residual, bias=True,
                tie_head=c.tie_word_embeddings, **rope_fields(c, "GPT-NeoX"))


def llama_config(c) -> dict:
    family = type(c).__name__.removesuffix("Config")
    d_head = c.hidden_size // c.num_attention_heads
    if (getattr(c, "head_dim", None) or d_head) != d_head:
        raise HubError(f"this {family}'s heads are {c.head_dim} wide, not hidden_size / heads = {d_head}; "
                       f"toyviz's attention splits d_model evenly")
    if c.hidden_act != "silu":
        raise HubError(f"this {family}'s gated feed-forward uses {c.hidden_act!r}; toyviz's SwiGLU uses silu")
    rope = rope_fields(c, family)
    window = getattr(c, "sliding_window", None) if getattr(c, "use_sliding_window", True) else None
    if window is not None and window < rope["context"]:
        raise HubError(f"this {family} attends to a sliding window of {window} tokens; toyviz's attention sees "
                       f"every earlier token")
    return dict(vocab_size=c.vocab_size, n_layer=c.num_hidden_layers, n_head=c.num_attention_heads,
                n_kv_head=c.num_key_value_heads or c.num_attention_heads, d_model=c.hidden_size,
                d_ff=c.intermediate_size, feed_forward="swiglu", norm_kind="rmsnorm", norm_eps=c.rms_norm_eps,
                # Qwen2 biases Q, K and V; Llama may bias its attention or MLP; the biases it lacks are zeros
                bias=c.model_type == "qwen2" or getattr(c, "attention_bias", False) or getattr(c, "mlp_bias", False),
                tie_head=c.tie_word_embeddings, **rope)


GPT2_LAYOUT = Family("GPT-2", "transformer.", gpt2_config, (
    ("tok_emb", "wte", ()), ("pos_emb", "wpe", ("positions",)),
    ("blocks.{i}.ln1", "h.{i}.ln_1", ()),
    ("blocks.{i}.attn.q", "h.{i}.attn.c_attn", ("conv1d", "fused0")),
    ("blocks.{i}.attn.k", "h.{i}.attn.c_attn", ("conv1d", "fused1")),
    ("blocks.{i}.attn.v", "h.{i}.attn.c_attn", ("conv1d", "fused2")),
    ("blocks.{i}.attn.o", "h.{i}.attn.c_proj", ("conv1d",)),
    ("blocks.{i}.ln2", "h.{i}.ln_2", ()),
    ("blocks.{i}.mlp.up", "h.{i}.mlp.c_fc", ("conv1d",)),
    ("blocks.{i}.mlp.down", "h.{i}.mlp.c_proj", ("conv1d",)),
    ("ln_f", "ln_f", ()), ("head", "lm_head", ()),
), ignored=r"h\.\d+\.attn\.(masked_)?bias")

NEOX_LAYOUT = Family("GPT-NeoX", "gpt_neox.", neox_config, (
    ("tok_emb", "embed_in", ()),
    ("blocks.{i}.ln1", "layers.{i}.input_layernorm", ()),
    ("blocks.{i}.attn.q", "layers.{i}.attention.query_key_value", ("per_head0", "rotary")),
    ("blocks.{i}.attn.k", "layers.{i}.attention.query_key_value", ("per_head1", "rotary")),
    ("blocks.{i}.attn.v", "layers.{i}.attention.query_key_value", ("per_head2",)),
    ("blocks.{i}.attn.o", "layers.{i}.attention.dense", ()),
    ("blocks.{i}.ln2", "layers.{i}.post_attention_layernorm", ()),
    ("blocks.{i}.mlp.up", "layers.{i}.mlp.dense_h_to_4h", ()),
    ("blocks.{i}.mlp.down", "layers.{i}.mlp.dense_4h_to_h", ()),
    ("ln_f", "final_layer_norm", ()), ("head", "embed_out", ()),
), ignored=r"layers\.\d+\.attention\.(masked_bias|bias|rotary_emb\.inv_freq)")

LLAMA_LAYOUT = Family("Llama", "model.", llama_config, (
    ("tok_emb", "embed_tokens", ()),
    ("blocks.{i}.ln1", "layers.{i}.input_layernorm", ()),
    ("blocks.{i}.attn.q", "layers.{i}.self_attn.q_proj", ("rotary",)),
    ("blocks.{i}.attn.k", "layers.{i}.self_attn.k_proj", ("rotary",)),
    ("blocks.{i}.attn.v", "layers.{i}.self_attn.v_proj", ()),
    ("blocks.{i}.attn.o", "layers.{i}.self_attn.o_proj", ()),
    ("blocks.{i}.ln2", "layers.{i}.post_attention_layernorm", ()),
    ("blocks.{i}.mlp.gate", "layers.{i}.mlp.gate_proj", ()),
    ("blocks.{i}.mlp.up", "layers.{i}.mlp.up_proj", ()),
    ("blocks.{i}.mlp.down", "layers.{i}.mlp.down_proj", ()),
    ("ln_f", "norm", ()), ("head", "lm_head", ()),
), ignored=r"layers\.\d+\.self_attn\.rotary_emb\.inv_freq")

FAMILIES = {"gpt2": GPT2_LAYOUT, "gpt_neox": NEOX_LAYOUT, "llama": LLAMA_LAYOUT, "mistral": LLAMA_LAYOUT,
            "qwen2": LLAMA_LAYOUT}


# ------------------------------------------------------------------ the transforms --------------

def rotary_order(d_head: int, rotary_dims: int) -> torch.Tensor:
    """(d_head,) which of HF's rows each of ours is: our pair (2i, 2i+1) is HF's (i, i + r/2) for i < r/2, and
    the dims past the rotary ones stay where they are."""
    half = rotary_dims // 2
    pairs = torch.stack((torch.arange(half), torch.arange(half) + half), dim=1).flatten()      # (r,)
    return torch.cat((pairs, torch.arange(rotary_dims, d_head)))


def transform(t: torch.Tensor, step: str, c: GPTConfig) -> torch.Tensor:
    """One step of a rule on a weight (out, in) or a bias (out,)."""
    if step == "positions":                                           # the rows of the context toyviz opens
        return t[: c.context]
    if step == "conv1d":
        return t.t() if t.dim() == 2 else t
    if step.startswith("fused"):
        return t.chunk(3, dim=0)[int(step[-1])]
    if step.startswith("per_head"):                                   # rows (nh, 3, hs) → the j-th (nh, hs)
        return t.unflatten(0, (c.n_head, 3, c.d_head))[:, int(step[-1])].flatten(0, 1)
    if step == "rotary":                                              # rows (heads, hs), each head permuted
        heads = t.unflatten(0, (-1, c.d_head))
        return heads[:, rotary_order(c.d_head, c.rotary_dims)].flatten(0, 1)
    raise ValueError(f"no transform {step!r}")


# ------------------------------------------------------------------ reading a folder -------------

def read_config(folder: Path):
    """(transformers' config, its Family, our GPTConfig), or a one-line HubError."""
    from transformers import AutoConfig
    raw = json.loads((folder / CONFIG).read_text())
    kind = raw.get("model_type")
    if kind not in FAMILIES:
        raise HubError(f"{folder} holds a {kind!r} model ({', '.join(raw.get('architectures') or [])}); "
                       f"toyviz opens GPT-2, GPT-NeoX/Pythia and Llama-family (Llama, Mistral, Qwen2) causal LMs")
    try:
        hf = AutoConfig.from_pretrained(str(folder))
    except Exception as err:
        raise HubError(f"transformers cannot read {folder / CONFIG} ({type(err).__name__}: "
                       f"{str(err).strip().splitlines()[0][:160] if str(err).strip() else ''})") from None
    family = FAMILIES[kind]
    try:
        fields = family.config(hf)
        fields["context"] = min(fields["context"], traceable_context(fields["n_layer"], fields["n_head"],
                                                                     fields["d_model"]))
        config = GPTConfig(**fields)
    except ValueError as err:
        raise HubError(f"{folder}: {err}") from None
    return hf, family, config


def trace_bytes(n_layer: int, n_head: int, d_model: int, tokens: int) -> int:
    """About what a traced pass of `tokens` tokens holds (fitted to GPT-2 small's, above)."""
    return n_layer * (PER_SCORE * n_head * tokens ** 2 + PER_STREAM * d_model * tokens)


def traceable_context(n_layer: int, n_head: int, d_model: int) -> int:
    """The longest context, a multiple of 64 (64 at least), whose traced pass stays within TRACE_BUDGET."""
    tokens = 64
    while trace_bytes(n_layer, n_head, d_model, tokens + 64) <= TRACE_BUDGET and tokens < 2**16:
        tokens += 64
    return tokens


def stored_weights(folder: Path) -> dict[str, torch.Tensor]:
    """Every stored tensor by its name: safetensors (one file or shards), else pytorch_model.bin (never unpickled
    beyond tensors: weights_only)."""
    from safetensors.torch import load_file
    for name in WEIGHT_FILES:
        path = folder / name
        if not path.is_file():
            continue
        files = ([folder / f for f in sorted(set(json.loads(path.read_text())["weight_map"].values()))]
                 if name.endswith(".index.json") else [path])
        weights = {}
        for f in files:
            weights.update(load_file(f) if f.suffix == ".safetensors" else
                           torch.load(f, map_location="cpu", weights_only=True, mmap=True))
        return weights
    raise HubError(f"{folder} has a config.json but no weights ({', '.join(WEIGHT_FILES[::2])})")


def convert(stored: dict[str, torch.Tensor], family: Family, config: GPTConfig, wanted: dict[str, torch.Size]
            ) -> dict[str, torch.Tensor]:
    """Their tensors → our state dict with exactly the names and shapes `wanted` (ToyGPT's state_dict)."""
    bare = {name.removeprefix(family.prefix): t for name, t in stored.items()}
    ours, used = {}, set()
    for mine, theirs, steps in family.modules:
        for i in (range(config.n_layer) if "{i}" in mine else [None]):
            for suffix in ("weight", "bias"):
                key, source = f"{mine.format(i=i)}.{suffix}", f"{theirs.format(i=i)}.{suffix}"
                if key not in wanted:
                    continue
                if source in bare:
                    t = bare[source]
                    for step in steps:
                        t = transform(t, step, config)
                    ours[key] = t.float().contiguous()
                    used.add(source)
                elif suffix == "bias":                       # a bias this family does not have: zeros, exactly
                    ours[key] = torch.zeros(wanted[key])
    if config.tie_head or "head.weight" not in ours:
        if not config.tie_head:
            raise HubError(f"this {family.name} checkpoint has no unembedding ({family.modules[-1][1]}.weight)")
        ours["head.weight"] = ours["tok_emb.weight"]
    extra = sorted(n for n in set(bare) - used if not re.fullmatch(family.ignored, n)
                   and not (config.tie_head and n == "lm_head.weight"))
    missing = sorted(set(wanted) - set(ours))
    wrong = sorted(k for k in set(wanted) & set(ours) if ours[k].shape != wanted[k])
    if extra or missing or wrong:
        said = "; ".join(f"{what}: {', '.join(names[:4])}{' …' if len(names) > 4 else ''}"
                         for what, names in (("weights toyviz has no place for", extra), ("missing", missing),
                                             ("of another shape", wrong)) if names)
        raise HubError(f"not a {family.name} checkpoint toyviz can convert ({said})")
    return ours


def check_memory(config: GPTConfig, folder: Path) -> None:
    """Refuse, before reading anything, a model whose converted weights and the stored copy read beside them
    would not fit in the memory this machine has free (a clear refusal rather than a swap storm)."""
    from toyviz.models.size import count_parameters
    need = 4 * count_parameters(config)["total"] + sum(f.stat().st_size for f in folder.glob("*")
                                                       if f.suffix in (".safetensors", ".bin"))
    free = available_memory()                   # toyviz.machine: the container's limit counts
    if free is not None and need > free:
        raise HubError(f"{folder.name} needs about {need / 2**30:.1f} GiB to open (float32 weights and the stored "
                       f"copy beside them), and this machine has {free / 2**30:.1f} GiB free")


def open_folder(folder: Path):
    """A Hugging Face folder → (ToyGPT with its converted weights, its tokenizer wrapped as toyviz's)."""
    from toyviz.models.gpt import ToyGPT
    folder = Path(folder)
    hf, family, config = read_config(folder)
    check_memory(config, folder)
    tokenizer = HubTokenizer.load(folder, hf)
    model = ToyGPT(config)
    state = convert(stored_weights(folder), family, config, {k: v.shape for k, v in model.state_dict().items()})
    model.load_state_dict(state, strict=True)
    return model, tokenizer
