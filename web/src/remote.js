// The page's side of the model's worker (worker.js): the same calls as Model (model.js), each a
// message to the worker and a Promise of its answer.
export class RemoteModel {
  // config: as Model.load's
  static async load(config) {
    if (typeof Worker !== "function") throw new Error("this browser has no Web Workers");
    // the worker's code is in this script (build.mjs): it starts without a request to the server
    const script = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "text/javascript" }));
    // and it would resolve a relative url against its blob: url, not the page's
    const files = Object.fromEntries(Object.entries(config.files).map(([name, url]) => [name, new URL(url, document.baseURI).href]));
    const model = new RemoteModel(config, new Worker(script));
    URL.revokeObjectURL(script);
    model.loaded = await model.call("load", { ...config, files });
    return model;
  }

  constructor(config, worker) {
    Object.assign(this, { config, worker, calls: new Map(), count: 0 });
    this.L = config.n_layer; this.H = config.n_head; this.V = config.vocab_size;
    worker.onmessage = ({ data: { id, result, error } }) => {
      const call = this.calls.get(id);
      this.calls.delete(id);
      if (error === undefined) call.resolve(result);
      else call.reject(new Error(error));
    };
    // the script could not be fetched or run: every pending call fails, and says so
    worker.onerror = (event) => {
      event.preventDefault();
      for (const call of this.calls.values()) call.reject(new Error(`the model's worker failed: ${event.message || "its script did not load"}`));
      this.calls.clear();
    };
  }

  call(op, args) {
    return new Promise((resolve, reject) => {
      const id = this.count++;
      this.calls.set(id, { resolve, reject });
      this.worker.postMessage({ id, op, args });
    });
  }

  // ids → Promise of {logits (T·V), attention (L·H·T·T), T, V, L, H}
  forward(ids) { return this.call("forward", ids); }

  // → Promise of where the loading time went, ms: as loaded.ms, plus the step graph's session once loaded
  timings() { return this.call("timings"); }

  // next-token logits for a growing sequence, as Model.logitsFor: the caller appends each chosen id to seq
  async *logitsFor(seq) {
    let sent = seq.length;
    yield await this.call("start", seq);
    for (;;) {
      const added = seq.slice(sent);
      sent = seq.length;
      yield await this.call("next", added);
    }
  }
}
