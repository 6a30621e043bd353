// The Sample tab's one sampler, answered by the page's own model: the tab's Gradio controls (the header's
// prompt, the sliders, Generate, Stop) stay the only ones; while this runs, their events end in the page
// (toyviz/app/browser_model.py page_first hands each event's values to `take`) and the page draws into the
// tab's own plot and text, sending nothing to the server. The same defaults, limits and refusals as the
// server's (the settings the panel carries come from toyviz.settings.controls and the server's own message).
// A run keeps each token's candidates, so that a click on a token shows them and branches from one
// (branches.js: the runs' tree, the candidates' and the attention's figures).
import { Branches } from "./branches.js";
import { barsTemplate, nextTokenBars, probabilitySpan, weighed } from "./figures.js";
import { draw, nextTokenProbs, random } from "./sampling.js";

// thrown from an event's page-side part to end it before its server part (Gradio has no other way)
const ANSWERED = "answered in the page";
const STEERING = 7, STEER_ALPHA = 8;        // in a generation's inputs: prompt, T, k, p, max new, seed, projector, steering
const WHOLE = new Set(["top_k", "max_new", "seed"]);        // ints in toyviz.settings.controls.DEFAULTS

export class Sampler {
  // settings: browser_model.sampler_settings(); model, tokenizer: the page's own (main.js)
  constructor(settings, model, tokenizer) {
    Object.assign(this, { settings, model, tokenizer, template: null, running: false, lastRun: null });
    this.branches = new Branches(this);
    this.prompt()?.addEventListener("input", () => this.schedule());
    this.redraw(this.prompt()?.value, this.sliders());          // the prompt's attention (its bars are the server's)
  }

  // Gradio's event `action` with its inputs' values → [] to let the server answer, or throws once answered here
  take(action, values) {
    if (action === "stop") {
      if (!this.running) return [];
      this.stopped = true;
      this.stopNow?.({ done: true });
    } else if (action === "redraw") {
      const [text, temperature, topK, topP] = values;
      this.redraw(text, this.limited({ temperature, top_k: topK, top_p: topP }));
    } else if (action === "generate") {
      // a steering feature named (even with strength 0): the server's, which steers or refuses the number
      if (Number(values[STEERING]) !== -1) {
        document.querySelector("#generated-plot")?.removeAttribute("hidden");   // hidden by a run in the page
        this.branches.end();                                    // its text keeps no candidates to show
        return [];
      }
      const [text, temperature, topK, topP, maxNew, seed] = values;
      this.generate(text, this.limited({ temperature, top_k: topK, top_p: topP, max_new: maxNew, seed }));
    } else {
      return [];
    }
    throw new Error(ANSWERED);
  }

  // each value forced into its control's range, as toyviz.settings.controls.setting does on the server
  limited(values) {
    const out = {};
    for (const [name, value] of Object.entries(values)) {
      const [low, high] = this.settings.ranges[name];
      let number = Number(value);
      if (!Number.isFinite(number)) number = this.settings.defaults[name];
      number = Math.min(Math.max(number, low), high);
      out[name] = WHOLE.has(name) ? Math.trunc(number) : number;
    }
    return out;
  }

  // the controls on screen now (a keystroke in the prompt reads the sliders as they are)
  prompt() { return document.querySelector("#prompt textarea"); }
  sliders() {
    const read = (id) => document.querySelector(`#${id} input[type=number]`)?.value;
    return this.limited({ temperature: read("temperature"), top_k: read("top-k"), top_p: read("top-p") });
  }
  plot(id) { return document.querySelector(`#${id} .js-plotly-plot`); }
  shown() { return this.plot("bars-plot")?.offsetParent != null; }      // the Sample tab is on screen

  // the text the model gets, as the server's clean_prompt makes it, or null after showing its refusal
  checked(text) {
    text = String(text ?? "").replaceAll("\0", "").slice(0, this.settings.maxPromptChars);
    if (text.trim()) return text;
    this.refuse();
    return null;
  }

  // the server's refusal of an empty prompt, in the same places: the note, the bars, the generated text
  refuse() {
    const { note, figure } = this.settings.empty;
    setNote(note);
    setGenerated("");
    const plot = this.plot("bars-plot");
    this.template = barsTemplate(plot) ?? this.template;
    const theme = this.template?.layout.template;           // the server's figures share one theme
    if (plot) window.Plotly.react(plot, figure.data ?? [], { ...figure.layout, ...(theme && { template: theme }) });
  }

  // a keystroke in the prompt: one forward pass per animation frame at most, on the newest prompt
  schedule() {
    if (this.pending || !this.shown()) return;
    this.pending = requestAnimationFrame(() => { this.pending = null; this.redraw(this.prompt().value, this.sliders()); });
  }

  // the prompt's next-token bars for these settings: a slider's move redraws from the prompt's stored logits
  async redraw(text, settings) {
    const ticket = (this.tickets = (this.tickets ?? 0) + 1);
    text = this.checked(text);
    if (text === null) return;
    if (this.read?.text !== text) {
      const ids = window.toyviz.tokenize(text), out = await this.model.forward(ids);
      this.read = { text, logits: out.logits.subarray((out.T - 1) * out.V), T: out.T, ids, out };
    }
    if (ticket !== this.tickets || this.read.text !== text) return;     // a newer redraw was asked for meanwhile
    this.drawBars(this.read.logits, settings);
    setNote("");
    // a new prompt's attention (read by whichever redraw's forward pass), after its bars
    if (this.attended !== this.read) {
      this.attended = this.read;
      this.branches.attend(this.read.ids, this.read.out, "Where the prompt's last token looks, every head: the bars above are its output");
    }
  }

