// "What else could it have said": under the Sample tab's generated text, the page's runs kept as a small tree.
// A click on a generated token shows the candidates the model weighed at that step (the next-token bars'
// figure: their probabilities before and after temperature / top-k / top-p, the drawn one in bold) and where
// the model looked then; a click on a candidate's bar branches there (the page's model goes on from that token
// with the run's settings); the tree lists the run and its branches, and a click on one shows it again. The
// prompt's attention is drawn here too. All of it in the page: nothing is sent to the server.
import { candidateBars, fill, lastTokenAttention, readable, visible } from "./figures.js";

// its words are the page's language's (browser_model.sampler_words' branches), written in by `say`
const HTML = `
<p class="tv-hint" hidden></p>
<div class="tv-row">
  <div class="tv-candidates" hidden><div class="tv-plot"></div></div>
  <nav class="tv-tree" hidden>
    <div class="tv-tree-head"></div><ul></ul>
  </nav>
</div>
<div class="tv-attention"><div class="tv-plot"></div></div>`;

// the panel's own rules, with its markup: page.css is the page's layout, this panel exists only in the page
const CSS = `
#generated .token-prob[data-step] { cursor: pointer; }
#generated .token-prob[data-step]:hover { outline: 1px solid #4f46e5; }
#generated .token-prob.tv-picked { outline: 2px solid #4f46e5; }
#generated .token-prob.tv-branched { text-decoration: underline 2px #4f46e5; text-underline-offset: 3px; }
#tv-branches { font-size: var(--text-md); }
#tv-branches .tv-hint { margin: 0 0 4px; opacity: 0.8; }
#tv-branches .tv-row { display: flex; flex-wrap: wrap; gap: 12px; align-items: flex-start; }
#tv-branches .tv-candidates { flex: 3 1 36em; min-width: 0; }
#tv-branches .tv-tree { flex: 1 1 13em; min-width: 0; padding-top: 8px; }
#tv-branches .tv-tree-head { font-weight: 600; margin-bottom: 4px; }
#tv-branches .tv-tree ul { list-style: none; margin: 0; padding: 0; }
#tv-branches .tv-tree li ul { margin-left: 0.6em; padding-left: 0.6em; border-left: 2px solid #c7d2fe; }
#tv-branches .tv-tree button { display: block; width: 100%; text-align: left; font: inherit; cursor: pointer;
  background: none; border: 1px solid transparent; border-radius: 4px; padding: 2px 6px; overflow-wrap: anywhere; }
#tv-branches .tv-tree button:hover { border-color: #c7d2fe; }
#tv-branches .tv-tree button[aria-current="true"] { border-color: #6366f1; background: rgba(99, 102, 241, 0.14); }
#tv-branches .tv-tree .tv-token { font-family: monospace; font-weight: 600; }
`;

const PREVIEW = 12;          // tokens of a run's text a tree entry shows

export class Branches {
  // sampler: the Sample tab's (sampler.js), whose model continues a branch
  constructor(sampler) {
    this.sampler = sampler;
    this.element = Object.assign(document.createElement("div"), { id: "tv-branches", innerHTML: HTML });
    const $ = (selector) => this.element.querySelector(selector);
    Object.assign(this, { hint: $(".tv-hint"), candidates: $(".tv-candidates"), tree: $(".tv-tree"),
                          attention: $(".tv-attention") });
    document.head.append(Object.assign(document.createElement("style"), { textContent: CSS }));
    const generated = document.querySelector("#generated");
    generated?.after(this.element);
    generated?.addEventListener("click", (event) => {
      const span = event.target.closest?.(".token-prob[data-step]");
      if (span && this.current && !this.sampler.running) this.pick(Number(span.dataset.step));
    });
    this.tree.addEventListener("click", (event) => {
      const button = event.target.closest("button");
      if (button && !this.sampler.running) this.show(this.nodes[Number(button.dataset.node)]);
    });
    new IntersectionObserver(([entry]) => {                  // the attention is drawn once near the screen
      this.onScreen = entry.isIntersecting;
      this.attendLater();
    }, { rootMargin: "300px" }).observe(this.attention);
    // projector mode on or off: the page's figures take the other mode's sizes, as the server's are redrawn
    this.styled = this.mode();
    new MutationObserver(() => this.restyle()).observe(document.body, { attributes: true, attributeFilter: ["class"] });
  }

