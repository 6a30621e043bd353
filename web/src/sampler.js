// The Sample tab's one sampler, answered by the page's own model: the tab's Gradio controls (the header's
// prompt, the sliders, Generate, Stop) stay the only ones; while this runs, their events end in the page
// (toyviz/app/browser_model.py page_first hands each event's values to `take`) and the page draws into the
// tab's own plot and text, sending nothing to the server. The same defaults, limits, notes and refusals as the
// server's (the settings the panel carries come from toyviz.settings.controls and the server's own message): a
// value past its range is the nearest bound and the note says so, a prompt past the context is said to be cut,
// and what is no number at all is left to the server, which refuses it in its words.
// A run keeps each token's candidates, so that a click on a token shows them and branches from one
// (branches.js: the runs' tree, the candidates' and the attention's figures).
import { Branches } from "./branches.js";
import { barsTemplate, fill, nextTokenBars, probabilitySpan, weighed } from "./figures.js";
import { draw, nextTokenProbs, random } from "./sampling.js";

// the settings' words in the page's language (browser_model.sampler_settings: each language's), English before
// the page has said its own
export function said(settings) {
  return settings.said[document.documentElement.lang] ?? settings.said.en;
}

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
    const sliders = this.sliders();
    if (sliders) this.redraw(this.prompt()?.value, sliders);   // the prompt's attention (its bars are the server's)
  }

  // what the server would say, in the page's language (<html lang>, set as the page opens: toyviz.app.wording)
  said() { return said(this.settings); }

  // Gradio's event `action` with its inputs' values → [] to let the server answer, or throws once answered here
  take(action, values) {
    if (action === "stop") {
      if (!this.running) return [];
      this.stopped = true;
      this.stopNow?.({ done: true });
    } else if (action === "redraw") {
      const [text, temperature, topK, topP] = values;
      const settled = this.settled({ temperature, top_k: topK, top_p: topP });
      if (!settled) return [];
      this.redraw(text, settled);
    } else if (action === "generate") {
      // a steering feature named (even with strength 0): the server's, which steers or refuses the number
      if (Number(values[STEERING]) !== -1) {
        document.querySelector("#generated-plot")?.removeAttribute("hidden");   // hidden by a run in the page
        this.branches.end();                                    // its text keeps no candidates to show
        return [];
      }
      const [text, temperature, topK, topP, maxNew, seed] = values;
      const settled = this.settled({ temperature, top_k: topK, top_p: topP, max_new: maxNew, seed });
      if (!settled) return [];
      this.generate(text, settled);
    } else {
      return [];
    }
    throw new Error(ANSWERED);
  }

  // each value settled by the server's rule (toyviz.settings.controls.settle) → {values, note}: past its range the
  // nearest bound, a fraction of a whole number the nearest one, each said in the server's words; null when one
  // is no number at all (an emptied box), which the server refuses in its own words and place
  settled(values) {
    const out = {};
    let note = "";
    for (const [name, value] of Object.entries(values)) {
      const [low, high] = this.settings.ranges[name], words = this.said().words[name];
      const number = value === null || value === "" ? NaN : Number(value);
      if (!Number.isFinite(number)) return null;
      let settled = Math.min(Math.max(number, low), high);
      let change = number > high ? "above" : number < low ? "below" : "";
      if (!change && WHOLE.has(name) && !Number.isInteger(number)) [settled, change] = [Math.round(number), "fraction"];
      if (change) note += fill(words[change], { value: written(number), settled: written(settled) });
      out[name] = settled;
    }
    return { values: out, note };
  }

  // the controls on screen now (a keystroke in the prompt reads the sliders as they are)
  prompt() { return document.querySelector("#prompt textarea"); }
  sliders() {
    const read = (id) => document.querySelector(`#${id} input[type=number]`)?.value;
    return this.settled({ temperature: read("temperature"), top_k: read("top-k"), top_p: read("top-p") });
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
    const { note, figure } = this.said().empty;
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
    this.pending = requestAnimationFrame(() => {
      this.pending = null;
      const sliders = this.sliders();
      if (sliders) this.redraw(this.prompt().value, sliders);
    });
  }

  // the prompt's next-token bars for these settings (settled: {values, note}): a slider's move redraws from the
  // prompt's stored logits; the note says, as the server's, that the prompt was cut and what the rule changed
  async redraw(text, settings) {
    const ticket = (this.tickets = (this.tickets ?? 0) + 1);
    text = this.checked(text);
    if (text === null) return;
    if (this.read?.text !== text) {
      const all = this.tokens(text), ids = all.slice(0, this.model.config.context), out = await this.model.forward(ids);
      this.read = { text, logits: out.logits.subarray((out.T - 1) * out.V), T: out.T, ids, out,
                    cut: this.cut("first", ids.length, all.length - ids.length) };
    }
    if (ticket !== this.tickets || this.read.text !== text) return;     // a newer redraw was asked for meanwhile
    this.drawBars(this.read.logits, settings.values);
    setNote(this.read.cut + settings.note);
    // a new prompt's attention (read by whichever redraw's forward pass), after its bars
    if (this.attended !== this.read) {
      this.attended = this.read;
      this.branches.attend(this.read.ids, this.read.out, this.branches.attendPromptTitle());
    }
  }

  drawBars(logits, { temperature, top_k: topK, top_p: topP }) {
    const plot = this.plot("bars-plot");
    this.template = barsTemplate(plot) ?? this.template;        // the server's last bars: theme, sizes
    if (!plot || !this.template) return;
    const figure = nextTokenBars(this.template, logits, (id) => this.tokenizer.piece(id), temperature, topK, topP,
                                 this.said().bars);
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

  // as the server's generation: after the whole prompt, reading its last context of tokens (the model's window)
  async generate(text, settings) {
    if (this.running) return;
    text = this.checked(text);
    if (text === null) return;
    const ids = this.tokens(text), context = this.model.config.context;
    this.note = settings.note + this.cut("last", Math.min(ids.length, context), ids.length - context);
    return this.extend(this.branches.start(ids, settings.values));
  }

  // BOS and the text's tokens, all of them (window.toyviz.tokenize cuts them to the context)
  tokens(text) { return [this.tokenizer.bos, ...this.tokenizer.encode(text)]; }

  // the server's note of a prompt cut to the context (toyviz.settings.controls.context_note), or ""
  cut(which, kept, dropped) { return dropped > 0 ? fill(this.said().cut[which], { kept, dropped }) : ""; }

  // generates a run's or a branch's tokens (branches.js) after the prompt and those it has, up to max new
  // tokens in all, with the run's settings and the node's seed; each token's candidates are kept
  async extend(node) {
    const { prompt, settings } = this.branches;
    const button = document.querySelector("#generate");
    this.running = true; this.stopped = false;
    button.disabled = true; button.textContent = this.said().text.busy;
    setNote(this.note ?? "");                                    // the run's (a branch keeps its run's)
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
      setNote(fill(this.said().text.failed, { error: error.message }));
      throw error;
    } finally {
      steps.return();                 // not awaited: it waits for a step under way
      this.running = false; button.disabled = false; button.textContent = this.said().text.button;
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

// a number as the server's notes write it (toyviz.settings.controls.written): 2 not 2.0, 1e+30, six digits
const written = (x) => (Number.isInteger(x) && Math.abs(x) < 1e16 ? String(x) : String(Number(x.toPrecision(6))));

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
  const line = document.createElement("p");                    // as Gradio writes it: the note shows with one (page.css)
  if (bold) line.append("⚠ ", Object.assign(document.createElement("strong"), { textContent: bold[1] }));
  else line.textContent = markdown;
  box.replaceChildren(...(markdown ? [line] : []));
}

// a macrotask without setTimeout's 4 ms clamp on nested timers
const channel = new MessageChannel();
const waiting = [];
channel.port1.onmessage = () => waiting.shift()();
const yieldToPage = () => new Promise((resolve) => { waiting.push(resolve); channel.port2.postMessage(null); });
