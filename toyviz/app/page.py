"""The page: its layout called tab by tab, its events wired to the renderers, its deep links, and what it is
served with (`launch_options`). Each tab's components are `toyviz.app.layout`, the renderers `toyviz.app.views`
(inputs → note and figures, no Gradio), which renderer draws each tab from which controls `toyviz.app.tabs`, the
controls' ranges `toyviz.settings.controls`, the app's Gradio pieces (a figure plot, sliders, how a user's error is
shown) `toyviz.app.widgets`. Top to bottom: the page (`build`, the table of contents), the registry binding
toyviz.app.tabs' names to this page's components, the tabs' events, the other actions, the Circuits and Watch it
learn tabs' own events, deep links, what the page is served with. Started by `toyviz serve` (toyviz.app.serve) and
by the Space's app.py.
"""
from __future__ import annotations

import contextlib
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
from starlette.middleware import Middleware

import toyviz
from toyviz.app import browser_model, layout, lecture
from toyviz.app import reports
from toyviz.app.views import circuits, watch
from toyviz.app.views.layernorm import layernorm_choices
from toyviz.app.views.positional import formula_view
from toyviz.app.views.sampling import generate_view, generation_pending, kv_cache_view
from toyviz.app.views.size import preset_fields, size_view
from toyviz.app.views.why import pair_fields, patching_view, why_choices
from toyviz import i18n
from toyviz.app.wording import Wording
from toyviz.app.widgets import (TOGGLE_PROJECTOR, clamp_in_page, friendly, in_place, one_per_visitor, press_redraw,
                                 redraw_current)
from toyviz.app.drawn import Drawn
from toyviz.app.compute import binder, export_tab
from toyviz.app.explorer import Explorer
from toyviz.app.presenter import Presenter
from toyviz.classroom import routes
from toyviz.classroom.store import Lectures
from toyviz.serving import files
from toyviz.serving.limits import limited
from toyviz.serving.static import Shelf, StaticFiles
from toyviz.serving.workers import Workers
from toyviz.app.tabs import TABS, queue
from toyviz.settings import links
from toyviz.settings.controls import DEFAULTS
from toyviz.training import live

CSS = (Path(toyviz.__file__).parent / "app" / "page.css").read_text(encoding="utf-8")
# generations decode together in one batch (toyviz.serving.batching): a worker streaming one mostly waits for the
# batch's next round, so many may stream at once, and the more do, the more each forward serves. Under
# benchmarks.load (30 students) 16 slots were all taken (a generation took ~20 s) and the first token
# waited for one: p95 9.0 s; with 32, 1.5 s
GENERATIONS_AT_ONCE = 32
UPDATES_AT_ONCE = 4          # a tab's updates computed at once in one process: more only wait for the lock
QUEUE_PLACES = 2048          # events waiting at most: 300 students opening the page at once (4 each), with room
# Gradio's cache (exports, anything Gradio copied to serve) is swept every minute of files older than an
# export is kept (toyviz.serving.files): a Space up for a term keeps only the last minutes' files
CLEAN_CACHE = (60, int(files.KEEP_S))
# Gradio keeps every page's session until it is the least recently used of more than this many: 1,000 is
# three halls of 300 students, and a page in use is recently used (a session holds 0.023 MB, sharing the
# page's default config: toyviz.serving.sessions; Gradio's own copy was 0.36 MB, 3.6 GB at its 10,000)
SESSIONS_KEPT = 1000


