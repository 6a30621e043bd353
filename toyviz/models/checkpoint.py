"""Finding, saving and loading checkpoint folders (config.json + model.safetensors + tokenizer).

Loading is strict (every weight present, none unexpected) and never unpickles: weights are
safetensors. Anything wrong gives a one-line `CheckpointError` that says what to run.

Where "gpt" and "translator" are looked for: `CHECKPOINTS / "gpt"` and `CHECKPOINTS / "translator"`,
where CHECKPOINTS is chosen once, when toyviz is imported, in this order:

1. the folder in the environment variable TOYVIZ_CHECKPOINTS, when it is set;
2. else `checkpoints/` next to the `toyviz/` package, when it exists: a checkout, or `pip install -e .`;
3. else `./checkpoints` in the current directory (an installed wheel carries no checkpoints).

A folder path (or a Hub repo id) given to `toyviz.load` is used as is, wherever it lies.
"""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import torch

from toyviz.errors import CheckpointError  # noqa: F401  (raised here; importable from here as before)
from toyviz.models.gpt import ToyGPT
from toyviz.models.tokenizer import Tokenizer
from toyviz.models.translator import ToyTranslator

ENV_VAR = "TOYVIZ_CHECKPOINTS"
NEXT_TO_PACKAGE = Path(__file__).resolve().parents[2] / "checkpoints"


def candidates() -> list[Path]:
    """The folders that may hold the shipped checkpoints, in the order they are tried (module docstring)."""
    if os.environ.get(ENV_VAR):
        return [Path(os.environ[ENV_VAR]).expanduser().absolute()]
    return [NEXT_TO_PACKAGE, Path("checkpoints").absolute()]


def find_checkpoints() -> Path:
    """The first candidate that exists; else the last one (where training writes by default)."""
    folders = candidates()
    return next((f for f in folders if f.is_dir()), folders[-1])


# the checkpoints folder: holds gpt/, translator/, experiments/; training writes here by default
CHECKPOINTS = find_checkpoints()
SHIPPED = ("gpt", "translator")
# what a Hub download leaves out: other frameworks' weights, and pickles where the repo has safetensors too
HUB_SKIPPED = ["*.h5", "*.msgpack", "*.onnx", "onnx/*", "*.tflite", "*.ot", "*.gguf", "coreml/*", "*.bin", "*.pth"]
# tokenizer files ("stem") each kind of checkpoint carries
TOKENIZER_STEMS = {"gpt": ("tokenizer",), "translator": ("source", "target")}


def _fix(name_or_path: str) -> str:
    if name_or_path in SHIPPED:
        return f"run `toyviz train {name_or_path}` to create it"
    return "point at a folder written by `toyviz train` (config.json, model.safetensors, *.tiktoken)"


def _not_shipped_here(name: str, path: Path) -> CheckpointError:
    folders = candidates()
    if CHECKPOINTS not in folders:
        how = "set in toyviz.models.checkpoint.CHECKPOINTS"
    elif os.environ.get(ENV_VAR):
        how = f"from {ENV_VAR}"
    else:
        how = (f"checkpoints folders tried in order: {folders[0]} (next to the package), "
               f"{folders[1]} (current directory)")
    return CheckpointError(f"no checkpoint folder at {path} ({how}); set {ENV_VAR} to the folder that holds "
                           f"gpt/ and translator/, pass a checkpoint folder's path instead of {name!r}, "
                           f"or {_fix(name)}")


def resolve(name_or_path: str) -> Path:
    """"gpt"/"translator" → the shipped folder; a local folder as is; "owner/repo" or "gpt2" → Hub download
    (from the local cache alone under HF_HUB_OFFLINE=1), without the weights of other frameworks."""
    path = CHECKPOINTS / name_or_path if name_or_path in SHIPPED else Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    if name_or_path not in SHIPPED and name_or_path.count("/") <= 1 and not path.exists() \
            and not name_or_path.startswith((".", "/", "~")):
        from huggingface_hub import snapshot_download
        try:
            return Path(snapshot_download(name_or_path, ignore_patterns=HUB_SKIPPED))
        except Exception as err:  # offline, no such repo, no access: all say the same to a user
            raise CheckpointError(f"no local folder {name_or_path!r}, and no Hub repo of that name could be "
                                  f"fetched ({type(err).__name__}); "
                                  f"{_fix(name_or_path)}") from None
    if name_or_path in SHIPPED:
        raise _not_shipped_here(name_or_path, path)
    raise CheckpointError(f"no checkpoint folder at {path}; {_fix(name_or_path)}")


def kind_of(folder: Path) -> str:
    config_file = folder / "config.json"
    if not config_file.is_file():
        raise CheckpointError(f"{folder} is not a toyviz checkpoint: config.json is missing; {_fix(str(folder))}")
    try:
        config = json.loads(config_file.read_text())
    except json.JSONDecodeError as err:
        raise CheckpointError(f"{config_file} is not valid JSON ({err.msg}); {_fix(str(folder))}") from None
    config = config.get("config", config)
    if "src_vocab_size" in config:
        return "translator"
    if "vocab_size" in config:
        return "gpt"
    raise CheckpointError(f"{config_file} describes neither a GPT nor a translator; {_fix(str(folder))}")


def snapshots(folder: Path) -> list[Path]:
    """A checkpoint's training snapshots (snapshots/step-*), in training order, then the final checkpoint itself."""
    found = sorted(p for p in (folder / "snapshots").glob("step-*") if (p / "config.json").is_file())
    return found + [folder]


def load_folder(folder: Path, device: str = "cpu"):
    """→ (kind, model in eval mode on device, {stem: Tokenizer}). A Hugging Face causal LM's folder (config.json
    with a model_type, its weights and tokenizer.json) is converted into a ToyGPT (toyviz.models.hub)."""
    from toyviz.models import hub
    if hub.is_hub_folder(folder):
        model, tokenizer = hub.open_folder(folder)
        return "gpt", model.float().to(device).eval(), {"tokenizer": tokenizer}
    kind = kind_of(folder)
    missing = [f for f in ("model.safetensors", *(f"{s}.{e}" for s in TOKENIZER_STEMS[kind]
                                                   for e in ("tiktoken", "json")))
               if not (folder / f).is_file()]
    if missing:
        raise CheckpointError(f"{folder} is not a complete toyviz checkpoint: missing {', '.join(missing)}; "
                              f"{_fix(str(folder))}")
    cls = ToyGPT if kind == "gpt" else ToyTranslator
    try:
        model = cls.from_pretrained(str(folder), strict=True, map_location="cpu")
        tokenizers = {s: Tokenizer.load(folder, s) for s in TOKENIZER_STEMS[kind]}
    except Exception as err:  # truncated/corrupt safetensors, shape mismatch, bad tokenizer file
        first_line = str(err).strip().splitlines()[0][:160] if str(err).strip() else ""
        raise CheckpointError(f"cannot load {folder} ({type(err).__name__}: {first_line}); "
                              f"{_fix(str(folder))}") from None
    return kind, model.float().to(device).eval(), tokenizers


def save_folder(model, tokenizers: dict[str, Tokenizer], folder: Path, dtype=torch.float16,
                model_card: str | None = None) -> None:
    """Write config.json + model.safetensors (in `dtype`, to keep files small) + tokenizer files."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stored = copy.deepcopy(model).to("cpu", dtype)
    stored.save_pretrained(folder)
    for stem, tok in tokenizers.items():
        tok.save(folder, stem)
    if model_card is not None:
        (folder / "README.md").write_text(model_card)

