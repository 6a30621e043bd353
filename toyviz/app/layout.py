"""The page's layout, top to bottom as a visitor sees it: the header, then each tab's explanation,
controls and figures. Each function adds its components to the page and keeps them on `ui` under the
names toyviz.app.tabs' table uses (`ui.prompt`, `ui.tokens_out`); app.py wires them. Nothing here
answers an event.
"""
from __future__ import annotations

from pathlib import Path

import gradio as gr

from toyviz.api import REGISTER_NAMES
from toyviz.app import browser_model, presenter, projector
from toyviz.app import reports
from toyviz.app.views.size import LOADED_GPT, LOADED_TRANSLATOR
from toyviz.app.views.text import examples
from toyviz.app.views import circuits, watch
from toyviz.app.widgets import SCROLL_TO_PANEL, plot, slider
from toyviz.i18n import t
from toyviz.interpret import explain
from toyviz.lessons import library
from toyviz.models.config import FEED_FORWARD_KINDS, POSITIONAL_KINDS
from toyviz.models.size import PRESETS
from toyviz.settings import links
from toyviz.settings.controls import DEFAULTS
from toyviz.training import live
from toyviz.training.variants import VARIANTS

# the Circuits tab's panel script: a hover shows a node's dashboard, a click intervenes (read as page.css is)
CIRCUIT_PANEL = (Path(__file__).parent / "circuit_panel.js").read_text(encoding="utf-8")


def header(ui):
    """One line of title, then one row: the prompt, the model, Explore and projector mode, the link, export and
    lesson tools. A first screen shows a figure (issue 44): the tabs start ~170 px down at 1440×900 (they started
    at 273), and on a projector the row alone (no title line) leaves room for a lesson bar, the tabs and the top of
    a figure within 720 px. The link box appears once there is a link; the note is drawn under the tab bar (page.css)."""
    say = ui.say
    say(gr.Markdown, {"value": "header.intro"}, elem_id="intro")
    with gr.Row(equal_height=False, elem_id="header"):
        # one line grows to three: Enter explores (in a multi-line box it would add a newline)
        ui.prompt = say(gr.Textbox, {"label": "header.prompt", "placeholder": "header.prompt"}, value=DEFAULTS["prompt"],
                        lines=1, max_lines=3, scale=5, min_width=300, elem_id="prompt")
        ui.model = say(gr.Radio, {"label": "header.model", "choices": [("header.model_gpt", "gpt"),
                                                                        ("header.model_encoder", "encoder"),
                                                                        ("header.model_decoder", "decoder")]},
                       value=DEFAULTS["model"], elem_id="model", scale=4, min_width=280)
        with gr.Column(scale=0, min_width=150, elem_id="header-run"):
            ui.run = say(gr.Button, {"value": "header.explore"}, variant="primary", elem_id="run")
            ui.projector = say(gr.Checkbox, {"label": "header.projector"}, value=False, elem_id="projector",
                               container=False)
        # on a projector the header is one line; "⋯" shows the tools it leaves out (toyviz.app.projector)
        gr.HTML(projector.MORE, elem_id="header-more", js_on_load=projector.PAGE_SCRIPT)
        with gr.Column(scale=0, min_width=250, elem_id="header-tools"):
            with gr.Row():
                ui.link_button = say(gr.Button, {"value": "header.copy_link"}, size="sm", elem_id="copy-link",
                                     min_width=72)
                ui.export_button = say(gr.Button, {"value": "header.export"}, size="sm", elem_id="export", min_width=80)
                # the page in the other language, the view kept (page.wire_links): a lecturer's laptop may be English
                ui.language_button = say(gr.Button, {"value": "header.other_language"}, size="sm", elem_id="language",
                                         min_width=64, scale=0)
            # the lessons in the page's language (a lecture's language is its lesson's), a row of their own: beside
            # a button the picker was squeezed to "Watch▸it" during a lecture
            ui.lesson_pick = say(gr.Dropdown, {"label": "header.lessons", "choices": library.catalogue}, value=None,
                                 elem_id="lesson-pick", min_width=110)
    ui.link = say(gr.Textbox, {"label": "header.link"}, interactive=False, elem_id="link", max_lines=1, visible=False)
    ui.switch_link = gr.Textbox(visible=False)      # the query of the view in the other language
    ui.lang = gr.Textbox(value=DEFAULTS["lang"], visible=False)   # the language a link asked for ("": the browser's)
    ui.exported = say(gr.File, {"label": "header.exported"}, visible=False, elem_id="exported")
    ui.note = gr.Markdown(elem_id="note")
    ui.current = gr.State(DEFAULTS["tab"])
    ui.prompt_examples = []