def build(explorer: Explorer, lectures: Lectures | None = None, workers: Workers | None = None) -> gr.Blocks:
    """The page: lesson bar, header, tabs, wiring; `demo.ui` keeps the components (tests reach them there).
    `lectures`: where lessons taught from this page keep their state (default: made when a lesson opens);
    `workers`: the processes the renderers compute in (default: this one, on `explorer`)."""
    ui, sizes = SimpleNamespace(), explorer.models.sizes()
    compute = binder(explorer, workers)     # a renderer of the inputs alone, computed here or in a worker
    ui.workers = workers
    # each kind of update computed at once: enough to keep every worker busy with one tab's (8 workers, 16)
    ui.at_once = max(UPDATES_AT_ONCE, 2 * workers.count if workers else 0)
    bind = lambda view: friendly(compute(view))
    ui.say = Wording()                      # the page's words, said again in the visitor's language as it opens
    with gr.Blocks(title="toyviz — see a transformer work", delete_cache=CLEAN_CACHE) as demo:
        layout.lesson_bar(ui)                   # a lecture's step, question and join code (issue #33)
        layout.header(ui)
        # on a narrow or projector screen the tab buttons wrap onto a second row: none hides in a menu
        with gr.Tabs(selected=DEFAULTS["tab"], elem_id="tabs", overflow_behavior="wrap") as ui.tabs:
            layout.prompt_tabs(ui, sizes)       # Tokens … Residual stream, Why this token?, Features
            layout.circuits_tab(ui)             # the attribution graph of one prediction (issue 45)
            layout.sample_tab(ui)               # the GPT in the student's browser on top (issue #31)
            layout.translate_tab(ui, sizes)
            layout.model_tabs(ui, sizes)        # Experiments, Model
            layout.watch_tab(ui)                # a tiny transformer trained live (issue 46)
            ui.say.add(ui.tab_watch, {"label": "tabs.watch"})
        ui.registry = registry(ui, bind)
        wire_tabs(ui, ui.registry, bind)
        wire_actions(ui, explorer, compute)
        wire_circuits(ui, compute)
        wire_links(ui)
        ui.presenter = Presenter(explorer, lectures)
        lecture.wire(ui, demo, ui.presenter)
        reports.wire(ui, demo, ui.presenter)     # End lecture, its report, past lectures (issue 56)
        wire_watch(ui)
        ui.say.wire(demo)                       # the page in the visitor's language (toyviz.i18n, issue 56)
    demo.ui = ui
    return demo


# ---------------------------------------------------------------- wiring -------------------

def registry(ui, bind) -> dict:
    """tab → (renderer, its inputs, its outputs, the controls that redraw it, API name), from toyviz.app.tabs."""
    def components(names):
        return [c for name in names for c in (getattr(ui, name) if isinstance(getattr(ui, name), list)
                                              else [getattr(ui, name)])]
    drawn = Drawn()                     # a view's answer kept as sent: a hall opening the link draws it once
    return {name: (drawn.remember(name, bind(tab.render)) if tab.kept else bind(tab.render), components(tab.inputs),
                   components(tab.outputs), components(tab.controls), tab.api or name) for name, tab in TABS.items()}


