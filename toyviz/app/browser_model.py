"""The GPT in the student's browser: the Sample tab's panel that runs it there, and the files it fetches.

The panel is one gr.HTML: its head loads web/dist/toyviz.js (built by `cd web && npm ci && npm run
build`), and its js_on_load hands the script the urls of the graphs (checkpoints/gpt/web/, written by
`python -m toyviz.web`), the checkpoint's model.safetensors and tokenizer, and onnxruntime's wasm.
The script defines `window.toyviz` (web/src/main.js) and falls back to the server's controls, saying
why, when the model cannot load in this browser. Nothing here imports onnx.
"""
from __future__ import annotations

import json
from pathlib import Path

import gradio as gr

from toyviz.models.checkpoint import CHECKPOINTS

DIST = Path(__file__).resolve().parents[2] / "web" / "dist"
SCRIPT, WASM = DIST / "toyviz.js", DIST / "ort-wasm-simd-threaded.wasm.gz"


def url(path: Path) -> str:
    """Gradio's file route, relative so a page under a path prefix (a proxy, a Space) finds it too."""
    return f"gradio_api/file={Path(path).resolve()}"


def config(folder: Path = CHECKPOINTS / "gpt") -> dict | None:
    """What the page's script needs: urls, the graphs' metadata; None when the graphs were not exported."""
    manifest = folder / "web" / "graphs.json"
    if not manifest.is_file():
        return None
    graphs = json.loads(manifest.read_text())
    files = {name: url(folder / "web" / file) for name, file in graphs["graphs"].items()}
    files |= {"weights": url(folder / graphs["weights"]), "ranks": url(folder / "tokenizer.tiktoken"), "wasm": url(WASM)}
    return {**graphs, "files": files}


def missing(folder: Path = CHECKPOINTS / "gpt") -> str | None:
    """Why the browser cannot get the model from this server, or None."""
    if not SCRIPT.is_file() or not WASM.is_file():
        return "the page's script was not built (cd web && npm ci && npm run build)"
    if config(folder) is None:
        return "the model's graphs were not exported (python -m toyviz.web)"
    return None


def serve(folder: Path = CHECKPOINTS / "gpt") -> None:
    """Let Gradio's file route send the files the panel fetches."""
    gr.set_static_paths([DIST, folder / "web", folder / "model.safetensors", folder / "tokenizer.tiktoken"])


def panel(folder: Path = CHECKPOINTS / "gpt") -> gr.HTML:
    """The in-browser panel (its files served from now on); without a built script or exported graphs,
    one quiet line saying so, and the server's controls."""
    why = missing(folder)
    if why is not None:
        fallback = {"backend": "server", "reason": why, "modelHash": None}
        js = (f"window.toyviz = Object.assign({json.dumps(fallback)}, {{ready: Promise.resolve('server')}});"
              f"element.querySelector('.tv-backend').textContent = 'Running on the server: ' + window.toyviz.reason;")
        return gr.HTML('<div class="tv-backend"></div>', js_on_load=js, elem_id="browser-model")
    serve(folder)
    return gr.HTML("", head=f'<script src="{url(SCRIPT)}"></script>', elem_id="browser-model",
                   js_on_load=f"window.toyvizMount(element, {json.dumps(config(folder))});")
