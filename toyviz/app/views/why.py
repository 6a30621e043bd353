"""The Why this token? tab: the evidence for one next token, and activation patching between two prompts."""
from __future__ import annotations

import html

from toyviz.i18n import mistake, said, t
from toyviz.app.explorer import Explorer
from toyviz.app.views.typed import typed_token
from toyviz.app.figures import explain as explain_figs
from toyviz.app.figures import visible
from toyviz.errors import UserError
from toyviz.interpret import explain
from toyviz.settings.controls import setting, settle


def why_choices(explorer: Explorer, prompt) -> list[tuple[str, str]]:
    """The token picker's choices: the top prediction (the default), then the most likely next tokens
    (only the default for a prompt the tab itself rejects: its message says why)."""
    top = [(t("notes.why.top_prediction"), "")]
    try:
        logits = explorer.caches.trace(prompt)[0].logits[-1]
    except UserError:
        return top
    return top + [(f"{visible(piece)}  ({p:.1%})", piece) for _, piece, p in explain.top_next(explorer.gpt, logits)]


def paragraph_html(segments) -> str:
    """The generated paragraph, each number a link to the panel it comes from."""
    return "<p class='why-paragraph'>" + "".join(
        html.escape(text) if panel is None else f"<a href='#{explain.PANELS[panel]}'>{html.escape(text)}</a>"
        for text, panel in segments) + "</p>"


def sources_html(explorer: Explorer, answer) -> str:
    """The training-text counts for n = 1…4 tokens of context, with example lines (the match in bold)."""
    if answer.sources is None:
        return (f"<p id='{explain.PANELS['sources']}'><b>{t('notes.why.counts')}</b> "
                f"{html.escape(said(answer.sources_reason))}.</p>")
    index, _ = explorer.caches.training_index()
    tokenizer = explorer.gpt.tokenizer
    rows = []
    for g in answer.sources:
        context = visible(tokenizer.decode(g.context))
        lines = "<br>".join("…{}<b>{}</b>{}…".format(*map(html.escape, explain.example_text(tokenizer, index, pos, g.n + 1)))
                            for pos in g.examples)
        share = "" if g.share != g.share else f"{g.share:.1%}"
        rows.append(f"<tr><td>{g.n}</td><td><code>{html.escape(context)}</code></td><td>{g.context_count:,}</td>"
                    f"<td>{g.count:,}</td><td>{share}</td><td>{lines}</td></tr>")
    head = "".join(f"<th>{t(f'notes.why.{column}')}</th>" for column in ("last_n", "seen", "then", "share", "examples"))
    return (f"<div id='{explain.PANELS['sources']}'><p>"
            + t("notes.why.where_from", token=f"<code>{html.escape(visible(answer.piece))}</code>") + "</p>"
            "<table class='why-sources'><tr><th>n</th>" + head + "</tr>" + "".join(rows) + "</table></div>")


def last_id(explorer: Explorer) -> int:
    return explorer.models.need_gpt().config.vocab_size - 1


def why_token(explorer: Explorer, token) -> tuple[str | int, str]:
    """The token box's text → (the token explorer.caches.why explains, a note): "" the top prediction; a token of the
    GPT's vocabulary read as every box that takes a token reads it (toyviz.app.views.typed: ␣ a space, ↵ a new
    line, a word; digits too, "7" is the token 7: the box takes text, while explorer.caches.why reads digits as an id)
    → its id. An id given as a number (the API) stays an id (settled: why_view says what it changed)."""
    if isinstance(token, (int, float)):
        return setting("token_id", token, upper=last_id(explorer)), ""
    found, note = typed_token(explorer.models.need_gpt().tokenizer, token)
    return ("" if found is None else found), note


def why_view(explorer: Explorer, prompt, token="", projector=False):
    """The evidence for one next token: paragraph, components vs. ablation, saliency, logit lens, sources."""
    said = settle("token_id", token, high=last_id(explorer))[1] if isinstance(token, (int, float)) else ""
    token, read_as = why_token(explorer, token)
    answer, note = explorer.caches.why(prompt, token)
    note += said + read_as
    top = "".join(f"<li>{html.escape(visible(piece))} {p:.1%}</li>" for _, piece, p in answer.top[:5])
    summary = (paragraph_html(explain.paragraph(answer)) +
               f"<details id='{explain.PANELS['prediction']}'><summary>{t('notes.why.top_next')}</summary>"
               f"<ul>{top}</ul></details>")
    return (note, summary, explain_figs.components_figure(answer.components, projector=projector),
            explain_figs.saliency_figure(answer.saliency, projector=projector),
            explain_figs.lens_figure(answer, projector=projector), sources_html(explorer, answer))


def pair_fields(name) -> list[str]:
    """A prepared patching pair's clean and corrupted prompts and answers (for the four fields)."""
    pair = next((p for p in explain.PAIRS if p.name == name), None)
    if pair is None:
        raise mistake("errors.no_pair", name=repr(name))
    return [pair.clean, pair.corrupted, pair.clean_answer, pair.corrupted_answer]


def patching_view(explorer: Explorer, clean, corrupted, clean_answer="", corrupted_answer="", projector=False):
    """Activation patching of the clean prompt into the corrupted one: where the difference lives."""
    result, note = explorer.patching(clean, corrupted, clean_answer, corrupted_answer)
    return (note,) + explain_figs.patching_figures(result, explorer.gpt.tokenizer.piece, projector=projector)
