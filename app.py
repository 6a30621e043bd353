"""toyviz explorer: a Gradio app that shows two small transformers at work.

    python app.py [--device cpu|cuda] [--gpt PATH_OR_REPO] [--translator PATH_OR_REPO]

This file only wires widgets to `toyviz`: the models compute, a trace records, the figure
modules draw. Every tab is a renderer (inputs → figures); the registry at the bottom binds each
one to its tab, its controls, the shared prompt and a named API endpoint.
"""
from __future__ import annotations

import argparse
import functools
import html
import json
import os
import tempfile

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr
from gradio.components.plot import PlotData

import toyviz
from toyviz import links
from toyviz.explorer import MAX_NEW_TOKENS, Explorer, clamp, clean_prompt
from toyviz.figures import config_for, message, standalone_html
from toyviz.experiments import VARIANTS
from toyviz.figures import attention as attention_figs
from toyviz.figures import experiments as experiment_figs
from toyviz.figures import layernorm as layernorm_figs
from toyviz.figures import mask as mask_figs
from toyviz.figures import model as model_figs
from toyviz.figures import positional as positional_figs
from toyviz.figures import residual as residual_figs
from toyviz.figures import sampling as sampling_figs
from toyviz.figures import tokens as token_figs
from toyviz.figures import translation as translation_figs
from toyviz.heads import label_heads
from toyviz.config import FEED_FORWARD_KINDS, POSITIONAL_KINDS
from toyviz.size import PAPER_SIZES, PRESETS, count_parameters, memory_report

EXPLAIN = {
    "tokens": "The model never sees letters: a byte-level BPE tokenizer, trained on the same text, cuts the prompt "
              "into pieces and each piece becomes a vector. A BOS token (`<|endoftext|>`) always comes first.",
    "positional": "Attention alone cannot tell word order, so a position vector is added to every token. The "
                  "sinusoidal encoding gives each position a unique pattern whose dot products depend on distance.",
    "attention": "Each head turns every token into a query and compares it with the keys of the tokens it may see "
                 "(the GPT and the translator's decoder: those before it; the encoder: all of them); the softmax of "
                 "those scores says where the token looks. Switch the GPT's heads off to see what they do.",
    "inside": "One head, one query token, every number the model computed, from its normalised input to its write "
              "into the residual stream. Below: what the causal mask is for.",
    "layernorm": "Before each sub-layer, LayerNorm rescales every token's vector to mean 0 and standard deviation 1, "
                 "then applies a learned scale γ and shift β. The input spread grows with depth; the output does not.",
    "residual": "Every sub-layer adds its output to a running sum, the residual stream; the final norm and the "
                "unembedding read the sum. The writes add up exactly, so each one's share of the prediction can be measured.",
    "sample": "The model outputs one score (logit) per vocabulary entry; temperature divides them before the softmax, "
              "top-k and top-p cut the tail. Low temperature is safe and dull, high is varied and wild.",
    "translate": "The encoder reads the English sentence; the decoder writes Spanish one token at a time, looking "
                 "back at its own output (causal self-attention) and at the English (cross-attention).",
    "experiments": "Small GPTs that differ from a baseline in exactly one thing — positions, feed-forward, norm "
                   "placement, the causal mask — trained on the same data, seed and budget. The sentences below are "
                   "what this run measured, including where it contradicts the course material.",
    "model": "Where the parameters are, how attention memory grows with the square of the length, how training "
             "went, and how attention patterns formed along the way.",
}
# per tab: (label, prompt) pairs chosen to show that tab's idea on the shipped models
EXAMPLES = {
    "tokens": [("a famous line", links.DEFAULT_PROMPT),
               ("rare words split into pieces", "Unquestionably, thou art the most incomprehensible gentlewoman"),
               ("names, numbers, capitals", "KING HENRY V. Act IV, Scene 3: 1415, Saint Crispin's day")],
    "positional": [("a short prompt", "To be, or not to be"),
                   ("a long prompt", "Now is the winter of our discontent made glorious summer by this sun of York; "
                                     "and all the clouds that lour'd upon our house in the deep bosom of the ocean buried.")],
    "attention": [("a repeated phrase (induction)", "the king, the queen, the king, the queen, the king, the"),
                  ("a repeated line", "ROMEO: But soft, what light through yonder window breaks? ROMEO: But soft, "
                                      "what light through yonder"),
                  ("a famous line", links.DEFAULT_PROMPT)],
    "inside": [("a famous line", links.DEFAULT_PROMPT),
               ("a repeated phrase", "the king, the queen, the king, the queen, the king, the")],
    "layernorm": [("a famous line", links.DEFAULT_PROMPT),
                  ("shouting and punctuation", "O! O! O! O!!! WHAT, HO! APOTHECARY!!"),
                  ("the same word again and again", "night night night night night night night night")],
    "residual": [("an easy next token", "To be, or not to"),
                 ("a speaker's name comes next", "ROMEO: I dreamt a dream to-night.\nMERCUTIO: And so did I.\n"),
                 ("a famous line", links.DEFAULT_PROMPT)],
    "sample": [("a speech begins", "KING RICHARD III:\nNow is the winter of our discontent"),
               ("a scene begins", "ACT I. SCENE I. Verona. A public place.\n\nEnter"),
               ("a love letter", "My dearest lady, thou art")],
    "text": [("Genesis 1:1", links.DEFAULT_SOURCE), ("Psalm 23:1", "The Lord is my shepherd; I shall lack nothing."),
             ("John 21:12", "Jesus said to them, Come and eat breakfast.")],
}
CSS = """
/* Projector mode. Gradio 6 sizes text through theme variables defined on :root; the derived ones
   (label, button, input sizes) are resolved there, so each must be set again on the body. */
body.projector {
  --text-xxs: 13px; --text-xs: 15px; --text-sm: 19px; --text-md: 22px; --text-lg: 25px; --text-xl: 30px;
  --text-xxl: 36px; --prose-text-size: 22px; --prose-header-text-weight: 700;
  --block-label-text-size: 19px; --block-title-text-size: 22px; --block-info-text-size: 19px;
  --section-header-text-size: 22px; --checkbox-label-text-size: 20px; --input-text-size: 22px;
  --button-small-text-size: 19px; --button-medium-text-size: 21px; --button-large-text-size: 22px;
  font-size: 22px;
}
body.projector .prose, body.projector [role=tab], body.projector table, body.projector button { font-size: 22px !important; }
body.projector [data-testid=block-info] { font-size: 19px !important; }
.token-prob { border-radius: 3px; padding: 1px 0; white-space: pre-wrap; }
"""


