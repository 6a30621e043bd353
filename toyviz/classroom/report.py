"""The lecture's memory: what End lecture keeps, and the report made from it (an HTML page and a CSV).

End lecture (`end`) hands the store each step as the lesson has it then (`content`: its title, question, choices,
the misconceptions its wrong choices stand for, and a hash of what the class was asked); the store keeps it beside
the step's time on screen, the model's answer and the tally, and deletes the lecture. A report is made again
whenever it is opened (`rows`), against the lesson file as it is now: a question edited since the lecture is
marked changed (its votes answered the old one, which the report shows), and misconceptions named since then
count for a question that did not change. Pure functions from the store's Report to rows, CSV text and HTML;
`end` and `files` do the reading and writing around them.
"""
from __future__ import annotations

import csv
import datetime as dt
import hashlib
import html
import io
import json
import re
from dataclasses import dataclass
from pathlib import Path

from toyviz.classroom import store
from toyviz.i18n import LANGUAGES, t
from toyviz.classroom.store import Lectures, Report
from toyviz.lessons.format import Lesson, LessonError, Step, matches

COMMON = 0.2            # a misconception is common when at least this share of a question's votes chose it


def fingerprint(step: Step) -> str:
    """What the class was asked, as a hash: the question, its choices, what the model computes, and the view it
    computes it from (a step's prose, title, point and misconceptions may change without changing the question)."""
    question = step.question
    asked = [question.ask, list(question.choices), question.answer, step.link] if question else [step.link]
    return hashlib.sha256(json.dumps(asked, ensure_ascii=False).encode()).hexdigest()[:16]


def content(step: Step) -> dict:
    """A step as End lecture keeps it: what a report needs once the lesson file has changed or gone."""
    question = step.question
    kept = {"title": step.title, "hash": fingerprint(step)}
    if question:
        kept.update(ask=question.ask, choices=list(question.choices), answer=question.answer,
                    misconceptions=[list(pair) for pair in question.misconceptions])
    return kept


def contents(lesson: Lesson) -> dict[int, dict]:
    return {n: content(step) for n, step in enumerate(lesson.steps)}


@dataclass(frozen=True)
class Row:
    """One question step of a report."""
    step: int                        # 1-based, as the presenter's counter shows it
    title: str
    ask: str
    choices: tuple[str, ...]         # the lesson's, or for a typed question the answers typed, most first
    tally: dict[str, int]
    answer: str                      # the model's value ("" when not revealed or no model answered)
    detail: str
    right: int                       # votes matching the model's answer
    seconds: float
    revealed: bool
    changed: bool | None             # the question was edited since (None: the lesson file cannot be read now)
    misconceptions: tuple[tuple[str, str, int], ...]    # (wrong choice, what it stands for, its votes)

    @property
    def votes(self) -> int:
        return sum(self.tally.values())

    @property
    def share_right(self) -> float | None:
        """The share of the votes that predicted the model's answer (None: no answer, or no votes)."""
        return self.right / self.votes if self.answer and self.votes else None


def rows(report: Report, lesson: Lesson | None) -> list[Row]:
    """The report's question steps, against the lesson as it is now (None: it cannot be read)."""
    made = []
    for kept in report.steps:
        was = kept.content
        if "ask" not in was:
            continue
        now = lesson.steps[kept.step] if lesson is not None and kept.step < len(lesson.steps) else None
        changed = None if lesson is None else now is None or fingerprint(now) != was["hash"]
        named = dict(map(tuple, was.get("misconceptions", [])))
        if changed is False and now.question:
            named = dict(now.question.misconceptions)       # named since the lecture: they count too
        value = kept.answer.value if kept.answer else ""
        choices = tuple(was["choices"]) or tuple(kept.tally)
        wrong = [(choice, meaning, kept.tally.get(choice, 0)) for choice, meaning in named.items()
                 if not (value and matches(choice, value))]
        right = sum(n for choice, n in kept.tally.items() if value and matches(choice, value))
        made.append(Row(kept.step + 1, was["title"], was["ask"], choices, kept.tally, value,
                        kept.answer.detail if kept.answer else "", right, kept.seconds, kept.revealed, changed,
                        tuple(sorted(wrong, key=lambda w: -w[2]))))
    return made


def common(made: list[Row]) -> list[tuple[Row, str, str, int]]:
    """The misconceptions at least COMMON of a question's votes chose: (row, choice, misconception, votes), commonest
    first."""
    found = [(row, choice, meaning, n) for row in made for choice, meaning, n in row.misconceptions
             if row.votes and n / row.votes >= COMMON]
    return sorted(found, key=lambda f: -f[3] / f[0].votes)


# ---------------------------------------------------------------- words and numbers ----------