def wire_tabs(ui, tabs: dict, bind):
    """Each renderer answers its tab's selection and its own controls; the shared controls (prompt,
    projector, picker) redraw only the tab on screen, through its hidden redraw button (`redraw_current`). A control
    redraws on a visitor's input, not on every change: a deep link or a lesson's step sets many controls at once
    and then redraws its tab once (`redraw_current`; a lesson's Next in the same answer, `refresh`), where
    each control's change would have drawn the tab again (four times for a step setting three sliders). On the page a mistake shows in place of the
    figures (`in_place`); each tab's HTTP endpoint is the same renderer on a trigger the page never
    fires, raising the mistake as an error for the caller. Every event counts against its tab's allowance:
    a script can send the page's own events as well as call the endpoints."""
    for name, (fn, inputs, outputs, controls, api_name) in tabs.items():
        limited_fn = limited(fn, TABS[name].allowance)
        tab, on_page = getattr(ui, f"tab_{name}"), in_place(limited_fn, outputs)
        redraw = gr.Button(visible="hidden", elem_id=f"redraw-{name}")

        # one event draws the tab and notes it as current (two were a tenth of what a class's page opens sent),
        # whichever asks: its selection, its controls, its redraw button. Always the last: a page's draws of a tab
        # run one after another and the last asked is drawn last (an event per trigger let an earlier draw land
        # after a later one, and "once" dropped a slider's input while a draw was pending: three quick presses of
        # the layer slider's arrow key left it at 3 over the figure of layer 1)
        def draw(request: gr.Request, *values, on_page=on_page, name=name):
            return [*on_page(request, *values), name]
        # the Sample tab's sliders: the page's own model answers them when it runs, else they press the redraw
        sample = name == "sample"
        for control in controls if sample else ():
            browser_model.page_first(control.input, "redraw", inputs).success(
                None, js=press_redraw(name), api_visibility="private")
        gr.on([tab.select, redraw.click, *([] if sample else [c.input for c in controls])], draw, inputs,
              outputs + [ui.current], js=clamp_in_page(inputs), api_visibility="private", trigger_mode="always_last",
              **queue(name, ui.at_once))
        gr.Button(visible=False).click(limited_fn, inputs, outputs, api_name=api_name,
                                       **queue(name, ui.at_once))          # scripts call these: each visitor's share
    ui.all_inputs = list(dict.fromkeys(i for _, ins, _, _, _ in tabs.values() for i in ins))
    ui.all_outputs = [o for _, _, outs, _, _ in tabs.values() for o in outs]

    def refresh(tab, *values):
        by_input = dict(zip(ui.all_inputs, values))
        return [value for name, (fn, ins, outs, _, _) in tabs.items()
                for value in (in_place(fn, outs)(*[by_input[i] for i in ins]) if name == tab
                              else [gr.skip()] * len(outs))]

    export_file = bind(export_tab)

    def export(tab, *values):
        """The current tab's figures as one standalone HTML file to download."""
        by_input = dict(zip(ui.all_inputs, values))
        return gr.File(value=export_file(tab, *[by_input[i] for i in tabs[tab][1]]), visible=True)

    ui.refresh = refresh
    ui.export_button.click(limited(export, "export"), [ui.current] + ui.all_inputs, ui.exported, api_name="export",
                           concurrency_limit=2)
    ui.redraw_current = redraw_current(ui, tabs)
    gr.on([ui.run.click, ui.prompt.submit, ui.projector.input, ui.model.input], None, js=ui.redraw_current)
    js = clamp_in_page([ui.current] + ui.all_inputs)
    for example in ui.prompt_examples:      # (a js-only step after an example's load is never run: Gradio's way)
        example.load_input_event.then(limited(refresh, "view"), [ui.current] + ui.all_inputs, ui.all_outputs, js=js,
                                      api_visibility="private", concurrency_limit=ui.at_once)


