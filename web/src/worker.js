// The model's own thread (a dedicated Web Worker): reads the files, creates the ONNX Runtime sessions
// and runs them here, so that loading, a forward pass or a generation step never holds the page's main
// thread, which Gradio needs as the page opens (its scripts and rendering) and the sliders need after.
// remote.js is the page's side.
import { Model } from "./model.js";

let model = null, seq = null, generation = null;

// the arrays of a result go to the page without a copy (each owns its buffer: ORT copies outputs out of wasm memory)
const own = (a) => (a.byteLength === a.buffer.byteLength ? a : a.slice());

const ops = {
  async load(config) {
    const waited = performance.now();       // since the worker was created: its start and this script's parse
    model = await Model.load(config);
    model.loaded.ms = { worker: waited, ...model.loaded.ms };
    return model.loaded;
  },
  async forward(ids) {
    const { logits, attention, keys, values, T, V, L, H } = await model.forward(ids);
    keys.dispose(); values.dispose();
    return { logits: own(logits), attention: own(attention), T, V, L, H };
  },
  // a generation: start with the prompt's ids, then `next` with each id the page drew → next-token logits
  async start(ids) {
    await generation?.return();
    seq = ids;
    generation = model.logitsFor(seq);
    return own((await generation.next()).value);
  },
  async next(ids) {
    seq.push(...ids);
    return own((await generation.next()).value);
  },
  // where the loading time went, ms (step: the step graph's session, once it has loaded)
  async timings() { return model.loaded.ms; },
};

// one call at a time, in order: a keystroke's forward waits for the generation step under way
let queue = Promise.resolve();
self.onmessage = ({ data: { id, op, args } }) => {
  queue = queue.then(async () => {
    try {
      const result = await ops[op](args);
      const buffers = result instanceof Float32Array ? [result.buffer]
        : op === "forward" ? [result.logits.buffer, result.attention.buffer] : [];
      self.postMessage({ id, result }, buffers);
      if (op === "forward") setTimeout(() => model.prepareStep());   // answered: the step graph loads now
    } catch (error) {
      self.postMessage({ id, error: String(error?.message ?? error) });
    }
  });
};