LOADED_GPT, LOADED_TRANSLATOR = "this app's GPT", "this app's translator"     # size-calculator presets


def snapshot_note(shown: str, earlier: list[str]) -> str:
    """Which training snapshot the Model tab shows, and which others the slider reaches."""
    if not earlier:
        return "The **final** model (this checkpoint holds no earlier training snapshots)."
    return f"Snapshot **{shown}** — the slider reaches {', '.join(earlier)} and the final model."


def friendly(fn):
    """Turn input problems into a message in the page instead of a traceback."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (toyviz.PromptError, ValueError, IndexError) as err:
            raise gr.Error(str(err)) from None
    return wrapper


def friendly_stream(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            yield from fn(*args, **kwargs)
        except (toyviz.PromptError, ValueError, IndexError) as err:
            raise gr.Error(str(err)) from None
    return wrapper


class FigurePlot(gr.Plot):
    """gr.Plot that keeps each figure's download settings: the camera button saves a PNG at 2x under
    the file name the figure builder chose (Gradio's front end reads a "config" key next to data/layout)."""

    def get_block_name(self) -> str:
        return "plot"

    def postprocess(self, value):
        if hasattr(value, "to_json"):
            config = json.dumps(config_for((value.layout.meta or {}).get("filename", "toyviz")))
            return PlotData(type="plotly", plot=value.to_json()[:-1] + ',"config":' + config + "}")
        return super().postprocess(value)


def examples(key: str, box: gr.Textbox, label: str = "Example prompts") -> gr.Examples:
    """A tab's example inputs: clicking one fills the box (and the wiring redraws the tab)."""
    return gr.Examples([text for _, text in EXAMPLES[key]], inputs=box, label=label,
                       example_labels=[name for name, _ in EXAMPLES[key]])


def plot(elem_id: str, label: str = "", visible: bool = True) -> gr.Plot:
    return FigurePlot(label=label or None, elem_id=elem_id, show_label=bool(label), visible=visible)


def gpt_only(what: str, title: str, name: str, projector: bool):
    """The figure a GPT-only panel shows while the picker is on a translator stack."""
    return message(f"{what} the GPT's next-token predictions: pick the GPT.", title, filename=f"toyviz-{name}",
                   projector=projector)


def probability_html(pieces: list[tuple[str, float]]) -> str:
    """Generated text with each token's background as dark as the probability it was drawn with."""
    spans = (f'<span class="token-prob" title="p = {p:.3f}" style="background: rgba(99,102,241,{0.12 + 0.6 * p:.2f})">'
             f"{html.escape(text)}</span>" for text, p in pieces)
    return '<div id="generated-text" style="font-family: monospace; line-height: 1.7">' + "".join(spans) + "</div>"


def build(explorer: Explorer) -> gr.Blocks:
    gpt = explorer.gpt
    cfg = gpt.config if gpt else None
    piece = gpt.tokenizer.piece if gpt else str

    # ------------------------------------------------------------------ renderers ----------
    @friendly
    def render_tokens(prompt, projector, model="gpt"):
        tr, note = explorer.view(prompt, model)
        return note, token_figs.token_pieces(tr, projector=projector), token_figs.embedding_norms(tr, projector=projector)

    @friendly
    def render_positional(prompt, metric, projector, model="gpt"):
        tr, note = explorer.view(prompt, model)
        config = explorer.need_gpt().config if model == "gpt" else explorer.need_translator().config
        kind = config.positional if model == "gpt" else "sinusoidal"   # the translator's, as in the paper
        table = explorer.gpt.model.pos_emb.weight if model == "gpt" and kind == "learned" else None
        d_model = config.d_model
        encoding = tr.positional if tr.positional is not None else toyviz.sinusoidal_encoding(len(tr.tokens), d_model)
        dims = list(dict.fromkeys(d for d in (0, 1, 8, 9, min(64, d_model - 2), min(65, d_model - 1))
                                  if d < d_model))              # a d_model under 10 has fewer dimensions
        return (note, positional_figs.model_encoding(tr, kind, table=table, projector=projector),
                positional_figs.dimension_curves(encoding, dims, projector=projector),
                positional_figs.similarity_heatmap(encoding, metric, tokens=tr.tokens, projector=projector))

    @friendly
    def render_formula(d_model, length, projector):
        d_model = clamp(d_model, 2, 1024, int, "d_model") // 2 * 2
        length = clamp(length, 2, 1024, int, "length")
        return (positional_figs.formula_explorer(d_model, length, projector=projector),
                positional_figs.spot_the_bug(length, d_model, projector=projector))

    @friendly
    def render_attention(prompt, layer, head, mode, ablate, projector, model="gpt"):
        tr, note = explorer.view(prompt, model)
        layer, head = explorer.layer_head(tr, layer, head)
        labels = label_heads(tr)
        table = "\n".join(f"| {l.layer}.{l.head} | **{l.label}** | {l.score:.2f} | {l.description} |" for l in labels)
        table = "| head | label | score | what it does |\n|---|---|---|---|\n" + table
        if model == "gpt":
            heads = [tuple(int(x) for x in h.split(".")) for h in (ablate or [])]
            ablated = explorer.trace(prompt, ablate=tuple(heads))[0] if heads else tr
            ablation = attention_figs.ablation_comparison(tr, ablated, piece, projector=projector)
        else:
            ablation = gpt_only("Head ablation compares", "Switching heads off", "ablation", projector)
        return (note, attention_figs.attention_grid(tr, mode=mode, labels=labels, projector=projector),
                attention_figs.attention_head(tr, layer, head, mode=mode, projector=projector), table, ablation)

    @friendly
    def render_inside(prompt, layer, head, query, last_word, projector):
        tr, note = explorer.trace(prompt)
        layer, head = explorer.layer_head(tr, layer, head)
        query = clamp(query, -len(tr.tokens), len(tr.tokens) - 1, int, "query") % len(tr.tokens)
        unmasked, _ = explorer.trace(prompt, causal=False)
        words = clean_prompt(prompt)[0].rsplit(maxsplit=1)
        edited = (words[0] + " " if len(words) > 1 else "") + (str(last_word or "").strip() or "dream")
        return (note, attention_figs.head_steps(tr, layer, head, query, projector=projector),
                attention_figs.masked_vs_unmasked(tr, unmasked, layer, head, projector=projector),
                mask_figs.leak_figure(tr, explorer.trace(edited)[0], unmasked, explorer.trace(edited, causal=False)[0],
                                      projector=projector))

    @friendly
    def render_layernorm(prompt, norm_name, position, projector, model="gpt"):
        tr, note = explorer.view(prompt, model)
        names = list(tr.layernorms)
        norm_name = norm_name if norm_name in names else names[0]
        position = clamp(position, -len(tr.tokens), len(tr.tokens) - 1, int, "position") % len(tr.tokens)
        return (note, layernorm_figs.layernorm_heatmaps(tr, projector=projector),
                layernorm_figs.layernorm_curves(tr, projector=projector),
                layernorm_figs.layernorm_parameters(tr, norm_name, projector=projector),
                layernorm_figs.layernorm_histogram(tr, norm_name, position, projector=projector))

    @friendly
    def render_residual(prompt, position, projector, model="gpt"):
        tr, note = explorer.view(prompt, model)
        position = clamp(position, -len(tr.tokens), len(tr.tokens) - 1, int, "position") % len(tr.tokens)
        if model == "gpt":
            readout = (residual_figs.logit_lens(tr, gpt.model, piece, projector=projector),
                       residual_figs.logit_attribution(tr, gpt.model, piece, position, projector=projector))
        else:       # both read the stream through the GPT's final norm and unembedding; the encoder has none
            readout = (gpt_only("The logit lens reads", "Logit lens", "logit-lens", projector),
                       gpt_only("Logit attribution splits", "Logit attribution", "logit-attribution", projector))
        return (note, residual_figs.residual_norms(tr, position, projector=projector),
                residual_figs.residual_shares(tr, projector=projector)) + readout

    def sampling_settings(temperature, top_k, top_p):
        return (clamp(temperature, 0.0, 2.0, float, "temperature"),
                clamp(top_k, 0, explorer.need_gpt().config.vocab_size, int, "top_k"),
                clamp(top_p, 0.01, 1.0, float, "top_p"))

    @friendly
    def render_sample_bars(prompt, temperature, top_k, top_p, projector):
        tr, note = explorer.trace(prompt)
        t, k, p = sampling_settings(temperature, top_k, top_p)
        return note, sampling_figs.next_token_bars(tr.logits[-1], piece, temperature=t, top_k=k, top_p=p,
                                                   projector=projector)

    @friendly_stream
    def generate(prompt, temperature, top_k, top_p, max_new, seed, projector):
        text, note = clean_prompt(prompt)
        t, k, p = sampling_settings(temperature, top_k, top_p)
        max_new = clamp(max_new, 1, MAX_NEW_TOKENS, int, "max_new_tokens")
        seed = clamp(seed, 0, 2**31 - 1, int, "seed")
        pieces, tokens, bars = [], [], None
        for i, step in enumerate(explorer.need_gpt().generate(text, max_new, temperature=t, top_k=k, top_p=p, seed=seed)):
            pieces.append((step.text, step.prob))
            tokens.append((step.piece, step.prob))
            if i % 4 == 0 or i == max_new - 1:        # bars every few tokens keep the stream light
                bars = sampling_figs.next_token_bars(step.logits, piece, temperature=t, top_k=k, top_p=p,
                                                     projector=projector)
            yield note, probability_html(pieces), bars, gr.skip()
        # at the end, the same tokens as a figure (hover details, PNG export)
        yield note, probability_html(pieces), bars, sampling_figs.generated_tokens(tokens, projector=projector)

    @friendly
    def kv_cache(prompt):
        r = explorer.kv_cache_benchmark(prompt)
        w, wo = r["with_cache"], r["without_cache"]
        return (f"Prompt {r['prompt_tokens']} tokens + {r['new_tokens']} new (greedy): the model processed "
                f"**{w['positions_processed']:,}** token positions with the KV cache and **{wo['positions_processed']:,}** "
                f"without; **{w['tokens_per_second']}** vs **{wo['tokens_per_second']}** tokens/s on this machine. "
                "The cache keeps each layer's keys and values, so a new token only computes its own.")

    @friendly
    def translate(text, beam, kind, layer, head, projector):
        out, note = explorer.translate(text, beam)
        choose = lambda v: None if v in (None, "average") else int(v)
        layer = choose(layer)
        cfg_t = explorer.translator.config
        depth = cfg_t.n_encoder_layer if kind == "encoder" else cfg_t.n_decoder_layer
        if layer is not None and layer >= depth:      # one dropdown serves stacks of different depths
            note = f"{note}\n\nThe {'encoder' if kind == 'encoder' else 'decoder'} has {depth} layers: showing its last."
            layer = depth - 1
        return (note, out.text, translation_figs.translation_attention(out.trace, kind, layer, choose(head),
                                                                        projector=projector),
                translation_figs.decoding_candidates(out.trace, explorer.translator.tgt_tok.piece, projector=projector))

    @friendly
    def render_model(prompt, snapshot, x_axis, projector):
        counts = count_parameters(explorer.need_gpt().model)
        history = explorer.history()
        paths = explorer.snapshots()
        path, tr = explorer.snapshot_trace(snapshot if snapshot >= 0 else len(paths) - 1, prompt)
        step = path.name if path.name.startswith("step-") else "final"
        return (model_figs.parameter_bars(counts, projector=projector),
                model_figs.attention_memory(cfg.n_head, n_layer=cfg.n_layer, context=cfg.context, projector=projector),
                model_figs.loss_curve(history, x=x_axis, projector=projector) if history else None,
                snapshot_note(step, [p.name for p in paths[:-1]]),
                attention_figs.attention_grid(tr, projector=projector))

    @friendly
    def render_experiments(prompt, variants, x_axis, projector):
        results = explorer.experiment_results()
        text, _ = clean_prompt(prompt)
        try:
            no_mask = explorer.no_mask_model()
        except toyviz.PromptError as err:      # the measurements can still be drawn without its weights
            attention, sample = message(str(err), "No-mask model: attention", filename="toyviz-no-mask-attention",
                                        projector=projector), str(err)
        else:
            attention = attention_figs.attention_grid(no_mask.trace(text), projector=projector)
            continued = "".join(s.text for s in no_mask.generate(text, 40, temperature=0.0))
            sample = f"**The no-mask model continues the prompt (greedy):** {html.escape(continued)}"
        return (experiment_figs.describe(results), experiment_figs.curves(results, variants, x_axis, projector=projector),
                experiment_figs.final_bars(results, projector=projector),
                experiment_figs.extrapolation(results, projector=projector),
                experiment_figs.no_mask_bars(results, projector=projector), attention, sample)

    @friendly
    def size_calculator(preset, layers, heads, d_model, d_ff, vocab, context, positional, feed_forward, tied,
                        projector):
        if preset == LOADED_TRANSLATOR:
            config = explorer.need_translator().config
        elif preset == LOADED_GPT:
            config = explorer.need_gpt().config
        elif preset in PRESETS:
            config = PRESETS[preset]
        else:
            d_model = clamp(d_model, 1, 65536, int, "d_model")
            config = toyviz.GPTConfig(vocab_size=clamp(vocab, 2, 10**6, int, "vocab"),
                                      context=clamp(context, 1, 10**6, int, "context"),
                                      n_layer=clamp(layers, 1, 512, int, "layers"),
                                      n_head=clamp(heads, 1, d_model, int, "heads"), d_model=d_model,
                                      d_ff=clamp(d_ff, 0, 262144, int, "d_ff"), positional=positional,
                                      feed_forward=feed_forward, tie_head=bool(tied))
        counts = count_parameters(config)
        gib = lambda b: f"{b / 2**30:.2f} GiB"
        quoted = (f" (the paper quoted {PAPER_SIZES[preset]}: the papers' figures were rounded or, for the "
                  f"smallest model's 117M, miscounted — these are the released checkpoints' exact counts)"
                  if preset in PAPER_SIZES else "")
        embeddings = counts["token_embedding"] + counts["position_embedding"]
        quoted += (f". Embeddings hold {embeddings / counts['total']:.0%} of it: each block grows with d_model² "
                   f"(about 12·d² per layer), the embeddings only with d_model, so as models widen the blocks dominate")
        text = f"**{counts['total']:,} parameters**{quoted}. "
        if isinstance(config, toyviz.GPTConfig):
            mem = memory_report(config)
            text += (f"Weights: {gib(mem['weights_fp32_bytes'])} in fp32, {gib(mem['weights_bf16_bytes'])} in bf16. "
                     f"One layer's attention matrices for one sequence of {config.context} tokens: "
                     f"{gib(mem['attention_bytes_per_layer_fp32'])} (fp32). KV cache: "
                     f"{mem['kv_cache_bytes_per_token_bf16']:,} bytes per token, "
                     f"{gib(mem['kv_cache_bytes_full_context_bf16'])} for a full context (bf16). "
                     f"About {mem['flops_per_token'] / 1e9:.2f} GFLOPs per token (forward).")
        else:                                            # the translator: encoder + decoder stacks
            text += (f"Weights: {gib(4 * counts['total'])} in fp32, {gib(2 * counts['total'])} in bf16 "
                     f"({config.n_encoder_layer} encoder and {config.n_decoder_layer} decoder layers).")
        return text, model_figs.parameter_bars(counts, projector=projector)

    def preset_fields(preset):
        """Show a GPT preset's configuration in the custom fields, so it can be edited from there."""
        config = (explorer.gpt.config if preset == LOADED_GPT and explorer.gpt else PRESETS.get(preset))
        if config is None:
            return [gr.skip()] * len(calc)
        return [config.n_layer, config.n_head, config.d_model, config.d_ff, config.vocab_size, config.context,
                config.positional, config.feed_forward, config.tie_head]

    def make_link(tab, prompt, layer, head, mode, query, temperature, top_k, top_p, seed, max_new, text, beam,
                  snapshot, projector, model="gpt"):
        return links.build(dict(tab=tab, prompt=prompt, layer=layer, head=head, mode=mode, query=query,
                                temperature=temperature, top_k=top_k, top_p=top_p, seed=seed, max_new=max_new,
                                text=text, beam=beam, snapshot=snapshot, projector=projector, model=model))

    # ------------------------------------------------------------------ layout -------------
    n_layer, n_head = (cfg.n_layer, cfg.n_head) if cfg else (1, 1)
    tr_cfg = explorer.translator.config if explorer.translator else None
    # the layer and head sliders serve the GPT and both translator stacks: sized for the largest
    most_layers = max([n_layer, *((tr_cfg.n_encoder_layer, tr_cfg.n_decoder_layer) if tr_cfg else ())])
    most_heads = max(n_head, tr_cfg.n_head if tr_cfg else 1)
    d = links.DEFAULTS            # a link's defaults and ranges are the controls' own (links.RANGES)
    with gr.Blocks(title="toyviz — see a transformer work") as demo:
        gr.Markdown("# toyviz — see a transformer work\nA 4-layer GPT trained on Shakespeare and an English→Spanish "
                    "translator, both trained from scratch by this project. Type a prompt; every tab explains one idea.")
        with gr.Row():
            prompt = gr.Textbox(value=d["prompt"], label="Prompt", lines=2, scale=5, elem_id="prompt")
            with gr.Column(scale=1, min_width=180):
                run = gr.Button("Explore", variant="primary", elem_id="run")
                projector = gr.Checkbox(value=False, label="Projector mode", elem_id="projector")
                link_button = gr.Button("Copy link to this view", size="sm", elem_id="copy-link")
                export_button = gr.Button("Export view (HTML)", size="sm", elem_id="export")
        model = gr.Radio([("GPT", "gpt"), ("translator: encoder (reads the prompt as English)", "encoder"),
                          ("translator: decoder (writes its Spanish)", "decoder")], value=d["model"],
                         label="model for the Tokens, Positions, Attention, Layer norm and Residual stream tabs "
                               "(the others show the GPT)",
                         elem_id="model")
        link = gr.Textbox(label="Link to this view", interactive=False, elem_id="link", visible=True, max_lines=1)
        exported = gr.File(label="Exported view (opens offline)", visible=False, elem_id="exported")
        note = gr.Markdown(elem_id="note")
        current = gr.State("attention")
        prompt_examples = []

        def intro(tab_id: str):
            """A prompt tab's head: its two-sentence explanation and its example prompts."""
            gr.Markdown(EXPLAIN[tab_id])
            prompt_examples.append(examples(tab_id, prompt))
        with gr.Tabs(selected="attention", elem_id="tabs") as tabs:
            with gr.Tab("Tokens", id="tokens") as tab_tokens:
                intro("tokens")
                tokens_out = [plot("tokens-plot"), plot("embed-norms-plot")]
            with gr.Tab("Positions", id="positional") as tab_positional:
                intro("positional")
                metric = gr.Radio(["cosine", "dot"], value="cosine", label="similarity")
                positional_out = [plot("pe-plot"), plot("pe-dims-plot"), plot("pe-sim-plot")]
                gr.Markdown("### The formula on its own, and two bugs from tutorials")
                with gr.Row():
                    pe_d = gr.Slider(8, 512, value=64, step=2, label="d_model", elem_id="pe-d")
                    pe_len = gr.Slider(8, 512, value=128, step=1, label="length", elem_id="pe-len")
                formula_out = [plot("pe-formula-plot"), plot("pe-bug-plot")]
                gr.Markdown("**Why the bugs break position information.** *no_d_model_scaling* computes the "
                            "frequencies as exp(−2i·ln 10000) without dividing by d_model: all but the first few "
                            "dimensions get frequencies near 0, so they are sin(0) = 0 and cos(0) = 1 at every position "
                            "and only two or three dimensions carry position — distant positions collide. "
                            "*cos_overwrites_sin* writes the cosine into the even columns again, so half the "
                            "dimensions stay 0 and cos(pos·f) = cos(−pos·f) cannot tell some positions apart; the "
                            "smallest distance between two positions (in each panel's title) drops accordingly.")
            with gr.Tab("Attention", id="attention") as tab_attention:
                intro("attention")
                with gr.Row():
                    # (a slider needs max > min, even for a one-layer or missing model)
                    layer = gr.Slider(0, max(1, most_layers - 1), value=0, step=1, label="layer", elem_id="layer")
                    head = gr.Slider(0, max(1, most_heads - 1), value=0, step=1, label="head", elem_id="head")
                    mode = gr.Radio(["probs", "scores"], value="probs", label="show", elem_id="mode")
                ablate = gr.CheckboxGroup([f"{l}.{h}" for l in range(n_layer) for h in range(n_head)],
                                          label="switch heads off (layer.head)", elem_id="ablate")
                attention_out = [plot("attn-grid-plot"), plot("attn-plot"), gr.Markdown(elem_id="head-labels"),
                                 plot("ablation-plot")]
            with gr.Tab("Inside a head", id="inside") as tab_inside:
                intro("inside")
                query = gr.Slider(-1, (cfg.context if cfg else 2) - 1, value=-1, step=1,
                                  label="query position (-1 = last token)", elem_id="query")
                last_word = gr.Textbox(value="dream", label="change the prompt's last word to", max_lines=1,
                                       elem_id="last-word")
                inside_out = [plot("head-steps-plot"), plot("mask-plot"), plot("leak-plot")]
                gr.Markdown("**Without the causal mask** every token could read the tokens after it — including the one "
                            "it is trained to predict, so training would teach it to copy. A stack without the mask is "
                            "a bidirectional encoder, as in BERT, which is trained instead to fill in masked-out tokens.")
            with gr.Tab("Layer norm", id="layernorm") as tab_layernorm:
                intro("layernorm")
                with gr.Row():
                    norm_name = gr.Dropdown(["block0.ln1"], value="block0.ln1", label="LayerNorm", allow_custom_value=True)
                    ln_position = gr.Slider(-1, (cfg.context if cfg else 2) - 1, value=-1, step=1, label="token position")
                layernorm_out = [plot("ln-heat-plot"), plot("ln-curve-plot"), plot("ln-param-plot"), plot("ln-hist-plot")]
            with gr.Tab("Residual stream", id="residual") as tab_residual:
                intro("residual")
                res_position = gr.Slider(-1, (cfg.context if cfg else 2) - 1, value=-1, step=1, label="token position")
                residual_out = [plot("res-norm-plot"), plot("res-share-plot"), plot("lens-plot"), plot("dla-plot")]
            with gr.Tab("Sample", id="sample") as tab_sample:
                intro("sample")
                with gr.Row():
                    temperature = gr.Slider(*links.RANGES["temperature"], value=d["temperature"], step=0.05, label="temperature (0 = greedy)",
                                            elem_id="temperature")
                    top_k = gr.Slider(*links.RANGES["top_k"], value=d["top_k"], step=1, label="top-k (0 = off)", elem_id="top-k")
                    top_p = gr.Slider(*links.RANGES["top_p"], value=d["top_p"], step=0.05, label="top-p", elem_id="top-p")
                with gr.Row():
                    max_new = gr.Slider(*links.RANGES["max_new"], value=d["max_new"], step=1, label="max new tokens")
                    seed = gr.Number(value=d["seed"], precision=0, label="seed")
                    go_button = gr.Button("Generate", variant="primary", elem_id="generate")
                    stop = gr.Button("Stop", elem_id="stop")
                bars = plot("bars-plot")
                generated = gr.HTML(elem_id="generated")
                generated_plot = plot("generated-plot", visible=False)      # shown once there is a generation
                kv_button = gr.Button("Measure the KV cache", size="sm", elem_id="kv-button")
                kv_text = gr.Markdown(elem_id="kv-result")
            with gr.Tab("Translate", id="translate") as tab_translate:
                gr.Markdown(EXPLAIN["translate"])
                with gr.Row():
                    source = gr.Textbox(value=d["text"], label="English", lines=2, scale=4, elem_id="source")
                    with gr.Column(scale=1):
                        beam = gr.Slider(*links.RANGES["beam"], value=d["beam"], step=1, label="beam width (1 = greedy)",
                                         elem_id="beam")
                        translate_button = gr.Button("Translate", variant="primary", elem_id="translate")
                source_examples = examples("text", source, "Example sentences")
                spanish = gr.Textbox(label="Spanish (Reina-Valera 1909 style)", interactive=False, elem_id="spanish")
                with gr.Row():
                    attention_kind = gr.Radio(["cross", "encoder", "decoder"], value="cross", label="attention")
                    tr_depth = max(tr_cfg.n_encoder_layer, tr_cfg.n_decoder_layer) if tr_cfg else 1
                    tr_layer = gr.Dropdown(["average"] + [str(i) for i in range(tr_depth)], value="average",
                                           label="layer")
                    tr_head = gr.Dropdown(["average"] + [str(i) for i in range(tr_cfg.n_head if tr_cfg else 1)],
                                          value="average", label="head")
                translate_figs = [plot("cross-plot"), plot("candidates-plot")]
            with gr.Tab("Experiments", id="experiments") as tab_experiments:
                gr.Markdown(EXPLAIN["experiments"])
                with gr.Row():
                    exp_variants = gr.CheckboxGroup(list(VARIANTS), value=["baseline", "learned_pe", "rope", "no_pe"],
                                                    label="variants")
                    exp_x = gr.Radio(["tokens", "seconds"], value="tokens", label="curves against")
                experiments_out = [gr.Markdown(elem_id="exp-summary"), plot("exp-curves-plot"), plot("exp-final-plot"),
                                   plot("exp-extrapolation-plot"), plot("exp-no-mask-plot"), plot("no-mask-attn-plot"),
                                   gr.Markdown(elem_id="no-mask-sample")]
            with gr.Tab("Model", id="model") as tab_model:
                gr.Markdown(EXPLAIN["model"])
                n_snapshots = len(explorer.snapshots()) if gpt else 1
                snapshot = gr.Slider(-1, max(0, n_snapshots - 1), value=-1, step=1, label="training snapshot (-1 = final model)",
                                     elem_id="snapshot")
                x_axis = gr.Radio(["step", "tokens"], value="step", label="loss curve against")
                model_out = [plot("params-plot"), plot("memory-plot"), plot("loss-plot"), gr.Markdown(),
                             plot("snapshot-plot")]
                gr.Markdown("### Size calculator")
                with gr.Row():
                    preset = gr.Dropdown(["custom", LOADED_GPT, LOADED_TRANSLATOR] + list(PRESETS), value="gpt2",
                                         label="preset (custom uses the fields)")
                    calc = [gr.Number(value=v, label=n, precision=0, min_width=90) for n, v in
                            [("layers", 12), ("heads", 12), ("d_model", 768), ("d_ff (0 = 4·d_model)", 0),
                             ("vocab", 50257), ("context", 1024)]]
                with gr.Row():
                    calc += [gr.Dropdown(list(POSITIONAL_KINDS), value="learned", label="positional encoding"),
                             gr.Dropdown(list(FEED_FORWARD_KINDS), value="gelu", label="feed-forward"),
                             gr.Checkbox(value=True, label="head tied to the token embedding")]
                size_out = [gr.Markdown(elem_id="size-text"), plot("size-plot")]

        # ------------------------------------------------------------------ wiring ---------
        def renderer(tab_id, fn, inputs, outputs, controls, api_name):
            """Bind a tab's renderer to its tab, its own controls and (as `api_name`) the HTTP API."""
            tab_id.select(fn, inputs, outputs, api_name=api_name, concurrency_limit=4)
            for control in controls:
                control.change(fn, inputs, outputs, api_visibility="private", concurrency_limit=4)
            return fn, inputs, outputs

        registry = {
            "tokens": renderer(tab_tokens, render_tokens, [prompt, projector, model], [note] + tokens_out, [],
                               "tokens"),
            "positional": renderer(tab_positional, render_positional, [prompt, metric, projector, model],
                                   [note] + positional_out, [metric], "positional"),
            "attention": renderer(tab_attention, render_attention, [prompt, layer, head, mode, ablate, projector, model],
                                  [note] + attention_out, [layer, head, mode, ablate], "attention"),
            "inside": renderer(tab_inside, render_inside, [prompt, layer, head, query, last_word, projector],
                               [note] + inside_out, [query, last_word], "inside"),
            "layernorm": renderer(tab_layernorm, render_layernorm, [prompt, norm_name, ln_position, projector, model],
                                  [note] + layernorm_out, [norm_name, ln_position], "layernorm"),
            "residual": renderer(tab_residual, render_residual, [prompt, res_position, projector, model],
                                 [note] + residual_out, [res_position], "residual"),
            "sample": renderer(tab_sample, render_sample_bars, [prompt, temperature, top_k, top_p, projector],
                               [note, bars], [temperature, top_k, top_p], "next_token"),
            "translate": renderer(tab_translate, translate, [source, beam, attention_kind, tr_layer, tr_head, projector],
                                  [note, spanish] + translate_figs, [attention_kind, tr_layer, tr_head], "translate"),
            "experiments": renderer(tab_experiments, render_experiments, [prompt, exp_variants, exp_x, projector],
                                    experiments_out, [exp_variants, exp_x], "experiments"),
            "model": renderer(tab_model, render_model, [prompt, snapshot, x_axis, projector], model_out,
                              [snapshot, x_axis], "model"),
        }
        for tab_id, name in [(tab_tokens, "tokens"), (tab_positional, "positional"), (tab_attention, "attention"),
                             (tab_inside, "inside"), (tab_layernorm, "layernorm"), (tab_residual, "residual"),
                             (tab_sample, "sample"), (tab_translate, "translate"), (tab_experiments, "experiments"),
                             (tab_model, "model")]:
            tab_id.select(lambda name=name: name, None, current, api_visibility="private")

        all_outputs = [o for _, _, outs in registry.values() for o in outs]
        all_inputs = list(dict.fromkeys(i for _, ins, _ in registry.values() for i in ins))

        def refresh(tab, *values):
            """Re-render only the tab on screen (the others redraw when they are opened)."""
            by_input = dict(zip(all_inputs, values))
            result = []
            for name, (fn, ins, outs) in registry.items():
                result += list(fn(*[by_input[i] for i in ins])) if name == tab else [gr.skip()] * len(outs)
            return result

        @friendly
        def export(tab, *values):
            """The current tab's figures as one standalone HTML file to download."""
            by_input = dict(zip(all_inputs, values))
            fn, ins, _ = registry[tab]
            figures = [o for o in fn(*[by_input[i] for i in ins]) if hasattr(o, "to_html")]
            path = os.path.join(tempfile.mkdtemp(prefix="toyviz-"), f"toyviz-{tab}.html")
            with open(path, "w", encoding="utf-8") as out:
                out.write(standalone_html(figures, f"toyviz — {tab}"))
            return gr.File(value=path, visible=True)

        export_button.click(export, [current] + all_inputs, exported, api_name="export", concurrency_limit=2)
        gr.on([run.click, prompt.submit, projector.change, model.change], refresh, [current] + all_inputs, all_outputs,
              api_visibility="private", concurrency_limit=4)
        for example in prompt_examples:
            example.load_input_event.then(refresh, [current] + all_inputs, all_outputs, api_visibility="private",
                                          concurrency_limit=4)
        for event in (translate_button.click, source.submit, source_examples.load_input_event.then):
            event(translate, registry["translate"][1], registry["translate"][2], api_visibility="private",
                  concurrency_limit=4)
        pe_inputs = [pe_d, pe_len, projector]
        for event in (tab_positional.select, pe_d.release, pe_len.release):
            event(friendly(render_formula), pe_inputs, formula_out, api_visibility="private")
        gen_event = go_button.click(generate, [prompt, temperature, top_k, top_p, max_new, seed, projector],
                                    [note, generated, bars, generated_plot], api_name="generate",
                                    concurrency_limit=2)
        gen_event.success(lambda: gr.update(visible=True), None, generated_plot, api_visibility="private")
        stop.click(None, None, None, cancels=[gen_event], api_visibility="private")
        kv_button.click(kv_cache, prompt, kv_text, api_name="kv_cache", concurrency_limit=1)
        preset.change(size_calculator, [preset] + calc + [projector], size_out, api_name="size")
        preset.change(preset_fields, preset, calc, api_visibility="private")
        for event in [tab_model.select] + [c.submit if isinstance(c, gr.Number) else c.change for c in calc]:
            event(size_calculator, [preset] + calc + [projector], size_out, api_visibility="private")
        gr.on([tab_layernorm.select, model.change], lambda p, m: gr.update(choices=list(explorer.view(p, m)[0].layernorms)),
              [prompt, model], norm_name, api_visibility="private")

        link_inputs = [current, prompt, layer, head, mode, query, temperature, top_k, top_p, seed, max_new, source,
                       beam, snapshot, projector, model]
        link_button.click(make_link, link_inputs, link, api_name="link").then(
            None, link, link, js="(q) => { const u = location.origin + location.pathname + q; "
                                 "navigator.clipboard && navigator.clipboard.writeText(u).catch(() => {}); return u; }")
        projector.change(None, projector, None, js="(on) => { document.body.classList.toggle('projector', on); }")

        def restore(request: gr.Request):
            """Deep link: the URL query sets the tab and every control it names."""
            s = links.parse(request.query_params if request else {},   # clamped to what the sliders take
                            upper={"layer": layer.maximum, "head": head.maximum, "query": query.maximum,
                                   "snapshot": snapshot.maximum})
            return (gr.Tabs(selected=s["tab"]), s["tab"], s["prompt"], s["layer"], s["head"], s["mode"], s["query"],
                    s["temperature"], s["top_k"], s["top_p"], s["seed"], s["max_new"], s["text"], s["beam"],
                    s["snapshot"], s["projector"], s["model"])

        demo.load(restore, None, [tabs] + link_inputs, api_visibility="private").then(
            refresh, [current] + all_inputs, all_outputs, api_visibility="private").then(
            None, projector, None, js="(on) => { document.body.classList.toggle('projector', on); }")
    return demo


def load_explorer(gpt: str, translator: str, device: str | None) -> Explorer:
    """Load both models once; a missing one leaves its tabs with a message instead of a crash."""
    models = {}
    for name, where in (("gpt", gpt), ("translator", translator)):
        try:
            models[name] = toyviz.load(where, device=device)
        except toyviz.CheckpointError as err:
            print(f"toyviz: {err}")
            models[name] = None
    return Explorer(models["gpt"], models["translator"])


def main(argv=None):
    parser = argparse.ArgumentParser(description="toyviz explorer")
    parser.add_argument("--device", default=None, help="cpu | cuda (default: TOYVIZ_DEVICE or auto)")
    parser.add_argument("--gpt", default=os.environ.get("TOYVIZ_GPT", "gpt"), help="GPT checkpoint folder or Hub repo")
    parser.add_argument("--translator", default=os.environ.get("TOYVIZ_TRANSLATOR", "translator"),
                        help="translator checkpoint folder or Hub repo")
    args = parser.parse_args(argv)
    demo = build(load_explorer(args.gpt, args.translator, args.device))
    demo.queue(default_concurrency_limit=4, max_size=64)
    # host and port come from GRADIO_SERVER_NAME / GRADIO_SERVER_PORT (Spaces sets them)
    # show_error: a value the API cannot even parse (text for a slider) gets its message, not a generic one
    demo.launch(css=CSS, ssr_mode=False, show_error=True)


if __name__ == "__main__":
    main()