def wire_actions(ui, explorer: Explorer, compute):
    """The buttons and fields that are not a tab's redraw: translate, formula, generate, KV cache, sizes,
    the why-tab's token choices and patching. `compute`: a view → its function of the inputs (toyviz.app.compute)."""
    bind = lambda view: friendly(compute(view))
    # Translate, Enter in the English box and an example sentence press the tab's redraw button (wire_tabs): the
    # tab's one drawing event, so a translation never lands after the view asked next (nor the other way round)
    for event in (ui.translate_button.click, ui.source.submit, ui.source_examples.load_input_event.then):
        event(None, js=press_redraw("translate"), api_visibility="private")
    gr.on([ui.tab_positional.select, ui.pe_d.release, ui.pe_len.release], limited(friendly(formula_view), "view"),
          [ui.pe_d, ui.pe_len, ui.projector], ui.formula_out, api_visibility="private", trigger_mode="always_last")
    sampling = [ui.prompt, ui.temperature, ui.top_k, ui.top_p, ui.max_new, ui.seed, ui.projector, ui.steer_feature,
                ui.steer_alpha]
    generate = limited(friendly(one_per_visitor(compute(generate_view))), "generate")     # see one_per_visitor
    streamed = [ui.note, ui.generated, ui.bars, ui.generated_plot]
    # the page's run: the last run's text and figures cleared first, the button saying it is busy (a
    # second press would be ignored in silence); the HTTP endpoint raises a mistake for its caller
    @i18n.in_visitors_language
    def busy(request: gr.Request, projector):
        bars, tokens = generation_pending(projector)
        return gr.update(value=i18n.t("generate.busy"), interactive=False), "", bars, gr.Plot(tokens, visible=True)

    @i18n.in_visitors_language
    def ready(request: gr.Request):             # a new update each time: Gradio consumes it
        return gr.update(value=i18n.t("generate.button"), interactive=True)

    # Generate and Stop: the page's own model answers them when it runs, sending nothing (browser_model.page_first)
    gen_event = browser_model.page_first(ui.go.click, "generate", sampling).success(
        busy, ui.projector, [ui.go, ui.generated, ui.bars, ui.generated_plot], queue=False,
        api_visibility="private").then(
        in_place(generate, streamed), sampling, streamed, js=clamp_in_page(sampling), api_visibility="private",
        concurrency_limit=GENERATIONS_AT_ONCE, concurrency_id="generate")
    gen_event.then(ready, None, ui.go, queue=False, api_visibility="private")
    gr.Button(visible=False).click(generate, sampling, streamed, api_name="generate",
                                   concurrency_limit=GENERATIONS_AT_ONCE, concurrency_id="generate")
    browser_model.page_first(ui.stop.click, "stop", [], cancels=[gen_event]).success(ready, None, ui.go, queue=False,
                                                                                 api_visibility="private")
    ui.kv_button.click(limited(bind(kv_cache_view), "kv_cache"), ui.prompt, ui.kv_text, api_name="kv_cache",
                       concurrency_limit=1)
    size_inputs = [ui.preset] + ui.calc + [ui.projector]
    size = limited(bind(size_view), "view")
    ui.preset.change(size, size_inputs, ui.size_out, api_name="size")
    ui.preset.change(lambda preset: preset_fields(explorer, preset) or [gr.skip()] * len(ui.calc), ui.preset,
                     ui.calc, api_visibility="private")
    for field in ui.calc:           # editing a field makes the preset "custom", so the figures follow the fields
        field.input(lambda: "custom", None, ui.preset, api_visibility="private")
    numbers = [event for c in ui.calc if isinstance(c, gr.Number) for event in (c.submit, c.blur)]
    gr.on([ui.tab_model.select] + numbers + [c.change for c in ui.calc if not isinstance(c, gr.Number)],
          size, size_inputs, ui.size_out, api_visibility="private")
    gr.on([ui.tab_why.select, ui.run.click, ui.prompt.submit],
          limited(lambda p, choices=bind(why_choices): gr.update(choices=choices(p)), "view"), ui.prompt, ui.why_token,
          api_visibility="private")
    patch_fields = [ui.clean, ui.corrupted, ui.clean_answer, ui.corrupted_answer]
    patch, patched = limited(bind(patching_view), "patching"), [ui.note] + ui.patching_out
    show = lambda: [gr.update(visible=True)] * len(ui.patching_out)     # a mistake shows there too, in place
    gr.Button(visible=False).click(patch, patch_fields + [ui.projector], patched, api_name="patching",
                                   concurrency_limit=2, concurrency_id="patching")
    ui.patch_button.click(in_place(patch, patched), patch_fields + [ui.projector], patched, api_visibility="private",
                          concurrency_limit=2, concurrency_id="patching").then(show, None, ui.patching_out,
                                                                               api_visibility="private")
    ui.pair.input(friendly(pair_fields), ui.pair, patch_fields, api_visibility="private").then(
        in_place(patch, patched), patch_fields + [ui.projector], patched, api_visibility="private",
        concurrency_limit=2, concurrency_id="patching").then(show, None, ui.patching_out, api_visibility="private")
    gr.on([ui.tab_layernorm.select, ui.model.change],
          limited(lambda p, m, choices=bind(layernorm_choices): gr.update(choices=choices(p, m)), "view"),
          [ui.prompt, ui.model], ui.norm_name, api_visibility="private")


