// The Sample tab's figures as the server draws them (toyviz/app/figures/sampling.py next_token_bars,
// toyviz.app.views probability_html), so that the page's own model draws into the same plot with the
// same look: the server's last bars figure on screen is the template (its theme, fonts, projector sizes),
// the page only puts in its own numbers, labels and title. The figures only the page draws (the candidates
// at a generated token, where the last token looks) take their style from browser_model.page_figures, made
// by the server's own figure functions.
import { nextTokenProbs, top } from "./sampling.js";

const BARS = 15;                                     // next_token_bars' n

// A token piece as a label, as toyviz.app.figures.visible: spaces ␣, newlines ↵, tabs ⇥, other control
// characters in caret notation (^U), anything else unprintable �; HTML-safe (plotly renders labels as HTML).
export const visible = (piece) => escapeHTML(readable(piece));

// the same as text, not markup (for textContent)
export function readable(piece) {
  let shown = "";
  for (const c of piece) {
    const code = c.codePointAt(0);
    shown += c === " " ? "␣" : c === "\n" ? "↵" : c === "\t" ? "⇥" : !UNPRINTABLE.test(c) ? c
      : code < 0x20 || code === 0x7f ? "^" + String.fromCharCode(code ^ 0x40) : "�";
  }
  return shown;
}
// Python's str.isprintable() is false for the categories Other and Separator, the ASCII space aside
const UNPRINTABLE = /[\p{C}\p{Z}]/u;

export const escapeHTML = (s) => s.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);

// Python's f"{x:g}" for a slider's value (0.8 → "0.8", 1.0 → "1")
const g = (x) => String(Number(Number(x).toPrecision(6)));
// a catalogue's sentence with its {fields} filled (as Python's str.format does with names)
export const fill = (template, fields) => template.replace(/\{(\w+)\}/g, (blank, name) => String(fields[name]));

// A bars figure as the server sent it → {traces, layout} to draw the page's own numbers with, or null
export function barsTemplate(plot) {
  const data = plot?.data;
  if (!data || data.length !== 2 || data.some((trace) => trace.type !== "bar")) return null;
  // its height as drawn too: Gradio's figure leaves it to autosize, which after a refusal's 240-px message would
  // keep the message's height for the next bars (issue 55: 15 bars squashed into 240 px until Explore)
  const height = plot.layout.height ?? plot._fullLayout?.height;
  return structuredClone({ traces: data.map(({ x, y, ...style }) => style), layout: { ...plot.layout, height } });
}

// The candidates the model weighed at one step: the BARS most likely under a plain softmax, and `drawn` (the
// token it took there) when it is not among them, each with its probability before and after the settings
// (`after`, the distribution it was drawn from); `kept`: how many tokens the settings left
export function weighed(logits, after, drawn = null) {
  const raw = nextTokenProbs(logits, 1, 0, 1);
  const ids = top(raw, BARS);
  if (drawn !== null && !ids.includes(drawn)) ids.push(drawn);
  return { ids, raw: ids.map((id) => raw[id]), after: ids.map((id) => after[id]), kept: after.reduce((n, p) => n + (p > 0), 0) };
}

// next-token logits (V) and the sampling settings → the server's bars figure, drawn on `template`
// `title`: the server's title in the page's language, {temperature} {top_k} {top_p} {kept} to fill
// (browser_model.sampler_words' bars: next_token_bars' words)
export function nextTokenBars(template, logits, piece, temperature, topK, topP, title) {
  const weighedUp = weighed(logits, nextTokenProbs(logits, temperature, topK, topP));
  const figure = candidateBars(template, weighedUp, piece, { temperature, top_k: topK, top_p: topP });
  const { kept } = weighedUp;
  figure.layout.title.text = fill(kept === 1 ? title.next_one : title.next,
                                  { temperature: g(temperature), top_k: topK || title.off, top_p: g(topP), kept });
  return figure;
}

// weighed candidates → next_token_bars' figure on `template` ({traces, layout}: the server's last bars, or the
// style browser_model.page_figures made); `heading` and `then` start the title, `drawn` is the token the model
// took (bold)
export function candidateBars(template, { ids, raw, after, kept }, piece, settings,
                              { heading = "Next token", then = ": ", drawn = null, filename = null } = {}) {
  const { temperature, top_k: topK, top_p: topP } = settings;
  const names = ids.map((id) => (id === drawn ? `<b>${visible(piece(id))} (#${id})</b>` : `${visible(piece(id))} (#${id})`));
  const title = `${heading}${then}temperature ${g(temperature)}, top-k ${topK || "off"}, top-p ${g(topP)} ` +
                `→ ${kept} candidate${kept !== 1 ? "s" : ""}`;
  const [afterStyle, rawStyle] = template.traces;
  return {
    data: [{ ...afterStyle, y: names, x: after }, { ...rawStyle, y: names, x: raw }],
    layout: { ...template.layout, title: { ...template.layout.title, text: title },
              meta: { filename: filename ?? `toyviz-sampling-T${g(temperature)}-k${topK}-p${g(topP)}` } },
  };
}

// Where the last token of `ids` looks, in every head (the query whose output predicts the next token): one row
// a head, named as the Attention tab's grid names its panels, one column a token labelled as figures.token_labels
// does, in attention_figure's style (`style`: browser_model.page_figures' attention, `labelsAcross`: how many
// key labels fit across the map, every k-th one printed beyond that). attention: L·H·T·T, as forward returns it
export function lastTokenAttention(style, labelsAcross, { attention, L, H, T }, ids, piece, title, filename) {
  const rows = [], z = [];
  for (let l = 0; l < L; l++) {
    for (let h = 0; h < H; h++) {
      const at = ((l * H + h) * T + T - 1) * T;
      rows.push(`L${l} H${h}`);
      z.push(Array.from(attention.subarray(at, at + T)));
    }
  }
  const cols = ids.map((id, i) => `${i}: ${visible(piece(id))}`);
  const every = Math.max(1, Math.ceil(cols.length / labelsAcross - 1e-6));
  const { layout } = style;
  return {
    data: [{ ...style.traces[0], z, x: cols, y: rows, hovertemplate: "%{y}: the last token → %{x}: %{z:.3f}<extra></extra>" }],
    layout: { ...layout, title: { ...layout.title, text: title }, meta: { filename },
              xaxis: { ...layout.xaxis, tickvals: cols.filter((_, i) => i % every === 0) },
              yaxis: { ...layout.yaxis, title: { text: "head (its last query)" }, tickvals: rows } },
  };
}

// Generated text as views.probability_html writes it (one token's span): each token's background as dark as the probability
// it was drawn with; control characters other than newlines and tabs in caret notation, as the figures
// show them (a raw one draws as an empty box)
export function probabilitySpan(text, p, step) {
  const shown = escapeHTML(text).replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (c) => "^" + String.fromCharCode(c.charCodeAt(0) ^ 0x40));
  // data-step: which generated token it is, so that a click shows the candidates the model weighed there
  return `<span class="token-prob" data-step="${step}" title="p = ${p.toFixed(3)}" style="background: rgba(99,102,241,` +
         `${(0.12 + 0.6 * p).toFixed(2)})">${shown}</span>`;
}
