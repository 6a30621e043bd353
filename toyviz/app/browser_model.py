"""The GPT in the student's browser: the page's <head> that loads it when a view needs it, the Sample tab's
panel that shows it, and the files it fetches.

`head()` goes to `demo.launch(head=…)`: a few hundred bytes that hand the page the model's settings and
files (urls and sha256) and load the page script (web/dist/toyviz.js, built by `cd web && npm ci && npm run
build`; the model's worker is inside it) only when a view needs the page's own model (the Sample tab, a
lesson step on it): a page opened on any other tab fetches none of the model's 11.7 MB. The files are the
graphs (checkpoints/gpt/web/, written by `toyviz export web`), the checkpoint's model.safetensors and
tokenizer, and onnxruntime's wasm; this server sends them from memory at addresses that name their hash
(toyviz.serving.static), or, where TOYVIZ_MODEL_ORIGIN names another origin (a Space's files on the Hub's
CDN), the page fetches the checkpoint's files from there and this server sends none of their bytes
(TOYVIZ_WASM_URL likewise for the wasm). Every file's sha256 is computed here at start and checked in the
page before it runs: what makes a foreign origin safe, and a checkpoint changed since its graphs were
exported is found here and named on the page and in the log. The script defines `window.toyviz`
(web/src/main.js) and falls back to the server's controls, saying why, when the model cannot load in
this browser. `panel()` is where the Sample tab shows it. Nothing here imports onnx.
"""
from __future__ import annotations

import functools
import gzip
import hashlib
import html
import json
import os
import shutil
import subprocess
from pathlib import Path

import gradio as gr
import numpy as np
import torch

from toyviz.app import figures, widgets
from toyviz.app.figures import attention as attention_figs, sampling as sampling_figs
from toyviz.app.loaded import clean_prompt
from toyviz.errors import UserError
from toyviz.i18n import LANGUAGES, said, speaking, t
from toyviz.models.checkpoint import CHECKPOINTS
from toyviz.serving.static import Shelf
from toyviz.settings.controls import DEFAULTS, MAX_PROMPT_CHARS, RANGES, context_note, words

ROOT = Path(__file__).resolve().parents[2]
DIST = ROOT / "web" / "dist"
SCRIPT, WASM = DIST / "toyviz.js", DIST / "ort-wasm-simd-threaded.wasm.gz"
ORIGIN_SETTING = "TOYVIZ_MODEL_ORIGIN"    # e.g. https://huggingface.co/spaces/<owner>/<name>/resolve/main/
WASM_SETTING = "TOYVIZ_WASM_URL"          # e.g. jsDelivr's copy of the pinned onnxruntime-web's wasm


def manifest(folder: Path) -> dict | None:
    """The graphs' metadata (`toyviz export web` writes it), or None when they were not exported."""
    path = folder / "web" / "graphs.json"
    return json.loads(path.read_text()) if path.is_file() else None


def model_files(folder: Path, graphs: dict) -> dict[str, Path]:
    """name → the file the page fetches for it."""
    return {**{name: folder / "web" / file for name, file in graphs["graphs"].items()},
            "weights": folder / graphs["weights"], "ranks": folder / "tokenizer.tiktoken", "wasm": WASM}