  // the page's mode now, and the figures' style for it (browser_model.page_figures), a copy: Plotly writes into
  // the layout it draws
  mode() { return document.body.classList.contains("projector") ? "projector" : "laptop"; }
  style() { return structuredClone(this.sampler.settings.figures[this.mode()]); }

  // the panel's words in the page's language (set as the page opens, before a first run)
  words() { return this.sampler.said().branches; }

  say() {
    const words = this.words();
    this.hint.textContent = words.hint;
    this.tree.setAttribute("aria-label", words.tree_label);
    this.tree.querySelector(".tv-tree-head").textContent = words.tree_head;
  }

  // the attention's title over the prompt's last token (the sampler's first drawing of it, and a run shown again)
  attendPromptTitle() { return this.words().attend_prompt; }

  // a new run from these prompt ids: a tree of one node → that node (sampler.extend generates its tokens)
  start(prompt, settings) {
    Object.assign(this, { prompt, settings, nodes: [] });
    this.say();
    this.candidates.hidden = true;
    return this.add(null, 0, [], settings.seed);
  }

  // a run (parent null) or a branch: its generated tokens (a branch's first `at` are its parent's), each
  // one's weighed candidates (figures.weighed) and its span in the text; its own seed
  add(parent, at, tokens, seed) {
    const node = { parent, at, tokens, steps: parent ? parent.steps.slice(0, at + 1) : [],
                   spans: parent ? parent.spans.slice(0, at) : [], seed, children: [], index: this.nodes.length };
    this.nodes.push(node);
    parent?.children.push(node);
    Object.assign(this, { current: node, picked: null });
    this.hint.hidden = false;
    this.drawTree();
    return node;
  }

  // the server writes the next text (a steered run): no tree, no candidates, until the page's next run
  end() {
    this.current = null;
    this.hint.hidden = this.candidates.hidden = this.tree.hidden = true;
  }

  // a node's text in #generated, its branch point marked, the tree pointing at it
  show(node) {
    Object.assign(this, { current: node, picked: null });
    this.sampler.showText(node.spans);
    this.drawTree();
    if (node.parent) this.pick(node.at);
    else this.attendPrompt();
  }

  // the run itself shown again: its candidates hidden, and the attention back to the prompt's last token, as when
  // the run started (issue 55: it kept naming the branch's token, "as it drew token 5 (ness)", beside a run that
  // drew another there); a pick's attention still on its way is not drawn over it
  async attendPrompt() {
    this.candidates.hidden = true;
    this.picked = null;
    const ids = this.prompt.slice(-this.sampler.model.config.context);
    const ticket = (this.looking = (this.looking ?? 0) + 1);
    const out = await this.sampler.model.forward(ids);
    if (ticket === this.looking) this.attend(ids, out, this.attendPromptTitle());
  }

  // the text on screen was written again (a run going on): its marks with it
  mark(step = this.picked) {
    const spans = document.querySelectorAll("#generated .token-prob[data-step]");
    spans.forEach((span) => span.classList.remove("tv-picked", "tv-branched"));
    if (this.current?.parent) spans[this.current.at]?.classList.add("tv-branched");
    if (step !== null && step !== undefined) spans[step]?.classList.add("tv-picked");
    this.picked = step;
  }

  // generated token `step` of the node shown: what the model weighed there, and where it looked
  async pick(step) {
    const node = this.current, weighed = node.steps[step];
    if (!weighed) return;
    this.mark(step);
    this.candidates.hidden = false;
    this.shownCandidates = { node, step };
    this.drawCandidates();
    const ids = [...this.prompt, ...node.tokens.slice(0, step)].slice(-this.sampler.model.config.context);
    const ticket = (this.looking = (this.looking ?? 0) + 1);
    const out = await this.sampler.model.forward(ids);
    if (ticket === this.looking) {
      this.attend(ids, out, fill(this.words().attend_step,
                                 { step: step + 1, piece: visible(this.sampler.tokenizer.piece(node.tokens[step])) }));
    }
  }

