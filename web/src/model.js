// Loading the exported graphs (python -m toyviz.web) into onnxruntime-web and running them.
// The files come once (from this server, or another origin: config.files), each checked against its sha256
// (verify.js; a `.gz` one unpacked here first), and are kept, only once all were checked, in the browser's Cache
// API under the key of their hashes (config.cacheKey): a second visit reads them from there and need not hash again,
// and other files (a new checkpoint, a changed server) are another cache.
import * as ort from "onnxruntime-web/wasm";
import { verify } from "./verify.js";

const CACHE = "toyviz-model";

// → {bytes, cached}: from the cache, else fetched (and unpacked when gzipped)
async function fetchBytes(url, cache, gzipped = false) {
  const kept = cache && (await cache.match(url));
  if (kept) return { bytes: new Uint8Array(await kept.arrayBuffer()), cached: true };
  // one retry: a lecture hall's Wi-Fi drops a request now and then
  const response = await fetch(url).catch(() => fetch(url)).catch((error) => {
    throw new Error(`${url.split("/").pop()}: ${error.message}`);
  });
  if (!response.ok) throw new Error(`${url.split("/").pop()}: HTTP ${response.status}`);
  const body = gzipped ? response.body.pipeThrough(new DecompressionStream("gzip")) : response.body;
  return { bytes: new Uint8Array(await new Response(body).arrayBuffer()), cached: false };
}

export class Model {
  // config: {files: {prefill, step, weights, wasm}: urls, hashes: their sha256, cacheKey, n_layer, n_head, d_head,
  // vocab_size, context}
  static async load(config) {
    if (typeof WebAssembly !== "object") throw new Error("this browser has no WebAssembly");
    // a secure context (https, localhost) has the Cache API and crypto.subtle; plain http on a LAN has neither
    const started = performance.now();
    const cache = globalThis.caches ? await caches.open(`${CACHE}-${config.cacheKey}`) : null;
    const names = ["prefill", "step", "weights", "wasm"], urls = names.map((name) => config.files[name]);
    const files = await Promise.all(urls.map((url) => fetchBytes(url, cache, url.endsWith(".gz"))));
    const [prefill, step, weights, wasm] = files;
    const fetched = performance.now();
    let checked = "first_visit";              // a verdict (verify.js): kept from the visit that checked the files
    if (!files.every((f) => f.cached)) {
      const verdicts = await Promise.all(names.map((name, i) => verify(name, urls[i], files[i].bytes, config.hashes[name])));
      checked = verdicts.includes("checked") ? "checked" : verdicts[0];
      if (checked === "checked") await Promise.all(urls.map((url, i) => cache?.put(url, new Response(files[i].bytes))));
    }
    const hashed = performance.now();
    ort.env.wasm.wasmBinary = wasm.bytes;
    ort.env.wasm.numThreads = 1;              // a Gradio page is not cross-origin isolated: no shared memory
    ort.env.logLevel = "error";
    const options = { executionProviders: ["wasm"], externalData: [{ path: "model.safetensors", data: weights.bytes }] };
    // ORT's graph optimisers (folding the fp16 → fp32 casts and the weights' transposes, fusing) take
    // ~300 ms of wasm per graph. The prefill graph, run once per keystroke, barely needs them (its matmuls
    // over T tokens dwarf the casts), so it loads without: the page is ready that much sooner. The step
    // graph, run once per generated token, is 2-3× faster optimised; it loads once the first forward pass
    // was answered (prepareStep), while the page shows bars and attention, and generation waits for it.
    const prefillSession = await ort.InferenceSession.create(prefill.bytes, { ...options, graphOptimizationLevel: "disabled" });
    const ms = { files: fetched - started, hash: hashed - fetched, session: performance.now() - hashed };
    const loadStep = () => ort.InferenceSession.create(step.bytes, { ...options, graphOptimizationLevel: "all" });
    return new Model(config, prefillSession, loadStep, { checked, cached: files.every((f) => f.cached), ms });
  }

  // loadStep: → a Promise of the step graph's session
  constructor(config, prefill, loadStep, loaded) {
    Object.assign(this, { config, prefill, loadStep, loaded, step: null });
    this.L = config.n_layer; this.H = config.n_head; this.V = config.vocab_size;
  }

  // → a Promise of the step graph's session, loading it on the first call (loaded.ms.step: how long that took)
  prepareStep() {
    if (this.step === null) {
      const started = performance.now();
      this.step = this.loadStep();
      this.step.then(() => { this.loaded.ms.step = performance.now() - started; });
    }
    return this.step;
  }

  // ids (≤ context) → {logits (T·V), attention (L·H·T·T), keys, values (ort tensors), T, V, L, H}
  async forward(ids) {
    const T = ids.length;
    const input = new ort.Tensor("int64", BigInt64Array.from(ids, BigInt), [1, T]);
    const out = await this.prefill.run({ ids: input });
    return { logits: out.logits.data, attention: out.attention.data, keys: out.keys, values: out.values,
             T, V: this.V, L: this.L, H: this.H };
  }

  // one new id after the cached keys/values → {logits (V), keys, values}
  async next(id, keys, values) {
    const input = new ort.Tensor("int64", BigInt64Array.of(BigInt(id)), [1, 1]);
    const out = await (await this.prepareStep()).run({ ids: input, past_keys: keys, past_values: values });
    keys.dispose?.(); values.dispose?.();
    return { logits: out.logits.data, keys: out.keys, values: out.values };
  }

  // Yields next-token logits (V) for a growing sequence, as ToyGPT.generate_ids reads it: the window
  // holds at most `context` tokens and jumps forward by half a context when it overflows (then
  // prefilled afresh); otherwise one cached step per token. The caller appends each chosen id to seq.
  async *logitsFor(seq) {
    const context = this.config.context;
    let start = Math.max(0, seq.length - context), keys = null, values = null;
    for (;;) {
      const jumped = seq.length - start > context ? seq.length - Math.floor(context / 2) : start;
      let logits;
      if (keys === null || jumped !== start) {
        start = jumped;
        const out = await this.forward(seq.slice(start));
        ({ keys, values } = out);
        logits = out.logits.subarray((out.T - 1) * this.V);
      } else {
        ({ logits, keys, values } = await this.next(seq[seq.length - 1], keys, values));
      }
      yield logits;
    }
  }
}