def lesson_bar(ui):
    """The lesson bar (toyviz.app.presenter), on top and hidden until a lesson opens: the step, its question and
    the join code, then Prev / Next / Reveal (→ ← space). What the page script needs travels in components
    never drawn (the secret from localStorage, the page's address, the lecture's code); the secret itself
    stays in the session's state."""
    with gr.Column(visible=False, elem_id="lesson-panel") as ui.lesson_panel:
        ui.lesson_bar = gr.HTML(elem_id="lesson-bar", js_on_load=presenter.BAR_SCRIPT)
        with gr.Row(elem_id="lesson-buttons") as ui.lesson_buttons:
            say = ui.say
            ui.lesson_prev = say(gr.Button, {"value": "bar.prev"}, size="sm", elem_id="lesson-prev", scale=0, min_width=90)
            ui.lesson_next = say(gr.Button, {"value": "bar.next"}, size="sm", variant="primary", elem_id="lesson-next",
                                 scale=0, min_width=90)
            ui.lesson_reveal = say(gr.Button, {"value": "bar.reveal"}, size="sm", elem_id="lesson-reveal", scale=0,
                                   min_width=90)
            ui.lesson_copy = say(gr.Button, {"value": "bar.copy"}, size="sm", elem_id="lesson-copy", scale=0,
                                 min_width=170)
            reports.buttons(ui)                         # End lecture (toyviz.app.reports)
    ui.lecture = gr.State({})
    ui.lecture_key, ui.page_root = gr.Textbox(visible=False), gr.Textbox(visible=False)
    ui.lecture_info = gr.JSON(visible=False)
    ui.lesson_tick = gr.Timer(3, active=False)          # the votes so far, while the bar is up
    reports.layout(ui)                                  # after the lecture: its report, this browser's past lectures


def intro(ui, tab: str):
    """A tab's head: its explanation (on a projector it goes under the figures: page.css)."""
    ui.say(gr.Markdown, {"value": f"explain.{tab}"})


def prompt_examples(ui, tab: str):
    """A prompt tab's example prompts (a click fills the prompt), under the figures they redraw: the first
    screen shows a figure, not a row of buttons (issue 44)."""
    ui.prompt_examples.append(gr.Examples(**examples(tab), inputs=ui.prompt, label=t("header.examples", "en")))
    ui.say.add(ui.prompt_examples[-1].dataset, {"label": "header.examples"})


