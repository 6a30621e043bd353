"""Export the GPT's prefill and one-token step graphs with torch.onnx (dynamo), weights kept in the checkpoint.

The wrappers below call the model's own forward, as `ToyGPT.trace` and `ToyGPT.generate_ids` do, so
the graphs are traced from the Python model and never written by hand. The exporter leaves every
weight as an initializer named after its parameter (optimize=False keeps transposes as nodes rather
than folding them into new unnamed tensors); each initializer is then replaced by a pointer into
model.safetensors plus a Cast to fp32. The checkpoint is stored fp16, so this changes no value.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import struct
import time
from pathlib import Path

import numpy as np
import onnx
import onnxscript
import torch
from onnx import TensorProto, helper

from toyviz.models import names
from toyviz.models.hooks import Record
from toyviz.models.layers import KVCache

WEIGHTS = "model.safetensors"             # the external-data location both graphs name
GRAPHS = ("prefill", "step")
HASH_KEY = "checkpoint_sha256"
MANIFEST = "graphs.json"                  # what the page needs to know, readable without onnx


class Prefill(torch.nn.Module):
    """ids (1, T) → logits (T, V), attention (L, H, T, T), keys, values (L, H, T, d_head): the pass `trace` records."""

    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt

    def forward(self, ids):
        record = Record()
        logits, _ = self.gpt(ids, hooks=record)
        layers = range(self.gpt.config.n_layer)
        seen = lambda part: torch.cat([record.values[names.part(names.attn(i), part)] for i in layers])
        return logits[0], seen("pattern"), seen("k"), seen("v")


class Step(torch.nn.Module):
    """One new id (1, 1) after P cached positions (L, H, P, d_head) → next-token logits (V,), keys and
    values (L, H, P + 1, d_head): the cached step `generate_ids` takes."""

    def __init__(self, gpt):
        super().__init__()
        self.gpt = gpt

    def forward(self, ids, past_keys, past_values):
        cache = KVCache()
        for layer in range(self.gpt.config.n_layer):
            cache.layers[layer] = (past_keys[layer][None], past_values[layer][None])
        logits, _ = self.gpt(ids, cache=cache)
        keys, values = zip(*(cache.layers[i] for i in range(self.gpt.config.n_layer)))
        return logits[0, -1], torch.cat(keys), torch.cat(values)


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def safetensors_layout(path: Path) -> dict[str, tuple[str, list[int], int, int]]:
    """{name: (dtype, shape, byte offset in the file, byte length)} from a safetensors header."""
    raw = Path(path).read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8: 8 + size])
    header.pop("__metadata__", None)
    return {name: (t["dtype"], t["shape"], 8 + size + t["data_offsets"][0], t["data_offsets"][1] - t["data_offsets"][0])
            for name, t in header.items()}


def stored_names(model: torch.nn.Module, layout: dict) -> dict[str, str]:
    """Each parameter's name → the name the checkpoint stores its tensor under: tied weights (the GPT's
    embedding and head) are stored once, and the exporter may name them either way."""
    by_tensor: dict[int, list[str]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        by_tensor.setdefault(parameter.data_ptr(), []).append(name)
    return {name: next((n for n in tied if n in layout), name) for tied in by_tensor.values() for name in tied}


def point_weights_at_checkpoint(proto: onnx.ModelProto, checkpoint: Path, model: torch.nn.Module,
                                prefix: str = "gpt.") -> None:
    """Replace each fp32 parameter initializer by the checkpoint's fp16 bytes (external data) + a Cast.
    The model's buffers (RoPE's table, made from the config and not stored) stay in the graph.

    Refuses a weight whose fp32 value is not exactly the stored fp16 one: the graph then computes with
    precisely the checkpoint's numbers."""
    layout = safetensors_layout(checkpoint / WEIGHTS)
    data = (checkpoint / WEIGHTS).read_bytes()
    stored_as, buffers = stored_names(model, layout), {name for name, _ in model.named_buffers()}
    graph = proto.graph
    casts, kept = [], []
    for init in graph.initializer:
        own = init.name.removeprefix(prefix)
        if own == init.name or own in buffers:
            kept.append(init)
            continue
        name = stored_as.get(own, own)
        dtype, shape, offset, length = layout[name]
        stored = np.frombuffer(data[offset: offset + length], dtype=np.float16).reshape(shape)
        if dtype != "F16" or not np.array_equal(onnx.numpy_helper.to_array(init), stored.astype(np.float32)):
            raise ValueError(f"{name}: the model's weight is not the checkpoint's fp16 tensor")
        half = TensorProto(name=f"{name}.fp16", data_type=TensorProto.FLOAT16, dims=shape, raw_data=stored.tobytes())
        onnx.external_data_helper.set_external_data(half, location=WEIGHTS, offset=offset, length=length)
        half.data_location = TensorProto.EXTERNAL
        half.ClearField("raw_data")
        kept.append(half)
        casts.append(helper.make_node("Cast", [half.name], [init.name], to=TensorProto.FLOAT))
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = casts + list(graph.node)
    del graph.node[:]
    graph.node.extend(nodes)