def wire_circuits(ui, compute):
    """The Circuits tab's own events: its target and supernodes redraw it on Enter (a new target is a new graph:
    seconds, so not on each keystroke); Ablate / steer (or a feature clicked in the graph, which presses it)
    intervenes in the real GPT; the graph's JSON (Neuronpedia's schema) and the intervention as HTTP endpoints."""
    bind = lambda view: friendly(compute(view))
    gr.on([ui.circuit_target.submit, ui.supernodes.submit], None, js=ui.redraw_current)
    # a new graph (a new prompt, target or supernodes) clears the intervention on the old one and its feature id:
    # an old result under a new graph, or Ablate applying the old graph's id to the new one, says what is not shown
    ui.circuits_out[0].change(lambda: ("", gr.update(value=None, visible=False)), None,
                              [ui.circuit_node, ui.circuit_result], queue=False, api_visibility="private")
    inputs = [ui.prompt, ui.circuit_target, ui.circuit_node, ui.circuit_scale, ui.projector]
    intervene = limited(bind(circuits.intervention_view), "circuit_intervene")
    ui.circuit_button.click(in_place(intervene, [ui.circuit_result]), inputs, ui.circuit_result,
                            js=clamp_in_page(inputs), api_visibility="private", **queue("circuits", ui.at_once)).then(
        lambda: gr.update(visible=True), None, ui.circuit_result, api_visibility="private")
    gr.Button(visible=False).click(intervene, inputs, ui.circuit_result, api_name="circuit_intervene",
                                   **queue("circuits", ui.at_once))
    gr.Button(visible=False).click(limited(bind(circuits.circuit_json), "circuit"), [ui.prompt, ui.circuit_target],
                                   ui.circuit_json, api_name="circuit", **queue("circuits", ui.at_once))


def wire_watch(ui, runs: live.LiveRuns | None = None):
    """Watch it learn's events (toyviz.app.views.watch): Start, Stop, the slider and the poll; the tab draws the run as
    it stands when selected. Each event knows its page (`watch.who`): its session and address, and the lecture it
    presents (ui.lecture, over ui.presenter)."""
    runs, presenter = runs or watch.shared_runs(), ui.presenter
    view_inputs = [ui.watch_which, ui.watch_step, ui.projector, ui.watch_recipe, ui.lecture]
    outputs = [ui.watch_status, *ui.watch_out, ui.watch_stop, ui.watch_tick]
    noted = [ui.watch_note, *outputs]

    def shown(view: watch.Watched) -> list:
        # a figure this run does not have (the text recipe's heads and attention) is hidden, not an empty frame
        figs = (view.loss, view.heads, view.attention)
        return [view.status, *[gr.update(value=fig, visible=fig is not None) for fig in figs], view.samples,
                gr.update(visible=view.stop_shown), gr.Timer(active=view.polls)]

    # each event in its page's language (?lang=, else Accept-Language): the status, the notes, the figures and a
    # fault's message
    @i18n.in_visitors_language
    def draw(request: gr.Request, which, upto, projector, recipe, lecture, note):
        page = watch.who(request, lecture, presenter)
        return shown(watch.watch_view(runs, which, upto, projector, recipe, page, note))

    @i18n.in_visitors_language
    @friendly
    def start(request: gr.Request, seed, text, which, upto, projector, recipe, lecture):
        page = watch.who(request, lecture, presenter)
        which, upto, note, view = watch.start_view(runs, page, recipe, seed, text or "", which, upto, projector,
                                                   presenter)
        return [which, upto, note, *shown(view)]

    @i18n.in_visitors_language
    @friendly
    def stop(request: gr.Request, which, upto, projector, recipe, lecture):
        page = watch.who(request, lecture, presenter)
        note, view = watch.stop_view(runs, page, which, upto, projector, recipe)
        return [note, *shown(view)]

    ui.watch_start.click(start, [ui.watch_seed, ui.watch_text, *view_inputs], [ui.watch_which, ui.watch_step, *noted],
                         api_visibility="private")
    ui.watch_stop.click(stop, view_inputs, noted, api_visibility="private")
    # projector mode, a link or a lesson's step redraw the tab on screen through its hidden button (redraw_current):
    # a projector link drew this tab's figures as well as its own tab's (on projector.change), on every page
    redraw = gr.Button(visible="hidden", elem_id="redraw-watch").click
    # one event for what a person asks, always the last: a page's draws run one after another, so an earlier one
    # (the latest step, asked as the page picked the finished run) never lands after a later one (the step scrubbed
    # to). The poll is its own, "once": a tick while a draw is pending is dropped, so a busy server gets fewer polls
    # (always the last, each page kept one queued behind the other); a tick that lands late is redrawn a second later
    gr.on([ui.tab_watch.select, ui.watch_which.input, ui.watch_step.change, redraw, ui.watch_recipe.input], draw,
          [*view_inputs, ui.watch_note], outputs, api_visibility="private", trigger_mode="always_last")
    ui.watch_tick.tick(draw, [*view_inputs, ui.watch_note], outputs, api_visibility="private", trigger_mode="once")


