"""toyviz explorer: a Gradio app that shows two small transformers at work.

    python app.py [--device cpu|cuda] [--gpt PATH_OR_REPO] [--translator PATH_OR_REPO]

This file only lays out and wires: the renderers are `toyviz.app.views` (inputs → note and figures, no
Gradio), which renderer draws each tab from which controls `toyviz.app.tabs`, the controls' ranges
`toyviz.app.controls`, the app's Gradio pieces (a figure plot, sliders, how a user's error is shown)
`toyviz.app.widgets`. Top to bottom: the header, each tab's layout, the registry binding toyviz.app.tabs'
names to this page's components, deep links, start-up.
"""
from __future__ import annotations

import argparse
import functools
import os
from pathlib import Path
from types import SimpleNamespace

# read once, when torch loads MKL: no buffers kept per worker thread (toyviz.serving.memory.mkl_keeps_thread_buffers)
os.environ.setdefault("MKL_DISABLE_FAST_MM", "1")

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")

import gradio as gr

import toyviz
from toyviz.interpret import explain
from toyviz.app import links, views
from toyviz.app.widgets import (SCROLL_TO_PANEL, TOGGLE_PROJECTOR, clamp_in_page, friendly, in_place,
                               one_per_visitor, plot, show_clamped, slider)
from toyviz.models.config import FEED_FORWARD_KINDS, POSITIONAL_KINDS
from toyviz.app.controls import DEFAULTS
from toyviz.app.explorer import Explorer
from toyviz.serving.memory import keep_returning_freed_memory
from toyviz.serving.server import prepare_server
from toyviz.app.tabs import TABS, draw_every_tab
from toyviz.models.size import PRESETS
from toyviz.training.variants import VARIANTS

CSS = (Path(toyviz.__file__).parent / "app" / "page.css").read_text(encoding="utf-8")
# generations decode together in one batch (toyviz.serving.batching): a worker streaming one mostly waits for the
# batch's next round, so many may stream at once, and the more do, the more each forward serves. Under
# benchmarks.load (30 students) 16 slots were all taken (a generation took ~20 s) and the first token
# waited for one: p95 9.0 s; with 32, 1.5 s
GENERATIONS_AT_ONCE = 32



# ---------------------------------------------------------------- layout -------------------

def header(ui):
    """One line of title, then the prompt with the controls every tab shares beside it: the tabs start
    within the first 300 px of a laptop screen. The link box appears once there is a link."""
    gr.Markdown(views.EXPLAIN["header"], elem_id="intro")
    with gr.Row(equal_height=False):
        # one line grows to three: Enter explores (in a multi-line box it would add a newline)
        ui.prompt = gr.Textbox(value=DEFAULTS["prompt"], label="Prompt", lines=1, max_lines=3, scale=4,
                               elem_id="prompt")
        with gr.Column(scale=2, min_width=320):
            ui.model = gr.Radio([("GPT", "gpt"), ("translator encoder", "encoder"), ("translator decoder", "decoder")],
                                value=DEFAULTS["model"], label="model shown by the first five tabs", elem_id="model")
            with gr.Row():
                ui.run = gr.Button("Explore", variant="primary", elem_id="run", min_width=100)
                ui.projector = gr.Checkbox(value=False, label="Projector mode", elem_id="projector", min_width=100)
        with gr.Column(scale=1, min_width=170):
            ui.link_button = gr.Button("Copy link to this view", size="sm", elem_id="copy-link")
            ui.export_button = gr.Button("Export view (HTML)", size="sm", elem_id="export")
    ui.link = gr.Textbox(label="Link to this view", interactive=False, elem_id="link", max_lines=1, visible=False)
    ui.exported = gr.File(label="Exported view (opens offline)", visible=False, elem_id="exported")
    ui.note = gr.Markdown(elem_id="note")
    ui.current = gr.State(DEFAULTS["tab"])
    ui.prompt_examples = []


def intro(ui, tab: str):
    """A prompt tab's head: its explanation and its example prompts (a click fills the prompt)."""
    gr.Markdown(views.EXPLAIN[tab])
    ui.prompt_examples.append(gr.Examples(**views.examples(tab), inputs=ui.prompt, label="Example prompts"))