def prompt_tabs(ui, sizes):
    with ui.say(gr.Tab, {"label": "tabs.tokens"}, id="tokens") as ui.tab_tokens:
        intro(ui, "tokens")
        ui.tokens_out = [plot("tokens-plot"), plot("embed-norms-plot")]
        prompt_examples(ui, "tokens")
    with ui.say(gr.Tab, {"label": "tabs.positional"}, id="positional") as ui.tab_positional:
        intro(ui, "positional")
        ui.metric = gr.Radio(["cosine", "dot"], value="cosine", label="similarity")
        ui.positional_out = [plot("pe-plot"), plot("pe-dims-plot"), plot("pe-sim-plot")]
        prompt_examples(ui, "positional")
        ui.say(gr.Markdown, {"value": "explain.positional_formula"})
        with gr.Row():
            ui.pe_d = gr.Slider(8, 512, value=64, step=2, label="d_model", elem_id="pe-d")
            ui.pe_len = gr.Slider(8, 512, value=128, step=1, label="length", elem_id="pe-len")
        ui.formula_out = [plot("pe-formula-plot"), plot("pe-bug-plot")]
        ui.say(gr.Markdown, {"value": "explain.positional_bugs"})
    with ui.say(gr.Tab, {"label": "tabs.attention"}, id="attention") as ui.tab_attention:
        intro(ui, "attention")
        with gr.Row():
            ui.layer = slider("layer", "layer", upper=sizes.layers - 1, elem_id="layer")
            ui.head = slider("head", "head", upper=sizes.heads - 1, elem_id="head")
            ui.mode = gr.Radio(list(links.CHOICES["mode"]), value=DEFAULTS["mode"], label="show", elem_id="mode")
        grid, one, labels = plot("attn-grid-plot"), plot("attn-plot"), gr.Markdown(elem_id="head-labels")
        prompt_examples(ui, "attention")
        # the heads' switches above the figure they change, not above the first picture
        ui.ablate = gr.CheckboxGroup(sizes.gpt_heads, label="switch heads off (layer.head)", elem_id="ablate")
        ui.attention_out = [grid, one, labels, plot("ablation-plot")]
    with ui.say(gr.Tab, {"label": "tabs.inside"}, id="inside") as ui.tab_inside:
        intro(ui, "inside")
        with gr.Row():
            ui.query = slider("query", "query position (-1 = last token)", upper=sizes.context - 1, elem_id="query",
                              scale=2)
            ui.last_word = gr.Textbox(value="dream", label="change the prompt's last word to", max_lines=1,
                                      elem_id="last-word")
        ui.inside_out = [plot("head-steps-plot"), plot("mask-plot"), plot("leak-plot")]
        prompt_examples(ui, "inside")
        ui.say(gr.Markdown, {"value": "explain.no_mask"})
    with ui.say(gr.Tab, {"label": "tabs.layernorm"}, id="layernorm") as ui.tab_layernorm:
        intro(ui, "layernorm")
        with gr.Row():
            ui.norm_name = gr.Dropdown(["block0.ln1"], value="block0.ln1", label="LayerNorm", allow_custom_value=True)
            ui.ln_position = slider("query", "token position", upper=sizes.context - 1)
        ui.layernorm_out = [plot("ln-heat-plot"), plot("ln-curve-plot"), plot("ln-param-plot"), plot("ln-hist-plot")]
        prompt_examples(ui, "layernorm")
    with ui.say(gr.Tab, {"label": "tabs.residual"}, id="residual") as ui.tab_residual:
        intro(ui, "residual")
        ui.res_position = slider("query", "token position", upper=sizes.context - 1)
        ui.residual_out = [plot("res-norm-plot"), plot("res-share-plot"), plot("lens-plot"), plot("dla-plot")]
        prompt_examples(ui, "residual")
    why_tab(ui)
    features_tab(ui)


def features_tab(ui):
    with ui.say(gr.Tab, {"label": "tabs.features"}, id="features") as ui.tab_features:
        intro(ui, "features")
        with gr.Row():
            # no precision: Gradio would round 2.5 to 2 unsaid; the renderer's rule says it (controls.settle)
            ui.feature = gr.Number(value=DEFAULTS["feature"], label="feature (-1 = the prompt's strongest)",
                                   elem_id="feature")
            ui.feature_search = gr.Textbox(label="search features by a word or a token", max_lines=1,
                                           elem_id="feature-search")
        ui.features_out = [plot("features-prompt-plot"), gr.Markdown(elem_id="feature-about"),
                           plot("feature-contexts-plot"), plot("feature-histogram-plot"), plot("feature-logits-plot"),
                           gr.Markdown(elem_id="feature-list")]
        prompt_examples(ui, "features")


