"""The page and the server's messages in the visitor's language (issue 56, toyviz.i18n): one catalogue per
language with every key and the same {fields}; the language of a request (?lang=, then Accept-Language); the page's
words said again as it opens; a user's mistake said in Spanish by the server, in a worker process too."""
import os
import re
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"          # before gradio is imported
import types

import gradio as gr
import pytest

from toyviz import i18n
from toyviz.app.explorer import Explorer
from toyviz.errors import UserError


def test_every_key_is_in_every_catalogue_with_the_same_fields():
    english = i18n.catalogue("en")
    for lang in i18n.LANGUAGES[1:]:
        other = i18n.catalogue(lang)
        assert set(other) == set(english), f"{lang}: missing {set(english) - set(other)}, extra {set(other) - set(english)}"
        for key, text in english.items():
            assert other[key].strip(), f"{lang}: {key} is empty"
            assert i18n.placeholders(other[key]) == i18n.placeholders(text), f"{lang}: {key}'s fields differ"


def test_the_spanish_is_spanish():
    """Not an English text copied over: most entries of the Spanish catalogue differ from the English (names such as
    Tokens, GPT and Prompt are the same in both), and the words a lecturer uses are there."""
    english, spanish = i18n.catalogue("en"), i18n.catalogue("es")
    same = [key for key in english if english[key] == spanish[key]]
    assert len(same) < 0.15 * len(english), same
    every = " ".join(spanish.values())
    for term in ("cabeza", "flujo residual", "incrustación posicional", "muestreo", "temperatura"):
        assert term in every.lower(), term


@pytest.mark.parametrize("header, lang", [("es-MX,es;q=0.9,en;q=0.8", "es"), ("en-GB,en;q=0.9,es;q=0.8", "en"),
                                          ("fr-FR, es;q=0.5, en;q=0.4", "es"), ("de-DE", None), ("", None),
                                          ("en;q=0.2, es;q=0.7", "es"), ("es;q=junk, en", "en"), (None, None)])
def test_the_accept_language_headers_best_language_of_ours(header, lang):
    assert i18n.best(header) == lang


def request(lang=None, accept=None):
    return types.SimpleNamespace(query_params={"lang": lang} if lang else {},
                                 headers={"accept-language": accept} if accept else {})


def test_a_links_lang_comes_before_the_browsers():
    assert i18n.language(request(accept="es-ES,es")) == "es"
    assert i18n.language(request("en", accept="es-ES,es")) == "en"         # ?lang=en: back to English
    assert i18n.language(request("es")) == "es"
    assert i18n.language(request("xx", accept="de")) == "en" and i18n.language(None) == "en"


def test_a_mistake_is_said_in_the_events_language():
    err = i18n.mistake("errors.empty", box=i18n.Term("boxes.english_sentence"))
    assert str(err) == "The English sentence is empty: type a few words first."     # logs and Python callers
    with i18n.speaking("es"):
        assert i18n.said(err) == "El campo «oración en inglés» está en blanco: escribe unas palabras primero."
    assert i18n.said(UserError("no key")) == "no key"


def test_a_stream_speaks_the_language_at_every_step():
    """Gradio runs each step of a generator in a fresh copy of the context: the language is set again each time."""
    import contextvars

    def steps(request):
        for _ in range(3):
            yield i18n.current()
    stream = i18n.in_visitors_language(steps)(request("es"))
    assert [contextvars.copy_context().run(next, stream) for _ in range(3)] == ["es"] * 3