def prompt_tabs(ui, sizes):
    with gr.Tab("Tokens", id="tokens") as ui.tab_tokens:
        intro(ui, "tokens")
        ui.tokens_out = [plot("tokens-plot"), plot("embed-norms-plot")]
    with gr.Tab("Positions", id="positional") as ui.tab_positional:
        intro(ui, "positional")
        ui.metric = gr.Radio(["cosine", "dot"], value="cosine", label="similarity")
        ui.positional_out = [plot("pe-plot"), plot("pe-dims-plot"), plot("pe-sim-plot")]
        gr.Markdown("### The formula on its own, and two bugs from tutorials")
        with gr.Row():
            ui.pe_d = gr.Slider(8, 512, value=64, step=2, label="d_model", elem_id="pe-d")
            ui.pe_len = gr.Slider(8, 512, value=128, step=1, label="length", elem_id="pe-len")
        ui.formula_out = [plot("pe-formula-plot"), plot("pe-bug-plot")]
        gr.Markdown(views.EXPLAIN["positional_bugs"])
    with gr.Tab("Attention", id="attention") as ui.tab_attention:
        intro(ui, "attention")
        with gr.Row():
            ui.layer = slider("layer", "layer", upper=sizes.layers - 1, elem_id="layer")
            ui.head = slider("head", "head", upper=sizes.heads - 1, elem_id="head")
            ui.mode = gr.Radio(list(links.CHOICES["mode"]), value=DEFAULTS["mode"], label="show", elem_id="mode")
        ui.ablate = gr.CheckboxGroup(sizes.gpt_heads, label="switch heads off (layer.head)", elem_id="ablate")
        ui.attention_out = [plot("attn-grid-plot"), plot("attn-plot"), gr.Markdown(elem_id="head-labels"),
                            plot("ablation-plot")]
    with gr.Tab("Inside a head", id="inside") as ui.tab_inside:
        intro(ui, "inside")
        ui.query = slider("query", "query position (-1 = last token)", upper=sizes.context - 1, elem_id="query")
        ui.last_word = gr.Textbox(value="dream", label="change the prompt's last word to", max_lines=1,
                                  elem_id="last-word")
        ui.inside_out = [plot("head-steps-plot"), plot("mask-plot"), plot("leak-plot")]
        gr.Markdown(views.EXPLAIN["no_mask"])
    with gr.Tab("Layer norm", id="layernorm") as ui.tab_layernorm:
        intro(ui, "layernorm")
        with gr.Row():
            ui.norm_name = gr.Dropdown(["block0.ln1"], value="block0.ln1", label="LayerNorm", allow_custom_value=True)
            ui.ln_position = slider("query", "token position", upper=sizes.context - 1)
        ui.layernorm_out = [plot("ln-heat-plot"), plot("ln-curve-plot"), plot("ln-param-plot"), plot("ln-hist-plot")]
    with gr.Tab("Residual stream", id="residual") as ui.tab_residual:
        intro(ui, "residual")
        ui.res_position = slider("query", "token position", upper=sizes.context - 1)
        ui.residual_out = [plot("res-norm-plot"), plot("res-share-plot"), plot("lens-plot"), plot("dla-plot")]
    why_tab(ui)
    features_tab(ui)


def features_tab(ui):
    with gr.Tab("Features", id="features") as ui.tab_features:
        intro(ui, "features")
        with gr.Row():
            ui.feature = gr.Number(value=DEFAULTS["feature"], precision=0, label="feature (-1 = the prompt's strongest)",
                                   elem_id="feature")
            ui.feature_search = gr.Textbox(label="search features by a word or a token", max_lines=1,
                                           elem_id="feature-search")
        ui.features_out = [plot("features-prompt-plot"), gr.Markdown(elem_id="feature-about"),
                           plot("feature-contexts-plot"), plot("feature-histogram-plot"), plot("feature-logits-plot"),
                           gr.Markdown(elem_id="feature-list")]


