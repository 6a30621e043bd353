// The Sample tab's in-browser panel: a prompt whose attention and next-token bars follow every
// keystroke, sliders that redraw the bars from stored logits, and live generation with Stop.
// Nothing here talks to the server.
import { draw, nextTokenProbs, random, top } from "./sampling.js";

const HTML = `
<style>
.tv-panel .tv-backend { font-size: 0.85em; opacity: 0.75; margin: 4px 0; }
.tv-panel .tv-prompt { width: 100%; font: inherit; padding: 6px; box-sizing: border-box; }
.tv-panel .tv-controls { display: flex; flex-wrap: wrap; gap: 10px 18px; align-items: end; margin: 8px 0; }
.tv-panel .tv-controls label { display: flex; flex-direction: column; font-size: 0.85em; }
.tv-panel .tv-controls input[type=number] { width: 6em; }
.tv-panel .tv-controls button { padding: 6px 16px; }
.tv-panel .tv-views { display: flex; flex-wrap: wrap; gap: 24px; }
.tv-panel .tv-bars { width: 340px; }
.tv-panel .tv-bar { display: grid; grid-template-columns: 110px 1fr 48px; gap: 6px; align-items: center; font-size: 0.85em; }
.tv-panel .tv-piece { overflow: hidden; white-space: nowrap; font-family: monospace; }
.tv-panel .tv-track { background: #eef; height: 12px; }
.tv-panel .tv-fill { display: block; height: 100%; background: #6366f1; min-width: 1px; }
.tv-panel .tv-heatmap { width: 256px; height: 256px; image-rendering: pixelated; border: 1px solid #ccc; }
.tv-panel .tv-output { white-space: pre-wrap; font-family: monospace; margin-top: 8px; }
.tv-panel .tv-caption { font-size: 0.85em; margin-bottom: 4px; }
</style>
<div class="tv-panel">
<div class="tv-backend" aria-live="polite"></div>
<div class="tv-browser" hidden>
  <textarea class="tv-prompt" rows="2" aria-label="prompt (runs in your browser)">To be, or not to be</textarea>
  <div class="tv-controls">
    <label>temperature <output></output><input id="tv-temperature" type="range" min="0" max="2" step="0.05" value="1"></label>
    <label>top-k <output></output><input id="tv-top-k" type="range" min="0" max="100" step="1" value="0"></label>
    <label>top-p <output></output><input id="tv-top-p" type="range" min="0.05" max="1" step="0.05" value="1"></label>
    <label>seed <input id="tv-seed" type="number" value="0" min="0" step="1"></label>
    <label>tokens <input id="tv-tokens" type="number" value="200" min="1" max="2000" step="1"></label>
    <button id="tv-generate" class="lg primary">Generate</button><button id="tv-stop" class="lg secondary" disabled>Stop</button>
  </div>
  <div class="tv-views">
    <div><div class="tv-caption">next token</div><div class="tv-bars"></div></div>
    <div><div class="tv-caption">attention, layer <select id="tv-layer"></select> head <select id="tv-head"></select></div>
      <canvas class="tv-heatmap" width="256" height="256"></canvas></div>
  </div>
  <div class="tv-output"></div>
</div>
</div>`;

export class Panel {
  constructor(element) {
    element.innerHTML = HTML;
    const $ = (selector) => element.querySelector(selector);
    Object.assign(this, {
      backendLine: $(".tv-backend"), browser: $(".tv-browser"), prompt: $(".tv-prompt"), bars: $(".tv-bars"),
      heatmap: $(".tv-heatmap"), output: $(".tv-output"), layer: $("#tv-layer"), head: $("#tv-head"),
      sliders: ["#tv-temperature", "#tv-top-k", "#tv-top-p"].map($), seed: $("#tv-seed"), tokens: $("#tv-tokens"),
      go: $("#tv-generate"), stop: $("#tv-stop"),
    });
    this.logits = null;      // the last next-token logits the bars were drawn from
    this.shown = null;       // the last forward pass whose attention the heatmap shows
  }

  say(text) { this.backendLine.textContent = text; }

  // the browser's model is ready: wire the controls
  start(model, tokenizer) {
    Object.assign(this, { model, tokenizer });
    for (const [select, n] of [[this.layer, model.L], [this.head, model.H]])
      select.innerHTML = Array.from({ length: n }, (_, i) => `<option>${i}</option>`).join("");
    this.browser.hidden = false;
    for (const slider of this.sliders) slider.addEventListener("input", () => this.drawBars());
    this.layer.addEventListener("change", () => this.drawHeatmap());
    this.head.addEventListener("change", () => this.drawHeatmap());
    this.prompt.addEventListener("input", () => this.schedule());
    this.go.addEventListener("click", () => this.generate());
    this.stop.addEventListener("click", () => { this.stopped = true; this.stopNow?.({ done: true }); });
    return this.read();
  }

