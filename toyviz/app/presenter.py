"""The presenter's side of a lecture: the lesson bar on top of the app, and which lecture a page drives.

A lecture opens from a link or the header's Lessons picker: `?lesson=sampling` starts one
(toyviz.classroom.store.Lectures), `?present=SECRET` (the presenter link) drives an existing one, after a
restart or from another laptop. The secret is the only key that moves a lecture, so it never appears on the
page, which a projector shows to the hall: the page keeps it in the lecturer's localStorage and swaps the address
for `?lecture=CODE` (KEEP_SECRET), which this browser alone can reopen. Each step's view is its deep link
(`view`), applied as app.py applies any link. A question step covers what answers it until Reveal (the
`lesson-hides` class, page.css); the Reveal asks the model once (toyviz.lessons.answers) and hands its answer to the
store, which keeps it for the bar and the phones, beside the class's votes. Plain Python and page script: app.py
wires it.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

from markdown_it import MarkdownIt

from toyviz.app.views.watch import shared_runs
from toyviz.classroom import qr
from toyviz.classroom.store import Lecture, Lectures
from toyviz.i18n import LANGUAGES, mistake, t
from toyviz.lessons import answers, library
from toyviz.lessons.check import check
from toyviz.lessons.format import Answer, Lesson, Question, Step, matches
from toyviz.settings import links
from toyviz.training.live import Who

STORED = "toyviz-presenter-"            # localStorage key prefix: + the join code → the presenter's secret
MARKDOWN = MarkdownIt("commonmark", {"html": False})      # a lesson's text: its own HTML shows as text

# the page's load sends this browser's secret for the lecture in its address (?lecture=CODE), and the page's
# own address, which the student link and its QR code are made from (a proxy or a Space knows it better than
# the server does)
READ_SECRET = ("(secret, root) => { const code = new URLSearchParams(location.search).get('lecture');"
               f" return [code ? localStorage.getItem('{STORED}' + code) || '' : '', location.origin + location.pathname]; }}")
# after each change: the answering panels covered or not; the secret kept in localStorage, out of the address bar
KEEP_SECRET = f"""(info) => {{
    window.toyvizLesson = info;
    document.body.classList.toggle('lesson-hides', !!(info && info.hide));
    if (!info || !info.code) return;
    document.body.style.setProperty('--lesson-hidden', JSON.stringify(info.hidden));
    if (info.secret) localStorage.setItem('{STORED}' + info.code, info.secret);
    const query = new URLSearchParams(location.search);
    if (query.get('lecture') !== info.code || query.has('present') || query.has('lesson'))
        history.replaceState(null, '', location.pathname + '?lecture=' + info.code);
}}"""
# "Copy presenter link": to the clipboard, never onto the screen (the button says it was copied); outside a secure
# context (a hall's laptop on http://192.168…) the clipboard API is missing, and a hidden text area's copy works
COPY_PRESENTER_LINK = f"""() => {{
    const code = new URLSearchParams(location.search).get('lecture');
    const secret = code && localStorage.getItem('{STORED}' + code);
    if (!secret) return;
    const link = location.origin + location.pathname + '?present=' + encodeURIComponent(secret);
    const button = document.getElementById('lesson-copy'), label = button.textContent;
    button.textContent = window.toyvizLesson.copied;
    setTimeout(() => {{ button.textContent = label; }}, 2500);
    if (navigator.clipboard && window.isSecureContext) {{ navigator.clipboard.writeText(link).catch(() => {{}}); return; }}
    const box = Object.assign(document.createElement('textarea'), {{value: link}});
    box.style.cssText = 'position:fixed;opacity:0;pointer-events:none';
    document.body.appendChild(box); box.select(); document.execCommand('copy'); box.remove();
}}"""
# The bar's script (its js_on_load). → or space: next step, ←: previous; not while typing or on a slider or radio
# (they take the arrows); a space on a focused button is that button's, except the bar's own (after a click on
# Reveal, space still means Next); a checkbox just clicked (Projector mode) does not keep the keys. A click on the
# QR code shows it large over the page for the back rows, until a click or Escape (a copy outside the bar,
# which the votes' refresh redraws)
BAR_SCRIPT = """element.addEventListener('click', (event) => {
    const code = event.target.closest('.lesson-qr');
    if (!code) return;
    const large = Object.assign(document.createElement('div'), {className: 'lesson-qr-large', title: 'Click to close'});
    large.innerHTML = code.innerHTML;
    large.onclick = () => large.remove();
    document.body.appendChild(large);
});
if (!window.toyvizLessonKeys) {
    window.toyvizLessonKeys = true;
    document.addEventListener('keydown', (event) => {
        if (event.altKey || event.ctrlKey || event.metaKey || event.shiftKey) return;
        if (event.key === 'Escape') document.querySelectorAll('.lesson-qr-large').forEach((e) => e.remove());
        const target = event.target;
        const typing = 'textarea, select, [contenteditable=""], [contenteditable=true], input:not([type=checkbox])';
        if (target.closest && target.closest(typing)) return;
        const ours = target.closest && target.closest('#lesson-panel');
        if (event.key === ' ' && target.closest && target.closest('button') && !ours) return;
        const id = {ArrowRight: 'lesson-next', ' ': 'lesson-next', ArrowLeft: 'lesson-prev'}[event.key];
        const button = id && document.getElementById(id);
        if (!button || button.offsetParent === null) return;
        event.preventDefault();
        if (ours || target.type === 'checkbox') target.blur();
        button.click();
    });
}"""


@dataclass(frozen=True)
class Shown:
    """What the page shows of the lecture it drives."""
    lecture: Lecture
    lesson: Lesson
    secret: str

    @property
    def step(self) -> Step:
        return self.lesson.steps[self.lecture.step]

    @property
    def hides(self) -> bool:
        """A question still open: its answering panels stay covered."""
        return self.step.question is not None and not self.lecture.revealed

    @property
    def name(self) -> str:
        """The lesson as the Lessons picker names it (library.available: a file's name without .md)."""
        return Path(self.lecture.lesson).stem


class Presenter:
    """The lectures this app's pages drive, over one store (made on first use when not given: a page that opens
    no lesson creates no file)."""

    def __init__(self, explorer, lectures: Lectures | None = None):
        self.explorer, self.given = explorer, lectures

    @property
    def lectures(self) -> Lectures:
        if self.given is None:
            self.given = Lectures()
        return self.given

    def start(self, name: str, address: str = "?") -> Shown:
        """A new lecture of an available lesson (library.available: "sampling", or one of the lecturer's own),
        checked against the loaded models, started from `address` (the store keeps few per address)."""
        found = library.available()
        if name not in found:
            raise mistake("errors.lesson.unknown", name=repr(name), found=", ".join(found))
        explorer = self.explorer
        lesson = check(library.lesson_of(name), explorer.models.need_gpt(), explorer.translator, explorer.caches.features)
        _, secret = self.lectures.start(name, len(lesson.steps), address)
        return trained(self.shown(secret))

    def shown(self, secret: str) -> Shown:
        lecture = self.lectures.presenting(secret)
        if lecture is None:
            raise mistake("errors.lesson.link_unknown")
        return Shown(lecture, library.lesson_of(lecture.lesson), secret)

    def open(self, query: dict, stored: str = "", address: str = "?") -> Shown | None:
        """The lecture a page's address opens: ?lesson=NAME a new one, ?present=SECRET that one, ?lecture=CODE the
        one this browser's stored secret drives; None for a plain page. A lesson or link that does not work
        raises a UserError (a LessonError too) with the reason."""
        if query.get("lesson"):
            return self.start(query["lesson"], address)
        if query.get("present"):
            return self.shown(query["present"])
        if query.get("lecture"):
            lecture = self.lectures.presenting(stored) if stored else None
            if lecture is None or lecture.code != query["lecture"]:
                raise mistake("errors.lesson.not_presenter", code=query["lecture"])
            return self.shown(stored)
        return None

    def move(self, secret: str, by: int) -> Shown:
        """The presenter's Prev (-1) or Next (+1), clamped to the lesson. A step revealed before is shown revealed
        when the presenter comes back to it (its votes are closed for good: `Lectures.closed`), on this page and
        on the phones, in one change of the lecture."""
        lectures = self.lectures
        lecture = lectures.driven(secret)
        step = min(max(lecture.step + by, 0), lecture.steps - 1)
        lectures.change(lecture, step, lectures.closed(lecture.code, step))
        return trained(self.shown(secret))

    def reveal(self, secret: str) -> Shown:
        """The presenter's Reveal: the model answers the step's question (at its first reveal only) and the store
        keeps the answer with the step."""
        shown = self.shown(secret)
        lecture, step = shown.lecture, shown.step
        asked = step.question is not None and not self.lectures.closed(lecture.code, lecture.step)
        self.lectures.reveal(secret, answers.answer(step, self.explorer.gpt, shared_runs(), shown.lesson.language)
                             if asked else None)
        return self.shown(secret)

    def reveal_lecture(self, secret: str) -> Lecture:
        """The Reveal sent by the phones' routes (toyviz.classroom.routes): the lecture it leaves."""
        return self.reveal(secret).lecture


def trained(shown: Shown) -> Shown:
    """A step that trains (`train: induction`) starts its live run as it is shown, unless a run is under way (every
    page watches that one) or the step was revealed; seed 0, so a lesson's run, and its answer, are the same each
    time it is taught."""
    if shown.step.train and not shown.lecture.revealed:
        runs = shared_runs()
        current = runs.current()
        if current is None or not current.running:
            runs.start(shown.step.train, seed=0, owner=Who(lecture=shown.lecture.code))   # its presenter stops it
    return shown


def moving(way: str) -> str:
    """Prev / Next's page script: a step whose question will be open ("prev", "next": `client`) is covered before
    it is drawn, since its figures come with the step."""
    return (f"(...values) => {{ if (window.toyvizLesson && window.toyvizLesson.{way}) "
            "document.body.classList.add('lesson-hides'); return values; }")


def view(shown: Shown) -> dict:
    """The step's view, read back from its deep link as a link opened in the address bar is."""
    return links.parse(dict(parse_qsl(shown.step.link[1:], keep_blank_values=True)))


def client(shown: Shown | None) -> dict:
    """What the page script (KEEP_SECRET, `moving`, COPY_PRESENTER_LINK) needs: the code, the secret to keep,
    whether to cover the answers now and on the steps Prev and Next lead to, and its words in the lecture's language."""
    if shown is None:
        return {"hide": False}
    steps, at = shown.lesson.steps, shown.lecture.step
    asks = lambda n: steps[min(max(n, 0), len(steps) - 1)].question is not None
    lang = shown.lesson.language
    return {"code": shown.lecture.code, "secret": shown.secret, "hide": shown.hides, "prev": asks(at - 1),
            "next": asks(at + 1), "hidden": t("bar.hidden", lang), "copied": t("bar.copied", lang)}


# ---------------------------------------------------------------- the bar ----------

def shown_text(choice: str) -> str:
    """A choice as the phones show it (toyviz/classroom/phone.html): its spaces at the ends as ␣, like the app's
    token labels, so that " be" and "be" differ on the projector too."""
    return re.sub(r"^ +| +$", lambda spaces: "␣" * len(spaces[0]), choice)


def join_box(code: str, root: str, lang: str = LANGUAGES[0]) -> str:
    """The join code, the student link and its QR code: small, in the bar's corner. The QR code's link of a lecture in
    another language than English names it: the phones' page speaks the lecture's language (toyviz.classroom.routes);
    the link written out stays as short as a hall types it."""
    link = f"{root.rstrip('/')}/class/{code}" + (f"?lang={lang}" if lang != LANGUAGES[0] else "")
    code_image = f"<div class='lesson-qr' title='{html.escape(t('bar.qr', lang))}'>{qr.svg(link)}</div>"
    named = html.escape(t("bar.code", lang))
    return (f"<div class='lesson-join'>{code_image}<div><div class='lesson-code' title='{named}'>{code}</div>"
            f"<div class='lesson-link'>{html.escape(link.split('://', 1)[-1].split('?')[0])}</div></div></div>")


def votes_chart(question: Question, tally: dict[str, int], answer: Answer | None, lang: str = LANGUAGES[0]) -> str:
    """The class's votes as small bars, the model's choice marked; a typed question shows its six commonest."""
    rows = question.choices or tuple(tally)[:6]
    total, most = sum(tally.values()), max(tally.values(), default=0)
    lines = []
    for choice in rows:
        right = answer is not None and matches(choice, answer.value)
        count = tally.get(choice, 0)
        width = 100 * count / most if most else 0
        lines.append(f"<tr class='{'lesson-right' if right else ''}'><td>{'✓ ' if right else ''}"
                     f"{html.escape(shown_text(choice))}</td><td class='lesson-bar-cell'><span class='lesson-votebar' "
                     f"style='width:{width:.0f}%'></span></td><td>{count}</td></tr>")
    caption = t("bar.class_one" if total == 1 else "bar.class", lang, count=total)
    return (f"<table class='lesson-votes'><caption>{caption}</caption>"
            + "".join(lines) + "</table>")


def question_box(shown: Shown, lectures: Lectures) -> str:
    """The question and its choices; after the Reveal, the model's answer beside the class's votes."""
    question, lecture, lang = shown.step.question, shown.lecture, shown.lesson.language
    tally = lectures.tally(lecture.code, lecture.step)
    choices = "".join(f"<span class='lesson-choice'>{html.escape(shown_text(c))}</span>" for c in question.choices)
    asked = f"<div class='lesson-question'><b>{t('bar.predict', lang)}</b> {html.escape(question.ask)} {choices}</div>"
    if not lecture.revealed:
        total = sum(tally.values())
        waiting = t("bar.waiting_one" if total == 1 else "bar.waiting", lang, count=total)
        return asked + f"<div class='lesson-waiting'>{waiting}</div>"
    answer = lectures.answer(lecture.code, lecture.step)
    said = (f"<b>{t('bar.model', lang)}</b> {html.escape(shown_text(answer.value))} — {html.escape(answer.detail)}"
            if answer else f"<b>{t('bar.model', lang)}</b> {t('bar.no_model', lang)}")
    return (asked + f"<div class='lesson-reveal'><div class='lesson-answer'>{said}</div>"
            f"{votes_chart(question, tally, answer, lang)}</div>")


def bar(shown: Shown, lectures: Lectures, root: str, said: str = "") -> str:
    """The lesson bar's text: step counter, title, text, question (or answer and votes), join code and QR; `said`:
    why the presenter's last action was refused (a Reveal before the run's head formed), a line in the bar."""
    step, lecture, lang = shown.step, shown.lecture, shown.lesson.language
    point = step.point if step.point and (step.question is None or lecture.revealed) else ""
    main = (f"<div class='lesson-head'><span class='lesson-counter'>{lecture.step + 1} / {lecture.steps}</span> "
            f"<b>{html.escape(step.title)}</b> <span class='lesson-name'>· {html.escape(shown.lesson.title)}</span></div>"
            f"<div class='lesson-text'>{MARKDOWN.render(step.text)}</div>"
            + (question_box(shown, lectures) if step.question else "")
            + (f"<div class='lesson-point'><b>{t('bar.look_at', lang)}</b> {html.escape(point)}</div>" if point else "")
            + (f"<div class='lesson-said' role='status'>{html.escape(said)}</div>" if said else ""))
    # the counter and the code stay in a corner of the screen when the bar has scrolled away (page.css)
    badge = (f"<div class='lesson-badge'>{lecture.step + 1} / {lecture.steps} · {t('bar.join', lang)} "
             f"{lecture.code}</div>")
    return f"<div class='lesson'><div class='lesson-main'>{main}</div>{join_box(lecture.code, root, lang)}</div>{badge}"


def problem(why: str) -> str:
    """The bar when a lesson or a presenter link does not open: the reason, where the lesson would be; a lesson's
    mistakes one a line (LessonError), each with its line in the file."""
    lines = "<br>".join(html.escape(line) for line in why.splitlines())
    return f"<div class='lesson lesson-problem'>⚠ {lines}</div>"