def why_tab(ui):
    with gr.Tab("Why this token?", id="why") as ui.tab_why:
        intro(ui, "why")
        ui.why_token = gr.Dropdown([("the top prediction", "")], value="", allow_custom_value=True,
                                   label="explain the next token (pick one, or type any single token)", elem_id="why-token")
        ui.why_out = [gr.HTML(elem_id="why-summary", js_on_load=SCROLL_TO_PANEL), plot(explain.PANELS["components"]),
                      plot(explain.PANELS["saliency"]), plot(explain.PANELS["lens"]), gr.HTML(elem_id="why-sources-panel")]
        gr.Markdown("### Activation patching: where does what tells two prompts apart live?")
        first = explain.PAIRS[0]
        ui.pair = gr.Dropdown([p.name for p in explain.PAIRS], value=first.name, label="a prepared pair (or type your own)",
                              elem_id="why-pair")
        with gr.Row():
            ui.clean = gr.Textbox(first.clean, label="clean prompt", max_lines=3, elem_id="why-clean")
            ui.corrupted = gr.Textbox(first.corrupted, label="corrupted prompt (the same number of tokens)", max_lines=3,
                                      elem_id="why-corrupted")
        with gr.Row():
            ui.clean_answer = gr.Textbox(first.clean_answer, label="clean answer (blank: its top token)", max_lines=1)
            ui.corrupted_answer = gr.Textbox(first.corrupted_answer, label="corrupted answer (blank: its top token)",
                                             max_lines=1)
            ui.patch_button = gr.Button("Patch", variant="primary", elem_id="why-patch")
        # shown once there is a result: two empty frames would look broken
        ui.patching_out = [plot("why-patching-stream-plot", visible=False), plot("why-patching-heads-plot", visible=False)]


def sample_tab(ui):
    with gr.Tab("Sample", id="sample") as ui.tab_sample:
        intro(ui, "sample")
        with gr.Row():
            ui.temperature = slider("temperature", "temperature (0 = greedy)", 0.05, elem_id="temperature")
            ui.top_k = slider("top_k", "top-k (0 = off)", elem_id="top-k")
            ui.top_p = slider("top_p", "top-p", 0.05, elem_id="top-p")
        with gr.Row():
            ui.max_new = slider("max_new", "max new tokens")
            ui.seed = gr.Number(value=DEFAULTS["seed"], precision=0, label="seed")
            ui.go = gr.Button("Generate", variant="primary", elem_id="generate")
            ui.stop = gr.Button("Stop", elem_id="stop")
        with gr.Row():
            ui.steer_feature = gr.Number(value=DEFAULTS["steer_feature"], precision=0, elem_id="steer-feature",
                                         label="steer with feature # (-1 = off; numbers in the Features tab)")
            ui.steer_alpha = slider("steer_alpha", "steering strength α (0 = off)", 0.5, elem_id="steer-alpha")
        ui.bars = plot("bars-plot")
        ui.generated = gr.HTML(elem_id="generated")
        ui.generated_plot = plot("generated-plot", visible=False)      # shown once there is a generation
        ui.kv_button = gr.Button("Measure the KV cache", size="sm", elem_id="kv-button")
        ui.kv_text = gr.Markdown(elem_id="kv-result")


def translate_tab(ui, sizes):
    with gr.Tab("Translate", id="translate") as ui.tab_translate:
        gr.Markdown(views.EXPLAIN["translate"])
        with gr.Row():
            ui.source = gr.Textbox(value=DEFAULTS["text"], label="English", lines=2, scale=4, elem_id="source")
            with gr.Column(scale=1):
                ui.beam = slider("beam", "beam width (1 = greedy)", elem_id="beam")
                ui.translate_button = gr.Button("Translate", variant="primary", elem_id="translate")
        ui.source_examples = gr.Examples(**views.examples("text"), inputs=ui.source, label="Example sentences")
        ui.spanish = gr.Textbox(label="Spanish (Reina-Valera 1909 style)", interactive=False, elem_id="spanish")
        with gr.Row():
            ui.attention_kind = gr.Radio(["cross", "encoder", "decoder"], value="cross", label="attention")
            average_or = lambda n: ["average"] + [str(i) for i in range(n)]
            ui.tr_layer = gr.Dropdown(average_or(sizes.translator_layers), value="average", label="layer")
            ui.tr_head = gr.Dropdown(average_or(sizes.translator_heads), value="average", label="head")
        ui.translate_out = [plot("cross-plot"), plot("candidates-plot"), plot("translation-saliency-plot")]