  drawCandidates() {
    const { node, step } = this.shownCandidates, style = this.style(), piece = (id) => this.sampler.tokenizer.piece(id);
    const weighed = node.steps[step], drawn = node.tokens[step];
    const template = { traces: style.bars.traces, layout: { ...style.bars.layout, template: style.theme } };
    // two lines: beside the tree, on a projector, one ran under it
    const figure = candidateBars(template, weighed, piece, this.settings, {
      heading: fill(this.words().candidates, { step: step + 1, piece: visible(piece(drawn)) }), then: ":<br>", drawn,
      filename: `toyviz-candidates-token${step + 1}` });
    // one row a candidate: a click anywhere on its row picks it (its two numbers in one hover box), never a zoom
    Object.assign(figure.layout, { hovermode: "y unified", dragmode: false });
    const plot = this.candidates.querySelector(".tv-plot");
    draw(plot, figure);
    if (!plot.branching) {
      plot.branching = true;
      plot.on("plotly_click", ({ points }) => {
        const { node: from, step: at } = this.shownCandidates;
        if (points.length && !this.sampler.running) this.branch(from, at, from.steps[at].ids[points[0].pointIndex]);
      });
    }
  }

  // token `id` at `step` of `node`: the branch that took it (made and generated the first time)
  branch(node, step, id) {
    if (id === node.tokens[step]) return this.show(node);
    const made = node.children.find((child) => child.at === step && child.tokens[step] === id);
    if (made) return this.show(made);
    const child = this.add(node, step, [...node.tokens.slice(0, step), id], this.settings.seed + this.nodes.length);
    this.pick(step);                  // the same candidates, the one the branch took in bold
    return this.sampler.extend(child);
  }

  // where the last of `ids` looks in every head, from a forward pass's attention: drawn once it is (nearly) on
  // screen, after the frame under way. Plotly measures every label with a layout of the whole page: at T = 28
  // a draw held the page up to 500 ms on this busy 2-core machine, which a keystroke's bars above it (the prompt is typed far from here) or a
  // lecture's first screen need not wait for
  attend(ids, out, title) {
    this.attended = { ids, out, title };
    this.attendLater();
  }

  attendLater() {
    if (!this.attended || !this.onScreen || this.attendPending) return;
    this.attendPending = true;
    requestAnimationFrame(() => setTimeout(() => {
      this.attendPending = false;
      const shown = { attended: this.attended, mode: this.mode() };
      if (shown.attended === this.shownAttention?.attended && shown.mode === this.shownAttention.mode) return;
      this.shownAttention = shown;
      const { ids, out, title } = this.attended, style = this.style(), piece = (id) => this.sampler.tokenizer.piece(id);
      draw(this.attention.querySelector(".tv-plot"), lastTokenAttention(
        { traces: style.attention.traces, layout: { ...style.attention.layout, template: style.theme } },
        style.labelsAcross, out, ids, piece, title, "toyviz-sample-attention"));
    }));
  }

  restyle() {
    const mode = this.mode();
    if (mode === this.styled) return;
    this.styled = mode;
    this.attendLater();
    if (!this.candidates.hidden) this.drawCandidates();
  }

  // the tree as nested lists, one button a node, the one shown marked
  drawTree() {
    const piece = (id) => this.sampler.tokenizer.piece(id), words = this.words();
    const entry = (node) => {
      const item = document.createElement("li"), button = document.createElement("button");
      button.dataset.node = node.index;
      button.setAttribute("aria-current", String(node === this.current));
      if (node.parent) {
        const token = (id) => Object.assign(document.createElement("span"), { className: "tv-token", textContent: readable(piece(id)) });
        button.append(fill(words.entry, { step: node.at + 1 }), token(node.tokens[node.at]), words.instead_of,
                      token(node.parent.tokens[node.at]));
      } else {
        button.append(words.the_run);
      }
      button.append(" " + fill(words.preview, { text: this.text(node.tokens.slice(node.at, node.at + PREVIEW)) }));
      item.append(button);
      if (node.children.length) item.append(list(node.children));
      return item;
    };
    const list = (nodes) => {
      const ul = document.createElement("ul");
      ul.append(...nodes.map(entry));
      return ul;
    };
    this.tree.querySelector("ul").replaceWith(list([this.nodes[0]]));
    this.tree.hidden = false;
  }

  text(ids) {
    const bytes = ids.flatMap((id) => Array.from(this.sampler.tokenizer.tokenBytes(id)));
    return new TextDecoder().decode(Uint8Array.from(bytes)).replaceAll("\n", "↵");
  }
}

// Plotly into a page-owned div, with the download button's settings figures.config_for gives the server's;
// the div as tall as the figure: on a resize Plotly forgets a height set without a width and takes the div's
function draw(plot, figure) {
  plot.style.height = `${figure.layout.height}px`;
  window.Plotly.react(plot, figure.data, figure.layout, {
    displaylogo: false, responsive: true,
    toImageButtonOptions: { format: "png", scale: 2, filename: figure.layout.meta.filename },
  });
}