def circuits_tab(ui):
    """The Circuits tab (issue 45): the attribution graph with the hovered node's dashboard beside it (drawn in the
    page from the figure's own data: circuit_panel.js), a clicked feature ablated or steered
    below; the target and the supernodes redraw on Enter and are kept in the link."""
    with ui.say(gr.Tab, {"label": "tabs.circuits"}, id="circuits") as ui.tab_circuits:
        intro(ui, "circuits")
        ui.prompt_examples.append(gr.Examples([text for _, text in circuits.EXAMPLES], inputs=ui.prompt,
                                              example_labels=[name for name, _ in circuits.EXAMPLES],
                                              label="Example prompts", elem_id="circuit-examples"))
        with gr.Row():
            ui.circuit_target = gr.Textbox(value=DEFAULTS["circuit_target"], max_lines=1, elem_id="circuit-target",
                                           label="target token (blank: the top prediction; one token, ␣ for a space "
                                                 "typed as a space)")
            ui.supernodes = gr.Textbox(value=DEFAULTS["supernodes"], max_lines=2, elem_id="supernodes", scale=2,
                                       label="supernodes, by hand: name: id id; name: id id (ids from a node's "
                                             "hover; Enter draws them)")
        with gr.Row(equal_height=False):
            with gr.Column(scale=3):
                graph = plot("circuit-graph-plot")
            panel = gr.HTML(elem_id="circuit-dashboard", js_on_load=CIRCUIT_PANEL, min_width=320)
        ui.circuits_out = [graph, panel, gr.Markdown(elem_id="circuit-about")]
        with gr.Row():
            ui.circuit_node = gr.Textbox(label="feature (click one in the graph, or type its id)", max_lines=1,
                                         elem_id="circuit-node")
            ui.circuit_scale = gr.Slider(*circuits.SCALES, value=0, step=0.5, elem_id="circuit-scale",
                                         label="scale it by (0 ablates, 2 doubles, −1 flips)")
            ui.circuit_button = gr.Button("Ablate / steer in the GPT", variant="primary", elem_id="circuit-intervene")
        ui.circuit_result = plot("circuit-intervention-plot", visible=False)     # shown once there is a result
        ui.circuit_json = gr.JSON(visible=False)         # the HTTP endpoint's graph (Neuronpedia's schema)


def why_tab(ui):
    with ui.say(gr.Tab, {"label": "tabs.why"}, id="why") as ui.tab_why:
        intro(ui, "why")
        ui.why_token = gr.Dropdown([("the top prediction", "")], value="", allow_custom_value=True,
                                   label="explain the next token (pick one, or type a token as the tabs show it: ␣lord)", elem_id="why-token")
        # the first panel, then the paragraph that reads all four (its numbers link to their panels)
        components = plot(explain.PANELS["components"])
        ui.why_out = [gr.HTML(elem_id="why-summary", js_on_load=SCROLL_TO_PANEL), components,
                      plot(explain.PANELS["saliency"]), plot(explain.PANELS["lens"]), gr.HTML(elem_id="why-sources-panel")]
        prompt_examples(ui, "why")
        ui.say(gr.Markdown, {"value": "explain.why_patching"})
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
    with ui.say(gr.Tab, {"label": "tabs.sample"}, id="sample") as ui.tab_sample:
        # one sampler (issue 44): these controls, the header's prompt, one Generate and one Stop; the page's own
        # model answers them once it is ready (web/src/sampler.js), the server until then, and the line says which.
        # The sliders, then the bars they reshape: in a lecture the lesson bar and the header fill most of the
        # first screen, and the bars are what a step's question points at
        with gr.Row():
            ui.temperature = slider("temperature", "temperature (0 = greedy)", 0.05, elem_id="temperature")
            ui.top_k = slider("top_k", "top-k (0 = off)", elem_id="top-k")
            ui.top_p = slider("top_p", "top-p", 0.05, elem_id="top-p")
        ui.bars = plot("bars-plot")
        ui.browser_model = browser_model.panel()
        with gr.Row():
            ui.max_new = slider("max_new", "max new tokens", elem_id="max-new")
            ui.seed = gr.Number(value=DEFAULTS["seed"], label="seed", elem_id="seed")     # no precision: as the feature's
            ui.go = ui.say(gr.Button, {"value": "generate.button"}, variant="primary", elem_id="generate")
            ui.stop = ui.say(gr.Button, {"value": "generate.stop"}, elem_id="stop")
        ui.generated = gr.HTML(elem_id="generated")
        ui.generated_plot = plot("generated-plot", visible=False)      # shown once there is a generation
        intro(ui, "sample")
        prompt_examples(ui, "sample")
        with gr.Row():          # the server's alone: a steered generation runs there, wherever the model runs
            ui.steer_feature = gr.Number(value=DEFAULTS["steer_feature"], elem_id="steer-feature",
                                         label="steer with feature # (-1 = off; numbers in the Features tab)")
            ui.steer_alpha = slider("steer_alpha", "steering strength α (0 = off)", 0.5, elem_id="steer-alpha")
        ui.kv_button = gr.Button("Measure the KV cache", size="sm", elem_id="kv-button")
        ui.kv_text = gr.Markdown(elem_id="kv-result")


