// window.toyviz: the contract the page and the outside checks use.
//   ready     a Promise, settled once the in-browser model has loaded or the page fell back to the server
//   backend   "browser" or "server" (and `reason` says why, when "server")
//   modelHash sha256 (hex) of checkpoints/gpt/model.safetensors, the file the graphs read their weights from
//   tokenize(text) → ids exactly as Python's gpt.encode(text)[0] (BOS first, cut to the context)
//   forward(ids)   → Promise of {logits: Float32Array(T·V), attention: Float32Array(L·H·T·T), T, V, L, H}
import { Model } from "./model.js";
import { Panel } from "./panel.js";
import { Tokenizer } from "./tokenizer.js";

let settle;
const toyviz = (window.toyviz = {
  backend: "server", reason: "loading", modelHash: null,
  ready: new Promise((resolve) => { settle = resolve; }),
  tokenize() { throw new Error("the tokenizer has not loaded"); },
  async forward() { throw new Error(`the model runs on the server here: ${toyviz.reason}`); },
});

// called by the Sample tab's gr.HTML (js_on_load) with the file urls and the graphs' metadata
window.toyvizMount = async function mount(element, config) {
  if (toyviz.mounted) return toyviz.ready;
  toyviz.mounted = true;
  toyviz.modelHash = config.sha256;
  const panel = (toyviz.panel = new Panel(element));
  panel.say("Loading the model into your browser…");
  const started = (toyviz.mountedAt = performance.now());
  try {
    const ranks = await fetch(config.files.ranks).then((r) => { if (!r.ok) throw new Error(`tokenizer: HTTP ${r.status}`); return r.text(); });
    const tokenizer = new Tokenizer(ranks, config.specials);
    toyviz.tokenize = (text) => [tokenizer.bos, ...tokenizer.encode(text)].slice(0, config.context);
    const model = await Model.load(config);
    toyviz.forward = (ids) => model.forward(ids);
    toyviz.model = model;
    await panel.start(model, tokenizer);
    toyviz.backend = "browser"; toyviz.reason = "";
    toyviz.loadSeconds = (performance.now() - started) / 1000;
    panel.say(`Running in your browser (onnxruntime-web, ${toyviz.loadSeconds.toFixed(1)} s to load${model.loaded.cached ? ", from the cache" : ""}; ` +
              `weights sha256 ${model.loaded.checked}). Sampling here sends nothing to the server.`);
  } catch (error) {
    toyviz.backend = "server"; toyviz.reason = String(error.message || error);
    panel.say(`Running on the server: the model could not load in this browser (${toyviz.reason}). Use the controls below.`);
    console.warn("toyviz: server fallback:", error);
  }
  toyviz.readyAt = performance.now();        // ms since the page's navigation began
  settle(toyviz.backend);
  return toyviz.ready;
};
