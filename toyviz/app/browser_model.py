"""The GPT in the student's browser: the page's <head> that loads it, the Sample tab's panel that shows
it, and the files it fetches.

`head()` goes to `demo.launch(head=…)`: it inlines web/dist/toyviz.js (built by `cd web && npm ci && npm
run build`; the model's worker is inside it) and hands it the urls of the graphs (checkpoints/gpt/web/,
written by `python -m toyviz.web`), the checkpoint's model.safetensors (gzipped: `compressed`) and
tokenizer, and onnxruntime's wasm, so the model loads as the page opens, whichever tab is on screen (Gradio builds a tab's
components only when it is first opened). The script defines `window.toyviz` (web/src/main.js) and
falls back to the server's controls, saying why, when the model cannot load in this browser. `panel()`
is where the Sample tab shows it. Nothing here imports onnx.
"""
from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import gradio as gr

from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.training.data import cache_dir

DIST = Path(__file__).resolve().parents[2] / "web" / "dist"
SCRIPT, WASM = DIST / "toyviz.js", DIST / "ort-wasm-simd-threaded.wasm.gz"


def url(path: Path) -> str:
    """Gradio's file route, relative so a page under a path prefix (a proxy, a Space) finds it too."""
    return f"gradio_api/file={Path(path).resolve()}"


def config(folder: Path = CHECKPOINTS / "gpt") -> dict | None:
    """What the page's script needs: urls, the graphs' metadata; None when the graphs were not exported."""
    graphs = manifest(folder)
    if graphs is None:
        return None
    files = {name: url(folder / "web" / file) for name, file in graphs["graphs"].items()}
    files |= {"weights": url(weights_sent(folder, graphs)), "ranks": url(folder / "tokenizer.tiktoken"),
              "wasm": url(WASM)}
    return {**graphs, "files": files}


def manifest(folder: Path) -> dict | None:
    """The graphs' metadata (python -m toyviz.web writes it), or None when they were not exported."""
    path = folder / "web" / "graphs.json"
    return json.loads(path.read_text()) if path.is_file() else None


def weights_sent(folder: Path, graphs: dict) -> Path:
    """The file the page fetches the weights from: gzipped where it could be written, else as they are."""
    return compressed(folder / graphs["weights"], graphs["sha256"]) or folder / graphs["weights"]


def compressed(weights: Path, sha256: str) -> Path | None:
    """The weights gzipped, made once per checkpoint in the data cache (its folder named by their sha256),
    or None where that cannot be written. Gradio's file route sends files as they are, and fp16 weights
    gzip by 8 %: a first visit 0.65 MB smaller (the page's worker unpacks any `.gz` and hashes what it
    unpacked). Not committed: a second copy of the weights in git would grow with every retrain."""
    try:
        path = cache_dir() / "web" / sha256[:16] / (weights.name + ".gz")
        if path.is_file():
            return path
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f"{path.name}.{os.getpid()}")         # two servers starting at once
        partial.write_bytes(gzip.compress(weights.read_bytes(), compresslevel=9, mtime=0))
        partial.replace(path)
        return path
    except OSError:
        return None


def missing(folder: Path = CHECKPOINTS / "gpt") -> str | None:
    """Why the browser cannot get the model from this server, or None."""
    if not SCRIPT.is_file() or not WASM.is_file():
        return "the page's script was not built (cd web && npm ci && npm run build)"
    if config(folder) is None:
        return "the model's graphs were not exported (python -m toyviz.web)"
    return None


def build_on_a_space() -> str | None:
    """A Hugging Face Space runs only pip: there (SPACE_ID is set), with npm installed from packages.txt,
    build the page's script once at start, as README's set-up does by hand → a line to print, or None."""
    if SCRIPT.is_file() or not os.environ.get("SPACE_ID") or shutil.which("npm") is None:
        return None
    done = subprocess.run("npm ci --no-audit --no-fund && npm run build", shell=True, cwd=DIST.parent,
                          capture_output=True, text=True)
    if done.returncode != 0:
        return f"building the page's script failed, the server runs the model: {done.stderr.strip()[-300:]}"
    return "built the page's script (npm ci && npm run build)"


def serve(folder: Path = CHECKPOINTS / "gpt") -> None:
    """Let Gradio's file route send the files the panel fetches."""
    gr.set_static_paths([DIST, folder / "web", weights_sent(folder, manifest(folder)), folder / "tokenizer.tiktoken"])


def head(folder: Path = CHECKPOINTS / "gpt") -> str:
    """The page's <head> part (its files served from now on); without a built script or exported graphs,
    a `window.toyviz` that says the server runs the model, and why."""
    why = missing(folder)
    if why is not None:
        fallback = {"backend": "server", "reason": why, "modelHash": None}
        return (f"<script>window.toyviz = Object.assign({json.dumps(fallback)}, {{ready: Promise.resolve('server')}});"
                f"window.toyvizMount = (element) => {{ element.textContent = 'Running on the server: ' + {json.dumps(why)}; }};"
                f"</script>")
    serve(folder)
    # inline, not <script src>: Gradio runs an inline head script the moment it adds it, a src one only
    # once its own scripts let go of the main thread (~0.4 s later on a loaded 2-core laptop), and the
    # script's first act is to start the model's worker
    script = SCRIPT.read_text()
    if "</script" in script:
        raise ValueError(f"{SCRIPT} cannot be inlined: it contains '</script'")
    return f"<script>window.toyvizConfig = {json.dumps(config(folder))};\n{script}</script>"


def panel() -> gr.HTML:
    """The Sample tab's in-browser panel: prompt, sliders, bars, attention, generation (web/src/panel.js)."""
    return gr.HTML("", elem_id="browser-model", js_on_load=(
        "if (window.toyvizMount) window.toyvizMount(element);"
        "else element.textContent = 'Running on the server: the page was served without its browser-model <head>';"))