def translate_tab(ui, sizes):
    with ui.say(gr.Tab, {"label": "tabs.translate"}, id="translate") as ui.tab_translate:
        intro(ui, "translate")
        # the sentence and its translation side by side, then the attention between them; what picks the
        # attention drawn sits under it, the example sentences under that
        with gr.Row(equal_height=True):
            ui.source = gr.Textbox(value=DEFAULTS["text"], label="English", lines=2, scale=3, elem_id="source")
            ui.spanish = gr.Textbox(label="Spanish", lines=2, interactive=False, scale=3, elem_id="spanish")
            with gr.Column(scale=1, min_width=200):
                ui.beam = slider("beam", "beam width (1 = greedy)", elem_id="beam")
                ui.translate_button = gr.Button("Translate", variant="primary", elem_id="translate")
        cross = plot("cross-plot")
        with gr.Row():
            # one click apart, beside what picks the attention drawn: the same sentence's attention with the decoder
            # asked for the other register; the translator's default selected, and shown only for a translator
            # that has two (a 1909-only checkpoint has nothing to choose: its tab stays as it was)
            ui.register = gr.Radio([(name, key) for key, name in REGISTER_NAMES.items()],
                                   value=sizes.translator_registers[0], label="Spanish of", elem_id="register",
                                   visible=len(sizes.translator_registers) > 1)
            ui.attention_kind = gr.Radio(["cross", "encoder", "decoder"], value="cross", label="attention")
            average_or = lambda n: ["average"] + [str(i) for i in range(n)]
            ui.tr_layer = gr.Dropdown(average_or(sizes.translator_layers), value="average", label="layer")
            ui.tr_head = gr.Dropdown(average_or(sizes.translator_heads), value="average", label="head")
        ui.source_examples = gr.Examples(**examples("text"), inputs=ui.source, label=t("header.sentences", "en"))
        ui.say.add(ui.source_examples.dataset, {"label": "header.sentences"})
        ui.translate_out = [cross, plot("candidates-plot"), plot("translation-saliency-plot")]