def model_tabs(ui, sizes):
    with gr.Tab("Experiments", id="experiments") as ui.tab_experiments:
        gr.Markdown(views.EXPLAIN["experiments"])
        with gr.Row():
            ui.exp_variants = gr.CheckboxGroup(list(VARIANTS), value=["baseline", "learned_pe", "rope", "no_pe"],
                                               label="variants")
            ui.exp_x = gr.Radio(["tokens", "seconds"], value="tokens", label="curves against")
        ui.experiments_out = [gr.Markdown(elem_id="exp-summary"), plot("exp-curves-plot"), plot("exp-final-plot"),
                              plot("exp-extrapolation-plot"), plot("exp-no-mask-plot"), plot("no-mask-attn-plot"),
                              gr.Markdown(elem_id="no-mask-sample")]
    with gr.Tab("Model", id="model") as ui.tab_model:
        gr.Markdown(views.EXPLAIN["model"])
        ui.snapshot = slider("snapshot", "training snapshot (-1 = final model)", upper=sizes.snapshots - 1,
                             elem_id="snapshot")
        ui.x_axis = gr.Radio(["step", "tokens"], value="step", label="loss curve against")
        ui.model_out = [plot("params-plot"), plot("memory-plot"), plot("loss-plot"), gr.Markdown(),
                        plot("snapshot-plot")]
        gr.Markdown("### Size calculator")
        with gr.Row():
            ui.preset = gr.Dropdown(["custom", views.LOADED_GPT, views.LOADED_TRANSLATOR] + list(PRESETS), value="gpt2",
                                    label="preset (custom uses the fields)")
            ui.calc = [gr.Number(value=v, label=n, precision=0, min_width=90) for n, v in
                       [("layers", 12), ("heads", 12), ("d_model", 768), ("d_ff (0 = 4·d_model)", 0),
                        ("vocab", 50257), ("context", 1024)]]
        with gr.Row():
            ui.calc += [gr.Dropdown(list(POSITIONAL_KINDS), value="learned", label="positional encoding"),
                        gr.Dropdown(list(FEED_FORWARD_KINDS), value="gelu", label="feed-forward"),
                        gr.Checkbox(value=True, label="head tied to the token embedding")]
        ui.size_out = [gr.Markdown(elem_id="size-text"), plot("size-plot")]


# ---------------------------------------------------------------- wiring -------------------

def registry(ui, bind) -> dict:
    """tab → (renderer, its inputs, its outputs, the controls that redraw it, API name), from toyviz.app.tabs."""
    def components(names):
        return [c for name in names for c in (getattr(ui, name) if isinstance(getattr(ui, name), list)
                                              else [getattr(ui, name)])]
    return {name: (bind(tab.render), components(tab.inputs), components(tab.outputs), components(tab.controls),
                   tab.api or name) for name, tab in TABS.items()}


def wire_tabs(ui, tabs: dict):
    """Each renderer answers its tab's selection and its own controls; the shared controls (prompt,
    projector, picker) redraw only the tab on screen. On the page a mistake shows in place of the
    figures (`in_place`); each tab's HTTP endpoint is the same renderer on a trigger the page never
    fires, raising the mistake as an error for the caller."""
    for name, (fn, inputs, outputs, controls, api_name) in tabs.items():
        tab, on_page, js = getattr(ui, f"tab_{name}"), in_place(fn, outputs), clamp_in_page(inputs)
        tab.select(on_page, inputs, outputs, js=js, api_visibility="private", concurrency_limit=4)
        tab.select(lambda name=name: name, None, ui.current, api_visibility="private")
        for control in controls:
            control.change(on_page, inputs, outputs, js=js, api_visibility="private", concurrency_limit=4)
        gr.Button(visible=False).click(fn, inputs, outputs, api_name=api_name, concurrency_limit=4)
    ui.all_inputs = list(dict.fromkeys(i for _, ins, _, _, _ in tabs.values() for i in ins))
    ui.all_outputs = [o for _, _, outs, _, _ in tabs.values() for o in outs]

    def refresh(tab, *values):
        by_input = dict(zip(ui.all_inputs, values))
        return [value for name, (fn, ins, outs, _, _) in tabs.items()
                for value in (in_place(fn, outs)(*[by_input[i] for i in ins]) if name == tab
                              else [gr.skip()] * len(outs))]

    @friendly
    def export(tab, *values):
        """The current tab's figures as one standalone HTML file to download."""
        fn, ins = tabs[tab][:2]
        by_input = dict(zip(ui.all_inputs, values))
        return gr.File(value=views.export_page(tab, fn(*[by_input[i] for i in ins])), visible=True)

    ui.refresh = refresh
    ui.export_button.click(export, [ui.current] + ui.all_inputs, ui.exported, api_name="export", concurrency_limit=2)
    js = clamp_in_page([ui.current] + ui.all_inputs)
    gr.on([ui.run.click, ui.prompt.submit, ui.projector.change, ui.model.change], refresh,
          [ui.current] + ui.all_inputs, ui.all_outputs, js=js, api_visibility="private", concurrency_limit=4)
    for example in ui.prompt_examples:
        example.load_input_event.then(refresh, [ui.current] + ui.all_inputs, ui.all_outputs, js=js,
                                      api_visibility="private", concurrency_limit=4)
    for control in {id(c): c for c in ui.all_inputs if isinstance(c, gr.Slider)}.values():
        show_clamped(control)