  settings() {
    const [t, k, p] = this.sliders.map((s) => Number(s.value));
    this.sliders.forEach((s) => { s.previousElementSibling.value = s.value; });
    return [t, k, p];
  }

  // one forward pass per animation frame at most, on the newest prompt
  schedule() {
    if (this.pending) return;
    this.pending = requestAnimationFrame(() => { this.pending = null; this.read(); });
  }

  async read() {
    const ids = window.toyviz.tokenize(this.prompt.value);
    const out = await this.model.forward(ids);
    this.shown = out;
    this.logits = out.logits.subarray((out.T - 1) * out.V);
    this.drawHeatmap();
    this.drawBars();
  }

  drawBarsNextFrame() {
    if (this.barsPending) return;
    this.barsPending = requestAnimationFrame(() => { this.barsPending = null; this.drawBars(); });
  }

  drawBars() {
    if (!this.logits) return;
    const probs = nextTokenProbs(this.logits, ...this.settings());
    this.bars.innerHTML = top(probs, 10).map((id) => {
      const p = probs[id];
      return `<div class="tv-bar"><span class="tv-piece">${escape(JSON.stringify(this.tokenizer.piece(id)))}</span>` +
             `<span class="tv-track"><span class="tv-fill" style="width:${(100 * p).toFixed(1)}%"></span></span><span class="tv-p">${p.toFixed(3)}</span></div>`;
    }).join("");
  }

  drawHeatmap() {
    const out = this.shown;
    if (!out) return;
    const { T, H } = out, layer = Number(this.layer.value), head = Number(this.head.value);
    const offset = (layer * H + head) * T * T;
    const image = new ImageData(T, T);
    for (let i = 0; i < T * T; i++) {
      const shade = 255 - Math.round(255 * Math.sqrt(out.attention[offset + i]));   // √ so faint weights show
      image.data.set([shade, shade, 255, 255], 4 * i);
    }
    const ctx = this.heatmap.getContext("2d");
    ctx.imageSmoothingEnabled = false;
    ctx.clearRect(0, 0, 256, 256);
    createImageBitmap(image).then((bitmap) => ctx.drawImage(bitmap, 0, 0, 256, 256));
  }

  async generate() {
    if (this.running) return;
    this.running = true; this.stopped = false;
    this.go.disabled = true; this.stop.disabled = false;
    const seq = window.toyviz.tokenize(this.prompt.value);
    const uniform = random(Number(this.seed.value));
    const decoder = new TextDecoder();
    const text = document.createTextNode(""), generated = document.createElement("b");
    generated.append(text);
    this.output.replaceChildren(this.prompt.value, generated);
    const started = performance.now();
    let made = 0;
    const steps = this.model.logitsFor(seq);
    // Stop ends the loop at once: a step still under way in the model's worker finishes unseen
    const stop = new Promise((resolve) => { this.stopNow = resolve; });
    try {
      for (;;) {
        const step = await Promise.race([steps.next(), stop]);
        if (step.done || this.stopped || made >= Number(this.tokens.value)) break;
        const logits = (this.logits = step.value);
        const probs = nextTokenProbs(logits, ...this.settings());
        const id = draw(probs, uniform);
        seq.push(id); made++;
        text.appendData(decoder.decode(this.tokenizer.tokenBytes(id), { stream: true }));
        this.drawBarsNextFrame();
        await yieldToPage();          // Stop's click and the paint get in between two tokens
      }
    } catch (error) {
      this.say(`Generation failed in the browser: ${error.message}`);
      throw error;
    } finally {
      steps.return();                 // not awaited: it waits for a step under way
      this.running = false; this.go.disabled = false; this.stop.disabled = true;
    }
    const seconds = (performance.now() - started) / 1000;
    this.lastRun = { tokens: seq.slice(seq.length - made), seconds, stopped: this.stopped };
    return this.lastRun;
  }
}

// a macrotask without setTimeout's 4 ms clamp on nested timers
const channel = new MessageChannel();
const waiting = [];
channel.port1.onmessage = () => waiting.shift()();
const yieldToPage = () => new Promise((resolve) => { waiting.push(resolve); channel.port2.postMessage(null); });

const escape = (s) => s.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);