def model_tabs(ui, sizes):
    with ui.say(gr.Tab, {"label": "tabs.experiments"}, id="experiments") as ui.tab_experiments:
        intro(ui, "experiments")
        with gr.Row():
            ui.exp_variants = gr.CheckboxGroup(list(VARIANTS), value=["baseline", "learned_pe", "rope", "no_pe"],
                                               label="variants")
            ui.exp_x = gr.Radio(["tokens", "seconds"], value="tokens", label="curves against")
        curves = plot("exp-curves-plot")          # the curves first, then the table that sums them up
        ui.experiments_out = [gr.Markdown(elem_id="exp-summary"), curves, plot("exp-final-plot"),
                              plot("exp-extrapolation-plot"), plot("exp-no-mask-plot"), plot("no-mask-attn-plot"),
                              gr.Markdown(elem_id="no-mask-sample")]
    with ui.say(gr.Tab, {"label": "tabs.model"}, id="model") as ui.tab_model:
        intro(ui, "model")
        with gr.Row():
            ui.snapshot = slider("snapshot", "training snapshot (-1 = final model)", upper=sizes.snapshots - 1,
                                 elem_id="snapshot", scale=2)
            ui.x_axis = gr.Radio(["step", "tokens"], value="step", label="loss curve against")
        ui.model_out = [plot("params-plot"), plot("memory-plot"), plot("loss-plot"), gr.Markdown(),
                        plot("snapshot-plot")]
        ui.say(gr.Markdown, {"value": "explain.size_calculator"})
        with gr.Row():
            ui.preset = gr.Dropdown(["custom", LOADED_GPT, LOADED_TRANSLATOR] + list(PRESETS), value="gpt2",
                                    label="preset (custom uses the fields)")
            ui.calc = [gr.Number(value=v, label=n, precision=0, min_width=90) for n, v in
                       [("layers", 12), ("heads", 12), ("d_model", 768), ("d_ff (0 = 4·d_model)", 0),
                        ("vocab", 50257), ("context", 1024)]]
        with gr.Row():
            ui.calc += [gr.Dropdown(list(POSITIONAL_KINDS), value="learned", label="positional encoding"),
                        gr.Dropdown(list(FEED_FORWARD_KINDS), value="gelu", label="feed-forward"),
                        gr.Checkbox(value=True, label="head tied to the token embedding")]
        ui.size_out = [gr.Markdown(elem_id="size-text"), plot("size-plot")]


def watch_tab(ui):
    """Watch it learn (issue 46): a tiny transformer trained live on this server, the same run on every page."""
    with gr.Tab("Watch it learn", id="watch") as ui.tab_watch:
        gr.Markdown(watch.EXPLAIN)
        with gr.Row():
            ui.watch_recipe = gr.Radio([("An induction head forms", "induction"), ("From noise to words", "text")],
                                       value="induction", label="recipe", elem_id="watch-recipe", scale=2)
            # no precision: 1.5 reaches the server as typed and is refused there, where Gradio would round it to 2
            ui.watch_seed = gr.Number(value=0, step=1, label="seed (a whole number)", elem_id="watch-seed",
                                      min_width=90)
            ui.watch_start = gr.Button("Start", variant="primary", elem_id="watch-start", min_width=90)
            ui.watch_stop = ui.say(gr.Button, {"value": "generate.stop"}, elem_id="watch-stop", min_width=90,
                                   visible=False)                                           # its owner's
        # the text and the step picker side by side: on a projector they stand in one row under the buttons, and the
        # loss curve under them still starts on a 720p first screen (page.css; on a laptop, under the figures)
        with gr.Row(equal_height=False):
            ui.watch_text = gr.Textbox(value=watch.DEFAULT_TEXT, lines=4, max_lines=8, elem_id="watch-text", scale=2,
                                       label=f"text to learn from (From noise to words; {live.MIN_TEXT_CHARS:,} to "
                                             f"{live.MAX_TEXT_CHARS:,} characters)")
            ui.watch_which = gr.Radio([watch.LATEST, watch.LAST_FINISHED], value=watch.LATEST, label="show",
                                      elem_id="watch-which")
            ui.watch_step = gr.Slider(-1, watch.LONGEST, value=-1, step=1, label="step shown (-1 = the latest)",
                                      elem_id="watch-step", scale=2)
        ui.watch_status = gr.Markdown(watch.status(None), elem_id="watch-status")
        ui.watch_out = [plot("watch-loss-plot"), plot("watch-heads-plot"), plot("watch-attention-plot"),
                        gr.Markdown(elem_id="watch-samples")]
        ui.watch_tick = gr.Timer(watch.POLL_S, active=False)
        ui.watch_note = gr.State({})            # the page's last refused Start or Stop (watch.refusal)