def content_sha256(path: Path) -> str:
    """sha256 of what the page ends up holding: a `.gz` file's unpacked bytes (the page unpacks it)."""
    stat = path.stat()
    return _content_sha256(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _content_sha256(path: str, mtime_ns: int, size: int) -> str:        # again only when the file changed
    data = Path(path).read_bytes()
    return hashlib.sha256(gzip.decompress(data) if path.endswith(".gz") else data).hexdigest()


def stale(folder: Path, graphs: dict) -> str | None:
    """Why the exported graphs do not fit the checkpoint this server runs, or None: the graphs read their
    weights from model.safetensors, and were exported from the file whose sha256 graphs.json records."""
    served = content_sha256(folder / graphs["weights"])
    if served == graphs["sha256"]:
        return None
    return (f"the browser's graphs were exported from other weights ({graphs['weights']} sha256 {served[:12]}…, "
            f"graphs made from {graphs['sha256'][:12]}…): `toyviz export web` exports them again")


def address(path: Path, shelf: Shelf, sha256: str, origin: str | None) -> str:
    """Where the page fetches `path`: under `origin` by its place in the repository (the Hub serves a
    Space's files so), else from this server's shelf."""
    if origin and path.resolve().is_relative_to(ROOT):
        return origin.rstrip("/") + "/" + path.resolve().relative_to(ROOT).as_posix()
    return shelf.add(path, sha256 if not path.name.endswith(".gz") else None)


def config(shelf: Shelf, folder: Path = CHECKPOINTS / "gpt", origin: str | None = None,
           wasm_url: str | None = None) -> dict | None:
    """What the page's script needs: each file's url and sha256, the graphs' metadata, the Cache API's key
    (the files' hashes: another file, another cache); None when the graphs were not exported. `origin`,
    `wasm_url`: default from TOYVIZ_MODEL_ORIGIN, TOYVIZ_WASM_URL."""
    graphs = manifest(folder)
    if graphs is None:
        return None
    origin = origin if origin is not None else os.environ.get(ORIGIN_SETTING) or None
    wasm_url = wasm_url if wasm_url is not None else os.environ.get(WASM_SETTING) or None
    paths = model_files(folder, graphs)
    hashes = {name: content_sha256(path) for name, path in paths.items()}
    files = {name: address(path, shelf, hashes[name], origin) for name, path in paths.items() if name != "wasm"}
    files["wasm"] = wasm_url or address(WASM, shelf, hashes["wasm"], None)
    key = hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()[:16]
    return {**graphs, "files": files, "hashes": hashes, "cacheKey": key}


def missing(folder: Path = CHECKPOINTS / "gpt") -> str | None:
    """Why the browser cannot get the model from this server, or None."""
    if not SCRIPT.is_file() or not WASM.is_file():
        return "the page's script was not built (cd web && npm ci && npm run build)"
    graphs = manifest(folder)
    if graphs is None:
        return "the model's graphs were not exported (`toyviz export web`)"
    return stale(folder, graphs)


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


def head(shelf: Shelf, folder: Path = CHECKPOINTS / "gpt") -> str:
    """The page's <head> part: the model's settings and a loader for the page script, which `load()`
    fetches once, when a view first needs the page's own model; without a built script, exported graphs
    that fit the checkpoint, a `window.toyviz` that says the server runs the model, and why."""
    why = missing(folder)
    if why is not None:
        fallback = {"backend": "server", "reason": why, "modelHash": None}
        return (f"<script>window.toyviz = Object.assign({json.dumps(fallback)}, {{ready: Promise.resolve('server'), "
                f"load: () => Promise.resolve('server')}});"
                f"window.toyvizMount = (element) => {{ element.querySelector('.tv-backend').textContent = "
                f"'The sampler runs on the server: ' + {json.dumps(why)}; }};"
                f"</script>")
    loader = LOADER.replace("SCRIPT_URL", json.dumps(shelf.add(SCRIPT)))
    return f"<script>window.toyvizConfig = {json.dumps(config(shelf, folder))};\n{loader}</script>"


# window.toyviz exists from the page's start, `ready` settling once a view asked for the model (load()):
# the page script's main.js fills the object in, settles `ready` and replaces toyvizMount
LOADER = """(() => {
  let settle, loading = null;
  const ready = new Promise((resolve) => { settle = resolve; });
  const server = (why) => { window.toyviz.reason = why; settle("server"); return "server"; };
  window.toyviz = { backend: "server", reason: "not loaded: the model loads when a view needs it",
    modelHash: window.toyvizConfig.sha256, ready, settle,
    load() {
      loading ??= new Promise((resolve) => {
        const script = Object.assign(document.createElement("script"), { src: SCRIPT_URL });
        script.onload = () => resolve(window.toyviz.ready);
        script.onerror = () => resolve(server("the page script could not be fetched"));
        document.head.append(script);
      });
      return loading;
    } };
  const mountLater = (element) => window.toyviz.load().then(() => window.toyvizMount !== mountLater
    ? window.toyvizMount(element)
    : (element.querySelector(".tv-backend").textContent = "The sampler runs on the server: " + window.toyviz.reason));
  window.toyvizMount = mountLater;
})();"""


def sampler_settings() -> dict:
    """What the page's sampler must agree on with the server's: each control's default and range, the prompt's
    longest length, the figures' styles, and in each language (`said`) what the server would say there."""
    return {"defaults": {k: DEFAULTS[k] for k in SAMPLER}, "ranges": {k: RANGES[k] for k in SAMPLER},
            "maxPromptChars": MAX_PROMPT_CHARS,
            "figures": {mode: page_figures(mode == "projector") for mode in ("laptop", "projector")},
            "said": {lang: sampler_words(lang) for lang in LANGUAGES}}


def sampler_words(lang: str) -> dict:
    """The sampler's words in `lang`, where the page's sampler says them in the server's stead: the notes the
    server's rule writes when it changes a value (toyviz.settings.controls), the note of a prompt cut to the context,
    the refusal of an empty prompt as the page receives it (its message and figure), and the page's own lines
    ([generate] of the catalogues, and [branches]: the runs' tree and candidates under the text). The page is one for every visitor; its script picks the words of the
    language the page was opened in (<html lang>, set by toyviz.app.wording)."""
    with speaking(lang):
        try:
            clean_prompt("")
        except UserError as err:
            empty = said(err)
        note, figure = widgets.placeholders(empty, [gr.Markdown(render=False), widgets.FigurePlot(render=False)])
        figure = json.loads(figure.to_json())
        del figure["layout"]["template"]        # the house theme (3 kB a page): the page takes the bars figure's
        return {"words": {k: words(k) for k in SAMPLER},
                "cut": {which: context_note("{kept}", "{dropped}", which) for which in ("first", "last")},
                "empty": {"note": note, "figure": figure},
                "text": {key: t(f"generate.{key}") for key in PAGE_WORDS},
                "bars": {key: t(f"figures.sampling.{key}") for key in ("next", "next_one", "off")},
                "branches": {key: t(f"branches.{key}") for key in BRANCH_WORDS}}


SAMPLER = ("temperature", "top_k", "top_p", "max_new", "seed")
PAGE_WORDS = ("button", "busy", "loading", "in_browser", "from_cache", "on_server", "failed", "sha_checked",
              "sha_first_visit", "sha_unverifiable")
BRANCH_WORDS = ("hint", "tree_label", "tree_head", "attend_prompt", "attend_step", "candidates", "entry", "instead_of",
                "the_run", "preview")                  # web/src/branches.js's
BARS = 15                                       # candidates a next-token figure shows (web/src/figures.js BARS)


def page_figures(projector: bool) -> dict:
    """The styles of the figures the page's sampler draws itself (web/src/figures.js fills in the numbers and
    labels), made by the app's own figure functions so that they look as the server's: the candidates at a
    generated token as the next-token bars (figures/sampling.py), and where the last token looks as an
    Attention tab map (figures/attention.py: its colour scale, labels and sizes); the house theme once."""
    bars = _bare(sampling_figs.next_token_bars(torch.zeros(BARS), str, n=BARS, projector=projector))   # its height: 15 bars
    rows, cols = ["L0 H0"] * 16, ["99: ␣" + "m" * 6] * 2           # a head's name, a word's label
    attention = _bare(attention_figs.attention_figure(np.zeros((len(rows), len(cols)), np.float32), rows=rows,
                                                      cols=cols, title="", filename="", projector=projector))
    font = figures.BASE_FONT * (figures.PROJECTOR_SCALE if projector else 1.0)
    theme = bars["layout"].pop("template")
    del attention["layout"]["template"]                      # maps' grey shows only under masked cells: none here
    return {"theme": theme, "bars": bars, "attention": attention,
            # as attention_figure labels its keys: every one that gets a line of text across the map, else every k-th
            "labelsAcross": attention_figs.MAP_WIDTH / (attention_figs.LABEL_LINE * font)}


def _bare(fig) -> dict:
    """A figure's style alone: its traces without their numbers and labels, its layout without ticks."""
    out = json.loads(fig.to_json())
    for trace in out["data"]:
        for key in ("x", "y", "z"):
            trace.pop(key, None)
    for axis in ("xaxis", "yaxis"):
        out["layout"].get(axis, {}).pop("tickvals", None)
    return {"traces": out["data"], "layout": out["layout"]}


def panel() -> gr.HTML:
    """The Sample tab's one line saying who runs its sampler: the page's own model once it is ready (it then
    answers the tab's sliders, Generate and Stop itself: web/src/sampler.js), the server until then or
    when the model cannot load here, and why."""
    settings = html.escape(json.dumps(sampler_settings()), quote=True)
    # "…" until the page script says its line in the page's language (one HTML for every visitor: no words here)
    return gr.HTML(f"<div class='tv-backend' data-settings=\"{settings}\">…</div>",
                   elem_id="browser-model", js_on_load=(
        "if (window.toyvizMount) window.toyvizMount(element);"
        "else element.querySelector('.tv-backend').textContent = "
        "'The model runs on the server: the page was served without its browser-model <head>.';"))


def page_first(trigger, action: str, inputs: list, **options):
    """An event of the Sample tab that the page's own sampler answers when it runs the model, sending nothing
    (the slider's redraw, Generate, Stop): `trigger` (e.g. `ui.go.click`) first runs `action` in the page
    with the event's inputs; chain the server's part with `.success(...)`, which runs only when the page
    left the event to it. Gradio cannot skip an event's server call from its `js`: the page's part throws
    to end the chain, on an event with no outputs, which shows nothing (Gradio's catch is silent). `options`:
    more of the trigger's settings (Stop's `cancels`: on the chained step, Gradio cancelled nothing)."""
    return trigger(None, inputs, None, js=f"(...values) => window.toyviz?.sampler?.take({json.dumps(action)}, values)",
                   queue=False, api_visibility="private", **options)