def wire_actions(ui, explorer: Explorer, bind, tabs: dict):
    """The buttons and fields that are not a tab's redraw: translate, formula, generate, KV cache, sizes,
    the why-tab's token choices and patching."""
    translate, inputs, outputs = tabs["translate"][:3]
    for event in (ui.translate_button.click, ui.source.submit, ui.source_examples.load_input_event.then):
        event(in_place(translate, outputs), inputs, outputs, api_visibility="private", concurrency_limit=4)
    for event in (ui.tab_positional.select, ui.pe_d.release, ui.pe_len.release):
        event(friendly(views.formula_view), [ui.pe_d, ui.pe_len, ui.projector], ui.formula_out,
              api_visibility="private")
    sampling = [ui.prompt, ui.temperature, ui.top_k, ui.top_p, ui.max_new, ui.seed, ui.projector, ui.steer_feature,
                ui.steer_alpha]
    generate = friendly(one_per_visitor(functools.partial(views.generate_view, explorer)))   # see one_per_visitor
    gen_event = ui.go.click(generate, sampling, [ui.note, ui.generated, ui.bars, ui.generated_plot],
                            js=clamp_in_page(sampling), api_name="generate",
                            concurrency_limit=GENERATIONS_AT_ONCE)
    for control in (ui.max_new, ui.steer_alpha):
        show_clamped(control)
    gen_event.success(lambda: gr.update(visible=True), None, ui.generated_plot, api_visibility="private")
    ui.stop.click(None, None, None, cancels=[gen_event], api_visibility="private")
    ui.kv_button.click(bind(views.kv_cache_view), ui.prompt, ui.kv_text, api_name="kv_cache", concurrency_limit=1)
    size_inputs = [ui.preset] + ui.calc + [ui.projector]
    ui.preset.change(bind(views.size_view), size_inputs, ui.size_out, api_name="size")
    ui.preset.change(lambda preset: views.preset_fields(explorer, preset) or [gr.skip()] * len(ui.calc), ui.preset,
                     ui.calc, api_visibility="private")
    for field in ui.calc:           # editing a field makes the preset "custom", so the figures follow the fields
        field.input(lambda: "custom", None, ui.preset, api_visibility="private")
    numbers = [event for c in ui.calc if isinstance(c, gr.Number) for event in (c.submit, c.blur)]
    gr.on([ui.tab_model.select] + numbers + [c.change for c in ui.calc if not isinstance(c, gr.Number)],
          bind(views.size_view), size_inputs, ui.size_out, api_visibility="private")
    gr.on([ui.tab_why.select, ui.run.click, ui.prompt.submit],
          lambda p: gr.update(choices=views.why_choices(explorer, p)), ui.prompt, ui.why_token, api_visibility="private")
    patch_fields = [ui.clean, ui.corrupted, ui.clean_answer, ui.corrupted_answer]
    patch = bind(views.patching_view)
    show = lambda: [gr.update(visible=True)] * len(ui.patching_out)
    ui.patch_button.click(patch, patch_fields + [ui.projector], [ui.note] + ui.patching_out, api_name="patching",
                          concurrency_limit=2).success(show, None, ui.patching_out, api_visibility="private")
    ui.pair.input(friendly(views.pair_fields), ui.pair, patch_fields, api_visibility="private").then(
        patch, patch_fields + [ui.projector], [ui.note] + ui.patching_out, api_visibility="private",
        concurrency_limit=2).success(show, None, ui.patching_out, api_visibility="private")
    gr.on([ui.tab_layernorm.select, ui.model.change],
          lambda p, m: gr.update(choices=views.layernorm_choices(explorer, p, m)), [ui.prompt, ui.model],
          ui.norm_name, api_visibility="private")


