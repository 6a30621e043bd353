// The Sample tab's figures as the server draws them (toyviz/app/figures/sampling.py next_token_bars,
// toyviz/app/views.py probability_html), so that the page's own model draws into the same plot with the
// same look: the server's last bars figure on screen is the template (its theme, fonts, projector sizes),
// the page only puts in its own numbers, labels and title.
import { nextTokenProbs, top } from "./sampling.js";

const BARS = 15;                                     // next_token_bars' n

// A token piece as a label, as toyviz.app.figures.visible: spaces ␣, newlines ↵, tabs ⇥, other control
// characters in caret notation (^U), anything else unprintable �; HTML-safe (plotly renders labels as HTML).
export function visible(piece) {
  let shown = "";
  for (const c of piece) {
    const code = c.codePointAt(0);
    shown += c === " " ? "␣" : c === "\n" ? "↵" : c === "\t" ? "⇥" : !UNPRINTABLE.test(c) ? c
      : code < 0x20 || code === 0x7f ? "^" + String.fromCharCode(code ^ 0x40) : "�";
  }
  return escapeHTML(shown);
}
// Python's str.isprintable() is false for the categories Other and Separator, the ASCII space aside
const UNPRINTABLE = /[\p{C}\p{Z}]/u;

export const escapeHTML = (s) => s.replace(/[&<>]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;" })[c]);

// Python's f"{x:g}" for a slider's value (0.8 → "0.8", 1.0 → "1")
const g = (x) => String(Number(Number(x).toPrecision(6)));

// A bars figure as the server sent it → {traces, layout} to draw the page's own numbers with, or null
export function barsTemplate(plot) {
  const data = plot?.data;
  if (!data || data.length !== 2 || data.some((trace) => trace.type !== "bar")) return null;
  return structuredClone({ traces: data.map(({ x, y, ...style }) => style), layout: plot.layout });
}

// next-token logits (V) and the sampling settings → the server's bars figure, drawn on `template`
export function nextTokenBars(template, logits, piece, temperature, topK, topP) {
  const raw = nextTokenProbs(logits, 1, 0, 1), after = nextTokenProbs(logits, temperature, topK, topP);
  const ids = top(raw, BARS);
  const names = ids.map((id) => `${visible(piece(id))} (#${id})`);
  const kept = after.reduce((n, p) => n + (p > 0), 0);
  const title = `Next token: temperature ${g(temperature)}, top-k ${topK || "off"}, top-p ${g(topP)} ` +
                `→ ${kept} candidate${kept !== 1 ? "s" : ""}`;
  const [afterStyle, rawStyle] = template.traces;
  return {
    data: [{ ...afterStyle, y: names, x: ids.map((id) => after[id]) }, { ...rawStyle, y: names, x: ids.map((id) => raw[id]) }],
    layout: { ...template.layout, title: { ...template.layout.title, text: title },
              meta: { filename: `toyviz-sampling-T${g(temperature)}-k${topK}-p${g(topP)}` } },
  };
}

// Generated text as views.probability_html writes it: each token's background as dark as the probability
// it was drawn with; control characters other than newlines and tabs in caret notation, as the figures
// show them (a raw one draws as an empty box)
export function probabilitySpan(text, p) {
  const shown = escapeHTML(text).replace(/[\x00-\x08\x0b-\x1f\x7f]/g, (c) => "^" + String.fromCharCode(c.charCodeAt(0) ^ 0x40));
  return `<span class="token-prob" title="p = ${p.toFixed(3)}" style="background: rgba(99,102,241,` +
         `${(0.12 + 0.6 * p).toFixed(2)})">${shown}</span>`;
}