def wire_links(ui):
    """Copy link: the view's state as a URL query; opening a link restores every control it names."""
    state = list(DEFAULTS)                          # the controls below, in this order
    controls = [ui.current, ui.prompt, ui.layer, ui.head, ui.mode, ui.query, ui.temperature, ui.top_k, ui.top_p,
                ui.seed, ui.max_new, ui.source, ui.beam, ui.snapshot, ui.projector, ui.model, ui.feature,
                ui.steer_feature, ui.steer_alpha, ui.circuit_target, ui.supernodes, ui.lang, ui.ablate]
    ui.make_link = lambda *values: links.build(dict(zip(state, values)))
    ui.link_button.click(ui.make_link, controls, ui.link, api_name="link").then(
        lambda: gr.Textbox(visible=True), None, ui.link, api_visibility="private").then(
        None, ui.link, ui.link, js="(q) => { const u = location.origin + location.pathname + q; "
                                   "navigator.clipboard && navigator.clipboard.writeText(u).catch(() => {}); return u; }")
    ui.projector.change(None, ui.projector, None, js=TOGGLE_PROJECTOR)

    def switched(request: gr.Request, *values):
        """The view's link in the other language (the page's language is the request's: toyviz.i18n.language)."""
        spoken = i18n.language(request)
        return ui.make_link(*values[:-2], next(lang for lang in i18n.LANGUAGES if lang != spoken), values[-1])
    ui.language_button.click(limited(switched, "view"), controls, ui.switch_link, api_visibility="private").then(
        None, ui.switch_link, None, js="(q) => { location.assign(location.pathname + q); }")

    def restore(request: gr.Request):
        """Deep link: the URL query sets the tab and every control it names (its renderer settles a number past
        the range, and says so: toyviz.settings.links)."""
        s = links.parse(request.query_params if request else {})
        heads = {value for _, value in ui.ablate.choices}      # the loaded GPT's: another's would fail every event
        s["ablate"] = [head for head in s["ablate"] if head in heads]
        s["lang"] = s["lang"] if s["lang"] in i18n.LANGUAGES else ""           # only the link's own: not the browser's
        return [gr.Tabs(selected=s["tab"])] + [s[key] for key in state]

    ui.restore, ui.link_controls = restore, controls


# ---------------------------------------------------------------- start-up -----------------

def launch_options(lessons: Presenter | None = None, shelf: Shelf | None = None) -> dict:
    """What `demo.launch` serves with the page besides its components: its style sheet, the <head> that
    loads the page's own model when a view needs it, and its static files served from memory
    (toyviz.serving.static: compressed once, immutable or answered 304, the page rendered once). show_error: a value the API
    cannot even parse (text for a slider) gets its message, not a generic one. max_file_size: the page takes
    no files, and Gradio would keep anyone's upload to /upload in its cache (toyviz.serving.files). At most
    SESSIONS_KEPT sessions are kept. `shelf`: what the static files' middleware serves (default: a new one).
    Given `lessons` (the page's presenter), the phones' routes (toyviz.classroom.routes) join the
    app Gradio builds, as it starts."""
    shelf = shelf or Shelf()
    options = dict(css=CSS, ssr_mode=False, show_error=True, max_file_size=0, head=browser_model.head(shelf),
                   state_session_capacity=SESSIONS_KEPT,
                   app_kwargs={"middleware": [Middleware(StaticFiles, shelf=shelf)]})
    if lessons is not None:
        @contextlib.asynccontextmanager
        async def with_phones(fastapi_app):
            routes.attach(fastapi_app, lessons.lectures, lessons.reveal_lecture)
            yield
        options["app_kwargs"]["lifespan"] = with_phones
    return options