def wire_links(ui, demo: gr.Blocks):
    """Copy link: the view's state as a URL query; opening a link restores every control it names."""
    state = list(DEFAULTS)                          # the controls below, in this order
    controls = [ui.current, ui.prompt, ui.layer, ui.head, ui.mode, ui.query, ui.temperature, ui.top_k, ui.top_p,
                ui.seed, ui.max_new, ui.source, ui.beam, ui.snapshot, ui.projector, ui.model, ui.feature,
                ui.steer_feature, ui.steer_alpha]
    ui.make_link = lambda *values: links.build(dict(zip(state, values)))
    ui.link_button.click(ui.make_link, controls, ui.link, api_name="link").then(
        lambda: gr.Textbox(visible=True), None, ui.link, api_visibility="private").then(
        None, ui.link, ui.link, js="(q) => { const u = location.origin + location.pathname + q; "
                                   "navigator.clipboard && navigator.clipboard.writeText(u).catch(() => {}); return u; }")
    ui.projector.change(None, ui.projector, None, js=TOGGLE_PROJECTOR)

    def restore(request: gr.Request):
        """Deep link: the URL query sets the tab and every control it names, clamped to the sliders."""
        s = links.parse(request.query_params if request else {},
                        upper={"layer": ui.layer.maximum, "head": ui.head.maximum, "query": ui.query.maximum,
                               "snapshot": ui.snapshot.maximum})
        return [gr.Tabs(selected=s["tab"])] + [s[key] for key in state]

    ui.restore, ui.link_controls = restore, controls
    demo.load(restore, None, [ui.tabs] + controls, api_visibility="private").then(
        ui.refresh, [ui.current] + ui.all_inputs, ui.all_outputs, api_visibility="private").then(
        None, ui.projector, None, js=TOGGLE_PROJECTOR)


def build(explorer: Explorer) -> gr.Blocks:
    """The page: header, tabs, wiring; `demo.ui` keeps the components (tests reach them there)."""
    ui, sizes = SimpleNamespace(), explorer.sizes()
    bind = lambda view: friendly(functools.partial(view, explorer))      # a renderer serving this explorer
    with gr.Blocks(title="toyviz — see a transformer work") as demo:
        header(ui)
        # on a narrow or projector screen the tab buttons wrap onto a second row: none hides in a menu
        with gr.Tabs(selected=DEFAULTS["tab"], elem_id="tabs", overflow_behavior="wrap") as ui.tabs:
            prompt_tabs(ui, sizes)
            sample_tab(ui)
            translate_tab(ui, sizes)
            model_tabs(ui, sizes)
        ui.registry = registry(ui, bind)
        wire_tabs(ui, ui.registry)
        wire_actions(ui, explorer, bind, ui.registry)
        wire_links(ui, demo)
    demo.ui = ui
    return demo


def main(argv=None):
    parser = argparse.ArgumentParser(description="toyviz explorer")
    parser.add_argument("--device", default=None, help="cpu | cuda (default: TOYVIZ_DEVICE or auto)")
    parser.add_argument("--gpt", default=os.environ.get("TOYVIZ_GPT", "gpt"), help="GPT checkpoint folder or Hub repo")
    parser.add_argument("--translator", default=os.environ.get("TOYVIZ_TRANSLATOR", "translator"),
                        help="translator checkpoint folder or Hub repo")
    args = parser.parse_args(argv)
    for problem in prepare_server():    # allocator, interpreter lock, imports: before the models load
        print(f"toyviz: {problem}")
    explorer = Explorer.load(args.gpt, args.translator, args.device)
    for problem in explorer.problems.values():
        print(f"toyviz: {problem}")
    demo = build(explorer)
    seconds = draw_every_tab(explorer, {name: getattr(demo.ui, name).value for tab in TABS.values()
                                        for name in tab.inputs})
    print(f"toyviz: every tab drawn once in {seconds:.1f} s")
    keep_returning_freed_memory()       # what a class's requests freed goes back to the system every 10 s
    demo.queue(default_concurrency_limit=4, max_size=64)
    # host and port from GRADIO_SERVER_NAME / _PORT (Spaces sets them); show_error: a value the API cannot
    # even parse (text for a slider) gets its message, not a generic one
    demo.launch(css=CSS, ssr_mode=False, show_error=True)


if __name__ == "__main__":
    main()
