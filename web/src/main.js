// window.toyviz: the contract the page and the outside checks use.
//   ready     a Promise, settled once the in-browser model has loaded or the page fell back to the server
//   backend   "browser" or "server" (and `reason` says why, when "server")
//   modelHash sha256 (hex) of checkpoints/gpt/model.safetensors, the file the graphs read their weights from
//   tokenize(text) → ids exactly as Python's gpt.encode(text)[0] (BOS first, cut to the context)
//   forward(ids)   → Promise of {logits: Float32Array(T·V), attention: Float32Array(L·H·T·T), T, V, L, H}
//   sampler   the Sample tab's sampler while the page's model runs it (sampler.js), else absent
import { RemoteModel } from "./remote.js";
import { fill } from "./figures.js";
import { Sampler, said } from "./sampler.js";
import { Tokenizer } from "./tokenizer.js";
import { verify } from "./verify.js";

// The page's <head> (toyviz/app/browser_model.py) made window.toyviz and loaded this script when a view first
// needed the model: this fills the object in and settles its `ready`.
const config = window.toyvizConfig;
const toyviz = (window.toyviz ??= {});
Object.assign(toyviz, {
  startedAt: performance.now(),             // ms since the page's navigation began: when a view asked for the model
  backend: "server", reason: "loading", modelHash: config.sha256,
  tokenize() { throw new Error("the tokenizer has not loaded"); },
  async forward() { throw new Error(`the model runs on the server here: ${toyviz.reason}`); },
});
if (toyviz.settle) toyviz.settle(load()); else toyviz.ready = load();

// the model in its worker (remote.js), the tokenizer here; → "browser" or "server"
async function load() {
  try {
    const url = config.files.ranks;
    const ranks = fetch(url).then(async (r) => {
      if (!r.ok) throw new Error(`tokenizer: HTTP ${r.status}`);
      const bytes = await r.arrayBuffer();
      await verify("tokenizer", url, bytes, config.hashes.ranks);
      return new TextDecoder().decode(bytes);
    });
    const [ranksText, model] = await Promise.all([ranks, RemoteModel.load(config)]);     // both at once
    const tokenizer = new Tokenizer(ranksText, config.specials);
    toyviz.tokenize = (text) => [tokenizer.bos, ...tokenizer.encode(text)].slice(0, config.context);
    Object.assign(toyviz, { model, tokenizer, backend: "browser", reason: "" });
    toyviz.forward = (ids) => model.forward(ids);
  } catch (error) {
    toyviz.reason = String(error.message || error);
    console.warn("toyviz: server fallback:", error);
  }
  toyviz.readyAt = performance.now();        // ms since the page's navigation began
  return toyviz.backend;
}

// called by the Sample tab's gr.HTML (js_on_load) when the tab is first opened: its one line says who samples
window.toyvizMount = async function mount(element) {
  if (toyviz.mounted) return;
  toyviz.mounted = true;
  const line = element.querySelector(".tv-backend");
  const settings = JSON.parse(line.dataset.settings), text = () => said(settings).text;
  line.textContent = text().loading;
  if ((await toyviz.ready) === "browser") {
    toyviz.sampler = new Sampler(settings, toyviz.model, toyviz.tokenizer);
    toyviz.shownAt = performance.now();
    line.textContent = fill(text().in_browser, { seconds: (toyviz.readyAt / 1000).toFixed(1),
      cached: toyviz.model.loaded.cached ? text().from_cache : "", sha: text()[`sha_${toyviz.model.loaded.checked}`] });
  } else {
    line.textContent = fill(text().on_server, { why: toyviz.reason });
  }
};