# --------------------------------------------------------------- the page -------------------------------------
@pytest.fixture(scope="module")
def served(tiny_checkpoints):
    """The app on the tiny models, served, with a worker process computing its tabs (as app.py runs)."""
    import app
    from toyviz.app.compute import start_workers
    with start_workers(1, str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu") as workers:
        demo = app.build(Explorer.load(str(tiny_checkpoints["gpt"]), str(tiny_checkpoints["translator"]), "cpu"),
                         workers=workers.wait_ready())
        demo.queue(default_concurrency_limit=4)
        _, url, _ = demo.launch(server_name="127.0.0.1", prevent_thread_lock=True, quiet=True, ssr_mode=False,
                                show_error=True)
        yield demo, url
        demo.close()


def test_the_pages_words_are_said_again_in_spanish(served):
    demo, _ = served
    ui = demo.ui
    worded = dict(zip([component for component, _ in ui.say.worded], ui.say.updates("es")))
    assert worded[ui.tab_attention]["label"] == "Atención" and worded[ui.tab_residual]["label"] == "Flujo residual"
    assert worded[ui.tab_watch]["label"] == "Míralo aprender"
    assert worded[ui.run]["value"] == "Explorar" and worded[ui.projector]["label"] == "Modo proyector"
    assert ("codificador del traductor", "encoder") in worded[ui.model]["choices"]
    assert worded[ui.register]["choices"] == [("hoy", "today"), ("la Biblia de 1909", "1909")]
    assert worded[ui.language_button]["value"] == "English"
    assert all(update is gr.skip() or update == gr.skip() for update in ui.say.updates("en"))
    assert ui.tab_attention.label == "Attention" and ui.language_button.value == "Español"   # built in English


@pytest.mark.parametrize("accept, said", [("es-ES,es;q=0.9", "El campo «prompt» está en blanco"),
                                          ("en-US,en", "The prompt is empty")])
def test_the_server_says_an_empty_prompt_in_the_browsers_language(served, accept, said):
    """Through the HTTP API, the message raised in the worker process, said in the request's language."""
    import gradio_client
    _, url = served
    client = gradio_client.Client(url, verbose=False, analytics_enabled=False, headers={"Accept-Language": accept})
    with pytest.raises(Exception, match=said):
        client.predict("   ", False, "gpt", api_name="/tokens")


# --------------------------------------------------------------- the lecture ----------------------------------
def test_the_phone_page_is_served_in_each_language():
    from toyviz.classroom import routes
    assert '"join": "Unirse"' in routes.PAGES["es"] and '"join": "Join"' in routes.PAGES["en"]
    assert all("__WORDS__" not in page and "__LANG__" not in page for page in routes.PAGES.values())
    assert 'LANG = "es"' in routes.PAGES["es"]


def test_a_spanish_lessons_bar_and_join_link_are_spanish(served, tmp_path):
    from toyviz.app import presenter
    from toyviz.classroom.store import Lectures
    from toyviz.lessons import library
    lectures = Lectures(tmp_path / "lectures.sqlite")
    lectern = presenter.Presenter(served[0].ui.presenter.explorer, lectures)
    shown = lectern.start("sampling.es")
    bar = presenter.bar(shown, lectures, "http://hall")
    assert "Predice:" in bar and "0 votos hasta ahora · Revelar muestra la respuesta" in bar
    assert "únete con" in bar and presenter.qr.svg(f"http://hall/class/{shown.lecture.code}?lang=es") in bar
    english = presenter.bar(lectern.start("sampling"), lectures, "http://hall")
    assert "Predict:" in english and "?lang=" not in english
    assert library.load(library.find("sampling.es")).language == "es"


def test_a_spanish_lectures_reveal_and_cover_are_spanish(served, tmp_path):
    """The model's answer is said in the lecture's language beside its value (the detail's numbers as computed),
    and the page script gets the cover's and the copy button's words in it; a lecture's refusals have keys."""
    from toyviz.app import presenter
    from toyviz.classroom.store import Lectures
    lectures = Lectures(tmp_path / "lectures.sqlite")
    lectern = presenter.Presenter(served[0].ui.presenter.explorer, lectures)
    shown = lectern.start("sampling.es")
    while shown.step.question is None:
        shown = lectern.move(shown.secret, +1)
    client = presenter.client(shown)
    assert (client["hidden"], client["copied"]) == ("Oculto hasta Revelar: predice primero", "Copiado: no lo compartas")
    revealed = lectern.reveal(shown.secret)
    answer = lectures.answer(revealed.lecture.code, revealed.lecture.step)
    assert answer.detail.startswith("el token siguiente más probable del modelo es "), answer.detail
    assert "El modelo:" in presenter.bar(revealed, lectures, "http://hall")
    with i18n.speaking("es"):
        for wrong in ({"present": "no-such-secret"}, {"lecture": "ABCDEF"}, {"lesson": "no-such-lesson"}):
            with pytest.raises(UserError) as refused:
                lectern.open(wrong)
            assert i18n.said(refused.value).split(" ")[0] in ("este", "no"), i18n.said(refused.value)
            assert i18n.said(refused.value) != str(refused.value)


def test_a_spanish_lectures_report_is_spanish():
    from toyviz.classroom import report
    from toyviz.classroom.store import Report
    row = report.Row(2, "Temperatura más baja", "¿Sube o baja?", ("más alta", "más baja"), {"más alta": 3, "más baja": 1},
                     "más alta", "…", 3, 30.0, True, False, (("más baja", "una temperatura baja quita seguridad", 1),))
    assert report.figure(row, "es").layout.title.text == "Paso 2: los 4 votos de la clase · el modelo: más alta"
    page = report.html_page(Report(1, "ABCDEF", "sampling.es", 0.0, 600.0, 4), [row], "Muestreo", "es")
    for said in ("Muestreo: informe de la clase", "votaron 4 teléfonos", "Ideas erróneas frecuentes",
                 "Lo predijeron:", "3 de 4 (75 %)", "Paso 2: Temperatura más baja", "En pantalla 30 s."):
        assert said in page, said
    assert "<b>Predicted it:</b>" in report.html_page(Report(1, "ABCDEF", "sampling", 0.0, 600.0, 4), [row])
    table = report.csv_text(Report(1, "ABCDEF", "sampling.es", 0.0, 600.0, 4), [row], "Muestreo", "es").splitlines()
    assert table[0].startswith("fecha,lección,código,teléfonos,paso,título,pregunta,opción,votos,porcentaje de votos")
    assert table[1].endswith(",75 %,30,sí,no,") and table[2].endswith(",sí,no,una temperatura baja quita seguridad")
    assert report.csv_text(Report(1, "ABCDEF", "sampling", 0.0, 600.0, 4), [row]).startswith("date,lesson,code")
    assert report.label(Report(1, "ABCDEF", "sampling.es", 0.0, 600.0, 4), "Muestreo", "es").endswith(
        " · Muestreo · 4 teléfonos")
    assert report.kept_note("es").startswith(("El servidor guarda", "Este Space público"))


def test_every_adopted_text_is_on_the_page(served):
    """The [labels], [explain_adopted] and [example_labels] entries are matched to the page's components by their English: one that
    matches none (its English changed in the code) would leave that control in English on a Spanish page."""
    demo, _ = served
    used = {key for _, words in demo.ui.say.worded for value in words.values()
            for key in ([k[0] if isinstance(k, tuple) else k for k in value] if isinstance(value, list) else [value])
            if isinstance(key, str)}
    adopted = [key for key in i18n.catalogue("en") if key.startswith(("labels.", "explain_adopted.", "example_labels."))]
    assert [key for key in adopted if key not in used] == []


@pytest.mark.parametrize("accept, title", [("es", "Normas de las incrustaciones por token"),
                                          ("en", "Embedding norms per token")])
def test_a_figure_drawn_in_a_worker_is_titled_in_the_requests_language(served, accept, title):
    """The language goes with the call to the worker (toyviz.app.compute.in_language), and a kept answer is kept per
    language (toyviz.app.drawn): the Spanish page's figure never reaches an English one."""
    import json

    import gradio_client
    _, url = served
    client = gradio_client.Client(url, verbose=False, analytics_enabled=False, headers={"Accept-Language": accept})
    _, _, norms = client.predict("To be, or not", False, "gpt", api_name="/tokens")
    assert title in json.dumps(norms, ensure_ascii=False)


# --------------------------------------------------------------- the figures ----------------------------------
# what a figure may show in the same words in both languages: symbols, code names, units and names of things
NEUTRAL = {"x", "q, k", "v, out", "IG", "p", "p(token)", "p(top)", "‖vector‖", "token", "bytes", "softmax",
           "fp32 (4 bytes)", "bf16 (2 bytes)", "causal=False",
           "9. out = Σ probs · v"}
# the model's part names (block2.mlp, L1 H3, ln_f), variants (no_pe, baseline), numbers and token labels ("3: ␣the")
NEUTRAL_PATTERN = re.compile(r"^(?:[\w.]+\.(?:attn|mlp|ln\d|ln_f|h\d+)|ln_f|embed|L\d+ H\d+|H\d+|#\d+|"
                             r"[a-z]+(?:_[a-z0-9]+)+|baseline|rope|swiglu|[-+\d.,:%×e ]+|\d+: .*)$")


def figure_words(fig) -> list[str]:
    """Every title a figure shows, in order: its title, each axis's, each colour bar's, each legend entry shown,
    each annotation (subplot titles, a panel's name, a marked line's label)."""
    spec = fig.to_plotly_json()
    layout, words = spec["layout"], []
    text = lambda title: title.get("text") if isinstance(title, dict) else title
    words.append(text(layout.get("title", {})))
    for name, value in sorted(layout.items()):
        if name.startswith(("xaxis", "yaxis")):
            words.append(text(value.get("title", {})))
        if name.startswith("coloraxis"):
            words.append(text(value.get("colorbar", {}).get("title", {})))
    for trace in spec["data"]:
        words.append(text(trace.get("colorbar", {}).get("title", {})) if trace.get("showscale", True) else None)
        if trace.get("showlegend") is not False and layout.get("showlegend") is not False:
            words.append(trace.get("name"))
    words += [a.get("text") for a in layout.get("annotations", [])]
    return [w for w in words if isinstance(w, str) and w.strip()]


def neutral(text: str) -> bool:
    return text in NEUTRAL or bool(NEUTRAL_PATTERN.match(text))


@pytest.fixture(scope="module")
def shipped():
    import toyviz
    from pathlib import Path
    if not (Path("checkpoints") / "gpt" / "config.json").is_file():
        pytest.skip("checkpoints/gpt is missing")
    return Explorer(toyviz.load("gpt", device="cpu"), toyviz.load("translator", device="cpu"))


def every_figure(explorer, projector: bool) -> dict[str, list]:
    """Each tab's figures, the figures its buttons and second sections draw, and the panels it draws for a
    translator stack or while a generation runs; Circuits with a supernode and an ablation, Watch it learn's
    figures of a made-up run, before any run and before its first record."""
    from toyviz.app.figures import live as live_figs
    from toyviz.app.tabs import TABS
    from toyviz.app.views import circuits, positional, sampling, size, why
    from toyviz.training import live
    from toyviz.settings.controls import DEFAULT_PROMPT, DEFAULT_SOURCE
    values = {"prompt": DEFAULT_PROMPT, "projector": projector, "model": "gpt", "metric": "cosine", "layer": 1,
              "head": 2, "mode": "probs", "ablate": ["1.2"], "query": -1, "last_word": "dream", "norm_name": "block1.ln2",
              "ln_position": 3, "res_position": -1, "why_token": "", "feature": -1, "feature_search": "",
              "temperature": 0.8, "top_k": 50, "top_p": 0.95, "source": DEFAULT_SOURCE, "beam": 4,
              "attention_kind": "cross", "tr_layer": "average", "tr_head": "average", "register": None,
              "exp_variants": ["baseline", "learned_pe", "rope", "no_pe", "no_causal_mask"], "exp_x": "tokens",
              "snapshot": 0, "x_axis": "step", "circuit_target": "", "supernodes": ""}
    drawn = {name: list(tab.render(explorer, *[values[key] for key in tab.inputs]))
             for name, tab in TABS.items()}
    drawn["translate (decoder, layer 0, head 1)"] = list(TABS["translate"].render(
        explorer, DEFAULT_SOURCE, 4, "decoder", 0, 1, projector, None))
    drawn["scores"] = list(TABS["attention"].render(explorer, DEFAULT_PROMPT, 0, 0, "scores", [], projector, "gpt"))
    for stack in ("encoder", "decoder"):
        drawn[f"residual ({stack})"] = list(TABS["residual"].render(explorer, DEFAULT_PROMPT, -1, projector, stack))
        drawn[f"tokens ({stack})"] = list(TABS["tokens"].render(explorer, DEFAULT_PROMPT, projector, stack))
    drawn["attention (encoder)"] = list(TABS["attention"].render(explorer, DEFAULT_PROMPT, 0, 0, "probs", [],
                                                                 projector, "encoder"))
    drawn["formula"] = list(positional.formula_view(64, 128, projector))
    drawn["patching"] = list(why.patching_view(explorer, *why.pair_fields(why.explain.PAIRS[0].name),
                                               projector=projector))
    drawn["sampling, pending"] = list(sampling.generation_pending(projector))
    drawn["size"] = list(size.size_view(explorer, "gpt2", projector=projector))
    drawn["model, by tokens"] = list(TABS["model"].render(explorer, DEFAULT_PROMPT, -1, "tokens", projector))
    induction = circuits.EXAMPLES[0][1]
    drawn["circuits, a supernode"] = list(circuits.circuits_view(explorer, induction, "", "S copy: 0_1603_8 0_962_8",
                                                                 projector))
    drawn["circuits, ablated"] = [circuits.intervention_view(explorer, induction, "", "0_1603_8", 0, projector)]
    drawn["circuits, steered"] = [circuits.intervention_view(explorer, induction, "", "0_1603_8", 2, projector)]
    run = made_up_run([0.05, 0.2, 0.7, 0.9])
    drawn["watch"] = [live_figs.loss_curves(run, projector=projector), live_figs.head_scores(run, projector=projector),
                      live_figs.attention_pattern(run, projector=projector)]
    drawn["watch, before a run"] = [live_figs.loss_before_a_run(recipe, projector=projector)
                                    for recipe in ("induction", "text")]
    starting = live.Run("induction", 0, {"steps": 10})
    drawn["watch, nothing recorded"] = [live_figs.loss_curves(starting, projector=projector),
                                        live_figs.head_scores(starting, projector=projector),
                                        live_figs.attention_pattern(starting, projector=projector)]
    return {name: [o for o in outputs if hasattr(o, "to_plotly_json")] for name, outputs in drawn.items()}


def made_up_run(scores: list[float]):
    """A live run's record (toyviz.training.live.Run) whose best induction score follows `scores`, every 10 steps."""
    import numpy as np
    from toyviz.training import live
    records = [{"step": 10 * i, "elapsed": 1.0 * i, "loss": 3.0, "early_loss": 3.4,
                "in_context_loss": 3.0 - 2.9 * s,
                "induction": [[0.0, 0.1], [s, s / 2]], "previous": [[s, 0.0], [0.0, 0.1]],
                "patterns": np.full((2, 2, 4, 4), s, dtype=np.float16)} for i, s in enumerate(scores)]
    return live.Run("induction", 0, {"steps": 10 * len(scores)}, state="finished",
                    header={"probe": [1, 2, 1, 2], "heads": [2, 2]}, records=records)


@pytest.mark.parametrize("projector", [False, True])
def test_no_figure_title_or_axis_is_left_in_english_on_a_spanish_page(shipped, projector):
    """Every tab's figures drawn in English and in Spanish: each title, axis title, colour bar's title, legend entry
    and annotation differs between the two, or is one of the words both languages write alike (NEUTRAL: symbols,
    the model's part names, numbers, token labels)."""
    with i18n.speaking("en"):
        english = every_figure(shipped, projector)
    with i18n.speaking("es"):
        spanish = every_figure(shipped, projector)
    left, counted = [], 0
    for name, figures in english.items():
        assert len(figures) == len(spanish[name]), name
        for en, es in zip(figures, spanish[name]):
            en_words, es_words = figure_words(en), figure_words(es)
            assert len(en_words) == len(es_words), (name, en_words, es_words)
            counted += len(en_words)
            left += [(name, a) for a, b in zip(en_words, es_words) if a == b and not neutral(a)]
    assert left == [], left
    assert counted > 150, counted          # the tabs were drawn, with their words


def hover_texts(fig) -> list[str]:
    """Every hover text a figure's traces carry: each template, and each cell's text of a per-cell hover."""
    texts = []
    for trace in fig.to_plotly_json()["data"]:
        texts.append(trace.get("hovertemplate"))
        cells = trace.get("hovertext")
        if cells is not None and not isinstance(cells, str):
            texts += [cell for row in cells for cell in (row if isinstance(row, (list, tuple)) else [row])][:3]
    return [text for text in texts if isinstance(text, str)]


def test_no_hover_is_left_in_english_on_a_spanish_page(shipped):
    """What a figure says under the pointer: every hover text with words in it (plotly's %{…}, tags and the neutral
    names aside) differs between English and Spanish."""
    with i18n.speaking("en"):
        english = every_figure(shipped, False)
    with i18n.speaking("es"):
        spanish = every_figure(shipped, False)
    words = lambda text: re.sub(r"%\{[^}]*\}|<[^>]+>|\b(?:[TpkqvB]|id|rad|log|fp32|bf16|bytes|dim|[A-Z]{2,}\w*)\b", "",
                                text)
    left, counted = [], 0
    for name, figures in english.items():
        for en, es in zip(figures, spanish[name]):
            for a, b in zip(hover_texts(en), hover_texts(es)):
                worded = re.search(r"[A-Za-z]{3,}", words(a))
                counted += bool(worded)
                if worded and a == b:
                    left.append((name, a))
    assert left == [], left
    assert counted > 60, counted


def test_spanish_step_captions_fit_over_their_panels_on_a_projector(shipped):
    """Inside a head's captions in Spanish keep to the lengths that fit their panels on a projector (the English
    ones are checked in test_figures): steps 1–4 side by side, steps 9 and 10 half the width."""
    from toyviz.app.figures import inside
    from toyviz.settings.controls import DEFAULT_PROMPT
    tr = shipped.caches.trace(DEFAULT_PROMPT, ablate=shipped.models.ablated_heads(["1.2"]))[0]
    with i18n.speaking("es"):
        captions = [a.text for a in inside.head_steps(tr, 1, 2, len(tr.tokens) - 1, projector=True).layout.annotations]
    assert "rotada" in captions[1] and "rotadas" in captions[2] and "ablación: cero" in captions[8]
    assert all(len(captions[i]) <= inside.QUARTER_CAPTION for i in range(4)), captions[:4]
    assert all(len(captions[i]) <= inside.HALF_CAPTION for i in (8, 9)), captions[8:]
    with i18n.speaking("es"):
        longest = i18n.t("figures.steps.keys_short", n=999)
    assert len(longest) <= inside.QUARTER_CAPTION, longest


def test_the_views_notes_and_messages_are_spanish(shipped):
    """What the server writes beside the figures and a mistake it refuses, said in the event's language."""
    from toyviz.app.tabs import TABS
    from toyviz.app.views import features, model, positional, sampling, translation, why
    from toyviz.errors import UserError
    from toyviz.settings.controls import DEFAULT_PROMPT
    with i18n.speaking("es"):
        note = TABS["positional"].render(shipped, DEFAULT_PROMPT, "cosine", False, "gpt")[0]
        assert "Este modelo no añade ningún vector de posición" in note, note
        assert TABS["layernorm"].render(shipped, DEFAULT_PROMPT, "block0.ln1", -1, False, "gpt")[0].startswith(
            "En promedio sobre los tokens")
        heads = TABS["attention"].render(shipped, DEFAULT_PROMPT, 0, 0, "probs", [], False, "gpt")[3]
        assert "| cabeza | etiqueta | puntuación |" in heads and "de su atención de media" in heads
        assert not any(english in heads for english in ("of its attention", "no clear pattern", "of probes", "strongest"))
        residual = TABS["residual"].render(shipped, DEFAULT_PROMPT, -1, False, "encoder")
        assert residual[3].layout.title.text == "Lente de logits"
        assert "elige el GPT" in residual[3].layout.annotations[0].text
        assert model.snapshot_note("final", []).startswith("El modelo **final**")
        assert features.feature_list(shipped.caches.features(), [], "").startswith("Los rasgos más frecuentes:")
        assert why.why_choices(shipped, "   ") == [("la predicción principal", "")]
        assert "Se dibuja cuando una generación" in sampling.generation_pending()[0].layout.annotations[0].text
        assert translation.register_name("1909") == "la Biblia de 1909"
        from toyviz.app.views import size
        sized = size.size_view(shipped, "gpt2")[0]
        assert " parámetros** (el artículo daba 117M" in sized and "Caché KV:" in sized and "Weights" not in sized
        assert "capas de codificador" in size.size_view(shipped, size.LOADED_TRANSLATOR)[0]
        assert "El decodificador del traductor (causal como el GPT" in TABS["tokens"].render(shipped, DEFAULT_PROMPT,
                                                                                            False, "decoder")[0]
        for call, said in ((lambda: positional.positions_view(shipped, DEFAULT_PROMPT, "manhattan"),
                            "la similitud es cosine o dot, no 'manhattan'"),
                           (lambda: why.pair_fields("nope"), "no hay ningún par preparado llamado 'nope'"),
                           (lambda: translation.translate_view(shipped, "Hello", kind="sideways"),
                            "la atención mostrada es una de estas"),
                           (lambda: size.size_view(shipped, "custom", heads=5, d_model=768),
                            "las cabezas deben dividir d_model: 768 no es divisible entre 5 cabezas"),
                           (lambda: shipped.models.ablated_heads(["1-3"]),
                            "las cabezas que apagar se escriben capa.cabeza (p. ej. 1.3), no '1-3'"),
                           (lambda: why.patching_view(shipped, "I thank you", "I thank you, my good lord", "", ""),
                            "los prompts deben tener el mismo número de tokens")):
            with pytest.raises(UserError) as err:
                call()
            assert said in i18n.said(err.value), i18n.said(err.value)
    with i18n.speaking("en"):
        assert model.snapshot_note("final", []).startswith("The **final** model")


def test_the_why_paragraph_is_spanish_with_its_numbers_linked_as_in_english(shipped):
    """The Why tab's paragraph from the catalogues' why.*: in Spanish every number still a link to the same panel,
    in the same order, and no English sentence left."""
    from toyviz.interpret import explain
    from toyviz.interpret.explain.ngrams import build_index
    gpt = shipped.gpt
    ids = explain.encode(gpt, "I thank you, my good")
    w = explain.why(gpt, "I thank you, my good", " friend", index=build_index(ids[1:] * 3))
    english = explain.paragraph(w)
    with i18n.speaking("es"):
        spanish = explain.paragraph(w)
    linked = lambda segments: [(text, panel) for text, panel in segments if panel]
    assert [panel for _, panel in linked(spanish)] == [panel for _, panel in linked(english)]
    numbers = lambda segments: [text for text, panel in linked(segments) if text[-1].isdigit() or text[-1] == "%"]
    assert numbers(spanish) == numbers(english) and len(numbers(english)) >= 8
    text = "".join(text for text, _ in spanish)
    assert text.startswith("Tras «…") and "La atribución directa a los logits" in text and "gradientes integrados" in text
    assert not any(word in text for word in ("After", " the model", "Direct logit", "integrated gradients", " times ",
                                             "after layer", "after the last"))


def test_a_number_past_its_range_is_noted_and_refused_in_spanish():
    """The one rule's notes (toyviz.settings.controls.settle) and its refusal of what is no number, in the event's
    language; the English ones as before, and the refusal's English kept for logs."""
    from toyviz.errors import UserError
    from toyviz.settings import controls
    with i18n.speaking("es"):
        assert controls.settle("feature", -5, high=10)[1] == ("rasgo -5 está antes del primer valor, -1 (el más fuerte "
                                                             "del prompt): se muestra -1. ")
        assert controls.settle("top_k", 500)[1] == "top-k 500 supera el máximo, 200: se usa 200. "
        assert controls.position(99, 5)[1] == "posición del token 99 supera el último valor, 4: se muestra 4. "
        assert controls.context_note(3, 4, "last").startswith("Solo los últimos 3 tokens caben")
        with pytest.raises(UserError) as err:
            controls.settle("layer", "abc", high=3)
        assert i18n.said(err.value) == "capa debe ser un número entero de 0 a 3, no 'abc'"
    assert str(err.value) == "layer must be a whole number from 0 to 3, not 'abc'"
    assert controls.settle("feature", -5, high=10)[1] == ("feature -5 is below the first, -1 (the prompt's strongest): "
                                                         "showing -1. ")


def test_the_experiments_sentences_are_spanish(shipped):
    from toyviz.app.figures import experiments
    results = shipped.experiment_results()
    english = experiments.describe(results)
    with i18n.speaking("es"):
        spanish = experiments.describe(results)
    assert english.startswith("Seed-to-seed spread of the baseline") and spanish.startswith("Dispersión entre semillas")
    assert "rope (posiciones rotatorias en q y k):" in spanish and "frente a" in spanish
    assert english.count("\n\n") == spanish.count("\n\n")


def test_the_circuits_and_watch_notes_are_spanish(shipped):
    """The Circuits tab's sentences and refusals, and Watch it learn's status line, samples and refusals, said in the
    event's language (their figures: test_no_figure_title_or_axis_is_left_in_english_on_a_spanish_page)."""
    from toyviz.app.figures import live as live_figs
    from toyviz.app.views import circuits, watch
    from toyviz.errors import UserError
    from toyviz.training import live
    induction = circuits.EXAMPLES[0][1]
    with i18n.speaking("es"):
        note, fig, panel, about = circuits.circuits_view(shipped, induction, "", "S copy: 0_1603_8 9_9_9")
        assert "Puntuación de sustitución" in about and "Los nodos de error" in about, about
        assert "No están en este grafo, o no son rasgos: 9_9_9" in note, note
        assert "Señala un nodo del grafo" in panel and "<b>Supernodo S copy</b>: 1 rasgos" in panel, panel
        features = next(trace for trace in fig.data if trace.name == i18n.t("figures.circuits.feature"))
        assert all("Dónde se activa con más fuerza" in c[1] for c in features.customdata)
        assert fig.layout.title.text.startswith("Por qué ")
        assert all("influencia" in c[2] or c[2].startswith("objetivo ") for trace in fig.data
                   if trace.customdata is not None for c in trace.customdata)
        for node, said in (("nope", "haz clic en un rasgo del grafo"), ("9_9_9", "no está activo en este grafo")):
            with pytest.raises(UserError) as err:
                circuits.intervention_view(shipped, induction, "", node, 0)
            assert said in i18n.said(err.value), i18n.said(err.value)
        run = made_up_run([0.05, 0.2, 0.7, 0.9])
        line = watch.status(run, live.Who(page="a"))
        assert line.startswith("Ejecución **induction**, semilla 0: terminada (paso 30 de 40")
        assert "La cabeza de inducción nació en el paso **20**" in line, line
        assert watch.status(None) == "Aún no hay ninguna ejecución: elige una receta y pulsa **Empezar**."
        running = live.Run("induction", 0, {"steps": 10}, state="running", owner=live.Who(page="b"))
        assert "Una ejecución iniciada por otra página: la estás viendo (solo la página que la inició" in \
            watch.status(running, live.Who(page="a"))
        assert watch.refusal(live.RunRefused("x"), "started", live.LiveRuns())["text"] == "⚠ **No se inició:** x."
        for refused, said in ((running.busy(live.Who(page="a")), "una ejecución iniciada por otra página está "
                                                                "entrenando, y en este servidor entrena una ejecución a la vez"),
                              (running.busy(live.Who(page="b")), "tu ejecución (induction, semilla 0) sigue entrenando"),
                              (pytest.raises(live.RunRefused, live.whole_seed, ""), "(la casilla está vacía)"),
                              (pytest.raises(live.RunRefused, live.settings_for, "magic"), "la receta debe ser una de")):
            refused = getattr(refused, "value", refused)
            assert said in watch.refusal(refused, "started", live.LiveRuns())["text"], i18n.said(refused)
        running.error, running.state = "errors.live.failed", "failed"
        assert watch.status(running).endswith("Algo falló de nuestro lado; la traza de la ejecución está en el registro "
                                              "del servidor.")
        assert live_figs.samples_markdown(run) == "*La primera muestra llega a los pocos segundos de empezar.*"
    with i18n.speaking("en"):
        assert watch.status(None) == "No run yet: pick a recipe and press **Start**."
        assert watch.refusal(live.RunRefused("x"), "stopped", live.LiveRuns())["text"] == "⚠ **Not stopped:** x."


def test_every_shipped_feature_label_is_read_back_and_said_in_spanish():
    """A feature's label is stored in English in its checkpoint (dashboards.json) and said in the page's language:
    every shipped label reads back to itself in English, and each worded form ("or", "after", a kind, "no clear
    pattern", "dead") is said in Spanish, its tokens and shares as stored."""
    import json
    from pathlib import Path
    from toyviz.interpret import dashboards
    labels = {label for path in Path("checkpoints").glob("gpt/**/dashboards.json")
              for label in json.loads(path.read_text())["labels"]}
    if not labels:
        pytest.skip("no shipped dictionaries")
    with i18n.speaking("en"):
        assert [label for label in labels if dashboards.said(label) != label] == []
    with i18n.speaking("es"):
        spanish = {label: dashboards.said(label) for label in labels}
    worded = [label for label in labels if "' or '" in label or not label.startswith("'")]
    assert len(worded) > 1000 and all(spanish[label] != label for label in worded), \
        [label for label in worded if spanish[label] == label][:5]
    assert spanish["no clear pattern"] == "ningún patrón claro"
    assert spanish["after ' the' (55%)"] == "tras ' the' (55%)"
    assert spanish["word endings (no leading space) (90%)"] == "finales de palabra (sin espacio delante) (90%)"
    assert dashboards.label([" a", " b", " c", " a", " b"], [""] * 5) == "' a' or ' b' (80%)"
