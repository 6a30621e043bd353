// Next-token logits → a distribution (temperature, top-k, top-p), as toyviz/models/sampling.py does,
// and a seeded draw so a seed reproduces a run in the browser.

export function nextTokenProbs(logits, temperature = 1, topK = 0, topP = 1) {
  const V = logits.length;
  const probs = new Float32Array(V);
  if (temperature <= 0) {                            // greedy: all mass on the argmax
    let best = 0;
    for (let i = 1; i < V; i++) if (logits[i] > logits[best]) best = i;
    probs[best] = 1;
    return probs;
  }
  const z = Float32Array.from(logits, (x) => x / temperature);
  if (topK > 0 && topK < V) {
    const kth = Float32Array.from(z).sort()[V - topK];
    for (let i = 0; i < V; i++) if (z[i] < kth) z[i] = -Infinity;
  }
  if (topP < 1) {
    // drop a token once the tokens before it already reach top_p (the first always stays)
    const order = Array.from(z.keys()).sort((a, b) => z[b] - z[a]);
    const p = softmax(order.map((i) => z[i]));
    let before = 0;
    order.forEach((i, rank) => { if (before >= topP) z[i] = -Infinity; before += p[rank]; });
  }
  probs.set(softmax(z));
  return probs;
}

function softmax(z) {
  let max = -Infinity;
  for (const x of z) if (x > max) max = x;
  let sum = 0;
  const out = Float32Array.from(z, (x) => { const e = Math.exp(x - max); sum += e; return e; });
  for (let i = 0; i < out.length; i++) out[i] /= sum;
  return out;
}

// mulberry32: a small seeded generator, uniform in [0, 1)
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function draw(probs, uniform) {
  let u = uniform(), last = 0;
  for (let i = 0; i < probs.length; i++) {
    if (probs[i] <= 0) continue;
    last = i;
    u -= probs[i];
    if (u < 0) return i;
  }
  return last;                                       // rounding left u a hair above 0
}

// the n most likely ids, most likely first: one pass over V with a short sorted list (a live
// generation asks for this at every token)
export function top(probs, n = 10) {
  const best = [];
  for (let i = 0; i < probs.length; i++) {
    if (probs[i] <= 0 || (best.length === n && probs[i] <= probs[best[n - 1]])) continue;
    let at = best.length === n ? n - 1 : best.length;
    while (at > 0 && probs[best[at - 1]] < probs[i]) { best[at] = best[at - 1]; at--; }
    best[at] = i;
  }
  return best;
}