  drawBars(logits, { temperature, top_k: topK, top_p: topP }) {
    const plot = this.plot("bars-plot");
    this.template = barsTemplate(plot) ?? this.template;        // the server's last bars: theme, sizes
    if (!plot || !this.template) return;
    const figure = nextTokenBars(this.template, logits, (id) => this.tokenizer.piece(id), temperature, topK, topP);
    const names = figure.data[0].y, title = { "title.text": figure.layout.title.text };
    plot.layout.meta = figure.layout.meta;                       // read only by a download: no redraw
    if (this.shownBars === plot.data && names.every((name, i) => name === plot.data[0].y[i])) {
      // this prompt's bars on screen (a slider moved): only the filled bars and the title change
      window.Plotly.update(plot, { x: [figure.data[0].x] }, title, [0]);
    } else if (barsTemplate(plot)) {
      window.Plotly.update(plot, { x: figure.data.map((t) => t.x), y: [names, names] }, title);
    } else {
      window.Plotly.react(plot, figure.data, figure.layout);
    }
    this.shownBars = plot.data;                                  // Gradio replaces it when the server draws
    this.drawn = (this.drawn ?? 0) + 1;                          // how many figures the page drew (benchmarks)
  }

  async generate(text, settings) {
    if (this.running) return;
    text = this.checked(text);
    if (text === null) return;
    return this.extend(this.branches.start(window.toyviz.tokenize(text), settings));
  }

  // generates a run's or a branch's tokens (branches.js) after the prompt and those it has, up to max new
  // tokens in all, with the run's settings and the node's seed; each token's candidates are kept
  async extend(node) {
    const { prompt, settings } = this.branches;
    const button = document.querySelector("#generate");
    this.running = true; this.stopped = false;
    button.disabled = true; button.textContent = "Generating… (Stop ends it)";
    setNote("");
    const tokensPlot = document.querySelector("#generated-plot");
    if (tokensPlot) tokensPlot.hidden = true;                   // the server's last run's figure is not this one's
    const seq = [...prompt, ...node.tokens], uniform = random(node.seed), decoder = new TextDecoder();
    if (node.parent) {                                           // a branch: the token it took, as if drawn
      const step = node.steps[node.at], id = node.tokens[node.at];
      node.spans.push(probabilitySpan(this.text(decoder, id), step.after[step.ids.indexOf(id)], node.at));
    }
    this.showText(node.spans);
    const started = performance.now();
    const steps = this.model.logitsFor(seq);
    // Stop ends the loop at once: a step still under way in the model's worker finishes unseen
    const stop = new Promise((resolve) => { this.stopNow = resolve; });
    let logits = null;
    try {
      for (;;) {
        const step = await Promise.race([steps.next(), stop]);
        if (step.done || this.stopped) break;
        logits = step.value;
        if (node.tokens.length >= settings.max_new) break;
        const probs = nextTokenProbs(logits, settings.temperature, settings.top_k, settings.top_p);
        const id = draw(probs, uniform);
        seq.push(id); node.tokens.push(id);
        node.steps.push(weighed(logits, probs, id));
        node.spans.push(probabilitySpan(this.text(decoder, id), probs[id], node.tokens.length - 1));
        this.showNextFrame(node.spans);
        await yieldToPage();          // Stop's click and the paint get in between two tokens
      }
    } catch (error) {
      setNote(`⚠ Generation failed in the browser: ${error.message}`);
      throw error;
    } finally {
      steps.return();                 // not awaited: it waits for a step under way
      this.running = false; button.disabled = false; button.textContent = "Generate";
    }
    this.showText(node.spans);
    this.branches.drawTree();         // the entry's text, now that it is written
    // after the last token: the distribution of the one after it, as the server's run ends (not after Stop)
    if (!this.stopped && logits) this.drawBars(logits, settings);
    this.lastRun = { tokens: [...node.tokens], seconds: (performance.now() - started) / 1000, stopped: this.stopped };
    return this.lastRun;
  }

  // a token's text as it comes in a stream of them (a character split over two tokens shows with the second)
  text(decoder, id) { return decoder.decode(this.tokenizer.tokenBytes(id), { stream: true }); }

  // the generated text: its spans, with the tree's marks (the picked token, a branch's first)
  showText(spans) {
    setGenerated(spans.join(""));
    this.branches.mark();
  }

  showNextFrame(spans) {
    this.spans = spans;
    if (this.textPending) return;
    this.textPending = requestAnimationFrame(() => { this.textPending = null; this.showText(this.spans); });
  }
}

// Gradio's HTML and Markdown components show their value in one element each (the HTML's .prose, the
// Markdown's span.md), set whole on every update: written here, until the server next answers them
function setGenerated(markup) {
  const box = document.querySelector("#generated .html-container .prose");
  if (box) box.innerHTML = markup;
}
function setNote(markdown) {
  const box = document.querySelector("#note span.md");
  if (!box) return;
  const bold = /^⚠ \*\*(.*)\*\*$/s.exec(markdown);           // the only Markdown the server's refusal uses
  box.textContent = "";
  if (bold) box.append("⚠ ", Object.assign(document.createElement("strong"), { textContent: bold[1] }));
  else box.textContent = markdown;
}

// a macrotask without setTimeout's 4 ms clamp on nested timers
const channel = new MessageChannel();
const waiting = [];
channel.port1.onmessage = () => waiting.shift()();
const yieldToPage = () => new Promise((resolve) => { waiting.push(resolve); channel.port2.postMessage(null); });