def reads_weight(node) -> bool:
    return any(value is not None and value.is_initializer() and value.name.startswith("gpt.") for value in node.inputs)


def export(gpt, checkpoint: Path, out: Path) -> dict[str, Path]:
    """Write prefill.onnx and step.onnx for `gpt` (a ToyGPT loaded from `checkpoint`) into `out`."""
    c = gpt.config
    gpt = gpt.float().eval()
    T = torch.export.Dim("T", min=1, max=c.context)
    P = torch.export.Dim("P", min=1, max=c.context - 1)
    past = lambda: torch.zeros(c.n_layer, c.n_head, 5, c.d_head)   # two tensors: export would alias one passed twice
    specs = {
        "prefill": (Prefill(gpt).eval(), (torch.tensor([[0, 1, 2, 3]]),), ({1: T},),
                    ["ids"], ["logits", "attention", "keys", "values"]),
        "step": (Step(gpt).eval(), (torch.tensor([[0]]), past(), past()), (None, {2: P}, {2: P}),
                 ["ids", "past_keys", "past_values"], ["logits", "keys", "values"]),
    }
    digest = sha256(checkpoint / WEIGHTS)
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, (module, args, shapes, inputs, outputs) in specs.items():
        program = torch.onnx.export(module, args, dynamo=True, dynamic_shapes=shapes, input_names=inputs,
                                    output_names=outputs, optimize=False, verbose=False)
        # drop the exporter's hundreds of small shape ops, but fold nothing a weight flows into: folded, a
        # transposed weight would become a new tensor that is not the checkpoint's
        onnxscript.optimizer.optimize_ir(program.model, should_fold=lambda node: False if reads_weight(node) else None)
        proto = program.model_proto
        point_weights_at_checkpoint(proto, checkpoint, gpt)
        for node in proto.graph.node:      # the exporter's stack traces: 95 % of the file, and this machine's paths
            del node.metadata_props[:]
        onnx.helper.set_model_props(proto, {HASH_KEY: digest, "config": json.dumps(vars(c))})
        path = out / f"{name}.onnx"
        onnx.save(proto, path)           # external data stays where it is: nothing is written beside it
        written[name] = path
    tokenizer = json.loads((checkpoint / "tokenizer.json").read_text())
    manifest = {"sha256": digest, "weights": WEIGHTS, "graphs": {n: p.name for n, p in written.items()},
                "specials": tokenizer["special_tokens"], "vocab_size": c.vocab_size, "context": c.context,
                "n_layer": c.n_layer, "n_head": c.n_head, "d_head": c.d_head}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return written


def metadata(graph: Path) -> dict[str, str]:
    proto = onnx.load(graph, load_external_data=False)
    return {p.key: p.value for p in proto.metadata_props}


def session(graph: Path, checkpoint: Path):
    """An onnxruntime session for a written graph, its weights read from the checkpoint folder."""
    import onnxruntime

    proto = onnx.load(graph, load_external_data=False)
    onnx.external_data_helper.load_external_data_for_model(proto, str(checkpoint))
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    return onnxruntime.InferenceSession(proto.SerializeToString(), options, providers=["CPUExecutionProvider"])


def main(argv=None):
    from toyviz.models.checkpoint import load_folder, resolve

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", default="gpt", help="checkpoint name or folder (default: the shipped GPT)")
    parser.add_argument("--out", type=Path, help="where the graphs go (default: the checkpoint's web/ folder)")
    args = parser.parse_args(argv)
    folder = resolve(args.checkpoint)
    _, model, _ = load_folder(folder)
    start = time.perf_counter()
    written = export(model, folder, args.out or folder / "web")
    for name, path in written.items():
        print(f"{path}: {path.stat().st_size / 1e3:.0f} kB")
    print(f"weights: {folder / WEIGHTS} ({(folder / WEIGHTS).stat().st_size / 1e6:.1f} MB, "
          f"sha256 {sha256(folder / WEIGHTS)[:12]}…); exported in {time.perf_counter() - start:.0f} s")