def when(moment: float) -> str:
    return dt.datetime.fromtimestamp(moment, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def minutes(seconds: float) -> str:
    seconds = round(seconds)
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def shown(choice: str) -> str:
    """A choice as the phones and the presenter's bar show it: its spaces at the ends as ␣ (" be" is not "be")."""
    return re.sub(r"^ +| +$", lambda spaces: "␣" * len(spaces[0]), choice)


def percent(share: float | None) -> str:
    return "" if share is None else f"{100 * share:.0f} %"


def label(report: Report, title: str = "", lang: str = LANGUAGES[0]) -> str:
    """A report as the past-lectures list names it."""
    return t("report.listed", lang, date=when(report.started), title=title or Path(report.lesson).stem,
             phones=report.phones)


def kept_note(lang: str = LANGUAGES[0]) -> str:
    """How long reports are kept here, as the presenter's screen says it."""
    days = store.report_days()
    if days:
        disk = "" if store.default_path().is_relative_to(store.SPACE_STORAGE) else t("report.kept_no_disk", lang)
        return t("report.kept_days", lang, days=days, disk=disk)
    return t("report.kept_newest", lang, most=store.REPORTS_KEPT)


# ---------------------------------------------------------------- the CSV ----------

COLUMNS = ("date", "lesson", "code", "phones", "step", "title", "question", "choice", "votes", "share_of_votes",
           "model_answer", "is_model", "share_right", "shown", "revealed", "changed", "misconception")   # report.csv.*


def csv_text(report: Report, made: list[Row], title: str = "", lang: str = LANGUAGES[0]) -> str:
    """One line per choice of each question step (a typed question: per answer typed; no votes: one line); its
    column names and yes / no in the lecture's language (a spreadsheet in Spanish reads "sí")."""
    out = io.StringIO()
    table = csv.writer(out, lineterminator="\n")
    said = lambda key: t("report.csv." + key, lang)
    table.writerow(map(said, COLUMNS))
    for row in made:
        named = {choice: meaning for choice, meaning, _ in row.misconceptions}
        for choice in row.choices or ("",):
            count = row.tally.get(choice, 0)
            table.writerow([when(report.started), title or report.lesson, report.code, report.phones, row.step,
                            row.title, row.ask, choice, count, percent(count / row.votes if row.votes else None),
                            row.answer, said("yes") if row.answer and choice and matches(choice, row.answer) else "",
                            percent(row.share_right), round(row.seconds), said("yes" if row.revealed else "no"),
                            said({None: "unknown", True: "yes", False: "no"}[row.changed]), named.get(choice, "")])
    return out.getvalue()


# ---------------------------------------------------------------- the HTML page ----------

def figure(row: Row, lang: str = LANGUAGES[0]):
    """The class's votes per choice, the model's answer in its own colour beside them, in the lecture's language."""
    import plotly.graph_objects as go

    right = [bool(row.answer) and matches(c, row.answer) for c in row.choices]
    fig = go.Figure(go.Bar(x=[shown(c) for c in row.choices], y=[row.tally.get(c, 0) for c in row.choices],
                           marker_color=["#2e9e5b" if r else "#9aa5b1" for r in right],
                           text=[(t("report.model_mark", lang) if r else "") + str(row.tally.get(c, 0)) for c, r in
                                 zip(row.choices, right)], textposition="outside", cliponaxis=False))
    said = (t("report.the_model", lang, answer=shown(row.answer)) if row.answer else
            t("report.not_revealed" if not row.revealed else "report.no_model", lang))
    fig.update_layout(template="plotly_white", height=300, margin=dict(l=50, r=20, t=50, b=50),
                      title=t("report.figure_title", lang, step=row.step, votes=row.votes, said=said),
                      yaxis_title=t("report.votes", lang), xaxis_type="category")
    return fig


STYLE = """body{font-family:system-ui,sans-serif;max-width:900px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left}
.changed{background:#fff3cd;padding:.3em .6em;border-radius:4px}.right{color:#2e7d4f;font-weight:bold}
.meta{color:#555}section{margin:2em 0;border-top:2px solid #eee}"""


def html_page(report: Report, made: list[Row], title: str = "", lang: str = LANGUAGES[0]) -> str:
    """The report as one offline page (plotly.js inside once, no CDN): the lecture, the common misconceptions,
    then each question step with its figure and its table; in the lecture's language `lang`."""
    import plotly.io as pio

    e = html.escape
    name = title or Path(report.lesson).stem
    head = (f"<h1>{e(t('report.heading', lang, lesson=name))}</h1><p class='meta'>"
            + e(t("report.meta", lang, date=when(report.started), length=minutes(report.ended - report.started),
                  code=report.code, phones=report.phones, questions=len(made))) + "</p>")
    found = common(made)
    if found:
        items = "".join(f"<li><b>{e(meaning)}</b>: " + e(t("report.chose", lang, count=n, votes=row.votes,
                                                              share=percent(n / row.votes), step=row.step,
                                                              choice=shown(choice))) + "</li>"
                        for row, choice, meaning, n in found)
        head += f"<h2>{t('report.common', lang)}</h2><ul>{items}</ul>"
    elif any(row.misconceptions for row in made):
        head += f"<h2>{t('report.common', lang)}</h2><p>{e(t('report.none_common', lang, share=percent(COMMON)))}</p>"
    parts, plotly_js = [], True
    for row in made:
        named = {choice: meaning for choice, meaning, _ in row.misconceptions}
        lines = "".join(
            f"<tr{' class=right' if row.answer and matches(c, row.answer) else ''}><td>{e(shown(c))}</td>"
            f"<td>{row.tally.get(c, 0)}</td><td>{percent(row.tally.get(c, 0) / row.votes if row.votes else None)}</td>"
            f"<td>{e(named.get(c, ''))}</td></tr>" for c in row.choices)
        changed = (f"<p class='changed'>{t('report.changed', lang)}</p>" if row.changed else
                   f"<p class='changed'>{t('report.unreadable', lang)}</p>" if row.changed is None else "")
        model = t("bar.model", lang)
        answer = (f"<p><b>{model}</b> {e(shown(row.answer))} — {e(row.detail)}</p><p><b>{t('report.predicted', lang)}"
                  f"</b> " + e(t("report.right", lang, right=row.right, votes=row.votes,
                                 share=percent(row.share_right) or "–")) + "</p>" if row.answer else
                  f"<p><b>{model}</b> {t('report.no_model' if row.revealed else 'report.not_revealed', lang)}</p>")
        chart = pio.to_html(figure(row, lang), full_html=False, include_plotlyjs=plotly_js,
                            config={"displaylogo": False})
        plotly_js = False
        columns = "".join(f"<th>{t(f'report.{column}', lang)}</th>" for column in ("choice", "votes", "share",
                                                                                   "misconception"))
        parts.append(f"<section><h2>{e(t('report.step', lang, step=row.step, title=row.title))}</h2>{changed}"
                     f"<p><b>{t('report.asked', lang)}</b> {e(row.ask)}</p>{chart}<table><tr>{columns}</tr>"
                     f"{lines}</table>{answer}<p class='meta'>"
                     f"{e(t('report.shown', lang, length=minutes(row.seconds)))}</p></section>")
    return (f"<!doctype html><html lang='{lang}'><head><meta charset='utf-8'>"
            f"<title>{e(name)} · {e(when(report.started))}</title>"
            f"<style>{STYLE}</style></head><body>{head}{''.join(parts)}</body></html>")


# ---------------------------------------------------------------- reading and writing ----------

def lesson_now(report: Report) -> Lesson | None:
    from toyviz.lessons.library import lesson_of
    try:
        return lesson_of(report.lesson)
    except (OSError, LessonError):
        return None


def end(lectures: Lectures, secret: str, address: str = "?") -> int:
    """The presenter's End lecture, from `address`: the lecture kept as a report (its id), then deleted."""
    from toyviz.lessons.library import lesson_of
    lecture = lectures.driven(secret)
    try:
        kept = contents(lesson_of(lecture.lesson))
    except (OSError, LessonError):            # the file moved or broke: the votes are kept all the same
        kept = {}
    return lectures.end(secret, kept, address)


def made(lectures: Lectures, report_id: int, secrets) -> tuple[Report, list[Row], str] | None:
    """A report, its rows against the lesson as it is now, and the lesson's title; None when none of `secrets`
    drove it."""
    report = lectures.report(report_id, secrets)
    if report is None:
        return None
    lesson = lesson_now(report)
    return report, rows(report, lesson), lesson.title if lesson else ""


def files(lectures: Lectures, report_id: int, secrets) -> list[str]:
    """The report written as HTML and CSV where the app serves files (toyviz.serving.files) → their paths; []
    when none of `secrets` drove it."""
    from toyviz.serving.files import EXPORTS
    found = made(lectures, report_id, secrets)
    if found is None:
        return []
    report, lines, title = found
    lesson = lesson_now(report)
    stem = f"toyviz-lecture-{dt.datetime.fromtimestamp(report.started, dt.timezone.utc):%Y-%m-%d}-" \
           f"{Path(report.lesson).stem}-{report.code}"
    lang = lesson.language if lesson else LANGUAGES[0]
    return [EXPORTS.write(f"{stem}.html", html_page(report, lines, title, lang)),
            EXPORTS.write(f"{stem}.csv", csv_text(report, lines, title, lang))]
